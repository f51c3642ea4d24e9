#!/usr/bin/env bash
# The test suite: install (idempotent), then pytest. Extra arguments go to pytest.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$ROOT/scripts/setup.sh"
cd "$ROOT"
# the test process runs on the numeric kernels the sandbox child is pinned to (issue 26: the same
# figures on every x86-64 CPU with AVX2; hifo/sandbox/_numeric.py), so in-process figures are the sandbox's
eval "$(.venv/bin/python -m hifo.sandbox._numeric --shell)"
# the machine, for reading a CI log (figures that differ between machines start here)
echo "[test] CPU: $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo 2>/dev/null | head -n1) ($(nproc) cores; vendor $(sed -n 's/^vendor_id[[:space:]]*: //p' /proc/cpuinfo 2>/dev/null | head -n1))" >&2
exec .venv/bin/python -m pytest "$@"
