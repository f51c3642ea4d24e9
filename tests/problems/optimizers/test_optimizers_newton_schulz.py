"""Newton–Schulz orthogonalisation: the polynomial families, the error theory, the SVD variant."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from hifo.problems.optimizers import (
    CUBIC,
    MUON_QUINTIC,
    as_schedule,
    matmul_count,
    newton_schulz,
    ns_error_bound,
    orthogonality_error,
    polar_error,
    polar_svd,
    singular_value_band,
    singular_value_map,
    taylor_coefficients,
)


def with_spectrum(m: int, n: int, s: np.ndarray, seed: int = 0) -> torch.Tensor:
    """An m x n matrix with singular values ``s`` and random singular vectors."""
    rng = np.random.default_rng(seed)
    r = len(s)
    U = np.linalg.qr(rng.standard_normal((m, r)))[0]
    V = np.linalg.qr(rng.standard_normal((n, r)))[0]
    return torch.from_numpy(U @ np.diag(s) @ V.T)


def test_taylor_family_contains_the_classic_iterations():
    assert taylor_coefficients(1) == pytest.approx(CUBIC)
    assert taylor_coefficients(2) == pytest.approx((15 / 8, -10 / 8, 3 / 8))
    for kappa in range(1, 6):
        c = taylor_coefficients(kappa)
        assert singular_value_map(np.array([1.0]), [c])[0] == pytest.approx(1.0)  # 1 is a fixed point
        assert sum(c) == pytest.approx(1.0)


@pytest.mark.parametrize("kappa", [1, 2, 3, 4])
def test_one_step_error_factor_is_raised_to_power_kappa_plus_one(kappa):
    # The per-step contraction behind the doubly exponential rate: 1 - phi(s)^2 <= (1 - s^2)^(kappa+1).
    s = np.linspace(1e-4, 1.0, 20001)
    phi = singular_value_map(s, [taylor_coefficients(kappa)])
    err, xi = 1 - phi**2, 1 - s**2
    assert np.all(err >= -1e-12)
    assert np.all(err <= xi ** (kappa + 1) + 1e-12)


def test_matrix_iteration_is_the_scalar_map_on_singular_values():
    torch.manual_seed(0)
    G = torch.randn(48, 24, dtype=torch.float64)
    s = np.linalg.svd(G.numpy(), compute_uv=False) / np.linalg.norm(G.numpy())
    for schedule in ([MUON_QUINTIC] * 5, [CUBIC] * 3, [(3.0, -3.2, 1.2), CUBIC, (2.0, -1.0)]):
        out = newton_schulz(G, None, schedule, eps=0.0, dtype=torch.float64)
        got = np.sort(np.linalg.svd(out.numpy(), compute_uv=False))
        want = np.sort(np.abs(singular_value_map(s, schedule)))
        np.testing.assert_allclose(got, want, atol=1e-10)


@pytest.mark.parametrize("kappa", [1, 2])
def test_error_shrinks_doubly_exponentially_in_q(kappa):
    s = np.linspace(0.3, 1.0, 24)
    G = with_spectrum(40, 24, s)  # full rank: every singular value can be lifted
    delta = 1 - (s.min() / np.linalg.norm(s)) ** 2  # after the Frobenius normalisation
    errors = []
    for q in range(1, 13):
        out = newton_schulz(G, q, taylor_coefficients(kappa), eps=0.0, dtype=torch.float64)
        sv = np.linalg.svd(out.numpy(), compute_uv=False)
        err = float(np.max(1 - sv**2))
        assert err <= ns_error_bound(delta, kappa, q) + 1e-12
        errors.append(err)
    # -log(err) grows geometrically with ratio (kappa + 1) once the iteration is in its
    # asymptotic regime: doubly exponential in q.
    logs = [-np.log(e) for e in errors if 1e-13 < e < 0.5]
    assert len(logs) >= 2
    ratios = [b / a for a, b in zip(logs, logs[1:])]
    assert min(ratios) > kappa + 1 - 0.35


def test_higher_degree_needs_fewer_steps():
    G = with_spectrum(32, 32, np.linspace(0.02, 1.0, 32))
    def steps_to(kappa, tol=1e-6):
        for q in range(1, 40):
            if orthogonality_error(newton_schulz(G, q, taylor_coefficients(kappa), dtype=torch.float64)) < tol:
                return q
        return 99
    assert steps_to(1) > steps_to(2) > steps_to(4)


@pytest.mark.parametrize("shape", [(64, 32), (32, 128), (100, 50), (48, 48)])
def test_muon_quintic_lands_singular_values_in_its_band(shape):
    # Keller Jordan: 5 quintic steps give U S' V^T with S' roughly in (0.5, 1.5), not U V^T.
    torch.manual_seed(1)
    G = torch.randn(*shape)
    lo, hi = singular_value_band(newton_schulz(G, 5, MUON_QUINTIC))
    assert 0.6 < lo and hi < 1.25
    assert orthogonality_error(newton_schulz(G, 5, MUON_QUINTIC)) > 0.02  # not converged to 1


def test_svd_variant_is_exactly_orthogonal_and_is_the_ns_limit():
    torch.manual_seed(2)
    tall, wide = torch.randn(50, 20), torch.randn(20, 50)
    Qt, Qw = polar_svd(tall), polar_svd(wide)
    assert torch.allclose(Qt.T @ Qt, torch.eye(20), atol=1e-6)
    assert torch.allclose(Qw @ Qw.T, torch.eye(20), atol=1e-6)
    assert orthogonality_error(Qt) < 1e-6
    # The classic cubic converges to the same polar factor.
    G = with_spectrum(30, 12, np.linspace(0.2, 1.0, 12))
    assert torch.allclose(newton_schulz(G, 25, CUBIC, dtype=torch.float64), polar_svd(G), atol=1e-9)


def test_polar_error_counts_only_the_range_of_g():
    G = with_spectrum(24, 24, np.linspace(0.3, 1.0, 12))  # rank 12 of 24
    out = newton_schulz(G, 30, CUBIC, dtype=torch.float64)
    assert polar_error(out, G) < 1e-9
    assert orthogonality_error(out) == pytest.approx(np.sqrt(0.5), abs=1e-6)  # 12 zero singular values
    assert polar_error(torch.full((24, 24), float("nan")), G) == float("inf")


def test_schedules_and_their_cost():
    assert matmul_count(as_schedule(MUON_QUINTIC, 5)) == 15
    assert matmul_count(as_schedule(CUBIC, 5)) == 10
    assert matmul_count([(2.0,), (1.5, -0.5), (1, 2, 3, 4)]) == 6
    G = torch.randn(16, 8)
    same = newton_schulz(G, None, [MUON_QUINTIC] * 3)
    assert torch.allclose(same, newton_schulz(G, 3, MUON_QUINTIC))
    with pytest.raises(ValueError):
        as_schedule(MUON_QUINTIC)  # one tuple needs a step count
    with pytest.raises(ValueError):
        newton_schulz(torch.randn(5), 5)
