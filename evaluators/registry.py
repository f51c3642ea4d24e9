"""Finding evaluators by name.

Evaluators are registered under the entry-point group ``hifo.evaluators`` (``name =
"package.module:Class"``). The two built-in ones are also listed here so they are found when
this repository runs from a checkout that was never installed. A plug-in cannot take the name
of a built-in evaluator: such an entry point is ignored with a warning.
"""

from __future__ import annotations

import importlib
import warnings
from importlib.metadata import entry_points

from hifo.evaluators.base import Evaluator

GROUP = "hifo.evaluators"
BUILTIN: dict[str, str] = {
    "bpp_online": "hifo.evaluators.bpp_online:BinPackingOnline",
    "tsp_construct": "hifo.evaluators.tsp_construct:TSPConstruct",
    "optwvp_route": "hifo.evaluators.optwvp_route:OPTWVPRoute",
    "optwvp_service": "hifo.evaluators.optwvp_service:OPTWVPService",
    "optimizer_update": "hifo.evaluators.optimizer_update:OptimizerUpdate",
    "newton_schulz": "hifo.evaluators.newton_schulz:NewtonSchulzSchedule",
    "milp_primal": "hifo.evaluators.milp_primal:MILPPrimal",
    "fmip_guidance": "hifo.evaluators.fmip_guidance:FMIPGuidance",
    "tsp_gls": "hifo.evaluators.tsp_gls:TSPGLS",
    "atsp_construct": "hifo.evaluators.atsp_construct:ATSPConstruct",
    "acvrp_construct": "hifo.evaluators.acvrp_construct:ACVRPConstruct",
    "radar_tune": "hifo.evaluators.radar_tune:RadarTune",
    "qd_dms": "hifo.evaluators.qd_dms:QDDiscountModelSearch",
    "hnsw_delete": "hifo.evaluators.hnsw_delete:HNSWDelete",
    "lp_irls": "hifo.evaluators.lp_irls:LpIRLS",
}


class UnknownEvaluator(KeyError):
    """No evaluator is registered under the requested name."""

    def __str__(self) -> str:  # KeyError would print the message in quotes
        return str(self.args[0]) if self.args else ""


def list_evaluators() -> dict[str, str]:
    """``{name: "module:Class"}`` of every known evaluator, sorted by name."""
    found = dict(BUILTIN)
    for ep in entry_points(group=GROUP):
        if ep.name in BUILTIN and ep.value != BUILTIN[ep.name]:
            warnings.warn(f"entry point {ep.name} = {ep.value!r} ignored: {ep.name!r} is a built-in "
                          f"evaluator ({BUILTIN[ep.name]})", stacklevel=2)
            continue
        found[ep.name] = ep.value
    return dict(sorted(found.items()))


def _resolve(target: str) -> object:
    module_name, sep, attr = target.partition(":")
    if not sep or not module_name or not attr:
        raise ValueError(f"an evaluator target must read 'module:Class', got {target!r}")
    obj: object = importlib.import_module(module_name)
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj


def get_evaluator_class(name: str) -> type[Evaluator]:
    """The evaluator class registered as ``name``.

    Raises :class:`UnknownEvaluator` (a ``KeyError``) listing the known names when there is
    none, and ``TypeError`` when the target is not an :class:`Evaluator` subclass.
    """
    known = list_evaluators()
    if name not in known:
        raise UnknownEvaluator(f"unknown evaluator {name!r}; known evaluators: "
                               f"{', '.join(known) or '(none)'}")
    cls = _resolve(known[name])
    if not (isinstance(cls, type) and issubclass(cls, Evaluator)):
        raise TypeError(f"{known[name]} (registered as {name!r}) is not an Evaluator subclass")
    return cls


def get_evaluator(name: str) -> Evaluator:
    """A fresh instance of the evaluator registered as ``name``."""
    return get_evaluator_class(name)()
