"""Keep BLAS on one thread around the many small matrix products of a QD run.

Every matrix here is small (100 x 100 covariances, 32 x 128 minibatches, 32 x 10,000 distance
blocks): with several BLAS threads each call pays thread synchronisation, which on a busy
two-core machine made runs about ten times slower. ``threadpoolctl`` (when installed) limits the
threads for the duration of a ``with`` block; without it the block runs unchanged.
"""

from __future__ import annotations

import contextlib

_CONTROLLER: list = []


def single_thread_blas():
    """A context manager limiting BLAS to one thread (a no-op without ``threadpoolctl``)."""
    if not _CONTROLLER:
        try:
            from threadpoolctl import ThreadpoolController

            _CONTROLLER.append(ThreadpoolController())
        except Exception:  # not installed, or the loaded libraries cannot be inspected
            _CONTROLLER.append(None)
    controller = _CONTROLLER[0]
    return contextlib.nullcontext() if controller is None else controller.limit(limits=1, user_api="blas")
