"""Simply connected surface reconstruction from a noisy point cloud (CPU scale, our own code).

* :mod:`._shapes` — genus-0 test shapes (sphere, ellipsoid, bumpy star-shaped sphere, cube-like
  superquadric) and noisy samples of them;
* :mod:`._mesh` — the 3D Delaunay complex (``scipy.spatial.Delaunay``) as face/tet arrays, the
  topology checks (closed, edge- and vertex-manifold, Euler characteristic, components), the
  Chamfer distance, and the two baselines (alpha shape, convex hull);
* :mod:`._recon` — surface likelihood of each Delaunay face, spectral orientation of the candidate
  triangles, carving/growing a ball of tetrahedra under the link condition, and the alternation
  of reconstruction and reorientation with a pluggable rule.

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
    alternate,
    check_scores,
    edge_pairs,
    face_quality,
    features,
    grow,
    reconstruct,
    spectral_orientation,
)
from hifo.problems.surface_recon._shapes import SHAPES, sample, truth

__all__ = [
    "Complex", "SHAPES", "alpha_shape", "alternate", "build_complex", "chamfer", "check_scores", "convex_hull",
    "edge_pairs", "face_quality", "features", "grow", "oriented_boundary", "reconstruct", "sample",
    "spectral_orientation", "topology", "truth",
]
