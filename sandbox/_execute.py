"""Turn candidate source into a function and run the trusted solver over the instances.

Shared by the sandbox child (:mod:`hifo.sandbox._child`) and, with no isolation at all, by
:class:`hifo.sandbox.InProcessExecutor`. Standard library only and cheap to import: the child
loads it on every spawn. Everything here treats the candidate as hostile and careless:
exceptions may have broken ``__str__``, solutions may hold NaN, numpy scalars or cycles.
"""

from __future__ import annotations

import errno
import importlib
import json
import linecache
import sys
import time
import traceback
import types
from typing import Any, Callable

CANDIDATE_FILE = "<candidate>"
CANDIDATE_MODULE = "hifo_candidate"
# Progress marks on the result pipe, ahead of the JSON result (which starts with "{"): the parent
# timestamps each on arrival, so per-instance times are measured outside the child.
MARK_BEGIN, MARK_INSTANCE = b"\x02", b"\x01"
_MAX_MESSAGE = 500  # characters of an exception message kept in a reason
_MAX_FRAMES = 3


class JobFailure(Exception):
    """A job outcome other than "ok", with the status and a readable reason."""

    def __init__(self, status: str, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


def execute(
    code: str,
    entry: str,
    solver_spec: str,
    instances: list[Any],
    limits: dict[str, Any],
    catch: type[BaseException] | tuple[type[BaseException], ...] = BaseException,
    fence: dict[str, Any] | None = None,
    audit: bool = False,
    progress: Callable[[bytes], None] | None = None,
    slot: Any = None,
) -> dict[str, Any]:
    """Run the whole job; return ``{"status", "parts", "error", "instance_s"}``.

    ``fence`` (``{"imports": [...]}``, from the evaluator's slot) loads the candidate under
    :mod:`hifo.sandbox._fence`; ``audit`` also installs its audit hook (the sandbox child only:
    the hook can never be removed from a process). ``instance_s``: seconds per instance,
    measured here around each solver call (the in-process executor's timings; the sandbox parent
    times instances itself from ``progress`` marks). ``progress``: called with :data:`MARK_BEGIN`
    right before the first instance and :data:`MARK_INSTANCE` as soon as each solver call returns;
    the child writes them on the result pipe, where the parent timestamps them on its own clock.
    ``slot``: a :class:`hifo.sandbox._slotproc.SlotProxy` whose process loads and runs the
    candidate; the solver gets the proxy instead of the function.

    ``parts`` holds one compact JSON text per instance (empty unless the status is "ok");
    each solution is encoded as soon as the solver returns it, so later mutation by the
    candidate cannot change it. Exceptions of type ``catch`` become a status and reason.
    """
    try:
        solver = _guarded(lambda: load_solver(solver_spec), "while importing the solver", limits, catch)
        if fence is not None and audit:
            from . import _fence

            _fence.install()
        if slot is not None:
            function = _guarded(slot.ready, "while loading the candidate", limits, catch)
        else:
            function = _guarded(lambda: load_candidate(code, entry, fence), "while loading the candidate", limits,
                                catch)
        times: list[float] = []
        parts = run_instances(solver, function, instances, limits, catch, times, fenced=fence is not None,
                              progress=progress, between=None if slot is None else slot.next_instance)
    except JobFailure as failure:
        if slot is not None:
            slot.close()
        return {"status": failure.status, "parts": [], "error": failure.reason, "instance_s": []}
    if slot is not None:
        slot.close()
    return {"status": "ok", "parts": parts, "error": None, "instance_s": times}


def load_solver(spec: str) -> Callable[[Callable[..., Any], Any], Any]:
    """Import ``"module:Attr"`` (dotted attributes allowed); a class means ``Attr.solve``."""
    module_name, sep, attr_path = spec.partition(":")
    if not (sep and module_name and attr_path):
        raise JobFailure("error", f"sandbox setup failed: solver {spec!r} is not 'module:Attr'")
    try:
        obj: Any = importlib.import_module(module_name)
        for part in attr_path.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError) as exc:
        hint = ""
        if isinstance(exc, ModuleNotFoundError):
            # a plug-in evaluator outside any installed package: the sandbox sees only sys.path entries it is
            # given (hifo passes the directory of the evaluator's module; install the plug-in otherwise)
            hint = (" (the sandbox imports the evaluator's module in a fresh process: install the plug-in "
                    "(pip install -e .) or give it as --problem path/to/file.py:Class)")
        raise JobFailure("error", f"sandbox setup failed: cannot import solver {spec!r}: "
                                  f"{one_line(exc)}{hint}") from None
    if isinstance(obj, type):
        obj = getattr(obj, "solve", None)
    if not callable(obj):
        raise JobFailure("error", f"sandbox setup failed: solver {spec!r} is not callable")
    return obj


def load_candidate(code: str, entry: str, fence: dict[str, Any] | None = None) -> Callable[..., Any]:
    """Exec ``code`` in a fresh module (registered in ``sys.modules``) and return ``entry``."""
    # Registered so tracebacks show the candidate's source lines (mtime None: never evicted).
    linecache.cache[CANDIDATE_FILE] = (len(code), None, code.splitlines(True), CANDIDATE_FILE)
    if fence is not None:
        return _load_fenced(code, entry, fence)
    try:
        compiled = compile(code, CANDIDATE_FILE, "exec", dont_inherit=True)
    except SyntaxError as exc:
        raise JobFailure("error", f"SyntaxError: {exc.msg} (candidate line {exc.lineno})") from None
    except ValueError as exc:  # e.g. null bytes in the source
        raise JobFailure("error", f"candidate does not compile: {one_line(exc)}") from None
    module = types.ModuleType(CANDIDATE_MODULE)
    module.__file__ = CANDIDATE_FILE
    # dataclasses, pickle and typing look classes up through sys.modules[cls.__module__].
    sys.modules[CANDIDATE_MODULE] = module
    exec(compiled, module.__dict__)
    function = module.__dict__.get(entry)
    if function is None:
        raise JobFailure("error", f"candidate defines no {entry!r}")
    if not callable(function):
        raise JobFailure("error", f"candidate's {entry!r} is not callable")
    return function


def _load_fenced(code: str, entry: str, fence: dict[str, Any]) -> Callable[..., Any]:
    from . import _fence

    try:
        function = _fence.load(code, entry, tuple(fence["imports"]), CANDIDATE_FILE)
    except SyntaxError as exc:
        raise JobFailure("error", f"SyntaxError: {exc.msg} (candidate line {exc.lineno})") from None
    except ValueError as exc:
        raise JobFailure("error", f"candidate does not compile: {one_line(exc)}") from None
    except _fence.FenceViolation as exc:
        _fence.take_violation()
        raise JobFailure("error", str(exc)) from None
    violation = _fence.take_violation()
    if violation:
        raise JobFailure("error", f"{violation} (while loading the candidate)")
    if function is None:
        raise JobFailure("error", f"candidate defines no {entry!r}")
    if not callable(function):
        raise JobFailure("error", f"candidate's {entry!r} is not callable")
    return function


def run_instances(
    solver: Callable[[Callable[..., Any], Any], Any],
    function: Callable[..., Any],
    instances: list[Any],
    limits: dict[str, Any],
    catch: type[BaseException] | tuple[type[BaseException], ...] = BaseException,
    times: list[float] | None = None,
    fenced: bool = False,
    progress: Callable[[bytes], None] | None = None,
    between: Callable[[], None] | None = None,
) -> list[str]:
    """Call ``solver(function, instance)`` for each instance; JSON-encode each solution. ``between``
    runs after each instance (a slot proxy's ``next_instance``: the next one gets a fresh slot server)."""
    cap = int(limits.get("max_solution_bytes") or 0)
    parts: list[str] = []
    total = 2  # the enclosing brackets
    if progress is not None:
        progress(MARK_BEGIN)
    for index, instance in enumerate(instances):
        where = f"on instance {index}"
        started = time.perf_counter()
        solution = _guarded(lambda: solver(function, instance), where, limits, catch)
        if between is not None:
            _guarded(between, where, limits, catch)
        if progress is not None:
            progress(MARK_INSTANCE)
        if times is not None:
            times.append(time.perf_counter() - started)
        if fenced:
            from . import _fence

            violation = _fence.take_violation()
            if violation:
                raise JobFailure("error", f"{violation} ({where})")
        part = _guarded(lambda: encode_solution(solution, index), where, limits, catch)
        total += len(part) + 1
        if cap and total > cap:
            raise JobFailure("output_limit", f"solutions exceed the {_size(cap)} result cap {where}")
        parts.append(part)
    return parts


def encode_solution(solution: Any, index: int) -> str:
    """Compact JSON of one solution; numpy scalars and arrays become lists and numbers."""
    try:
        return json.dumps(solution, allow_nan=False, default=_numpy_default, separators=(",", ":"))
    except ValueError as exc:
        if "ircular" in str(exc):
            raise JobFailure("invalid", f"solution for instance {index} contains a circular reference") from None
        raise JobFailure("invalid", f"solution for instance {index} contains NaN or infinity") from None
    except (TypeError, RecursionError) as exc:
        raise JobFailure("invalid", f"solution for instance {index} is not JSON-serialisable: {one_line(exc)}") from None


def _numpy_default(obj: Any) -> Any:
    if type(obj).__module__ == "numpy" and callable(getattr(obj, "tolist", None)):
        return obj.tolist()
    raise TypeError(f"object of type {_type_name(obj)} is not JSON-serialisable")


def _guarded(call: Callable[[], Any], where: str, limits: dict[str, Any], catch: Any) -> Any:
    try:
        return call()
    except JobFailure:
        raise
    except catch as exc:
        status, reason = describe_exception(exc, where, limits)
        if status == "error":
            _print_traceback(exc)
        raise JobFailure(status, reason) from None


def _print_traceback(exc: BaseException) -> None:
    """The full traceback goes to (captured) stderr; the reason keeps only the last frames."""
    try:
        traceback.print_exception(exc, file=sys.stderr)
    except BaseException:  # hostile exception objects must not stop the report
        pass


def describe_exception(exc: BaseException, where: str, limits: dict[str, Any]) -> tuple[str, str]:
    """Status and readable reason: one line, then the last candidate frames."""
    if isinstance(exc, MemoryError):
        limit = limits.get("memory_mb")
        head = f"memory limit {limit} MB exceeded {where}" if limit else f"MemoryError {where}"
        return "memory", head
    if isinstance(exc, OSError) and exc.errno == errno.EFBIG:
        size = limits.get("max_file_bytes")
        head = f"output file size limit exceeded ({_size(size)} per file) {where}" if size else "file too large"
        return "output_limit", head
    if isinstance(exc, SystemExit):
        return "error", f"candidate called sys.exit({_safe(lambda: repr(exc.code))[:80]}) {where}"
    frames = _frames(exc)
    return "error", f"{one_line(exc)} ({where})" + "".join(f"\n  {line}" for line in frames)


def one_line(exc: BaseException) -> str:
    """``Type: message`` on one line, robust to hostile ``__str__``."""
    message = " ".join(_safe(lambda: str(exc)).split())
    if len(message) > _MAX_MESSAGE:
        message = message[:_MAX_MESSAGE] + "..."
    name = _type_name(exc)
    return f"{name}: {message}" if message else name


def _frames(exc: BaseException) -> list[str]:
    try:
        summary = traceback.extract_tb(exc.__traceback__)
    except Exception:
        return []
    mine = {__file__}
    frames = [f for f in summary if f.filename not in mine]
    candidate = [f for f in frames if f.filename == CANDIDATE_FILE]
    shown = (candidate or frames)[-_MAX_FRAMES:]
    lines = []
    for f in shown:
        place = "candidate" if f.filename == CANDIDATE_FILE else f.filename
        text = (f.line or "").strip()[:200]
        lines.append(f"{place} line {f.lineno}, in {f.name}" + (f": {text}" if text else ""))
    return lines


def _safe(call: Callable[[], str]) -> str:
    try:
        text = call()
        return text if isinstance(text, str) else "<unprintable>"
    except BaseException:  # a hostile __str__/__repr__ may raise anything
        return "<unprintable>"


def _type_name(obj: Any) -> str:
    return _safe(lambda: type.__dict__["__name__"].__get__(type(obj)))


def _size(n: Any) -> str:
    n = int(n or 0)
    if n >= 1 << 20 and n % (1 << 20) == 0:
        return f"{n >> 20} MB"
    if n >= 1 << 10 and n % (1 << 10) == 0:
        return f"{n >> 10} KB"
    return f"{n} bytes"


class CappedText:
    """A text stream that hands at most ``budget`` UTF-8 bytes to ``sink``, then drops the rest.

    On the first drop it writes a one-line notice past the budget, so whoever reads the sink
    can tell truncation happened even if this process is killed right after. Sink errors
    (e.g. a full file-size limit) drop output rather than fail the candidate's print().
    """

    encoding = "utf-8"
    errors = "replace"

    def __init__(self, sink: Callable[[bytes], None], budget: int, fileno: int | None = None) -> None:
        self._sink = sink
        self._left = max(0, int(budget))
        self._fileno = fileno
        self.truncated = False

    def write(self, text: str) -> int:
        if not isinstance(text, str):
            raise TypeError(f"write() argument must be str, not {_type_name(text)}")
        if self._left > 0:
            chunk = text[: self._left].encode("utf-8", "replace")
            kept = chunk[: self._left]
            self._emit(kept)
            self._left -= len(kept)
            if len(kept) == len(chunk) and len(text) <= len(kept):
                return len(text)
        if not self.truncated and text:
            self.truncated = True
            self._left = 0
            self._emit(b"\n[hifo sandbox: output over the limit; the rest was dropped]\n")
        return len(text)

    def _emit(self, data: bytes) -> None:
        try:
            self._sink(data)
        except (OSError, ValueError):
            self._left = 0

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        pass

    def writable(self) -> bool:
        return True

    def readable(self) -> bool:
        return False

    def isatty(self) -> bool:
        return False

    def fileno(self) -> int:
        if self._fileno is None:
            raise OSError(errno.EBADF, "captured stream has no file descriptor")
        return self._fileno

    @property
    def closed(self) -> bool:
        return False

    def close(self) -> None:
        pass
