"""A CPU-sized image-measure domain after the DMS paper's "Triangle Arts (TA)" (Section 6.2).

In TA (MNIST) a solution paints ``n`` translucent grey triangles on a black canvas; the
*measure is the image itself* (784-D), the archive is a CVT whose centroids are dataset images,
so "diversity" is defined by a dataset rather than by hand-made measures, and the objective is
``1 - MSE`` to the nearest dataset image. Here the dataset is scikit-learn's bundled 8 x 8
digits (1,797 images, no download), so the measure space is 64-D; everything else follows the
reference renderer:

* parameters ``(n, 8)`` per solution: ``x0 y0 x1 y1 x2 y2 grey alpha``; each feature is min-max
  normalised over the triangles of the solution, vertices scaled to pixel coordinates and
  truncated to integers, ``alpha`` multiplied by ``alpha_scale`` (0.5);
* a pixel is inside a triangle when the three edge cross products share a sign; triangles are
  composited in order, ``c <- c (1 - a) + grey a`` inside, then clipped to ``[0, 1]``.

Images can be passed in (``images``) instead of loading scikit-learn's digits.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

_FEATURES = 8


def load_digit_images() -> np.ndarray:
    """scikit-learn's 8 x 8 digits scaled to ``[0, 1]``, shape ``(1797, 64)`` (optional dependency)."""
    try:
        from sklearn.datasets import load_digits
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("TrianglesDigits needs scikit-learn for its digits dataset "
                          "(pip install scikit-learn), or pass images=...") from exc
    return load_digits().data.astype(np.float64) / 16.0


def render_triangles(params: np.ndarray, n_triangles: int, h: int, w: int,
                     alpha_scale: float = 0.5) -> np.ndarray:
    """Render a batch of parameter vectors to grey images of shape ``(batch, h, w)``."""
    p = np.asarray(params, dtype=np.float64).reshape(-1, n_triangles, _FEATURES)
    lo, hi = p.min(axis=1, keepdims=True), p.max(axis=1, keepdims=True)
    p = (p - lo) / np.where(hi > lo, hi - lo, 1.0)  # a constant feature maps to 0
    rows = (p[:, :, 0:6:2] * (h - 1)).astype(np.int64)  # x -> row, as in the reference
    cols = (p[:, :, 1:6:2] * (w - 1)).astype(np.int64)
    grey, alpha = p[:, :, 6], p[:, :, 7] * alpha_scale
    pr, pc = np.meshgrid(np.arange(h), np.arange(w), indexing="ij")
    pr, pc = pr.reshape(1, -1), pc.reshape(1, -1)
    canvas = np.zeros((len(p), h * w))
    for t in range(n_triangles):
        r, c = rows[:, t, :, None], cols[:, t, :, None]  # (batch, 3 vertices, 1)
        crosses = []
        for a, b in ((0, 1), (1, 2), (2, 0)):
            # z of (pixel - v_a) x (v_b - v_a)
            crosses.append((pr - r[:, a]) * (c[:, b] - c[:, a]) - (pc - c[:, a]) * (r[:, b] - r[:, a]))
        c0, c1, c2 = crosses
        inside = ((c0 >= 0) & (c1 >= 0) & (c2 >= 0)) | ((c0 <= 0) & (c1 <= 0) & (c2 <= 0))
        a = alpha[:, t, None]
        canvas = np.where(inside, canvas * (1 - a) + grey[:, t, None] * a, canvas)
        np.clip(canvas, 0.0, 1.0, out=canvas)
    return canvas.reshape(-1, h, w)


@dataclass(frozen=True)
class TrianglesDigits:
    """Triangles painted to look like 8 x 8 digits; measures are the 64 pixel values.

    ``num_centroids`` dataset images (drawn with ``seed``) are both the archive's CVT
    centroids and the references of the objective ``1 - min_c MSE(image, c)``.
    """

    n_triangles: int = 10
    num_centroids: int = 1000
    seed: int = 42
    alpha_scale: float = 0.5
    images: np.ndarray | None = field(default=None, compare=False, repr=False)
    h: int = 8
    w: int = 8

    def __post_init__(self) -> None:
        imgs = load_digit_images() if self.images is None else np.asarray(self.images, dtype=np.float64)
        imgs = imgs.reshape(len(imgs), -1)
        if imgs.shape[1] != self.h * self.w:
            raise ValueError(f"images must have {self.h * self.w} pixels")
        rng = np.random.default_rng(self.seed)
        pick = rng.choice(len(imgs), size=min(self.num_centroids, len(imgs)), replace=False)
        object.__setattr__(self, "archive_centroids", imgs[pick])
        object.__setattr__(self, "_x0", rng.random(self.solution_dim))

    @property
    def name(self) -> str:
        return f"triangles_digits_{self.n_triangles}t"

    @property
    def solution_dim(self) -> int:
        return self.n_triangles * _FEATURES

    @property
    def measure_dim(self) -> int:
        return self.h * self.w

    @property
    def measure_bounds(self) -> tuple[np.ndarray, np.ndarray]:
        return np.zeros(self.measure_dim), np.ones(self.measure_dim)

    @property
    def objective_bounds(self) -> tuple[float, float]:
        return 0.0, 1.0

    def initial_solution(self) -> np.ndarray:
        return self._x0.copy()  # type: ignore[attr-defined]  # set in __post_init__; uniform in [0, 1)^d, like the reference's initial solution

    def evaluate(self, solutions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        x = np.asarray(solutions, dtype=np.float64)
        if x.ndim != 2 or x.shape[1] != self.solution_dim:
            raise ValueError(f"solutions must have shape (n, {self.solution_dim}), got {x.shape}")
        measures = render_triangles(x, self.n_triangles, self.h, self.w, self.alpha_scale).reshape(len(x), -1)
        c = self.archive_centroids  # type: ignore[attr-defined]  # set in __post_init__
        sq = np.maximum(np.sum(measures**2, 1)[:, None] - 2 * measures @ c.T + np.sum(c**2, 1)[None, :], 0.0)
        return 1.0 - sq.min(axis=1) / self.measure_dim, measures
