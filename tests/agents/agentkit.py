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
