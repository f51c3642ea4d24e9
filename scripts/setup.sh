#!/usr/bin/env bash
# Idempotent installation into ./.venv (Python >= 3.11). Called by main.sh and test.sh.
# On a fresh Debian machine run as root it installs the few system packages it needs
# (venv support, a C/C++ toolchain for llama-cpp-python, bubblewrap for the sandbox).
#
# What it installs is exactly scripts/lock.txt (refresh with `bash scripts/lock.sh`).
# llama-cpp-python is built here, once, *portably*: ggml's native CPU detection is off, so a
# CPU with AMX does not get the AMX backend that segfaults at the first decode
# (llama.cpp #20824), and the wheel runs on any x86-64 with AVX2. The wheel is kept in
# ~/.cache/hifo/wheels under a name that carries its version and build flags; pip's own cache is
# never used for it (a natively built wheel there would hide the crash on the machine that made it).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
PY="${PYTHON:-python3}"
EXTRAS="test${1:+,$1}"

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
# the sandbox's seccomp filters are compiled and loaded by libseccomp (through the pyseccomp binding)
# (optional like bubblewrap: without it the 'standard' level warns that the seccomp layer is missing)
if ! { /sbin/ldconfig -p 2>/dev/null || true; } | grep 'libseccomp\.so\.2' >/dev/null; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then need_apt+=(libseccomp2)
  else echo "[setup] note: libseccomp2 is not installed; the sandbox's seccomp layer will be missing" >&2; fi
fi
if [ "${#need_apt[@]}" -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "[setup] installing system packages: ${need_apt[*]}"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}" >/dev/null
  else
    echo "[setup] missing system packages: ${need_apt[*]} (install them, then re-run)" >&2; exit 1
  fi
fi
# optional: headless Chromium, for the test that opens the HTML report in a browser (skipped without it;
# HIFO_NO_BROWSER=1 leaves it out); a failure here never stops the set-up
if ! command -v chromium-headless-shell >/dev/null && ! command -v chromium >/dev/null \
   && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null && [ -z "${HIFO_NO_BROWSER:-}" ]; then
  echo "[setup] installing chromium-headless-shell (optional, for the report's browser test)"
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium-headless-shell; } >/dev/null 2>&1 \
    || echo "[setup] note: chromium-headless-shell could not be installed; the browser test will be skipped" >&2
fi

if [ ! -x .venv/bin/python ]; then
  echo "[setup] creating .venv"
  "$PY" -m venv .venv
fi

LOCK=scripts/lock.txt
LLAMA_VERSION="$(sed -n 's/.*"llama-cpp-python==\([^"]*\)".*/\1/p' pyproject.toml)"
[ -n "$LLAMA_VERSION" ] || { echo "[setup] pyproject.toml pins no exact llama-cpp-python version" >&2; exit 1; }
# Portable ggml: no native detection, no AVX-512, no AMX; AVX2/FMA/F16C on x86-64.
LLAMA_CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_CPU_ALL_VARIANTS=OFF -DGGML_BACKEND_DL=OFF -DLLAMA_CURL=OFF"
case "$(uname -m)" in
  x86_64|amd64) LLAMA_CMAKE_ARGS="$LLAMA_CMAKE_ARGS -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_AVX512=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF" ;;
esac
FLAGS_ID="$(printf '%s' "$LLAMA_CMAKE_ARGS" | sha256sum | cut -c1-10)"
WHEELHOUSE="${HIFO_WHEELHOUSE:-${XDG_CACHE_HOME:-$HOME/.cache}/hifo/wheels}/llama-cpp-python-$LLAMA_VERSION-$(uname -m)-py$("$PY" -c 'import sys; print(f"{sys.version_info[0]}{sys.version_info[1]}")')-portable-$FLAGS_ID"

STAMP=.venv/.hifo-installed
HASH="$(cat pyproject.toml "$LOCK" scripts/setup.sh | sha256sum | cut -c1-16)-$EXTRAS"
if [ ! -f "$STAMP" ] || [ "$(cat "$STAMP")" != "$HASH" ]; then
  echo "[setup] installing hifo and the locked dependencies ($LOCK)"
  .venv/bin/python -m pip install -q --upgrade "pip==$(sed -n 's/^pip==//p' "$LOCK")" 2>/dev/null \
    || .venv/bin/python -m pip install -q --upgrade pip
  # torch: the pinned CPU build first (an unpinned `torch` may pull a multi-GB CUDA build)
  .venv/bin/python -m pip install -q -c "$LOCK" "torch==2.13.0"
  if ! ls "$WHEELHOUSE"/llama_cpp_python-*.whl >/dev/null 2>&1; then
    echo "[setup] building llama-cpp-python $LLAMA_VERSION portably (no native CPU detection; ~5-13 min on 2 cores)"
    echo "[setup]   CMAKE_ARGS=$LLAMA_CMAKE_ARGS"
    mkdir -p "$WHEELHOUSE.tmp"
    CMAKE_ARGS="$LLAMA_CMAKE_ARGS" FORCE_CMAKE=1 CMAKE_BUILD_PARALLEL_LEVEL="$(nproc)" \
      .venv/bin/python -m pip wheel -q --no-cache-dir --no-binary llama-cpp-python --no-deps \
      -w "$WHEELHOUSE.tmp" "llama-cpp-python==$LLAMA_VERSION"
    printf '%s\n' "$LLAMA_CMAKE_ARGS" > "$WHEELHOUSE.tmp/CMAKE_ARGS"
    rm -rf "$WHEELHOUSE" && mv "$WHEELHOUSE.tmp" "$WHEELHOUSE"
  fi
  .venv/bin/python -m pip install -q --no-cache-dir --force-reinstall --no-deps "$WHEELHOUSE"/llama_cpp_python-*.whl
  .venv/bin/python -m pip install -q -c "$LOCK" -e ".[$EXTRAS]"
  .venv/bin/python - "$WHEELHOUSE/CMAKE_ARGS" <<'PY'
# record the build flags where `hifo doctor` can show them
import importlib.util, pathlib, sys
package = pathlib.Path(importlib.util.find_spec("llama_cpp").origin).parent
(package / "hifo_build_flags.txt").write_text(pathlib.Path(sys.argv[1]).read_text())
PY
  echo "$HASH" > "$STAMP"
fi
# the evaluator listing is cached per source stamp (`hifo problems` then answers in about half a second instead
# of importing every evaluator, torch included, ~3 s): made once here so the first listing is fast too
.venv/bin/hifo problems >/dev/null 2>&1 || true
