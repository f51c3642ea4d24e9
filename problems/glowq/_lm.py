"""A tiny char-level transformer LM trained here on text generated here (for :mod:`hifo.problems.glowq`)."""

from __future__ import annotations

import math
import random
import threading
from functools import lru_cache

import torch
import torch.nn as nn
import torch.nn.functional as F

from hifo.problems._repro import one_torch_thread

_NOUNS = "cat dog bird fish river tree house garden window teacher child farmer king queen robot".split()
_ADJS = "small big red green quiet bright old young happy lazy clever brave".split()
_VERBS = "sees likes finds follows carries watches helps paints builds".split()
_NUMS = "zero one two three four five six seven eight nine".split()


def generate_text(n_chars: int, seed: int) -> str:
    """Sentences from a small stochastic grammar plus spelled-out additions (``two plus three is five.``):
    local structure (words), agreement-free syntax and a little arithmetic for the model to learn."""
    rng = random.Random(seed)
    out, size = [], 0
    while size < n_chars:
        r = rng.random()
        if r < 0.25:
            a, b = rng.randrange(5), rng.randrange(5)
            s = f"{_NUMS[a]} plus {_NUMS[b]} is {_NUMS[a + b]}."
        else:
            s = (f"the {rng.choice(_ADJS)} {rng.choice(_NOUNS)} {rng.choice(_VERBS)} "
                 f"the {rng.choice(_NOUNS)}" + (f" near the {rng.choice(_NOUNS)}" if r > 0.7 else "") + ".")
        out.append(s)
        size += len(s) + 1
    return " ".join(out)[:n_chars]


VOCAB = sorted(set(" ." + "".join(_NOUNS + _ADJS + _VERBS + _NUMS) + "plusithe"))
STOI = {c: i for i, c in enumerate(VOCAB)}


def encode(text: str) -> torch.Tensor:
    return torch.tensor([STOI[c] for c in text], dtype=torch.long)


class Block(nn.Module):
    def __init__(self, d: int, heads: int, hidden: int):
        super().__init__()
        self.heads = heads
        self.n1, self.n2 = nn.RMSNorm(d), nn.RMSNorm(d)
        self.q, self.k, self.v, self.o = (nn.Linear(d, d, bias=False) for _ in range(4))
        self.up, self.gate = nn.Linear(d, hidden, bias=False), nn.Linear(d, hidden, bias=False)
        self.down = nn.Linear(hidden, d, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, T, D = x.shape
        h = self.n1(x)
        split = lambda t: t.view(B, T, self.heads, D // self.heads).transpose(1, 2)  # noqa: E731
        a = F.scaled_dot_product_attention(split(self.q(h)), split(self.k(h)), split(self.v(h)), is_causal=True)
        x = x + self.o(a.transpose(1, 2).reshape(B, T, D))
        h = self.n2(x)
        return x + self.down(F.silu(self.gate(h)) * self.up(h))


class TinyLM(nn.Module):
    """Pre-norm decoder: Q/K/V share their input, as do up/gate (SwiGLU); the groups GlowQ exploits."""

    def __init__(self, d: int = 64, layers: int = 2, heads: int = 4, hidden: int = 128, ctx: int = 64, seed: int = 0):
        super().__init__()
        torch.manual_seed(seed)
        self.ctx = ctx
        self.emb, self.pos = nn.Embedding(len(VOCAB), d), nn.Embedding(ctx, d)
        self.blocks = nn.ModuleList(Block(d, heads, hidden) for _ in range(layers))
        self.norm, self.lm_head = nn.RMSNorm(d), nn.Linear(d, len(VOCAB), bias=False)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        x = self.emb(idx) + self.pos(torch.arange(idx.shape[1]))
        for b in self.blocks:
            x = b(x)
        return self.lm_head(self.norm(x))


def windows(data: torch.Tensor, ctx: int) -> tuple[torch.Tensor, torch.Tensor]:
    n = (len(data) - 1) // ctx
    return data[: n * ctx].view(n, ctx), data[1: n * ctx + 1].view(n, ctx)


def perplexity(model: TinyLM, data: torch.Tensor) -> float:
    """exp(mean next-character cross-entropy) over non-overlapping ``ctx`` windows of ``data``."""
    x, y = windows(data, model.ctx)
    with torch.no_grad():
        loss = F.cross_entropy(model(x).reshape(-1, len(VOCAB)), y.reshape(-1))
    return float(math.exp(loss))


@lru_cache(maxsize=None)
def corpus(seed: int = 0) -> dict[str, torch.Tensor]:
    """Train / calibration / validation text, disjoint draws of the grammar."""
    return {"train": encode(generate_text(60_000, seed)), "calib": encode(generate_text(4_096, seed + 101)),
            "val": encode(generate_text(8_192, seed + 202))}


_TRAIN_LOCK = threading.Lock()


def trained_lm(seed: int = 0, steps: int = 400) -> TinyLM:
    """Train :class:`TinyLM` (AdamW, lr 3e-3 cosine, batch 32 x 64 chars); deterministic given ``seed``.
    Do not mutate the returned (cached) model; quantize a copy. Thread-safe: the initialisation uses
    torch's global RNG, and parallel scorers must neither interleave it nor train twice."""
    with _TRAIN_LOCK:
        return _trained_lm(seed, steps)


@lru_cache(maxsize=None)
def _trained_lm(seed: int, steps: int) -> TinyLM:
    with one_torch_thread():  # the same weights whatever the process's thread count (issue 26)
        return _trained_lm_body(seed, steps)


def _trained_lm_body(seed: int, steps: int) -> TinyLM:
    data = corpus(seed)["train"]
    model = TinyLM(seed=seed)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, steps)
    gen = torch.Generator().manual_seed(seed)
    for _ in range(steps):
        starts = torch.randint(0, len(data) - model.ctx - 1, (32,), generator=gen)
        x = torch.stack([data[s: s + model.ctx] for s in starts])
        y = torch.stack([data[s + 1: s + model.ctx + 1] for s in starts])
        loss = F.cross_entropy(model(x).reshape(-1, len(VOCAB)), y.reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
    model.eval()
    return model
