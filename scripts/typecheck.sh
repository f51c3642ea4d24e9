#!/usr/bin/env bash
# Type-check the package under its installed import name (hifo.*).
# pyproject maps repository folders (agents/, evaluators/, ...) to hifo.agents, hifo.evaluators, ...
# with package-dir; mypy cannot follow that mapping, so this builds a symlink tree
# tmp/typecheck/hifo/{agents,evaluators,...} -> the repository folders and runs `mypy -p hifo` on it.
# Configuration: [tool.mypy] in pyproject.toml. Usage: bash scripts/typecheck.sh [extra mypy args]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
py="${PYTHON:-$root/.venv/bin/python}"
[ -x "$py" ] || py=python3
tree="$root/tmp/typecheck"
rm -rf "$tree"
mkdir -p "$tree/hifo"
for f in "$root"/hifo/*.py; do ln -s "$f" "$tree/hifo/$(basename "$f")"; done
for d in agents evaluators knowledge_base problems sandbox; do ln -s "$root/$d" "$tree/hifo/$d"; done
cd "$tree"
exec "$py" -m mypy --config-file "$root/pyproject.toml" --cache-dir "$root/tmp/.mypy_cache" -p hifo "$@"
