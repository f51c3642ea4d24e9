"""The plug-in API: everything a problem evaluator needs, from one place.

    from hifo.evaluators import Evaluator, FunctionTemplate, InfeasibleSolution, Limits, Score, get_evaluator

Names are resolved on first use (PEP 562), so importing one evaluator module in the sandbox child does
not load the registry (and its entry-point scan) with it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__all__ = ["Evaluator", "FunctionTemplate", "InfeasibleSolution", "Limits", "Score", "get_evaluator",
           "list_evaluators"]

_WHERE = {"Evaluator": "base", "FunctionTemplate": "base", "InfeasibleSolution": "base", "Limits": "base",
          "Score": "base", "get_evaluator": "registry", "list_evaluators": "registry"}

if TYPE_CHECKING:
    from .base import Evaluator, FunctionTemplate, InfeasibleSolution, Limits, Score
    from .registry import get_evaluator, list_evaluators


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module 'hifo.evaluators' has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(f"{__name__}.{_WHERE[name]}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
