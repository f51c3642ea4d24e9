#!/usr/bin/env bash
# The test suite: install (idempotent), then pytest. Extra arguments go to pytest.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$ROOT/scripts/setup.sh"
cd "$ROOT"
# the test process runs on the numeric kernels the sandbox child is pinned to (issue 26: the same
# figures on every x86-64 CPU with AVX2; hifo/sandbox/_numeric.py), so in-process figures are the sandbox's
eval "$(.venv/bin/python -m hifo.sandbox._numeric --shell)"
exec .venv/bin/python -m pytest "$@"
