"""hifo.problems.ridge_bandits: the two phases of SGD on a single-index bandit (Rajaraman & Han)."""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from hifo.problems.ridge_bandits import (AUTHORS_CONSTANTS, PAPER_CONSTANTS, burn_in_length, explore_then_commit,
                                         first_time, fixed_schedule, make_instance, mean_field_schedule,
                                         paper_burn_in_length, paper_schedule, run_sgd, run_ucb, two_phase_schedule)

R, T, SIGMA = 8, 4000, 0.1
DIMS = (8, 16, 32)


def _instances(d: int) -> tuple[np.ndarray, np.ndarray]:
    pairs = [make_instance(d, s) for s in range(R)]
    return np.stack([p[0] for p in pairs]), np.stack([p[1] for p in pairs])


@lru_cache(maxsize=None)
def _times(link: str, d: int) -> tuple[float, float]:
    """Median rounds until m_t >= 0.5 (search) and from there to m_t >= 0.8 (climb), fixed step."""
    ts, th0 = _instances(d)
    tr = run_sgd(ts, th0, link, *fixed_schedule(T, d), SIGMA, 5)
    t5 = np.median([first_time(o, 0.5) for o in tr.overlap])
    t8 = np.median([first_time(o, 0.8) for o in tr.overlap])
    return float(t5), float(t8 - t5)


def test_batched_run_matches_shape_and_regret_definition():
    ts, th0 = make_instance(5, 0)
    tr = run_sgd(ts, th0, "cubic", *fixed_schedule(50, 5), 0.0, 1)
    assert tr.regret.shape == tr.overlap.shape == (50,)
    assert np.all(tr.regret >= 0) and np.isclose(tr.overlap[0], ts @ th0)
    assert np.all(np.diff(tr.cumulative) >= 0)


def test_burn_in_grows_faster_with_d_for_a_link_flat_at_zero():
    """Burn-in: the search time to m = 0.5 grows with d, much faster for f = x^3 than for f = x."""
    def exponent(link):
        return np.polyfit(np.log(DIMS), np.log([_times(link, d)[0] for d in DIMS]), 1)[0]
    assert exponent("cubic") > exponent("linear") + 0.4
    assert exponent("linear") > 1.0


def test_search_then_fast_climb_for_the_cubic_link():
    """Two phases: for f = x^3 at d = 32 the search dominates the climb from 0.5 to 0.8; for f = x it does not."""
    search, climb = _times("cubic", 32)
    assert search > 2 * climb
    search_lin, climb_lin = _times("linear", 32)
    assert search_lin < climb_lin


def test_learning_phase_schedule_beats_the_fixed_step():
    """After burn-in the decaying schedule's per-round regret falls well below the fixed step's."""
    ts, th0 = _instances(16)
    two = run_sgd(ts, th0, "linear", *two_phase_schedule(T, 16, 1), SIGMA, 5)
    fixed = run_sgd(ts, th0, "linear", *fixed_schedule(T, 16), SIGMA, 5)
    tail = slice(3 * T // 4, T)
    assert two.regret[:, tail].mean() < 0.5 * fixed.regret[:, tail].mean()
    assert two.overlap[:, -1].mean() > 0.98


def test_explore_then_commit_commits_to_its_estimate():
    ts, _ = make_instance(8, 3)
    tr = explore_then_commit(ts, "linear", 500, 400, SIGMA, 2)
    assert np.allclose(tr.regret[400:], tr.regret[-1]) and tr.overlap[-1] > 0.9


def test_mean_field_learning_phase_beats_the_guessed_one():
    """Our drift-derived learning phase (lam ~ t^-1/4, eta ~ t^-1/2 with derived constants) after the same
    burn-in: lower regret after burn-in than the guessed constants of two_phase_schedule."""
    ts, th0 = _instances(16)
    derived = run_sgd(ts, th0, "linear", *mean_field_schedule(T, 16, 1, SIGMA), SIGMA, 5)
    guessed = run_sgd(ts, th0, "linear", *two_phase_schedule(T, 16, 1), SIGMA, 5)
    tail = slice(T // 2, T)
    assert derived.regret[:, tail].mean() < 0.7 * guessed.regret[:, tail].mean()
    eta, lam = mean_field_schedule(T, 16, 1, SIGMA)
    late = np.arange(T) >= burn_in_length(16, 1)
    assert np.all(np.diff(lam[late]) <= 0) and np.all(np.diff(eta[late]) <= 0) and lam[late][-1] < 0.2


def test_oful_learns_the_linear_bandit_and_glm_ucb_a_flat_link():
    ts, _ = _instances(8)
    oful = run_ucb(ts[:4], "linear", 1500, SIGMA, 3)
    assert oful.overlap[:, -1].mean() > 0.95 and oful.regret[:, -300:].mean() < 0.1
    glm = run_ucb(ts[:4], "quadratic", 1500, SIGMA, 3)
    assert glm.overlap[:, -1].mean() > 0.9 and glm.regret[:, -300:].mean() < 0.2
    assert np.all(oful.regret >= 0) and np.all(glm.regret >= 0)


# --- the paper authors' schedule (paper_schedule: their simulation code's form, our train-picked constants) ---

def _paper_run(link: str, degree: int, d: int, schedule_degree: int, extra: int = 1000):
    """SGD under paper_schedule built for ``schedule_degree`` on ``link``; the horizon is the right schedule's
    burn-in (for ``degree``) plus ``extra`` learning rounds. Returns the trace and that burn-in length."""
    burn = paper_burn_in_length(d, degree)
    ts, th0 = _instances(d)
    tr = run_sgd(ts, th0, link, *paper_schedule(burn + extra, d, schedule_degree), SIGMA, 7)
    return tr, burn


def test_paper_burn_in_length_scales_as_the_staged_schedule_implies():
    """T_b = floor(sum_k c_Delta d (m_k - m_(k-1)) / (eta_k f'(m_k))) with eta_k = c_eta f'(m_k) / (d m_k): for f = x^p
    that is ~ d^2 (p = 1), ~ d^2 log d (p = 2), ~ d^p (p = 3). A schedule that ignored f' (or took f'(1)) would
    give d^2 for every link."""
    def exponent(p):
        return np.log(paper_burn_in_length(256, p) / paper_burn_in_length(64, p)) / np.log(4.0)
    assert abs(exponent(1) - 2.0) < 0.05 and 2.05 < exponent(2) < 2.3 and abs(exponent(3) - 3.0) < 0.05
    eta, lam = paper_schedule(paper_burn_in_length(16, 3) + 10, 16, 3)
    assert np.all(np.diff(eta[:paper_burn_in_length(16, 3)]) >= 0)  # eta_k ~ f'(m_k) / m_k = 3 m_k grows by stage
    assert np.all(lam[:-10] == PAPER_CONSTANTS["lam_burn"]) and lam[-1] == PAPER_CONSTANTS["lam_cap"]


def test_paper_schedule_has_a_distinct_burn_in_then_learns():
    """The paper's claim: SGD first goes through a burn-in (for x^3 at d = 24 the overlap needs a large share of the
    scheduled burn-in to reach 0.5, and then climbs to 0.9 faster than that), and with the schedule leaves it by its end
    and then learns (final overlap near 1, tail regret a small fraction of the fixed step's)."""
    tr, burn = _paper_run("cubic", 3, 24, 3)
    hit5 = np.median([first_time(o, 0.5) for o in tr.overlap])
    hit9 = np.median([first_time(o, 0.9) for o in tr.overlap])
    assert hit5 > 0.25 * burn and hit9 - hit5 < hit5 and hit9 < burn
    assert np.median(tr.overlap[:, burn]) > 0.9 and tr.overlap[:, -1].mean() > 0.95
    ts, th0 = _instances(24)
    fixed = run_sgd(ts, th0, "cubic", *fixed_schedule(tr.regret.shape[1], 24), SIGMA, 7)
    assert tr.regret[:, -500:].mean() < 0.25 * fixed.regret[:, -500:].mean()


def test_paper_burn_in_must_be_built_for_the_link():
    """A wrong schedule fails: f = x's staged burn-in (eta_k = c_eta / (d m_k), short stages) used for f = x^3 at
    d = 24 is still searching when the x^3 schedule has long finished (overlap below 0.6, against above 0.9)."""
    right, burn = _paper_run("cubic", 3, 24, 3)
    wrong, _ = _paper_run("cubic", 3, 24, 1)
    assert np.median(right.overlap[:, burn]) > 0.9
    assert np.median(wrong.overlap[:, burn]) < 0.6 and wrong.overlap[:, -1].mean() < 0.6


def test_paper_schedule_with_the_authors_constants_outlasts_the_evaluator_horizons():
    """With the authors' own constants (fitted to N(0, 1) noise) the burn-in alone is longer than ridge_schedule's
    3,000-round train horizons for every train instance (why the baseline uses constants picked on train)."""
    for d, p in ((10, 1), (16, 1), (10, 2), (14, 2), (8, 3), (12, 3)):
        assert paper_burn_in_length(d, p, AUTHORS_CONSTANTS["c_eta"], AUTHORS_CONSTANTS["c_delta"]) > 3000
        assert paper_burn_in_length(d, p) < 1000
