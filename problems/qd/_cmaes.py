"""CMA-ES (Hansen, "The CMA Evolution Strategy: A Tutorial", arXiv:1604.00772, and Hansen's
reference ``purecma.py``), ask/tell form.

The emitters of CMA-ME / CMA-MAE / DMS rank the batch themselves (by improvement), so
:meth:`CMAEvolutionStrategy.tell` takes the ranking (best first) and the number of parents
``mu``; recombination weights and learning rates follow the tutorial's defaults for that
``mu`` (positive weights ``w_i ~ ln(mu + 1/2) - ln i``, no active update):

* mean ``m <- sum_i w_i x_{i:lambda}``;
* step-size path and CSA, ``p_s <- (1-c_s) p_s + sqrt(c_s(2-c_s) mu_eff) C^{-1/2} (m - m')/sigma``
  (tutorial eq. 43) and ``sigma <- sigma exp(min(1, c_s/d_s (||p_s||^2 / n - 1) / 2))`` --
  purecma's squared-norm form of eq. 44, which is what pyribs and hence the DMS experiments use
  (with the tutorial's ``||p_s|| / E||N(0,I)||`` form our CMA-MAE covered ~40% fewer cells than
  pyribs's on 10-D LP sphere after 270,000 evaluations: sigma grew more slowly);
* covariance path with purecma's ``h_sigma`` stall test and the rank-one + rank-mu update
  (eqs. 45-47). pyribs 0.12 differs here: its rank-one term is scaled by ``c_1^2`` and its
  ``p_c`` is not divided by ``sigma``. ``update="hansen"`` (default) keeps Hansen's update;
  ``update="pyribs"`` reproduces pyribs 0.12's (``ribs.emitters.opt.CMAEvolutionStrategy``
  with the truncation weights: that ``p_c``, the ``c_1^2`` rank-one term, its eigensystem
  refresh test ``evals > last + gap`` and its symmetrisation ``max(C, C^T)``), so the two
  implementations can be compared like for like (checked step by step against pyribs in the
  tests when ``ribs`` is installed).

The eigendecomposition of ``C`` is refreshed lazily, once every
``0.5 lambda / (n (c_1 + c_mu))`` evaluations (the amortisation of Hansen's ``purecma``, which
pyribs uses too). No bound handling: the QD benchmarks here are unbounded.
"""

from __future__ import annotations

import numpy as np


class CMAEvolutionStrategy:
    """One CMA-ES instance with ``batch_size`` (lambda) samples per iteration."""

    def __init__(self, solution_dim: int, sigma0: float, batch_size: int | None = None,
                 seed: int | np.random.SeedSequence | None = None, update: str = "hansen") -> None:
        if update not in ("hansen", "pyribs"):
            raise ValueError(f"unknown CMA-ES update {update!r} (hansen, pyribs)")
        self.update = update
        self.n = int(solution_dim)
        self.sigma0 = float(sigma0)
        self.batch_size = int(batch_size) if batch_size else 4 + int(3 * np.log(self.n))
        self._rng = np.random.default_rng(seed)
        *_, c1, cmu = self._strategy_params(self.batch_size // 2)
        # purecma's amortisation: refresh B, D once every 0.5 lambda / (n (c1 + c_mu)) evaluations.
        self._lazy_gap = 0.5 * self.batch_size / (self.n * (c1 + cmu))
        self._solutions: np.ndarray | None = None
        self.reset(np.zeros(self.n))

    def reset(self, x0: np.ndarray) -> None:
        """Restart from mean ``x0`` with step size ``sigma0`` and ``C = I``."""
        self.mean = np.array(x0, dtype=np.float64).reshape(self.n)
        self.sigma = self.sigma0
        self.pc = np.zeros(self.n)
        self.ps = np.zeros(self.n)
        self.cov = np.eye(self.n)
        self.eigvals = np.ones(self.n)
        self.eigvecs = np.eye(self.n)
        self.generation = 0
        self.evaluations = 0
        self._eig_at = 0

    def _strategy_params(self, mu: int):
        n = self.n
        w = np.log(mu + 0.5) - np.log(np.arange(1, mu + 1))
        w /= w.sum()
        mueff = 1.0 / np.sum(w**2)
        cc = (4 + mueff / n) / (n + 4 + 2 * mueff / n)
        cs = (mueff + 2) / (n + mueff + 5)
        c1 = 2 / ((n + 1.3) ** 2 + mueff)
        cmu = min(1 - c1, 2 * (mueff - 2 + 1 / mueff) / ((n + 2) ** 2 + mueff))
        damps = 1 + 2 * max(0.0, np.sqrt((mueff - 1) / (n + 1)) - 1) + cs
        return w, mueff, cc, cs, damps, c1, cmu

    def _update_eigensystem(self) -> None:
        if self.update == "pyribs":
            if self.evaluations <= self._eig_at + self._lazy_gap:
                return
            self.cov = np.maximum(self.cov, self.cov.T)
        else:
            if self.evaluations - self._eig_at < self._lazy_gap:
                return
            self.cov = np.triu(self.cov) + np.triu(self.cov, 1).T  # enforce symmetry
        vals, vecs = np.linalg.eigh(self.cov)
        self.eigvals = np.maximum(vals, 1e-20)  # C is PSD in exact arithmetic
        self.eigvecs = vecs
        self._eig_at = self.evaluations

    @property
    def condition_number(self) -> float:
        return float(self.eigvals.max() / self.eigvals.min())

    def ask(self) -> np.ndarray:
        """``lambda`` samples ``m + sigma B D z``, ``z ~ N(0, I)``."""
        self._update_eigensystem()
        z = self._rng.standard_normal((self.batch_size, self.n))
        y = (z * np.sqrt(self.eigvals)) @ self.eigvecs.T
        self._solutions = self.mean + self.sigma * y
        return self._solutions.copy()

    def tell(self, ranking: np.ndarray, num_parents: int) -> None:
        """Adapt from the last :meth:`ask` batch ranked best-first by ``ranking``."""
        if self._solutions is None:
            raise RuntimeError("tell() before ask()")
        self.evaluations += self.batch_size
        self.generation += 1
        if num_parents <= 0:
            return
        w, mueff, cc, cs, damps, c1, cmu = self._strategy_params(int(num_parents))
        parents = self._solutions[np.asarray(ranking)[:num_parents]]
        old_mean = self.mean
        self.mean = w @ parents
        step = (self.mean - old_mean) / self.sigma
        # C^{-1/2} step = B D^{-1} B^T step
        c_inv_sqrt_step = self.eigvecs @ ((self.eigvecs.T @ step) / np.sqrt(self.eigvals))
        self.ps = (1 - cs) * self.ps + np.sqrt(cs * (2 - cs) * mueff) * c_inv_sqrt_step
        ps_sq = float(self.ps @ self.ps)
        # purecma's stall test on the squared norm (same role as the tutorial's h_sigma)
        hsig = ps_sq / self.n / (1 - (1 - cs) ** (2 * self.generation)) < 2 + 4 / (self.n + 1)
        ys = (parents - old_mean) / self.sigma
        rank_mu = (ys * w[:, None]).T @ ys
        c1a = c1 * (1 - (1 - hsig) * cc * (2 - cc))  # compensates the stalled p_c (tutorial eq. 47)
        if self.update == "pyribs":  # p_c in solution units, rank-one term times c1^2
            self.pc = (1 - cc) * self.pc + hsig * np.sqrt(cc * (2 - cc) * mueff) * step * self.sigma
            rank_one = c1 * c1 * np.outer(self.pc, self.pc)
        else:
            self.pc = (1 - cc) * self.pc + hsig * np.sqrt(cc * (2 - cc) * mueff) * step
            rank_one = c1 * np.outer(self.pc, self.pc)
        self.cov = (1 - c1a - cmu * w.sum()) * self.cov + rank_one + cmu * rank_mu
        # CSA in purecma's squared-norm form, exp(cs/d (||p_s||^2/n - 1) / 2), capped at e:
        # the variant the DMS experiments ran (pyribs follows purecma here).
        self.sigma *= np.exp(min(1.0, (cs / damps) * (ps_sq / self.n - 1) / 2))

    def check_stop(self, ranking_values: np.ndarray) -> bool:
        """pycma's default stop conditions that CMA-ME uses to trigger a restart."""
        if self.condition_number > 1e14:
            return True
        if self.sigma * np.sqrt(self.eigvals.max()) < 1e-11:
            return True
        vals = np.asarray(ranking_values, dtype=np.float64)
        # A flat batch: best and worst ranking values equal.
        return len(vals) >= 2 and abs(float(vals.max() - vals.min())) < 1e-12
