"""The reconstruction step: a winding field from the oriented triangles by a Helmholtz-Hodge
decomposition on the Delaunay complex, and a simply connected solid carved along it.

The seed paper ("Guaranteed Simply Connected Mesh Reconstruction from an Unorganized Point Cloud",
ICLR 2026, OpenReview ``jjEnTBsffi``; no official code found) reconstructs from oriented triangles a
winding number field, takes its integrable part by a Helmholtz-Hodge decomposition (HHD), and
extracts a closed mesh that is simply connected by construction. Only its summary could be read
through our tools, so this is our discretisation of that description, at small scale:

* **Oriented triangles as a cochain.** Each Delaunay face ``f`` carries ``score[f]`` in [-1, 1]
  (> 0: the interior is on the side ``face_tets[f, 0]``; the magnitude: confidence). For the inside
  indicator ``chi`` of a solid made of tetrahedra (``chi = 0`` on the outside of the convex hull), the
  dual coboundary ``(G chi)[f] = chi[pos] - chi[neg]`` is exactly the oriented boundary: +1 / -1 on the
  boundary faces with the interior on the pos / neg side, 0 elsewhere. A consistent orientation of a
  closed surface *is* such a coboundary; errors add a rotational part.
* **HHD on the dual graph** (tetrahedra and the outside as nodes, faces as edges): ``score = G chi + r``
  with ``r`` orthogonal to the gradients (``G^T r = 0``: divergence-free, the curl and harmonic parts).
  ``chi`` solves the Poisson equation ``G^T G chi = G^T score`` with the Dirichlet condition
  ``chi = 0`` outside (winding number 0 at infinity): :func:`winding_field`. For an exact cochain the
  field equals the indicator (``tests/problems/surface_recon``), as a winding number of a closed
  surface does (1 inside, 0 outside); for a noisy one it is the least-squares winding field.
* **Extraction with the guarantee** (:func:`carve`): tetrahedra are removed from the convex hull
  inwards, lowest winding value first, each only if the remaining solid stays a topological ball
  (the link condition of :func:`._recon.grow`), until every removable tet has winding value
  >= ``level`` (0.5, the winding-number threshold). The solid is a ball at every step, so its boundary
  is a closed 2-manifold of genus 0 whatever the scores.

Departures (stated in ``docs/families/surface_recon.md``): the paper's winding field is evaluated from
the oriented triangles (and its HHD taken on a volumetric mesh); ours is the Poisson solution on the
Delaunay dual graph with unit weights (no Hodge-star metric weights); the extraction is our
ball-preserving carving rather than the paper's construction, which we could not read.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
from scipy.sparse import coo_matrix, csgraph
from scipy.sparse.linalg import splu, spsolve

from hifo.problems._repro import quantize
from hifo.problems.surface_recon._mesh import Complex, oriented_boundary
from hifo.problems.surface_recon._recon import (
    check_scores,
    edge_pairs,
    face_quality,
    features,
    grow,
    spectral_orientation,
)

LEVEL = 0.5  # the winding-number threshold between outside (0) and inside (1)
FLOOR: float | None = None  # None: the plain HHD of the score cochain (see winding_field)


def _laplacian(cx: Complex, weight: np.ndarray) -> Any:
    """``G^T W G`` over the tets (sparse, CSC): every face adds its weight to the degree of each of its
    (one or two) tets; an inner face also couples its two tets; a hull face couples to the outside, fixed
    at 0 (the Dirichlet condition)."""
    m = len(cx.tets)
    pos, neg = cx.face_tets[:, 0], cx.face_tets[:, 1]
    inner = (pos >= 0) & (neg >= 0)
    deg = np.zeros(m)
    np.add.at(deg, pos[pos >= 0], weight[pos >= 0])
    np.add.at(deg, neg[neg >= 0], weight[neg >= 0])
    i, j = pos[inner], neg[inner]
    rows = np.concatenate([np.arange(m), i, j])
    cols = np.concatenate([np.arange(m), j, i])
    vals = np.concatenate([deg, -weight[inner], -weight[inner]])
    return coo_matrix((vals, (rows, cols)), shape=(m, m)).tocsc()


def _divergence(cx: Complex, flux: np.ndarray) -> np.ndarray:
    """``G^T flux`` (columns of ``flux`` are separate cochains): +flux on the pos tet, -flux on the neg tet."""
    pos, neg = cx.face_tets[:, 0], cx.face_tets[:, 1]
    rhs = np.zeros((len(cx.tets),) + flux.shape[1:])
    np.add.at(rhs, pos[pos >= 0], flux[pos >= 0])
    np.add.at(rhs, neg[neg >= 0], -flux[neg >= 0])
    return rhs


def winding_field(cx: Complex, score: np.ndarray, floor: float | None = FLOOR) -> np.ndarray:
    """Per tetrahedron, the gradient (curl-free) part of the oriented-face cochain: the least-squares
    ``chi`` with ``chi[pos] - chi[neg] ~ score`` on every face and ``chi = 0`` outside the hull.

    ``floor`` set: weighted variant, target ``sign(score)`` with weight ``|score| + floor`` (measured worse
    on the evaluator's train set with floor 0.05 and 1.0: see ``docs/families/surface_recon.md``)."""
    score = np.asarray(score, dtype=float)
    if floor is None:
        weight, target = np.ones(len(score)), score
    else:
        weight, target = np.abs(score) + floor, np.sign(score)
    chi = spsolve(_laplacian(cx, weight), _divergence(cx, weight * target))
    # on the grid: the carving's order and its threshold must not depend on the solver's last bits (_repro)
    return quantize(chi)


def orient_by_winding(cx: Complex, score: np.ndarray, pairs: np.ndarray, pair_weight: np.ndarray) -> np.ndarray:
    """Fix the global sign of each connected patch of candidate faces (linked by pairs of positive weight)
    so that its own winding field is positive on average over the volume: a closed surface oriented with
    the interior on the inner side has winding number +1 inside, never -1. ``score`` with the signs fixed."""
    score = np.asarray(score, dtype=float).copy()
    cand = np.flatnonzero(score != 0)
    if not len(cand):
        return score
    where = np.full(len(score), -1)
    where[cand] = np.arange(len(cand))
    keep = (pair_weight > 0) & (where[pairs[:, 0]] >= 0) & (where[pairs[:, 1]] >= 0)
    a, b = where[pairs[keep, 0]], where[pairs[keep, 1]]
    graph = coo_matrix((np.ones(len(a)), (a, b)), shape=(len(cand), len(cand)))
    n_comp, labels = csgraph.connected_components(graph, directed=False)
    flux = np.zeros((len(score), n_comp))
    flux[cand, labels] = score[cand]
    fields = splu(_laplacian(cx, np.ones(len(score)))).solve(_divergence(cx, flux))
    vote = quantize(cx.volumes @ fields)  # on the grid: the sign decides (_repro)
    flip = np.where(vote < 0, -1.0, 1.0)
    score[cand] *= flip[labels]
    return score


def carve(cx: Complex, score: np.ndarray, level: float = LEVEL) -> tuple[np.ndarray, dict[str, float]]:
    """The inside tets of the ball carved from the hull along the winding field of ``score``."""
    return grow(cx, score, carve=True, wall=level, cost=winding_field(cx, score))


def reconstruct(cx: Complex, score: np.ndarray, level: float = LEVEL) -> np.ndarray:
    """The oriented boundary triangles (outward normals) of the ball carved for ``score``."""
    inside, _ = carve(cx, score, level)
    return oriented_boundary(cx, inside)


def initial_scores(cx: Complex) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(spectral orientation scores, quality, pairs, pair signs, pair weights)."""
    q = face_quality(cx)
    P, S, W = edge_pairs(cx, q)
    return orient_by_winding(cx, spectral_orientation(cx, q, P, S, W), P, W), q, P, S, W


def alternate(cx: Complex, rule: Callable[..., Any], rounds: int = 3, level: float = LEVEL
              ) -> tuple[np.ndarray, list[dict[str, float]]]:
    """Reconstruction and reorientation in turn; returns the final orientation scores and per-round stats.

    ``rule(score, quality, inside_pos, inside_neg, on_boundary, pairs, pair_sign, pair_weight,
    iteration)`` returns the next scores (clipped to [-1, 1]). The final reconstruction is
    ``reconstruct(cx, scores, level)``.
    """
    score, q, P, S, W = initial_scores(cx)
    history = []
    for it in range(rounds):
        inside, stats = carve(cx, score, level)
        history.append(stats)
        feats = features(cx, inside)
        new = rule(score=score.copy(), quality=q.copy(), inside_pos=feats["inside_pos"],
                   inside_neg=feats["inside_neg"], on_boundary=feats["on_boundary"], pairs=P.copy(),
                   pair_sign=S.copy(), pair_weight=W.copy(), iteration=it)
        score = check_scores(new, len(cx.faces))
    return score, history
