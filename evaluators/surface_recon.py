"""Evolving the reorientation rule of simply connected surface reconstruction.

The algorithm is ours (:mod:`hifo.problems.surface_recon`): the 3D Delaunay complex of a noisy point
cloud sampled from a genus-0 shape, a surface likelihood per Delaunay face, a spectral initial
orientation of the candidate triangles, and rounds of *reconstruction* (carving a ball of
tetrahedra from the convex hull under the link condition, so the surface is always closed,
manifold and of genus 0) and *reorientation*. The candidate is the reorientation rule: given the
current per-face scores, the face likelihoods, which side of each face the last reconstruction
put inside, and the candidate-pair graph (arrays only), it returns the next scores.

In the sandbox the rule runs in a slot process of its own (``slot_process``): the points, the
Delaunay complex, the carving and the instance's shape name stay in the algorithm's process.
The child returns the final scores (one float per Delaunay face). The parent clips them to
[-1, 1], **rebuilds** the reconstruction from them with its own code and measures, against dense
noise-free samples of the true shape it alone holds: ``chamfer`` (symmetric Chamfer distance,
minimised), ``genus0`` (1 when closed, edge- and vertex-manifold, connected, Euler characteristic
2), ``euler`` and ``faces``.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Callable

import numpy as np

from hifo.evaluators.base import Evaluator, FunctionTemplate, InfeasibleSolution, Limits
from hifo.problems.surface_recon import (
    Complex,
    alternate,
    build_complex,
    chamfer,
    check_scores,
    reconstruct,
    sample,
    topology,
    truth,
)

ROUNDS = 3
WALL = 0.0  # carving runs through every tet whose faces' scores do not say "inside" (the library default
# -0.3 stops earlier and stays near the convex hull; at 0 the orientation drives the carving)
TRUTH_SAMPLES = 8000

_DOCSTRING = """Reorients the candidate triangles after one reconstruction round.

Every Delaunay face f has a reference normal; a score s[f] > 0 says "f is a surface triangle
with the interior on its normal's (pos) side", s[f] < 0 the opposite side, |s[f]| the confidence.
The reconstruction carves tetrahedra from the convex hull inwards, the tet with the least evidence
of being inside first (evidence: the sum of its faces' scores toward it), stops when every frontier
tet's evidence is positive, and always keeps the solid a topological ball.
    score: (F,) current scores in [-1, 1] (round 0: the spectral orientation).
    quality: (F,) surface likelihood in [0, 1] (normal agrees with local PCA normals, short edges).
    inside_pos, inside_neg: (F,) bool, the last reconstruction has the tet on that side inside.
    on_boundary: (F,) bool, f is on the reconstructed surface (inside_pos != inside_neg).
    pairs: (P, 2) int, candidate faces (quality > 0.2) sharing an edge.
    pair_sign: (P,) +1/-1, consistent orientations satisfy sign(s[i]) * sign(s[j]) == pair_sign.
    pair_weight: (P,) float, quality[i] * quality[j].
    iteration: round index (0, 1, 2).

Return:
    (F,) float array, the next scores (clipped to [-1, 1]); the final round's scores define the
    reconstruction that is scored.
"""

_SIGNATURE = ("def reorient(score: np.ndarray, quality: np.ndarray, inside_pos: np.ndarray, "
              "inside_neg: np.ndarray, on_boundary: np.ndarray, pairs: np.ndarray, pair_sign: np.ndarray, "
              "pair_weight: np.ndarray, iteration: int) -> np.ndarray:")

_VOTE_BODY = """    # Blend the current score, the last reconstruction's verdict on boundary faces, and the
    # weighted consistency vote of edge-adjacent candidates.
    verdict = np.where(on_boundary, np.where(inside_pos, 1.0, -1.0), 0.0) * quality
    vote = np.zeros_like(score)
    np.add.at(vote, pairs[:, 0], pair_weight * pair_sign * np.sign(score[pairs[:, 1]]))
    np.add.at(vote, pairs[:, 1], pair_weight * pair_sign * np.sign(score[pairs[:, 0]]))
    norm = np.zeros_like(score)
    np.add.at(norm, pairs[:, 0], pair_weight)
    np.add.at(norm, pairs[:, 1], pair_weight)
    vote = np.where(norm > 0, vote / np.maximum(norm, 1e-12), 0.0) * quality
    return np.clip(0.5 * score + 0.3 * verdict + 0.2 * vote, -1.0, 1.0)
"""

_KEEP_BODY = "    # No reorientation: the spectral orientation alone.\n    return score\n"

_ADOPT_BODY = """    # Adopt the reconstruction: boundary faces take its orientation, all others are dropped.
    return np.where(on_boundary, np.where(inside_pos, 1.0, -1.0), 0.0) * quality
"""

_TEMPLATE = FunctionTemplate(name="reorient", signature=_SIGNATURE, docstring=_DOCSTRING,
                             baseline_body=_VOTE_BODY)


def _source(body: str) -> str:
    return _TEMPLATE.source(body)


@dataclass(frozen=True)
class SurfaceInstance:
    name: str
    shape: str
    complex: Complex


_SHAPES = ("sphere", "ellipsoid", "bumpy", "superquadric", "dented")
# name -> (shape, points, noise, seed)
_SPECS = {
    "train": tuple((f"{s}_n500_s0.01", s, 500, 0.01, 0) for s in _SHAPES),
    "test": tuple((f"{s}_n600_s{z}", s, 600, z, 1) for s in _SHAPES for z in (0.005, 0.02)),
}


@lru_cache(maxsize=None)
def _load(instance_set: str) -> tuple[SurfaceInstance, ...]:
    if instance_set not in _SPECS:
        raise SurfaceRecon.unknown_instance_set(instance_set, _SPECS)
    return tuple(SurfaceInstance(name, shape, build_complex(sample(shape, n, noise, seed)))
                 for name, shape, n, noise, seed in _SPECS[instance_set])


@lru_cache(maxsize=None)
def _truth(shape: str) -> np.ndarray:
    return truth(shape, TRUTH_SAMPLES)


class SurfaceRecon(Evaluator):
    """Chamfer distance of a genus-0 reconstruction with an evolved reorientation rule.

    Instance sets: ``train`` (5 shapes, 500 points, noise 1 % of the radius) and ``test`` (5 shapes,
    600 points, noise 0.5 % and 2 %). Shapes: sphere, ellipsoid, bumpy sphere, cube-like
    superquadric, sphere with six deep dents (the one where the convex hull is clearly wrong).
    Per instance: ``chamfer``, ``genus0``, ``euler``, ``faces``.
    """

    name = "surface_recon"
    description = (
        "Surface reconstruction from a noisy point cloud sampled from a closed genus-0 shape. The "
        "Delaunay faces are candidate triangles with an orientation score (which side is the inside); a "
        "spectral method gives the first scores, then reconstruction (carving a ball of tetrahedra from the "
        "convex hull, the tets whose faces' scores say 'outside' first, stopping when none is left) and reorientation "
        "alternate for 3 rounds. Design the reorientation rule: from the current scores, each face's "
        "surface likelihood, which side the last reconstruction put inside, and the edge-adjacency of "
        "candidates with their consistency signs, return the next scores. The final reconstruction is "
        "always closed and genus 0; minimise its Chamfer distance to the true surface."
    )
    direction = "minimize"
    primary_metric = "chamfer"
    template = _TEMPLATE
    instance_sets = ("train", "test")
    limits = Limits(timeout_s=120.0, cpu_s=180, memory_mb=4096)
    baselines = {"vote": _source(_VOTE_BODY), "keep": _source(_KEEP_BODY), "adopt": _source(_ADOPT_BODY)}
    # Measured in-process by tests/evaluators/test_surface_recon.py (train) and its slow test (test);
    # reproduced by `hifo evaluate --problem surface_recon --heuristic <name> --json`. Bit-identical on
    # x86-64 CPU with AVX2 (fitness_rtol 0): points, likelihoods and scores are snapped to a grid
    # (:mod:`hifo.problems._repro`), so the carving's order and thresholds do not depend on the last
    # bits, and the spectral orientation's eigensolver runs in the sandbox child on the pinned AVX2
    # kernels (:mod:`hifo.sandbox._numeric`): the signs of its tiny entries, which decide the
    # orientation, are the eigensolver's rounding (``python -m hifo.evaluators.determinism
    # surface_recon --configs plain narrow unpinned`` shows the unpinned run differing by 35 %).
    reference_figures = {
        "vote": {"train": {"chamfer": 0.039967, "genus0": 1.0, "faces": 911.6},
                 "test": {"chamfer": 0.035527, "genus0": 1.0, "faces": 1093.6}},
        "keep": {"train": {"chamfer": 0.040357, "genus0": 1.0, "faces": 914.0},
                 "test": {"chamfer": 0.037486, "genus0": 1.0, "faces": 1099.8}},
        "adopt": {"train": {"chamfer": 0.043543, "genus0": 1.0, "faces": 920.0},
                  "test": {"chamfer": 0.04267, "genus0": 1.0, "faces": 1122.2}},
    }
    tags = ("geometry", "surface reconstruction", "delaunay", "topology")
    # issue 28: the candidate in a process of its own, a fresh one per instance (sandbox/_slotproc.py): it gets
    # the arrays of the docstring (3 calls per instance), never the points, the complex or the shape's name
    slot_process = True

    def load_instances(self, instance_set: str) -> list[SurfaceInstance]:
        return list(_load(instance_set))

    @staticmethod
    def solve(heuristic: Callable[..., Any], instance: SurfaceInstance) -> dict[str, Any]:
        scores, _ = alternate(instance.complex, heuristic, rounds=ROUNDS, wall=WALL)
        return {"scores": [float(x) for x in scores]}

    def score(self, instance: SurfaceInstance, solution: Any) -> dict[str, float]:
        if not isinstance(solution, dict) or not isinstance(solution.get("scores"), list):
            raise InfeasibleSolution(f"{instance.name}: the solution must be a dict with a 'scores' list")
        values = solution["scores"]
        if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
            raise InfeasibleSolution(f"{instance.name}: every score must be a number")
        try:
            scores = check_scores(values, len(instance.complex.faces))
        except ValueError as exc:
            raise InfeasibleSolution(f"{instance.name}: {exc}") from None
        cx = instance.complex
        tris = reconstruct(cx, scores, wall=WALL)
        topo = topology(tris)
        return {"chamfer": chamfer(cx.points, tris, _truth(instance.shape), TRUTH_SAMPLES),
                "genus0": topo["genus0"], "euler": topo["euler"], "faces": topo["faces"]}


__all__ = ["SurfaceInstance", "SurfaceRecon"]
