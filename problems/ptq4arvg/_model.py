"""A tiny class-conditional autoregressive image-token generator trained here (for :mod:`hifo.problems.ptq4arvg`).

Images are 8x8 grids drawn here (rectangles, discs, stripes, crosses of 4 classes at random places and
sizes), each pixel one of 8 grey levels (the token); a sequence is ``[class token] + 64 pixel tokens`` in
raster order. The GPT has learned absolute positions and adaLN blocks (LayerNorm modulated by the class
embedding, as in LlamaGen/PAR), the source of the channel outliers PTQ4ARVG targets.

Classifier-free guidance as LlamaGen/PAR train and sample it: during training the class token is replaced by
the null token :data:`NULL` with probability :data:`CLASS_DROPOUT` (10 %), so the same network also models
the unconditional distribution; :func:`cfg_logits` mixes the two as the official ``generate.py`` does,
``uncond + s (cond - uncond)``, and :func:`generate` samples images token by token with it.
"""

from __future__ import annotations

import threading
from functools import lru_cache

import torch
import torch.nn as nn
import torch.nn.functional as F

from hifo.problems._repro import one_torch_thread

LEVELS, SIDE, CLASSES = 8, 8, 4
SEQ = SIDE * SIDE + 1
NULL = LEVELS + CLASSES  # the unconditional ("dropped class") token
VOCAB = LEVELS + CLASSES + 1  # pixel tokens 0..7, class tokens 8..11, the null token 12
CLASS_DROPOUT = 0.1  # LlamaGen/PAR's class_dropout_prob


def draw(n: int, gen: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """``n`` images (``n x 8 x 8`` levels) and their classes."""
    cls = torch.randint(0, CLASSES, (n,), generator=gen)
    yy, xx = torch.meshgrid(torch.arange(SIDE), torch.arange(SIDE), indexing="ij")
    imgs = torch.zeros(n, SIDE, SIDE, dtype=torch.long)
    for i in range(n):
        r = torch.randint(0, 1000, (6,), generator=gen).tolist()
        fg, bg = 1 + r[0] % (LEVELS - 1), r[1] % 2
        cy, cx, size = 2 + r[2] % 4, 2 + r[3] % 4, 1 + r[4] % 3
        c = int(cls[i])
        if c == 0:
            m = ((yy - cy).abs() <= size) & ((xx - cx).abs() <= size + r[5] % 2)
        elif c == 1:
            m = (yy - cy) ** 2 + (xx - cx) ** 2 <= (size + 0.5) ** 2
        elif c == 2:
            m = (xx + r[5]) % (size + 1) == 0
        else:
            m = (yy == cy) | (xx == cx)
        img = torch.full((SIDE, SIDE), bg, dtype=torch.long)
        img[m] = fg
        imgs[i] = img
    return imgs, cls


def sequences(n: int, seed: int) -> torch.Tensor:
    imgs, cls = draw(n, torch.Generator().manual_seed(seed))
    return torch.cat([(LEVELS + cls)[:, None], imgs.flatten(1)], 1)


class Block(nn.Module):
    def __init__(self, d: int, heads: int):
        super().__init__()
        self.heads = heads
        self.n1, self.n2 = nn.LayerNorm(d, elementwise_affine=False), nn.LayerNorm(d, elementwise_affine=False)
        self.ada = nn.Linear(d, 4 * d)  # adaLN: scale/shift of both norms from the class embedding
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc1, self.fc2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def forward(self, x: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
        B, T, D = x.shape
        g1, b1, g2, b2 = self.ada(c)[:, None, :].chunk(4, -1)
        h = self.n1(x) * (1 + g1) + b1
        q, k, v = (t.view(B, T, self.heads, -1).transpose(1, 2) for t in self.qkv(h).chunk(3, -1))
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(a.transpose(1, 2).reshape(B, T, D))
        h = self.n2(x) * (1 + g2) + b2
        return x + self.fc2(F.gelu(self.fc1(h)))


class TinyARVG(nn.Module):
    def __init__(self, d: int = 48, heads: int = 4, layers: int = 2):
        super().__init__()
        self.emb, self.pos = nn.Embedding(VOCAB, d), nn.Parameter(torch.randn(SEQ, d) * 0.5)
        self.blocks = nn.ModuleList(Block(d, heads) for _ in range(layers))
        self.norm, self.head = nn.LayerNorm(d), nn.Linear(d, LEVELS)

    def features(self, seq: torch.Tensor) -> torch.Tensor:
        x = self.emb(seq[:, :-1]) + self.pos[: seq.shape[1] - 1]
        c = self.emb(seq[:, 0])
        for b in self.blocks:
            x = b(x, c)
        return self.norm(x)

    def forward(self, seq: torch.Tensor) -> torch.Tensor:
        """Logits over the 8 levels for pixel tokens 1..64 given the prefix (teacher forcing)."""
        return self.head(self.features(seq))


def nll(model: TinyARVG, seq: torch.Tensor) -> float:
    """Mean next-pixel negative log-likelihood (nats per token) of ``seq``."""
    with torch.no_grad():
        return float(F.cross_entropy(model(seq).reshape(-1, LEVELS), seq[:, 1:].reshape(-1)))


def cfg_logits(model: TinyARVG, seq: torch.Tensor, scale: float) -> torch.Tensor:
    """Guided logits ``uncond + scale (cond - uncond)`` for pixel tokens 1..64 of ``seq`` (teacher forcing);
    the unconditional pass sees the same pixels after the null token. ``scale = 1``: the conditional logits."""
    cond = model(seq)
    if scale == 1.0:
        return cond
    unc = seq.clone()
    unc[:, 0] = NULL
    uncond = model(unc)
    return uncond + scale * (cond - uncond)


def cfg_nll(model: TinyARVG, seq: torch.Tensor, scale: float) -> float:
    """Mean next-pixel negative log-likelihood (nats per token) of ``seq`` under the guided distribution."""
    with torch.no_grad():
        return float(F.cross_entropy(cfg_logits(model, seq, scale).reshape(-1, LEVELS), seq[:, 1:].reshape(-1)))


def generate(model: TinyARVG, classes: torch.Tensor, scale: float, seed: int) -> torch.Tensor:
    """Sequences (``n x 65``) sampled token by token (temperature 1, no top-k) from the guided logits, class
    token first; the conditional and unconditional passes run as one batch, as the official sampler does."""
    gen = torch.Generator().manual_seed(seed)
    n = len(classes)
    seq = torch.zeros(n, SEQ, dtype=torch.long)
    seq[:, 0] = LEVELS + classes
    with torch.no_grad():
        for t in range(1, SEQ):
            pre = seq[:, : t + 1]  # the model reads positions < t (the last one is a placeholder)
            both = torch.cat([pre, pre])
            both[n:, 0] = NULL
            logits = model(both)[:, t - 1]
            cond, uncond = logits[:n], logits[n:]
            guided = uncond + scale * (cond - uncond)
            seq[:, t] = torch.multinomial(F.softmax(guided, -1), 1, generator=gen)[:, 0]
    return seq


_LOCK = threading.Lock()


def trained_arvg(seed: int = 0, steps: int = 200) -> TinyARVG:
    """Train :class:`TinyARVG` (AdamW 3e-3, batch 32, class dropout 10 % for classifier-free guidance);
    deterministic given ``seed``; cached, do not mutate."""
    with _LOCK:
        return _trained(seed, steps)


@lru_cache(maxsize=None)
def _trained(seed: int, steps: int) -> TinyARVG:
    with one_torch_thread():  # the same weights whatever the process's thread count (issue 26)
        return _trained_body(seed, steps)


def _trained_body(seed: int, steps: int) -> TinyARVG:
    torch.manual_seed(seed)
    model = TinyARVG()
    data = sequences(2048, 1000 + seed)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, steps)
    gen = torch.Generator().manual_seed(seed)
    for _ in range(steps):
        x = data[torch.randint(0, len(data), (32,), generator=gen)].clone()
        x[torch.rand(32, generator=gen) < CLASS_DROPOUT, 0] = NULL  # class dropout (CFG training)
        loss = F.cross_entropy(model(x).reshape(-1, LEVELS), x[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
    model.eval()
    return model
