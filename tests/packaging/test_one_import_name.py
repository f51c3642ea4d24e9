"""Issue 19: the distribution installs one import name, ``hifo``, and lives beside ``openai-agents``.

The wheel is built from this checkout and installed, without its dependencies, into a fresh virtual
environment; a ``.pth`` line lends it the test environment's site-packages (where ``openai-agents``
and hifo's dependencies are), but not this checkout's editable install (a ``.pth`` line adds a path,
never the ``.pth`` hooks inside it).
"""

from __future__ import annotations

import importlib
import json
import os
import re
import subprocess
import sys
import sysconfig
import tomllib
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FOLDERS = ("agents", "evaluators", "knowledge_base", "problems", "sandbox")
pytestmark = pytest.mark.slow


def _run(argv: list[str], **kw) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    return subprocess.run(argv, capture_output=True, text=True, timeout=600, env=env, **kw)


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> tuple[Path, str]:
    """The wheel and the build's output (``-v``: pip shows the backend's warnings only then)."""
    out = tmp_path_factory.mktemp("wheel")
    build = tmp_path_factory.mktemp("build")
    done = _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-v",
                 "-w", str(out), str(ROOT)], cwd=build)
    assert done.returncode == 0, done.stderr[-2000:]
    (found,) = out.glob("hifo-*.whl")
    return found, done.stdout + done.stderr


@pytest.fixture(scope="module")
def wheel(built) -> Path:
    return built[0]


def test_the_build_does_not_warn_about_data_folders(built):
    """Data folders (evaluators/data/tsp, problems/*/weights, ...) are importable names; setuptools warns
    that each is "absent from the packages configuration" unless include-package-data is off."""
    log = built[1]
    assert "running build_py" in log  # the backend's output is there to read
    assert "absent from the `packages` configuration" not in log, log[-3000:]


def test_the_wheel_holds_every_data_file(wheel):
    """Every file of the package folders that is not Python source ships (package-data covers them all)."""
    if not (ROOT / ".git").exists():
        pytest.skip("needs a git checkout to list the tracked files")
    listed = _run(["git", "ls-files", "--", *FOLDERS, "hifo"], cwd=ROOT)
    assert listed.returncode == 0, listed.stderr
    data = [f for f in listed.stdout.splitlines() if not f.endswith(".py")]
    assert any(f.startswith("evaluators/data/") for f in data) and any("/weights/" in f for f in data)
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
    missing = [f for f in data if (f if f.startswith("hifo/") else "hifo/" + f) not in names]
    assert missing == [], f"not in the wheel (add a [tool.setuptools.package-data] glob): {missing}"


def _venv(path: Path, wheel: Path, lend_site_packages: bool) -> Path:
    done = _run([sys.executable, "-m", "venv", "--without-pip", str(path)])
    assert done.returncode == 0, done.stderr
    python = path / "bin" / "python"
    site = Path(_run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).stdout.strip())
    if lend_site_packages:
        (site / "_lent.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    with zipfile.ZipFile(wheel) as zf:  # installing a pure wheel is unpacking it (no pip in this venv)
        zf.extractall(site)
    scripts = path / "bin"
    (scripts / "hifo").write_text(f"#!{python}\nimport sys\nfrom hifo.agents.cli import main\nsys.exit(main())\n")
    (scripts / "hifo").chmod(0o755)
    return python


def test_the_wheel_has_one_top_level_name(wheel):
    with zipfile.ZipFile(wheel) as zf:
        tops = {name.split("/")[0] for name in zf.namelist()}
        entry_points = zf.read(next(n for n in zf.namelist() if n.endswith("entry_points.txt"))).decode()
    assert {t for t in tops if not t.endswith(".dist-info")} == {"hifo"}
    assert "hifo = hifo.agents.cli:main" in entry_points
    for line in entry_points.split("[hifo.evaluators]")[1].strip().splitlines():
        assert re.fullmatch(r"\w+ = hifo\.evaluators\.\w+:\w+", line.strip()), line


def test_only_hifo_installed_claims_no_generic_name(wheel, tmp_path):
    python = _venv(tmp_path / "alone", wheel, lend_site_packages=False)
    for name in FOLDERS:
        done = _run([str(python), "-c", f"import {name}"], cwd=tmp_path)
        assert "ModuleNotFoundError" in done.stderr, (name, done.stderr)
    assert _run([str(python), "-c", "import hifo; print(hifo.__version__)"], cwd=tmp_path).returncode == 0


def test_hifo_and_openai_agents_work_in_one_environment(wheel, tmp_path):
    importlib.import_module("agents")  # openai-agents (in the test extra): an import error fails, not skips
    python = _venv(tmp_path / "both", wheel, lend_site_packages=True)
    work = tmp_path / "work"
    work.mkdir()
    done = _run([str(python), "-c", "from agents import Agent, Runner; import hifo.agents.cli, hifo, agents;"
                 "print(agents.__file__); print(hifo.__file__)"], cwd=work)
    assert done.returncode == 0, done.stderr[-2000:]
    agents_file, hifo_file = done.stdout.split()
    assert str(tmp_path) in hifo_file and "hifo" not in Path(agents_file).parts[-3:-1]
    hifo = str(python.parent / "hifo")
    assert _run([hifo, "--help"], cwd=work).returncode == 0
    listed = _run([hifo, "problems"], cwd=work)
    assert listed.returncode == 0 and "bpp_online" in listed.stdout, listed.stderr[-2000:]
    (work / "bf.py").write_text("import numpy as np\n\ndef priority(item, bins):\n    return -(bins - item)\n")
    scored = _run([hifo, "evaluate", "--problem", "bpp_online", "--heuristic", "bf.py", "--instances", "or3",
                   "--json"], cwd=work)
    assert scored.returncode == 0, scored.stdout[-2000:] + scored.stderr[-2000:]
    result = json.loads(scored.stdout)
    assert result["feasible"] and result["metrics"]["mean_bins"] == 212.0  # Best Fit on OR3, as in the README


def test_pyproject_lists_every_package_folder():
    cfg = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(cfg["packages"])
    found = {"hifo"}
    for top in FOLDERS:
        for init in (ROOT / top).rglob("__init__.py"):
            found.add("hifo." + ".".join(init.parent.relative_to(ROOT).parts))
    assert listed == found
    assert {k: v for k, v in cfg["package-dir"].items() if k != "hifo"} == {f"hifo.{t}": t for t in FOLDERS}


def test_no_source_file_imports_a_bare_folder_name():
    bare = re.compile(r"^\s*(from|import)\s+(" + "|".join(FOLDERS) + r")\b", re.M)
    offenders = [str(p.relative_to(ROOT)) for top in (*FOLDERS, "tests", "benchmarks", "hifo")
                 for p in (ROOT / top).rglob("*.py") if bare.search(p.read_text())]
    assert offenders == []
