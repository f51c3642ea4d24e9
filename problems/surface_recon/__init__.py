"""Simply connected surface reconstruction from a noisy point cloud (CPU scale).

* :mod:`._shapes` — genus-0 test shapes (convex: sphere, ellipsoid, rounded cube; non-convex: bumpy and
  dented spheres, a peanut, a dumbbell, four- and six-armed stars, a C- and a U-shaped tube closed at
  both ends) and noisy samples of them;
* :mod:`._mesh` — the 3D Delaunay complex (``scipy.spatial.Delaunay``) as face/tet arrays, the
  topology checks (closed, edge- and vertex-manifold, Euler characteristic, components), the
  Chamfer distance, and two baselines (alpha shape, convex hull);
* :mod:`._recon` — surface likelihood of each Delaunay face, spectral orientation of the candidate
  triangles, and carving/growing a ball of tetrahedra under the link condition;
* :mod:`._winding` — the seed paper's reconstruction step as we discretise it: the winding field of
  the oriented triangles (the gradient part of their Helmholtz-Hodge decomposition on the Delaunay
  dual graph), a ball carved along it (genus 0 by construction), and the alternation of
  reconstruction and reorientation with a pluggable rule.

Imports nothing else of ours (numpy and scipy only).
"""

from hifo.problems.surface_recon._mesh import (
    Complex,
    alpha_shape,
    build_complex,
    chamfer,
    convex_hull,
    oriented_boundary,
    topology,
)
from hifo.problems.surface_recon._recon import (
    check_scores,
    edge_pairs,
    face_quality,
    features,
    grow,
    spectral_orientation,
)
from hifo.problems.surface_recon._shapes import CONVEX, SHAPES, inside, sample, truth
from hifo.problems.surface_recon._winding import LEVEL, alternate, carve, reconstruct, winding_field

__all__ = [
    "CONVEX", "Complex", "LEVEL", "SHAPES", "alpha_shape", "alternate", "build_complex", "carve", "chamfer",
    "check_scores", "convex_hull", "edge_pairs", "face_quality", "features", "grow", "inside",
    "oriented_boundary", "reconstruct", "sample", "spectral_orientation", "topology", "truth", "winding_field",
]
