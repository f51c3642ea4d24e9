"""The slot fence: a candidate may use what its evaluator's slot allows, and nothing of the algorithm.

The process sandbox protects the machine; this module protects the *meaning* of a score. The
candidate runs in the same process as the trusted algorithm it plugs into, so without a fence it
could import a solver (LKH, scipy's MILP), patch the algorithm's module settings, walk up the
caller's frames to read the future of an online problem, or write to the result channel.

Three layers, each naming the rule it enforces in its failure reason ("fence: ..."):

1. **Static check of the source** (:func:`check_source`): imports only of the slot's allowlisted
   modules (no relative imports); no dunder names (``__builtins__``, ``__import__``); no attribute
   whose name starts with ``_`` (``__globals__``, ``__dict__``, ``__traceback__``, ``_os``) or names
   a frame/code/traceback field (``f_back``, ``f_globals``, ``gi_frame``, ``tb_frame``, ...) or
   raw memory (``arr.ctypes``, ``as_strided``).
2. **Guarded compile** (:func:`compile_candidate`): every attribute read ``x.a`` becomes a call
   that refuses module objects outside the allowlist (``np.lib.npyio.os``) and ``str.format``
   field lookups (``"{0.__class__}".format``); every attribute write/delete ``x.a = v`` first
   checks that ``x`` belongs to the candidate (not a module, a library class, or an object of
   the evaluator); builtins are restricted (no ``eval``/``exec``/``compile``/``open``/``globals``/
   ``vars``/...; ``getattr``/``setattr``/``delattr``/``hasattr``/``__import__`` are guarded, so a
   built string does not defeat the name check).
3. **Runtime audit hook** (:func:`install`, child only, once per process): while candidate code
   is on the stack (its module body, its entry function) it blocks subprocesses, ``os.system``/
   ``exec``/``fork``, ctypes, sockets, *every* ``open`` (reading included: held-out data on disk
   cannot be re-derived; only the import system's reads of ``.py``/``.pyc``/``.so`` files pass,
   so a library may still load its own submodules lazily), frame attributes read by any code,
   type/function attributes set on anything not the candidate's own, gc's object walks, tracing,
   and code-object construction. A blocked event also fails the job even if the candidate catches
   the exception.

**A lint, not a boundary** (issue 28): pure Python escaped it (a class defining ``__array_interface__``
plus ``id()`` maps raw memory, and from there the real builtins and this module's state are reachable).
It refuses such material early and readably (special-method definitions that libraries call, ``id``,
three-argument ``type``, metaclasses), but the guarantees come from process boundaries: the sandbox, the
slot process (:mod:`hifo.sandbox._slotproc`) and the trusted parent.

Limits (honest): this is a Python-level fence of our own (RestrictedPython is not a dependency);
its guarantees rest on CPython's audit events and on the allowlisted libraries exposing no
escape hatch through public, non-module attributes. Generators or closures the candidate hands
back to the algorithm run outside the audit window (the compile-time guards still apply to
them). Only standard library code; imported by the child after the solver's own imports.
"""

from __future__ import annotations

import ast
import builtins
import importlib
import string
import sys
import types
from typing import Any

CANDIDATE_MODULE = "hifo_candidate"
DEFAULT_SLOT_IMPORTS = (
    "numpy", "math", "cmath", "random", "itertools", "heapq", "functools", "collections", "operator",
    "statistics", "bisect", "typing", "dataclasses", "numbers", "copy", "fractions", "decimal", "array",
    "enum", "abc", "re",
)
DENIED_MODULES = (
    "numpy.ctypeslib", "numpy.f2py", "numpy.distutils", "numpy.testing", "numpy.lib.stride_tricks", "torch.hub",
    "torch.utils.cpp_extension", "torch.distributed", "torch.multiprocessing", "torch.package", "torch.utils.data",
    "torch.cuda", "torch.jit",
)
FRAME_ATTRS = frozenset({
    "f_back", "f_globals", "f_locals", "f_builtins", "f_code", "f_trace", "f_lineno", "f_lasti",
    "gi_frame", "gi_code", "gi_yieldfrom", "gi_running", "cr_frame", "cr_code", "cr_await", "cr_origin",
    "ag_frame", "ag_code", "ag_await", "tb_frame", "tb_next", "tb_lineno", "co_code", "co_consts", "co_names",
    "func_globals", "func_code", "im_func", "im_self",
})
RAW_MEMORY_ATTRS = frozenset({"ctypes", "ctypeslib", "as_strided", "from_address", "addressof", "cffi"})
# helpers that look attributes up by a string outside the guarded getattr
INDIRECT_GETATTR = frozenset({"attrgetter", "methodcaller", "get_field", "update_wrapper", "wraps"})
# process-wide settings the trusted algorithm runs under (np.errstate, a local context, stays allowed)
GLOBAL_STATE_ATTRS = frozenset({"seterr", "seterrcall", "setbufsize", "set_printoptions", "setrecursionlimit",
                                "register"})  # ABCMeta.register: isinstance(x, numbers.Real) is the algorithm's too
# owners of classes that library code run by the candidate must not modify (audit: object.__setattr__)
PROTECTED_OWNERS = frozenset({"hifo", "_hifo_sandbox", "evaluators", "problems", "numpy", "torch", "scipy", "builtins",
                              "sklearn", "highspy", "pyvrp", "elkai", "numbers", "abc", "functools", "operator"})
ALLOWED_DUNDER_ATTRS = frozenset({"__init__"})
# special methods a candidate class may not define: protocols through which a library (numpy's array interface,
# the buffer protocol, descriptors, attribute hooks, pickling, class creation) runs the candidate's code or reads
# memory the candidate points it at, often outside the audit window (a lint: see README "Fair fitness")
DENIED_SPECIAL_METHODS = frozenset({
    "__array_interface__", "__array__", "__array_struct__", "__array_priority__", "__array_ufunc__",
    "__array_function__", "__array_wrap__", "__array_finalize__", "__array_prepare__", "__buffer__",
    "__release_buffer__", "__dlpack__", "__dlpack_device__", "__cuda_array_interface__", "__get__", "__set__",
    "__delete__", "__set_name__", "__class_getitem__", "__getattr__", "__getattribute__", "__setattr__",
    "__delattr__", "__init_subclass__", "__mro_entries__", "__instancecheck__", "__subclasscheck__",
    "__prepare__", "__reduce__", "__reduce_ex__", "__getstate__", "__setstate__", "__getnewargs__",
    "__getnewargs_ex__", "__copy__", "__deepcopy__", "__del__", "__new__", "__class__", "__index__", "__fspath__",
})
# builtins that expose object addresses or build classes outside a ``class`` statement
ADDRESS_BUILTINS = frozenset({"id"})
REMOVED_BUILTINS = (
    "eval", "exec", "compile", "open", "input", "breakpoint", "globals", "locals", "vars", "help", "exit",
    "quit", "copyright", "credits", "license", "memoryview", "__loader__", "__spec__", "id",
)
BLOCKED_EVENTS = frozenset({
    "open", "os.system", "os.kill", "os.killpg", "os.fork", "os.forkpty", "os.posix_spawn", "os.chdir", "os.remove",
    "os.rename", "os.rmdir", "os.mkdir", "os.truncate", "os.putenv",
    "os.unsetenv", "os.chmod", "os.chown", "os.link", "os.symlink", "os.walk", "glob.glob", "shutil.rmtree",
    "sys._current_frames", "sys.settrace", "sys.setprofile", "sys._current_exceptions",
    "code.__new__", "function.__new__",
    "gc.get_objects", "gc.get_referrers", "gc.get_referents", "mmap.__new__",
    "resource.setrlimit", "resource.prlimit", "pty.spawn", "webbrowser.open", "urllib.Request",
    "sqlite3.connect",
})
BLOCKED_PREFIXES = ("subprocess.", "os.exec", "os.spawn", "ctypes.", "socket.", "_posixsubprocess", "os.set")


class FenceViolation(RuntimeError):
    """The candidate broke a rule of its slot; the message names the rule."""


class _State:
    depth = 0  # > 0 while candidate code is on the stack
    violations: list[str] = []
    installed = False


def check_source(code: str, allowed: tuple[str, ...]) -> None:
    """Static rules on the candidate's source; raises :class:`FenceViolation` (or SyntaxError)."""
    tree = ast.parse(code, "<candidate>")
    bound = _bound_names(tree)
    for node in ast.walk(tree):
        line = getattr(node, "lineno", "?")
        _check_lint(node, line, bound)
        if isinstance(node, ast.Import):
            for alias in node.names:
                _check_import(alias.name, allowed, line)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                raise FenceViolation(f"fence: relative import not allowed (candidate line {line})")
            _check_import(node.module or "", allowed, line)
            for alias in node.names:
                if alias.name == "*":
                    raise FenceViolation(f"fence: 'from {node.module} import *' not allowed (candidate line {line})")
                _check_attr(alias.name, line)
        elif isinstance(node, ast.Attribute):
            _check_attr(node.attr, line)
        elif isinstance(node, ast.Name) and node.id.startswith("__") and node.id.endswith("__"):
            raise FenceViolation(f"fence: dunder name {node.id!r} not allowed (candidate line {line})")
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if node.name.startswith("__hifo"):
                raise FenceViolation(f"fence: reserved name {node.name!r} (candidate line {line})")


def _bound_names(tree: ast.AST) -> set[str]:
    """Names the candidate binds itself (assignments, arguments, definitions, imports)."""
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            out.add(node.id)
        elif isinstance(node, ast.arg):
            out.add(node.arg)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(node.name)
        elif isinstance(node, ast.alias):
            out.add((node.asname or node.name).split(".")[0])
    return out


def _check_lint(node: ast.AST, line: Any, bound: set[str]) -> None:
    """Early refusals of escape material (a lint; the process boundary is what holds)."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in DENIED_SPECIAL_METHODS:
        raise FenceViolation(f"fence: defining {node.name!r} is not allowed (candidate line {line}): libraries call "
                             "it with the candidate's code outside the slot")
    if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in DENIED_SPECIAL_METHODS:
        raise FenceViolation(f"fence: the name {node.value!r} is not allowed (candidate line {line})")
    if isinstance(node, ast.ClassDef) and any(k.arg == "metaclass" for k in node.keywords):
        raise FenceViolation(f"fence: metaclasses are not allowed (candidate line {line})")
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id not in bound:
        if node.func.id in ADDRESS_BUILTINS:
            raise FenceViolation(f"fence: {node.func.id}() is not allowed (candidate line {line}): it gives addresses")
        if node.func.id == "type" and (len(node.args) != 1 or node.keywords):
            raise FenceViolation(f"fence: type() with more than one argument is not allowed (candidate line {line})")


def _check_import(name: str, allowed: tuple[str, ...], line: Any) -> None:
    if not module_allowed(name, allowed):
        raise FenceViolation(f"fence: import of {name!r} not allowed in this slot (candidate line {line}); "
                             f"allowed: {', '.join(allowed)}")


def _check_attr(name: Any, line: Any = "?") -> None:
    if not isinstance(name, str):
        raise FenceViolation("fence: attribute name must be a string")
    if name in INDIRECT_GETATTR:
        raise FenceViolation(f"fence: {name!r} looks attributes up unguarded; use getattr (candidate line {line})")
    if name in GLOBAL_STATE_ATTRS:
        raise FenceViolation(f"fence: {name!r} changes process-wide state (candidate line {line})")
    if name in RAW_MEMORY_ATTRS:
        raise FenceViolation(f"fence: raw-memory attribute {name!r} not allowed (candidate line {line})")
    if name in FRAME_ATTRS:
        raise FenceViolation(f"fence: frame/code attribute {name!r} not allowed (candidate line {line})")
    if name.startswith("_") and name not in ALLOWED_DUNDER_ATTRS:
        raise FenceViolation(f"fence: private/dunder attribute {name!r} not allowed (candidate line {line})")


def module_allowed(name: str, allowed: tuple[str, ...]) -> bool:
    if not name or any(name == d or name.startswith(d + ".") for d in DENIED_MODULES):
        return False
    return any(name == a or name.startswith(a + ".") for a in allowed)


class _Guard(ast.NodeTransformer):
    """``x.a`` -> ``__hifo_r__(x, 'a')``; ``x.a = v`` / ``del x.a`` -> ``__hifo_w__(x).a ...``."""

    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        self.generic_visit(node)
        if isinstance(node.ctx, ast.Load):
            call = ast.Call(ast.Name("__hifo_r__", ast.Load()), [node.value, ast.Constant(node.attr)], [])
            return ast.copy_location(call, node)
        base = ast.Call(ast.Name("__hifo_w__", ast.Load()), [node.value], [])
        return ast.copy_location(ast.Attribute(ast.copy_location(base, node), node.attr, node.ctx), node)


def compile_candidate(code: str, filename: str, allowed: tuple[str, ...]) -> types.CodeType:
    check_source(code, allowed)
    tree = ast.fix_missing_locations(_Guard().visit(ast.parse(code, filename)))
    return compile(tree, filename, "exec", dont_inherit=True)


def guarded_builtins(allowed: tuple[str, ...]) -> dict[str, Any]:
    """The candidate module's ``__builtins__``: restricted, with guarded attribute/import access."""
    real_import = builtins.__import__
    real_getattr, real_setattr, real_delattr = getattr, setattr, delattr

    def _module_check(value: Any) -> Any:
        if isinstance(value, types.ModuleType) and not module_allowed(value.__name__, allowed):
            raise FenceViolation(f"fence: module {value.__name__!r} is not reachable from this slot")
        return value

    def read(obj: Any, name: str) -> Any:
        value = real_getattr(obj, name)
        if isinstance(value, types.ModuleType):
            return _module_check(value)
        if name in ("format", "format_map"):
            if isinstance(obj, str):
                return _checked_format(obj, value)
            if obj is str:  # str.format(template, ...): check the template when it is called
                return lambda template, *args, **kwargs: _checked_format(template, value)(template, *args, **kwargs)
        return value

    def write_target(obj: Any) -> Any:
        if isinstance(obj, (types.ModuleType, types.BuiltinFunctionType, types.MethodType)):
            raise FenceViolation(f"fence: cannot set attributes of {_describe(obj)}")
        owner = obj if isinstance(obj, (type, types.FunctionType)) else type(obj)
        module = real_getattr(owner, "__module__", None) or ""
        if module == CANDIDATE_MODULE:
            return obj
        if not isinstance(obj, (type, types.FunctionType)) and module_allowed(module, allowed):
            return obj  # instances of allowlisted libraries (numpy arrays, torch tensors)
        raise FenceViolation(f"fence: cannot set attributes of {_describe(obj)} (not the candidate's own)")

    def g_getattr(obj: Any, name: Any, *default: Any) -> Any:
        _check_attr(name)
        try:
            return read(obj, name)
        except AttributeError:
            if default:
                return default[0]
            raise

    def g_hasattr(obj: Any, name: Any) -> bool:
        _check_attr(name)
        return hasattr(obj, name)

    def g_setattr(obj: Any, name: Any, value: Any) -> None:
        _check_attr(name)
        real_setattr(write_target(obj), name, value)

    def g_delattr(obj: Any, name: Any) -> None:
        _check_attr(name)
        real_delattr(write_target(obj), name)

    def g_import(name: str, globals: Any = None, locals: Any = None, fromlist: Any = (), level: int = 0) -> Any:
        if level or not module_allowed(name, allowed):
            raise FenceViolation(f"fence: import of {name!r} not allowed in this slot")
        module = real_import(name, globals, locals, fromlist, 0)
        for item in fromlist or ():
            _check_attr(item)
            if hasattr(module, item):
                _module_check(real_getattr(module, item))
        return module

    real_build_class = builtins.__build_class__

    def g_build_class(func: Any, name: str, *bases: Any, **kwds: Any) -> Any:
        if "metaclass" in kwds:
            raise FenceViolation("fence: metaclasses are not allowed")
        cls = real_build_class(func, name, *bases, **kwds)
        namespace = vars(cls)
        denied = sorted(n for n in DENIED_SPECIAL_METHODS & set(namespace) if _candidate_made(namespace[n]))
        if denied:
            raise FenceViolation(f"fence: class {name!r} defines {denied[0]!r}, which is not allowed")
        return cls

    safe = {k: v for k, v in vars(builtins).items() if k not in REMOVED_BUILTINS}
    safe.update(__build_class__=g_build_class, __import__=g_import, getattr=g_getattr, hasattr=g_hasattr,
                setattr=g_setattr, delattr=g_delattr, __hifo_r__=read, __hifo_w__=write_target)
    return safe


def _candidate_made(value: Any) -> bool:
    """A function (or property/static/class method of one) compiled from the candidate's source."""
    for inner in (value, getattr(value, "fget", None), getattr(value, "__func__", None)):
        code = getattr(inner, "__code__", None)
        if isinstance(code, types.CodeType) and code.co_filename.startswith("<candidate"):
            return True
    return False


def _checked_format(text: str, method: Any) -> Any:
    for _literal, field, _spec, _conv in string.Formatter().parse(text):
        if field and ("." in field or "[" in field):
            raise FenceViolation("fence: attribute/index lookups inside str.format fields are not allowed")
    return method


def _describe(obj: Any) -> str:
    try:
        if isinstance(obj, types.ModuleType):
            return f"module {obj.__name__!r}"
        if isinstance(obj, type):
            return f"class {obj.__module__}.{obj.__qualname__}"
        return f"a {type(obj).__module__}.{type(obj).__qualname__} object"
    except Exception:
        return "a foreign object"


def load(code: str, entry: str, allowed: tuple[str, ...], filename: str = "<candidate>") -> Any:
    """Compile under the fence, execute the module body inside the audit window, return a wrapper
    of ``entry`` that opens the window for each call. Raises FenceViolation / SyntaxError."""
    take_violation()  # a fresh start (the in-process executor reuses this module)
    compiled = compile_candidate(code, filename, allowed)
    _preimport(code)
    module = types.ModuleType(CANDIDATE_MODULE)
    module.__file__ = filename
    module.__dict__["__builtins__"] = guarded_builtins(allowed)
    sys.modules[CANDIDATE_MODULE] = module
    _enter()
    try:
        exec(compiled, module.__dict__)
    finally:
        _leave()
    function = module.__dict__.get(entry)
    if function is None or not callable(function):
        return function

    state = _State

    def slot(*args: Any, **kwargs: Any) -> Any:
        state.depth += 1
        try:
            return function(*args, **kwargs)
        finally:
            state.depth -= 1

    slot.__name__ = entry
    return slot


def _enter() -> None:
    _State.depth += 1


def _leave() -> None:
    _State.depth -= 1


MODULE_SUFFIXES = (".py", ".pyc", ".so")


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if not _State.depth:
        return
    if event.startswith("object.__"):  # restricted attributes (frames, code objects, type attributes)
        if event == "object.__getattr__" and not (len(args) > 1 and args[1] in FRAME_ATTRS):
            return  # e.g. dataclasses/inspect reading the candidate's own function.__code__
        if event != "object.__getattr__" and not _protected(args[0] if args else None):
            return  # e.g. dataclasses/namedtuple setting attributes of the candidate's own new class
        if event != "object.__getattr__" and _being_imported(args[0] if args else None):
            return  # a library's lazy import defining its own classes (np.median -> numpy.ma.core)
    elif not (event in BLOCKED_EVENTS or event.startswith(BLOCKED_PREFIXES)):
        return
    elif event == "open" and _module_read(args):
        return  # a library's lazy import of its own code (numpy submodules, ...)
    reason = f"fence: {event!r} is not allowed while the candidate runs"
    if len(_State.violations) < 10:
        _State.violations.append(reason)
    raise FenceViolation(reason)


def _preimport(code: str) -> None:
    """Import (outside the audit window) the modules the candidate names, already checked against
    the allowlist, so that loading them needs no ``open`` while the window is open."""
    for node in ast.walk(ast.parse(code)):
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else (
            [node.module] if isinstance(node, ast.ImportFrom) and node.module else [])
        for name in names:
            if name not in sys.modules:
                try:
                    importlib.import_module(name)
                except ImportError:
                    pass  # reported by the candidate's own import, inside the window


def _being_imported(obj: Any) -> bool:
    """``obj`` belongs to a module whose import is still running (its body is defining it)."""
    try:
        module = sys.modules.get(getattr(obj, "__module__", None) or "")
        return bool(getattr(getattr(module, "__spec__", None), "_initializing", False))
    except Exception:
        return False


def _protected(obj: Any) -> bool:
    """A class or function of the algorithm's libraries (or of an unknown owner)."""
    try:
        owner = obj if isinstance(obj, (type, types.FunctionType)) else type(obj)
        module = owner.__module__
        return not isinstance(module, str) or module.split(".")[0] in PROTECTED_OWNERS
    except Exception:
        return True


def _module_read(args: tuple[Any, ...]) -> bool:
    """Read-only opens of Python source/bytecode/extension files: what the import system does."""
    path, mode = (args + (None, None))[:2]
    return isinstance(path, str) and path.endswith(MODULE_SUFFIXES) and mode in ("r", "rb", None)


def install() -> None:
    """In the sandbox child, after the solver's imports and before the candidate is loaded: add
    the audit hook (once per process; it cannot be removed)."""
    if not _State.installed:
        sys.addaudithook(_audit)
        _State.installed = True


def take_violation() -> str | None:
    """The first violation seen since the last call (a candidate may have caught the exception)."""
    if not _State.violations:
        return None
    first = _State.violations[0]
    _State.violations.clear()
    return first
