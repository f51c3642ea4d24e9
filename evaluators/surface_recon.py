"""Evolving the reorientation rule of simply connected surface reconstruction.

The pipeline follows the seed paper ("Guaranteed Simply Connected Mesh Reconstruction from an
Unorganized Point Cloud", ICLR 2026) as far as its summary describes it (:mod:`hifo.problems.surface_recon`,
departures in ``docs/families/surface_recon.md``): the 3D Delaunay complex of a noisy point cloud sampled
from a genus-0 shape, a surface likelihood per Delaunay face, a spectral initial orientation of the
candidate triangles, and rounds of *reconstruction* (the winding field of the oriented triangles, the
gradient part of their Helmholtz-Hodge decomposition on the Delaunay dual graph, and a ball of
tetrahedra carved along it from the convex hull under the link condition, so the surface is always
closed, manifold and of genus 0) and *reorientation*. The candidate is the reorientation rule: given
the current per-face scores, the face likelihoods, which side of each face the last reconstruction put
inside, and the candidate-pair graph (arrays only), it returns the next scores. Most instances are
non-convex shapes (a C-shaped tube, a peanut, a six-armed star, ...), where the convex hull is a poor
answer and the fitness rewards carving.

In the sandbox the rule runs in a slot process of its own (``slot_process``): the points, the
Delaunay complex, the carving and the instance's shape name stay in the algorithm's process.
The child returns the final scores (one float per Delaunay face). The parent clips them to
[-1, 1], **rebuilds** the reconstruction from them with its own code and measures, against dense
noise-free samples of the true shape it alone holds: ``chamfer`` (symmetric Chamfer distance,
minimised), ``genus0`` (1 when closed, edge- and vertex-manifold, connected, Euler characteristic
2; a rebuilt surface that fails the check is infeasible, which the construction rules out), ``euler``
and ``faces``.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Callable

import numpy as np

from hifo.evaluators.base import Evaluator, FunctionTemplate, InfeasibleSolution, Limits, measured_figures
from hifo.problems.surface_recon import (
    LEVEL,
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
TRUTH_SAMPLES = 8000

_DOCSTRING = """Reorients the candidate triangles after one reconstruction round.

Every Delaunay face f has a reference normal; a score s[f] > 0 says "f is a surface triangle
with the interior on its normal's (pos) side", s[f] < 0 the opposite side, |s[f]| the confidence.
The reconstruction solves for a winding value per tetrahedron (0 outside the convex hull) whose jumps
across faces fit the scores in least squares (a jump of s[f] from the neg to the pos side), then
carves tetrahedra from the convex hull inwards, lowest winding value first, stops when every frontier
tet's value is >= 0.5, and always keeps the solid a topological ball.
    score: (F,) current scores in [-1, 1] (round 0: the spectral orientation).
    quality: (F,) surface likelihood in [0, 1] (normal agrees with local PCA normals, short edges).
    inside_pos, inside_neg: (F,) bool, the last reconstruction has the tet on that side inside.
    on_boundary: (F,) bool, f is on the reconstructed surface (inside_pos != inside_neg).
    pairs: (P, 2) int, candidate faces (quality > 0.2) sharing an edge.
    pair_sign: (P,) +1/-1, consistent orientations satisfy sign(s[i]) * sign(s[j]) == pair_sign.
    pair_weight: (P,) float, quality[i] * quality[j] * flatness ** 2 (flatness 1: the two faces continue
        each other across the shared edge; 0: folded onto each other).
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


# Mostly non-convex shapes (the convex hull fills a C's hole, a peanut's waist, the hollows between arms);
# the test set keeps its own shapes. name -> (shape, points, noise, seed)
TRAIN_SHAPES = ("ellipsoid", "bumpy", "dented", "peanut", "lobes6", "c_tube")
TEST_SHAPES = ("superquadric", "dumbbell", "lobes4", "u_tube")
_SPECS = {
    "train": tuple((f"{s}_n500_s0.01", s, 500, 0.01, 0) for s in TRAIN_SHAPES),
    "test": tuple((f"{s}_n600_s{z}", s, 600, z, 1) for s in TEST_SHAPES for z in (0.005, 0.02)),
}


def instance_specs(instance_set: str, seed: int | None = None) -> tuple[tuple[str, str, int, float, int], ...]:
    """The set's (name, shape, points, noise, seed) rows; ``seed`` replaces the sampling seed (for
    measuring the seed-to-seed noise of a figure: ``benchmarks/surface_recon.py``)."""
    if instance_set not in _SPECS:
        raise SurfaceRecon.unknown_instance_set(instance_set, _SPECS)
    rows = _SPECS[instance_set]
    return rows if seed is None else tuple((n, s, k, z, seed) for n, s, k, z, _ in rows)


@lru_cache(maxsize=None)
def _load(instance_set: str) -> tuple[SurfaceInstance, ...]:
    if instance_set == "test_published":
        instance_set = "test"
    return tuple(SurfaceInstance(name, shape, build_complex(sample(shape, n, noise, seed)))
                 for name, shape, n, noise, seed in instance_specs(instance_set))


@lru_cache(maxsize=None)
def _truth(shape: str) -> np.ndarray:
    return truth(shape, TRUTH_SAMPLES)


class SurfaceRecon(Evaluator):
    """Chamfer distance of a genus-0 reconstruction with an evolved reorientation rule.

    Instance sets: ``train`` (6 shapes, 500 points, noise 1 % of the mean radius: ellipsoid, bumpy sphere,
    sphere with six deep dents, peanut, six-armed star, C-shaped tube closed at both ends; published sampling
    seed 0), ``test`` (its own 4 shapes, 600 points, noise 0.5 % and 2 %: rounded cube, dumbbell, four-armed
    star, U-shaped tube) and ``test_published``. Per instance: ``chamfer``, ``genus0``, ``euler``, ``faces``.

    ``test`` is secret (issue 28, memorised instances): the 8 point clouds' sampling seeds are drawn per
    evaluator object from :meth:`secret_seed` (shapes, sizes and noise levels as published). From the published
    seed a rule could name each instance by its per-face arrays (the number of faces and of candidate pairs) and
    return scores computed offline from the true shape (``tests/evaluators/attacks/surface_recon_published_table.py``:
    Chamfer 0.0250 vs keep's 0.0269 on the first two); a draw is another Delaunay complex. The shapes stay public:
    the slot never sees the points, so knowing the shape does not locate it. The reference is the true shape itself
    (its dense noise-free samples, the same for every draw of a shape), so a draw runs no solver: it costs the 8
    point clouds and their Delaunay complexes, about 0.15 s of CPU (0.23 s wall at load 1.3 on 2 cores).
    ``test_published`` is the published draw (sampling seed 1), the set of the stored test figures, and what
    ``test`` gives with ``public_seeds = True``.
    """

    name = "surface_recon"
    description = (
        "Surface reconstruction from a noisy point cloud sampled from a closed genus-0 shape. The "
        "Delaunay faces are candidate triangles with an orientation score (which side is the inside); a "
        "spectral method gives the first scores, then reconstruction (a winding value per tetrahedron fitted to "
        "the scores by least squares, and a ball of tetrahedra carved from the convex hull, lowest winding value "
        "first, down to 0.5) and reorientation alternate for 3 rounds. Most shapes are non-convex (a C-shaped "
        "tube, a peanut, a six-armed star), so the convex hull is a poor answer. Design the reorientation "
        "rule: from the current scores, each face's surface likelihood, which side the last reconstruction "
        "put inside, and the edge-adjacency of "
        "candidates with their consistency signs, return the next scores. The final reconstruction is "
        "always closed and genus 0; minimise its Chamfer distance to the true surface."
    )
    direction = "minimize"
    primary_metric = "chamfer"
    template = _TEMPLATE
    instance_sets = ("train", "test", "test_published")
    secret_sets: tuple[str, ...] = ("test",)
    limits = Limits(timeout_s=120.0, cpu_s=180, memory_mb=4096)
    baselines = {"vote": _source(_VOTE_BODY), "keep": _source(_KEEP_BODY), "adopt": _source(_ADOPT_BODY)}
    # Measured by `python -m hifo.evaluators.surface_recon` (in-process, the way the sandbox runs them; the
    # same figures with and without the pinned kernels of hifo.sandbox._numeric), checked by
    # tests/evaluators/test_surface_recon.py (train; test_published in its slow test). Bit-identical on x86-64 CPU with
    # AVX2 (fitness_rtol 0): points, likelihoods, pair weights, scores and the winding field are snapped to a
    # grid (:mod:`hifo.problems._repro`), so the carving's order and thresholds do not depend on the last bits,
    # and the spectral orientation's eigensolver runs in the sandbox child on the pinned AVX2 kernels
    # (:mod:`hifo.sandbox._numeric`). The convex hull on the same instances: train 0.053828, test 0.052548
    # (`python -m benchmarks.surface_recon`); keep and vote tie within the seed-to-seed noise (about 0.003).
    # On 4 secret test draws (keys bytes([k]) * 32, k = 1..4; measured_figures in-process): vote 0.0276 +- 0.0055,
    # keep 0.0274 +- 0.0045, adopt 0.0409 +- 0.0062 (the published draw: 0.0268, 0.0299, 0.0367).
    reference_figures = {
        "vote": {"train": {"chamfer": 0.032532, "genus0": 1.0, "faces": 952.0},
                 "test": {"chamfer": 0.026817, "genus0": 1.0, "faces": 1118.75},
                 "test_published": {"chamfer": 0.026817, "genus0": 1.0, "faces": 1118.75}},
        "keep": {"train": {"chamfer": 0.031894, "genus0": 1.0, "faces": 948.0},
                 "test": {"chamfer": 0.029886, "genus0": 1.0, "faces": 1115.75},
                 "test_published": {"chamfer": 0.029886, "genus0": 1.0, "faces": 1115.75}},
        "adopt": {"train": {"chamfer": 0.038365, "genus0": 1.0, "faces": 933.333333},
                  "test": {"chamfer": 0.036745, "genus0": 1.0, "faces": 1108.75},
                  "test_published": {"chamfer": 0.036745, "genus0": 1.0, "faces": 1108.75}},
    }
    tags = ("geometry", "surface reconstruction", "delaunay", "topology")
    # issue 28: the candidate in a process of its own, a fresh one per instance (sandbox/_slotproc.py): it gets
    # the arrays of the docstring (3 calls per instance), never the points, the complex or the shape's name
    slot_process = True

    def load_instances(self, instance_set: str) -> list[SurfaceInstance]:
        if instance_set == "test" and self.seeds_secret("test"):
            return self.drawn_once("test", self._draw_test)
        if instance_set not in self.instance_sets:
            raise self.unknown_instance_set(instance_set)
        return list(_load(instance_set))

    def _draw_test(self) -> list[SurfaceInstance]:
        """The test shapes, sizes and noise levels, each point cloud sampled with a seed from the secret key."""
        return [SurfaceInstance(f"{shape}_n{n}_s{noise}_secret{k}", shape,
                                build_complex(sample(shape, n, noise, self.secret_seed(public, "test", k))))
                for k, (_, shape, n, noise, public) in enumerate(instance_specs("test"))]

    @staticmethod
    def solve(heuristic: Callable[..., Any], instance: SurfaceInstance) -> dict[str, Any]:
        scores, _ = alternate(instance.complex, heuristic, rounds=ROUNDS, level=LEVEL)
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
        tris = reconstruct(cx, scores, level=LEVEL)
        topo = topology(tris)
        if topo["genus0"] != 1.0:  # the carving keeps a ball by construction; a failure here is our bug
            raise InfeasibleSolution(f"{instance.name}: the rebuilt surface is not a closed genus-0 manifold")
        return {"chamfer": chamfer(cx.points, tris, _truth(instance.shape), TRUTH_SAMPLES),
                "genus0": topo["genus0"], "euler": topo["euler"], "faces": topo["faces"]}


def make_refs() -> dict[str, dict[str, dict[str, float]]]:
    """Every baseline's aggregate figures on every set, measured in-process the way the sandbox runs them."""
    ev = SurfaceRecon()
    ev.public_seeds = True  # the published sets (``test`` is then ``test_published``)
    out: dict[str, dict[str, dict[str, float]]] = {}
    for name, source in ev.baselines.items():
        namespace: dict[str, Any] = {}
        exec(source, namespace)  # our own baseline source (trusted)
        out[name] = {}
        for instance_set in ev.instance_sets:
            figures = measured_figures(ev, namespace[_TEMPLATE.name], instance_set)
            out[name][instance_set] = {k: figures[k] for k in ("chamfer", "genus0", "faces")}
    return out


__all__ = ["SurfaceInstance", "SurfaceRecon", "instance_specs", "make_refs"]

if __name__ == "__main__":  # python -m hifo.evaluators.surface_recon: the reference figures to store
    import pprint

    pprint.pprint(make_refs(), sort_dicts=False)
