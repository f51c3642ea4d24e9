"""Finding evaluators by name.

Evaluators are registered under the entry-point group ``hifo.evaluators`` (``name =
"package.module:Class"``). The two built-in ones are also listed here so they are found when
this repository runs from a checkout that was never installed. A plug-in cannot take the name
of a built-in evaluator: such an entry point is ignored with a warning.
"""

from __future__ import annotations

import importlib
import os
import sys
import warnings
from importlib.metadata import entry_points

from hifo.evaluators.base import Evaluator

GROUP = "hifo.evaluators"
BUILTIN: dict[str, str] = {
    "bpp_online": "hifo.evaluators.bpp_online:BinPackingOnline",
    "tsp_construct": "hifo.evaluators.tsp_construct:TSPConstruct",
    "optwvp_route": "hifo.evaluators.optwvp_route:OPTWVPRoute",
    "optwvp_service": "hifo.evaluators.optwvp_service:OPTWVPService",
    "toptwvp_route": "hifo.evaluators.toptwvp_route:TOPTWVPRoute",
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
    "fdiv_pessimism": "hifo.evaluators.fdiv_pessimism:FdivPessimism",
    "ridge_schedule": "hifo.evaluators.ridge_schedule:RidgeSchedule",
    "fl_aggregate": "hifo.evaluators.fl_aggregate:FLAggregate",
    "tbptt_burnin": "hifo.evaluators.tbptt_burnin:TBPTTBurnIn",
    "grape_anchor": "hifo.evaluators.grape_anchor:GrAPEAnchor",
    "glowq_select": "hifo.evaluators.glowq_select:GlowQSelect",
    "surface_recon": "hifo.evaluators.surface_recon:SurfaceRecon",
    "grape_spectrum": "hifo.evaluators.grape_spectrum:GrapeSpectrum",
    "grape_slopes": "hifo.evaluators.grape_slopes:GrapeSlopes",
    "ptq4arvg_calib": "hifo.evaluators.ptq4arvg_calib:PTQ4ARVGCalib",
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
    if is_file_spec(name):
        cls = _from_file(name)
        if not (isinstance(cls, type) and issubclass(cls, Evaluator)):
            raise TypeError(f"{name} is not an Evaluator subclass")
        return cls
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


def is_file_spec(name: str) -> bool:
    """``path/to/file.py:Class``: an evaluator in a file that was never packaged."""
    path, sep, attr = name.rpartition(":")
    return bool(sep and attr and path.endswith(".py"))


def _from_file(spec: str) -> object:
    """Import ``Class`` from ``path/to/file.py``. The file's directory goes onto ``sys.path`` (and, through
    :func:`plugin_sys_path`, onto the sandbox's), so the sandbox child imports the same module by name."""
    path_s, _, attr = spec.rpartition(":")
    path = os.path.realpath(os.path.expanduser(path_s))
    if not os.path.isfile(path):
        raise UnknownEvaluator(f"plug-in file {path_s} does not exist")
    directory, stem = os.path.split(path)
    stem = stem[:-3]
    if not stem.isidentifier():
        raise UnknownEvaluator(f"plug-in file {path_s}: {stem!r} is not a valid module name; rename the file")
    if directory not in sys.path:
        sys.path.insert(0, directory)
    module = importlib.import_module(stem)
    found = os.path.realpath(getattr(module, "__file__", "") or "")
    if found != path:
        raise UnknownEvaluator(f"plug-in file {path_s}: the module name {stem!r} is already taken by {found}; "
                               "rename the file")
    if not hasattr(module, attr):
        raise UnknownEvaluator(f"plug-in file {path_s} defines no {attr!r}")
    return getattr(module, attr)


def plugin_sys_path(evaluator_cls: type) -> tuple[str, ...]:
    """Directories the sandbox child needs on ``sys.path`` to import the evaluator's module: the folder
    that holds its top-level package or module, unless that lies in this interpreter's own prefix (an
    installed package, already importable there). This is what makes a plug-in found through
    ``PYTHONPATH`` or given as ``file.py:Class`` work in the sandbox, which gets no ``PYTHONPATH``."""
    top = evaluator_cls.__module__.split(".")[0]
    mod = sys.modules.get(top)
    origin = getattr(mod, "__file__", None)
    if not origin:
        return ()
    root = os.path.dirname(os.path.realpath(origin))
    if os.path.basename(origin) == "__init__.py":
        root = os.path.dirname(root)
    prefixes = {os.path.realpath(p) for p in (sys.prefix, sys.base_prefix)}
    hifo_root = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
    if top == "hifo" or any(root.startswith(p + os.sep) for p in prefixes) or root == hifo_root:
        return ()
    return (root,)


def _source_stamp(targets: dict[str, str]) -> str:
    """A hash of what the evaluators' ``info()`` can depend on: the Python version, the registered targets
    and the size and modification time of every ``.py`` file in the packages they come from (for the
    built-ins all of ``hifo``'s folders). Any edit, install or new plug-in gives a new stamp."""
    import hashlib
    import importlib.util

    h = hashlib.sha256(f"{sys.version}\0{sorted(targets.items())}".encode())
    roots: set[str] = set()
    for target in targets.values():
        top = target.partition(":")[0].split(".")[0]
        if top == "hifo":
            for pkg in ("agents", "evaluators", "problems", "sandbox", "knowledge_base"):
                spec = importlib.util.find_spec(f"hifo.{pkg}")
                if spec is not None and spec.submodule_search_locations:
                    roots.update(spec.submodule_search_locations)
            continue
        spec = importlib.util.find_spec(top)
        if spec is None:
            h.update(f"missing {top}".encode())
        elif spec.submodule_search_locations:
            roots.update(spec.submodule_search_locations)
        elif spec.origin:
            st = os.stat(spec.origin)
            h.update(f"{spec.origin}\0{st.st_size}\0{st.st_mtime_ns}".encode())
    for root in sorted(roots):
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
            for f in sorted(filenames):
                if f.endswith(".py"):
                    st = os.stat(os.path.join(dirpath, f))
                    h.update(f"{dirpath}/{f}\0{st.st_size}\0{st.st_mtime_ns}".encode())
    return h.hexdigest()[:20]


def evaluator_infos(cache_dir: str | os.PathLike[str] | None = None) -> list[dict]:
    """``info()`` of every registered evaluator (with its ``target``; a broken one gets ``error``
    instead), sorted by name. Loading every evaluator imports torch and scipy (seconds), so the answer
    is kept in ``$XDG_CACHE_HOME/hifo/problems-<stamp>.json``, keyed by :func:`_source_stamp`; a listing
    with a broken evaluator is never kept. ``cache_dir=""`` switches the cache off."""
    import json
    from pathlib import Path

    targets = list_evaluators()
    if cache_dir is None:
        cache_dir = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "hifo"
    path = Path(cache_dir) / f"problems-{_source_stamp(targets)}.json" if str(cache_dir) else None
    if path is not None and path.is_file():
        try:
            rows = json.loads(path.read_text())
            if isinstance(rows, list) and [r.get("name") for r in rows] == list(targets):
                return rows
        except (OSError, ValueError):
            pass  # unreadable: computed again below and rewritten
    rows = []
    for name, target in targets.items():
        try:
            info = get_evaluator(name).info()
            info["target"] = target
        except Exception as exc:  # a broken plug-in must not hide the others
            info = {"name": name, "target": target, "error": f"{type(exc).__name__}: {exc}"}
        rows.append(info)
    if path is not None and not any("error" in r for r in rows):
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(f".tmp{os.getpid()}")
            tmp.write_text(json.dumps(rows))
            os.replace(tmp, path)
            for stale in path.parent.glob("problems-*.json"):  # listings of earlier sources
                if stale != path:
                    stale.unlink(missing_ok=True)
        except OSError:
            pass  # a read-only cache costs the next listing its seconds, nothing else
    return rows
