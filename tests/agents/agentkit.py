"""Helpers shared by the agent tests (imported directly, like tests/evaluators/evalkit.py)."""

from __future__ import annotations

from typing import Any

from hifo.agents.config import RunConfig


def tiny_config(tmp_path: Any, **kw: Any) -> RunConfig:
    """A one-generation bin-packing run with a scripted model, its stores under ``tmp_path``."""
    base: dict[str, Any] = dict(problem="bpp_online", model="fake", generations=0, population=2, init_samples=2,
                                hyper_lambda=0, seed=3, kb=str(tmp_path / "kb.sqlite"),
                                run_dir=str(tmp_path / "run"), workers=1, test_set="train", distill=False)
    base.update(kw)
    return RunConfig(**base)


def hifo_cli_interruptible() -> list[str]:
    """The command of a real ``hifo`` process that Ctrl-C interrupts even when this test process was started with
    SIGINT ignored (a background job of a script, ``nohup ... &``: children inherit the ignore, and Python then never
    raises KeyboardInterrupt). It sets Python's own handler, then runs the CLI as ``python -m hifo.agents.cli``."""
    import sys

    return [sys.executable, "-c", "import runpy, signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
            "sys.argv[0] = 'hifo'; runpy.run_module('hifo.agents.cli', run_name='__main__', alter_sys=True)"]
