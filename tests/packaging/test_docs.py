"""Issue 31: the documentation site builds with warnings as errors, and the README stays short.

``mkdocs build --strict`` fails on a page left out of the navigation, a link to a page or anchor that does
not exist, or any other warning; the README is the ten-minute introduction (at most 250 lines) and every
page it links to exists.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_readme_is_short_and_its_links_resolve() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 250, "README.md is the quick introduction: move detail into docs/"
    links = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text)
    assert links, "the README links to its docs pages"
    missing = [link for link in links if "://" not in link and not (ROOT / link).exists()]
    assert not missing, f"README links to missing files: {missing}"


def test_docs_site_builds_strict(tmp_path: Path) -> None:
    pytest.importorskip("mkdocs", reason="mkdocs is in the test extra")  # present wherever setup ran
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir",
                           str(tmp_path / "site"), "--config-file", str(ROOT / "mkdocs.yml")],
                          capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "site" / "index.html").is_file()
    for page in ("sandbox", "models", "families/glowq"):
        assert (tmp_path / "site" / page / "index.html").is_file(), page


def _doc_texts() -> dict[str, str]:
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    return {str(p.relative_to(ROOT)): p.read_text(encoding="utf-8") for p in pages}


def test_every_artifact_and_command_the_docs_name_exists() -> None:
    """Issue 31: every figure in the docs has its command and its artifact. A figure quotes the command that
    made it (``python -m benchmarks.X``, ``python -m hifo.evaluators.X``, ``scripts/X``) and the file it left
    (``benchmarks/results/...``); both must exist, so a renamed benchmark or a deleted result breaks this test
    rather than the reader."""
    missing = []
    for page, text in _doc_texts().items():
        # a path right after --out is where a command writes (it may not be made yet); every other one must exist
        for path in set(re.findall(r"(?<!--out )\b((?:benchmarks/results|evaluators/data|scripts)/"
                                   r"[A-Za-z0-9_./-]*[A-Za-z0-9_])", text)):
            if "NAME" not in path and not (ROOT / path).exists():
                missing.append(f"{page}: {path}")
        for module in set(re.findall(r"python -m ((?:benchmarks|hifo\.evaluators)\.[A-Za-z0-9_.]+)", text)):
            module = module.rstrip(".")
            if module.endswith(".NAME"):
                continue
            rel = module.removeprefix("hifo.").replace(".", "/")
            if not ((ROOT / f"{rel}.py").is_file() or (ROOT / rel / "__main__.py").is_file()):
                missing.append(f"{page}: python -m {module}")
    assert not missing, "the docs name files or commands that do not exist:\n" + "\n".join(sorted(missing))


def test_figures_in_the_family_pages_name_their_command() -> None:
    """Each family page quotes measured figures; each names at least one command that reproduces them."""
    bare = [page for page, text in _doc_texts().items() if page.startswith("docs/families/")
            and re.search(r"\d\.\d", text) and not re.search(r"python -m |pytest |hifo (evaluate|run) ", text)]
    assert not bare, f"family pages with figures but no command that measures them: {bare}"
