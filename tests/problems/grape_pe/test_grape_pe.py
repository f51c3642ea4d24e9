"""hifo.problems.grape_pe: closed-form exponential, exact relative law, norm preservation, and the special
cases (RoPE, ALiBi, FoX) against reference implementations written here independently."""

from __future__ import annotations

import math

import pytest
import torch

from hifo.problems.grape_pe import (AdditivePE, MultiplicativePE, TinyTransformer, additive_gates, additive_generator,
                                    additive_lift, alibi_slopes, grape_m_matrix, make_batch, rank2_exp, rank2_generator,
                                    rope_spectrum)



@pytest.fixture(autouse=True)
def float64():
    before = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    yield
    torch.set_default_dtype(before)


def _gen(seed):
    return torch.Generator().manual_seed(seed)


def reference_rope(x: torch.Tensor, base: float = 10000.0) -> torch.Tensor:
    """RoPE as in Su et al.: consecutive pairs as complex numbers times exp(i n theta_m), theta_m = base^(-2m/d)."""
    T, d = x.shape
    theta = 1.0 / base ** (torch.arange(0, d, 2, dtype=torch.float64) / d)
    z = torch.view_as_complex(x.reshape(T, d // 2, 2).contiguous())
    rot = torch.polar(torch.ones(T, d // 2, dtype=torch.float64), torch.arange(T)[:, None] * theta[None, :])
    return torch.view_as_real(z * rot).reshape(T, d)


def reference_alibi(heads: int, T: int) -> torch.Tensor:
    """ALiBi (Press et al.): head h (1-based) adds -m_h * (i - j), m_h = 2^(-8h/H) (H a power of two)."""
    m = torch.tensor([2.0 ** (-8.0 * h / heads) for h in range(1, heads + 1)])
    i, j = torch.arange(T)[:, None], torch.arange(T)[None, :]
    return -m[:, None, None] * (i - j)


def test_rank2_closed_form_matches_matrix_exp_and_is_a_rotation():
    g = _gen(0)
    for _ in range(5):
        a, b = torch.randn(7, generator=g), torch.randn(7, generator=g)
        t = float(torch.randn(1, generator=g)) * 3
        G = rank2_exp(a, b, t)
        assert torch.allclose(G, torch.linalg.matrix_exp(t * rank2_generator(a, b)), atol=1e-10)
        assert torch.allclose(G.T @ G, torch.eye(7), atol=1e-10) and torch.det(G) == pytest.approx(1.0)
        assert torch.linalg.matrix_rank(rank2_generator(a, b)) == 2


def test_grape_m_relative_law_composition_and_norm_preservation():
    g = _gen(1)
    P = torch.linalg.qr(torch.randn(8, 8, generator=g)).Q  # arbitrary commuting planes
    w = torch.rand(4, generator=g)
    G = lambda n: grape_m_matrix(P, w, n)  # noqa: E731
    q, k = torch.randn(8, generator=g), torch.randn(8, generator=g)
    for i, j in [(3, 7), (10, 14), (0, 4), (-2, 2)]:
        assert torch.allclose(torch.linalg.inv(G(i)) @ G(j), G(j - i), atol=1e-10)
        assert float((G(i) @ q) @ (G(j) @ k)) == pytest.approx(float(q @ G(j - i) @ k), abs=1e-9)
    s = [float((G(i) @ q) @ (G(i + 5) @ k)) for i in range(6)]
    assert max(s) - min(s) < 1e-9  # score depends only on j - i
    assert torch.linalg.vector_norm(G(11) @ q) == pytest.approx(float(torch.linalg.vector_norm(q)))
    assert torch.allclose(G(3) @ G(5), G(8), atol=1e-10)


def test_canonical_planes_with_log_uniform_spectrum_are_rope():
    x = torch.randn(20, 16, generator=_gen(2))
    w = rope_spectrum(8, 10000.0)
    via_module = MultiplicativePE(16, w)(x[None, None], x[None, None], None)[0][0, 0]
    assert torch.allclose(via_module.double(), reference_rope(x), atol=1e-5)
    eye = torch.eye(16)  # and the matrix form, position by position
    for n in (0, 1, 7, 19):
        assert torch.allclose(grape_m_matrix(eye, w, n) @ x[n], reference_rope(x)[n], atol=1e-10)


def test_learned_commuting_planes_keep_the_relative_law_in_the_model():
    pe = MultiplicativePE(8, rope_spectrum(4), learned=True)
    with torch.no_grad():
        pe.S.copy_(torch.randn(8, 8, generator=_gen(3)))
    assert not torch.allclose(pe.basis(), torch.eye(8))
    q, k = torch.randn(1, 1, 12, 8, generator=_gen(4)), torch.randn(1, 1, 12, 8, generator=_gen(5))
    q = q.expand(1, 1, 12, 8).clone()
    q[..., :, :], k[..., :, :] = q[..., :1, :], k[..., :1, :]  # same content at every position
    with torch.no_grad():
        qr, kr, _ = pe(q, k, None)
    S = (qr @ kr.transpose(-1, -2))[0, 0]
    for off in range(-5, 6):
        d = torch.diagonal(S, off)
        assert float(d.max() - d.min()) < 1e-4  # constant along each diagonal: depends on j - i only
    assert torch.allclose(qr.norm(dim=-1), q.norm(dim=-1), atol=1e-5)


def test_additive_lift_is_unipotent_relative_and_recovers_alibi():
    g = _gen(6)
    d = 6
    lam = 0.7
    A = additive_generator(d, lam)
    assert torch.allclose(A @ A, torch.zeros_like(A))  # nilpotent: exp(nwA) = I + nwA (unipotent)
    assert torch.allclose(torch.linalg.matrix_exp(2.5 * A), torch.eye(d + 2) + 2.5 * A, atol=1e-12)
    q, k = torch.randn(d, generator=g), torch.randn(d, generator=g)
    w = 0.3
    vals = []
    for i in range(4, 9):
        qh, kh = additive_lift(q, k, i, i - 4, w, lam)
        vals.append(float(qh @ kh))
    assert max(vals) - min(vals) < 1e-9  # depends on j - i only (eq. 4.3)
    assert vals[0] == pytest.approx(float(q @ k) + w * (-4) * lam)  # eq. 4.6's affine score
    # lam = 1: ALiBi's bias, head by head (section 4.2)
    slopes = alibi_slopes(4)
    ref = reference_alibi(4, 10)
    for h in range(4):
        for i in range(10):
            for j in range(i + 1):
                qh, kh = additive_lift(q, k, i, j, float(slopes[h]))
                assert float(qh @ kh) - float(q @ k) == pytest.approx(float(ref[h, i, j]), abs=1e-12)


def _grape_a(kind: str, heads: int = 4, dh: int = 8, seed: int = 0) -> AdditivePE:
    torch.manual_seed(seed)
    return AdditivePE(kind, heads * dh, dh, heads, alibi_slopes(heads))


def test_alibi_and_grape_a_modules_match_the_lift():
    q = torch.randn(2, 4, 9, 8, generator=_gen(7))
    k = torch.randn(2, 4, 9, 8, generator=_gen(17))
    causal = torch.ones(9, 9, dtype=torch.bool).tril()
    _, _, bias = AdditivePE("alibi", 32, 8, 4, alibi_slopes(4))(q, k, None)
    assert torch.allclose(bias.double()[..., causal], reference_alibi(4, 9)[..., causal], atol=1e-6)
    ga = _grape_a("grape_a")
    assert torch.allclose(ga.omega().double(), alibi_slopes(4))  # w starts at ALiBi's slopes (official init)
    with torch.no_grad():
        _, _, b = ga(q, k, None)
    lam_q, lam_k = additive_gates(q, k, ga.v[:, None, :], ga.u[:, None, :])
    for (bb, h, i, j) in [(0, 0, 5, 2), (1, 3, 8, 0), (0, 2, 7, 7), (1, 1, 4, 1)]:
        lam = lam_q[bb, h, i] + lam_k[bb, h, j]
        qh, kh = additive_lift(q[bb, h, i].double(), k[bb, h, j].double(), i, j, float(ga.omega()[h].detach()),
                               lam.detach().double())
        assert float(b[bb, h, i, j]) == pytest.approx(float(qh @ kh) - float(q[bb, h, i] @ k[bb, h, j]), abs=1e-5)
    gq = _grape_a("grape_a_q")
    _, _, bq = gq(q, k, None)
    lam_q, _ = additive_gates(q, k, gq.v[:, None, :], gq.v[:, None, :])
    want = gq.omega()[:, None, None] * (torch.arange(9)[None, :] - torch.arange(9)[:, None]) * lam_q[..., :, None]
    assert torch.allclose(bq[..., causal].double(), want.double()[..., causal], atol=1e-6)  # key-independent: query gate only


@pytest.mark.parametrize("kind", ["grape_a", "grape_a_q"])
def test_softplus_gates_keep_the_bias_a_penalty_growing_with_distance(kind):
    """Paper, eq. 4.5-4.6: softplus keeps the decay rate non-negative, so for causal offsets the bias is a
    monotone penalty: for ANY query and key content (and any learned directions and slopes), the bias of a key
    is <= 0 and non-increasing as the key moves further back."""
    T = 12
    ga = _grape_a(kind, seed=3)
    g = _gen(11)
    with torch.no_grad():  # adversarial parameters: large directions and slopes driven far both ways
        ga.raw.copy_(torch.tensor([-30.0, -1.0, 2.0, 30.0]))
        ga.v.mul_(50.0)
    for trial in range(20):
        q0 = torch.randn(2, 4, 1, 8, generator=g) * (10.0 if trial % 2 else 1.0)
        k0 = torch.randn(2, 4, 1, 8, generator=g) * (10.0 if trial % 3 else 1.0)
        if trial == 0:  # the query aligned against its gate direction (the case an unbounded gate gets wrong)
            q0 = -20.0 * ga.v.detach()[None, :, None, :].expand(2, 4, 1, 8)
        _, _, bias = ga(q0.expand(2, 4, T, 8), k0.expand(2, 4, T, 8), None)
        for i in range(T):
            row = bias[..., i, : i + 1].flip(-1)  # distance 0, 1, ..., i
            assert (row <= 0).all()
            assert (row[..., 1:] - row[..., :-1] <= 1e-6).all()
    # the unbounded gate w (j - i)(1 + q.u) of the earlier version fails the same check: not vacuous
    u = ga.v.detach()[0] / ga.v.detach()[0].norm()
    q_bad = -3.0 * u * (8 ** 0.5)
    unbounded = [0.1 * (-dist) * (1 + float(q_bad @ u) / 8 ** 0.5) for dist in range(5)]
    assert unbounded[-1] > unbounded[0]


def test_fox_bias_is_the_sum_of_log_forget_gates():
    x = torch.randn(2, 7, 16, generator=_gen(8))
    fox = AdditivePE("fox", 16, 4, 2, alibi_slopes(2))
    with torch.no_grad():
        fox.gate.weight.normal_()
    _, _, bias = fox(torch.zeros(2, 2, 7, 4), torch.zeros(2, 2, 7, 4), x)
    f = torch.sigmoid(fox.gate(x)).double()  # B x T x H
    for i in range(7):
        for j in range(i + 1):
            want = torch.log(f[:, j + 1: i + 1]).sum(1)  # sum_{t=j+1..i} log f_t, per batch and head
            assert torch.allclose(bias[:, :, i, j].double(), want, atol=1e-5)


def test_recall_batches_and_the_model_forward():
    x, y = make_batch(3, 40, 4, _gen(9))
    assert x.shape == (3, 40) and (y != -100).sum() == 12
    for b in range(3):  # each query's target is the value that followed that key
        pairs = dict(zip(x[b, 0:8:2].tolist(), x[b, 1:8:2].tolist()))
        assert [pairs[k] for k in x[b, -4:].tolist()] == y[b, -4:].tolist()
    for pe in ("nope", "rope", "grape_m", "alibi", "grape_a", "grape_a_q", "fox"):
        torch.manual_seed(0)
        m = TinyTransformer(72, pe, d=32, heads=2)
        assert m(x).shape == (3, 40, 72)
    with pytest.raises(ValueError):
        TinyTransformer(72, "sinusoid")
    assert math.isclose(float(rope_spectrum(8)[1]), 10000 ** (-1 / 8))


def test_latest_value_batches_ask_for_the_later_of_two_different_writes():
    x, y = make_batch(5, 40, 4, _gen(10), writes=2)
    assert x.shape == (5, 40) and (y != -100).sum() == 20
    for b in range(5):
        first = dict(zip(x[b, 0:8:2].tolist(), x[b, 1:8:2].tolist()))
        second = dict(zip(x[b, 8:16:2].tolist(), x[b, 9:16:2].tolist()))
        assert set(first) == set(second) and all(first[key] != second[key] for key in first)
        assert [second[key] for key in x[b, -4:].tolist()] == y[b, -4:].tolist()
    with pytest.raises(ValueError):
        make_batch(2, 19, 4, _gen(0), writes=2)
