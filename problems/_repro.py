"""Machine-independent arithmetic for the decisions an algorithm makes.

numpy chooses SIMD kernels at run time (an AVX-512 CPU gets other ``exp``/``power``/``einsum`` kernels
than an AVX2 one), and OpenBLAS picks kernels per core type: the same code gives results that differ
in the last bits from machine to machine. Where such a value decides something (a threshold, the
order of a heap, the sign of an eigenvector entry), a last-bit difference becomes a different
algorithm run and a different fitness. :func:`quantize` snaps values to a grid of ``2**-bits``: the
last-bit noise disappears (unless a value lies within that noise of a grid midpoint, about one
value in ``2**(52 - bits)``), and sums of a few grid values are exact in float64, so comparisons
between them no longer depend on the order of summation.
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

GRID_BITS = 20  # scores, weights, likelihoods: ~1e-6 resolution, far below any meaningful difference
COORD_BITS = 30  # coordinates of order 1: ~1e-9


def quantize(x: Any, bits: int = GRID_BITS) -> np.ndarray:
    """``x`` rounded to the nearest multiple of ``2**-bits`` (exact: scaling by a power of two and
    ``rint`` are exact in IEEE arithmetic, whatever kernel runs them)."""
    scale = float(2 ** bits)
    return np.rint(np.asarray(x, dtype=np.float64) * scale) / scale


_TORCH_THREADS_LOCK = threading.RLock()


def torch_portable_kernels(torch: Any) -> None:
    """Switch off torch's oneDNN (mkldnn) and NNPACK paths in this process, once and for good: convolutions
    then run through ATen's own im2col + BLAS path (MKL, pinned to its vendor-independent ``COMPATIBLE``
    branch by :mod:`hifo.sandbox._numeric`). oneDNN's JIT kernels and NNPACK both choose their blocking,
    and so the order of their float32 reductions, from the CPU's cache sizes, which differ from one machine
    to the next even when the instruction set is pinned (``ONEDNN_MAX_CPU_ISA``). With oneDNN off, a float
    convolution with a batch of 16 or more went to NNPACK: that was the unexplained cross-machine
    difference of ``newton_schulz`` and ``optimizer_update``'s test sets (their digits CNN; measured
    2026-12-06: NNPACK on/off moves the CNN's validation loss from 0.0614 to 0.0627 on one machine, and
    the CNN's loss swings by up to 0.05 with the summation order, while the MLP and the transformer
    reproduced). Called by :class:`one_torch_thread` (every torch computation that decides a score runs
    inside one)."""
    if torch.backends.mkldnn.enabled:
        torch.backends.mkldnn.enabled = False
    if torch._C._get_nnpack_enabled():
        torch.backends.nnpack.set_flags(False)


class one_torch_thread:
    """``with one_torch_thread(): ...`` runs torch on one intra-op thread (restored afterwards). A model
    trained or evaluated on the parent's side must not depend on how many cores the parent has: a
    float32 reduction split over two threads sums in another order (issue 26: a lazily trained test
    model differed by 4e-4 in NLL between one and two threads). ``torch.set_num_threads`` is
    process-wide, so blocks in parallel scoring threads take turns (a reentrant lock): one thread's exit
    cannot raise the count under another's computation."""

    def __enter__(self) -> "one_torch_thread":
        import torch

        _TORCH_THREADS_LOCK.acquire()  # the thread count is process-wide: concurrent users take turns
        torch_portable_kernels(torch)
        self._before = torch.get_num_threads()
        torch.set_num_threads(1)
        return self

    def __exit__(self, *exc: object) -> None:
        import torch

        try:
            torch.set_num_threads(self._before)
        finally:
            _TORCH_THREADS_LOCK.release()
