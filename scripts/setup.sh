#!/usr/bin/env bash
# Idempotent installation into ./.venv (Python >= 3.11). Sourced by main.sh and test.sh.
# On a fresh Debian machine run as root it installs the few system packages it needs
# (venv support, a C/C++ toolchain for llama-cpp-python, bubblewrap for the sandbox).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
PY="${PYTHON:-python3}"

need_apt=()
"$PY" -c 'import sys; assert sys.version_info >= (3, 11), sys.version' \
  || { echo "hifo needs Python >= 3.11 (found: $("$PY" --version 2>&1))" >&2; exit 1; }
"$PY" -c 'import ensurepip, venv' 2>/dev/null || need_apt+=(python3-venv)
command -v g++ >/dev/null || need_apt+=(build-essential)
command -v cmake >/dev/null || need_apt+=(cmake)
# the sandbox's read-only file system layer (and its namespaces) come from bubblewrap
# (optional: without it the 'standard' level warns and 'strict' refuses)
if ! command -v bwrap >/dev/null; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then need_apt+=(bubblewrap)
  else echo "[setup] note: bubblewrap is not installed; sandbox level 'strict' will refuse to run" >&2; fi
fi
if [ "${#need_apt[@]}" -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "[setup] installing system packages: ${need_apt[*]}"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}" >/dev/null
  else
    echo "[setup] missing system packages: ${need_apt[*]} (install them, then re-run)" >&2; exit 1
  fi
fi

if [ ! -x .venv/bin/python ]; then
  echo "[setup] creating .venv"
  "$PY" -m venv .venv
fi
STAMP=.venv/.hifo-installed
HASH="$(cat pyproject.toml | sha256sum | cut -c1-16)${1:-}"
if [ ! -f "$STAMP" ] || [ "$(cat "$STAMP")" != "$HASH" ]; then
  echo "[setup] installing hifo and its dependencies (the first time, llama-cpp-python compiles: ~13 min on 2 cores)"
  .venv/bin/python -m pip install -q --upgrade pip
  # torch: the pinned CPU build first (an unpinned `torch` may pull a multi-GB CUDA build)
  .venv/bin/python -m pip install -q "torch==2.13.0"
  CMAKE_BUILD_PARALLEL_LEVEL="$(nproc)" .venv/bin/python -m pip install -q -e ".[test${1:+,$1}]"
  echo "$HASH" > "$STAMP"
fi
