#!/usr/bin/env bash
# Refresh scripts/lock.txt: resolve hifo with every extra (test, bench, ray) into a scratch venv with
# no constraints, then freeze it. Run the test suite afterwards (`bash scripts/test.sh`, which installs
# exactly the lock) before committing the new lock.
#   bash scripts/lock.sh            # uses python3; PYTHON=python3.11 to choose
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
PY="${PYTHON:-python3}"
SCRATCH="$(mktemp -d)"
trap 'rm -rf "$SCRATCH"' EXIT
"$PY" -m venv "$SCRATCH/venv"
"$SCRATCH/venv/bin/python" -m pip install -q --upgrade pip
"$SCRATCH/venv/bin/python" -m pip install -q "torch==2.13.0"
"$SCRATCH/venv/bin/python" - <<'PY' > "$SCRATCH/reqs.txt"
import tomllib
cfg = tomllib.load(open("pyproject.toml", "rb"))["project"]
deps = list(cfg["dependencies"])
for extra in cfg.get("optional-dependencies", {}).values():
    deps += list(extra)
deps.append("torch==2.13.0")  # the CPU build setup.sh installs first
print("\n".join(sorted(set(deps))))
PY
"$SCRATCH/venv/bin/python" -m pip install -q -r "$SCRATCH/reqs.txt" --no-binary llama-cpp-python --dry-run --ignore-installed --report "$SCRATCH/report.json" >/dev/null
"$SCRATCH/venv/bin/python" - "$SCRATCH/report.json" "$("$SCRATCH/venv/bin/python" -m pip freeze --all)" <<'PY' > scripts/lock.txt
import json, sys, datetime
installed = {}
for line in sys.argv[2].splitlines():
    if "==" in line:
        name, ver = line.split("==", 1)
        installed[name.lower().replace("_", "-")] = ver
for item in json.load(open(sys.argv[1]))["install"]:
    meta = item["metadata"]
    installed[meta["name"].lower().replace("_", "-")] = meta["version"]
print(f"# hifo's locked dependency set: every extra (test, bench, ray), Python 3.11, {datetime.date.today()}.")
print("# Used by scripts/setup.sh as a pip constraints file. Refresh: bash scripts/lock.sh")
print("# (llama-cpp-python is pinned in pyproject.toml; setup.sh builds that sdist portably: see there.)")
for name in sorted(installed):
    if name in ("hifo", "setuptools", "wheel"):
        continue
    print(f"{name}=={installed[name].split('+')[0]}")
PY
echo "wrote scripts/lock.txt ($(grep -c '==' scripts/lock.txt) pins)"
