"""The numeric kernels of the sandbox child: the same on every x86-64 CPU with AVX2 (issue 26).

numpy, OpenBLAS, MKL and torch pick their kernels at run time from the CPU's features, so an AVX-512
machine computes other last bits than an AVX2 one. Pinning the child to the AVX2 kernels makes the
candidate's arithmetic, and every decision the algorithm takes on it, machine-independent.

MKL (torch's BLAS and LAPACK on x86-64) is pinned to its ``COMPATIBLE`` branch, not ``AVX2``: Intel
documents that on a non-Intel CPU ``MKL_CBWR=AVX2`` silently falls back to the ``AUTO`` branch, and
that only ``AUTO`` and ``COMPATIBLE`` are supported there. A CI failure between stops 33 and 34 was exactly this:
figures measured on an Intel CPU under ``AVX2`` differed on another runner (GlowQ perplexity by 5e-5,
a Muon training run by 1 %). ``COMPATIBLE`` (SSE2 without the approximate ``rcpps``/``rsqrtps``) is the
one branch Intel states gives the same results on Intel and Intel-compatible CPUs; it costs ~1.7x on
MKL-heavy torch work (measured on the GlowQ + Newton-Schulz figures: 16 s -> 27 s).
"""

from __future__ import annotations

import platform


def _features() -> dict[str, bool]:
    """numpy's view of the CPU's features; empty where numpy is not importable (then there are no numpy
    kernels to pin, and nothing is pinned: an interpreter without numpy scores no numpy evaluator)."""
    import importlib

    for name in ("numpy._core._multiarray_umath", "numpy.core._multiarray_umath"):  # numpy >= 2, then 1.x
        try:
            return dict(importlib.import_module(name).__cpu_features__)
        except ImportError:
            continue
    return {}


def cpu_avx512_features() -> list[str]:
    """numpy's names of the AVX-512 features this CPU has (what the pinning switches off). In a process
    that is pinned already numpy reports some of them as absent, so the ones this process was started
    without are counted too: the list is the same whether or not the asking process is pinned."""
    import os

    off = {k for k in os.environ.get("NPY_DISABLE_CPU_FEATURES", "").replace(",", " ").split()
           if k.startswith("AVX512")}
    return sorted(off | {k for k, on in _features().items() if on and k.startswith("AVX512")})


def pinned_numeric_env() -> dict[str, str]:
    """The numeric kernels the sandbox child is pinned to (used by :func:`hifo.sandbox._child.child_env`):
    on x86-64, numpy without its AVX-512 kernels (``NPY_DISABLE_CPU_FEATURES`` lists the ones this CPU
    has), OpenBLAS's Haswell (AVX2) kernels, MKL's vendor-independent ``COMPATIBLE`` branch, torch's AVX2 kernels. Every
    x86-64 CPU with AVX2 then runs the same kernels, so a candidate's arithmetic in the sandbox is the
    same on a laptop, a CI runner and an AVX-512 server. Empty elsewhere (nothing to pin).
    """
    if platform.machine().lower() not in ("x86_64", "amd64") or not _features().get("AVX2"):
        return {}  # nothing to pin to (an x86-64 CPU without AVX2 would fault on the Haswell kernels)
    env = {"OPENBLAS_CORETYPE": "Haswell", "MKL_CBWR": "COMPATIBLE", "MKL_DYNAMIC": "FALSE",
           "ATEN_CPU_CAPABILITY": "avx2", "ONEDNN_MAX_CPU_ISA": "AVX2"}
    wide = cpu_avx512_features()
    if wide:
        env["NPY_DISABLE_CPU_FEATURES"] = " ".join(wide)
    return env


PINNED_VARS = ("NPY_DISABLE_CPU_FEATURES", "OPENBLAS_CORETYPE", "MKL_CBWR", "MKL_DYNAMIC",
               "ATEN_CPU_CAPABILITY", "ONEDNN_MAX_CPU_ISA")


def pin_this_process() -> bool:
    """Pin this process's own kernels (the ``hifo`` command calls it first thing, so the parent's
    ``score`` arithmetic is the same on every machine too). Works only before numpy and torch are
    imported: the features are read in a short-lived child (a ~0.2 s numpy import) and put into
    ``os.environ``. Returns whether it pinned; ``HIFO_NATIVE_KERNELS=1`` opts out."""
    import os
    import subprocess
    import sys

    if os.environ.get("HIFO_NATIVE_KERNELS") == "1" or os.environ.get("HIFO_NUMERIC_PINNED") == "1":
        return False
    if "numpy" in sys.modules or "torch" in sys.modules:
        return False  # too late: the kernels are chosen at import
    try:
        out = subprocess.run([sys.executable, "-m", "hifo.sandbox._numeric"], capture_output=True, text=True,
                             timeout=60, check=True).stdout
    except (OSError, subprocess.SubprocessError) as exc:
        print(f"hifo: warning: could not pin the numeric kernels ({exc}); scores computed here may differ "
              "in the last bits from another machine's", file=sys.stderr)
        return False
    for line in out.splitlines():
        if "=" in line:
            key, value = line.split("=", 1)
            os.environ[key] = value
    os.environ["HIFO_NUMERIC_PINNED"] = "1"
    return True


def main(argv: list[str] | None = None) -> int:
    """``python -m hifo.sandbox._numeric --shell``: ``export`` lines for the pinned kernels (scripts/test.sh
    runs the test process with them, so in-process figures are the sandbox's)."""
    import shlex
    import sys

    args = sys.argv[1:] if argv is None else argv
    env = pinned_numeric_env()
    if args == ["--shell"]:
        for k, v in env.items():
            print(f"export {k}={shlex.quote(v)}")
    else:
        for k, v in env.items():
            print(f"{k}={v}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
