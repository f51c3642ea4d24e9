"""Grammar-constrained decoding for the embedded model (issue 12, item 5): a llama.cpp GBNF grammar for the
body of a heuristic slot, built from the evaluator's :class:`~hifo.evaluators.base.SlotGrammar`.

A completion-style prompt ends with the ``def`` line, the docstring and (edit mode) the start of the body;
the grammar describes what may follow: up to ``len(locals)`` assignments to fresh local names (each may be
preceded by up to two re-assignments of names already defined), then one ``return``, every line indented
four spaces.  Expressions are sums and products of the slot's atoms, numeric literals, ``-x``, ``x**c``,
parentheses, comparisons inside ``np.where(c, x, y)``, and allowlisted numpy functions (`UNARY`, `BINARY`,
`REDUCE`).  A name may only be read once it is defined: rules are generated per *level* (how many fresh
names exist so far), so the grammar never lets the model write an undefined name.

``returns="array"``: every assignment and the return are *array expressions*, i.e. contain an array atom
outside a reduction, so the function returns an array of the atoms' shape, never a scalar.
``returns="choice"``: ``return int(<choice_from>[np.argmin(e)])`` (or ``np.argmax``), so the return is one
of the allowed indices whatever ``e`` computes.

What the grammar cannot rule out: non-finite values (``np.log(0)``, ``x / 0``, overflowing ``np.exp``),
which a slot that demands finite numbers rejects at run time; a local name an edit start defined that holds
a scalar although its expression mentions an array argument (names are typed from their source text).
Loops, ``if`` statements, helper functions and other numpy functions cannot be written under it.

`grammar_accepts` checks a text against a grammar with llama.cpp's own grammar sampler (tests use it).
"""

from __future__ import annotations

import ast
import re
from typing import Any

UNARY = ("np.abs", "np.exp", "np.log", "np.log1p", "np.sqrt", "np.square", "np.tanh")
BINARY = ("np.maximum", "np.minimum")
REDUCE = ("np.max", "np.min", "np.mean", "np.sum", "np.std")
MAX_TERMS = 4  # terms in a sum, factors in a product
MAX_REASSIGN = 2  # re-assignments of defined names before each new name (or the return)
INDENT = "    "


def _lit(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _alt(items: list[str]) -> str:
    return " | ".join(items)


def prefix_locals(prefix: str, spec: Any, params: list[str]) -> tuple[list[str], list[str], list[str]]:
    """(array-valued, scalar-valued, choice-valued) local names that ``prefix`` (the prompt's ``def`` line,
    docstring and body start) assigns at the top level of the function, in order.  A name counts as an
    array when its (last) expression mentions one of ``spec.array_names`` other than inside a reduction
    or ``len``; as a choice when it is ``int(<choice_from>[...])`` or ``<choice_from>[...]``."""
    try:
        tree = ast.parse(prefix.rstrip("\n") + "\n" + INDENT + "pass\n")
    except SyntaxError:
        return [], [], []
    fn = next((n for n in tree.body if isinstance(n, ast.FunctionDef)), None)
    kinds: dict[str, str] = {}
    for node in fn.body if fn is not None else []:
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)):
            continue
        name = node.targets[0].id
        if name in params:
            continue
        kinds.pop(name, None)
        kinds[name] = _kind(node.value, spec)
    return ([n for n, k in kinds.items() if k == "array"], [n for n, k in kinds.items() if k == "scalar"],
            [n for n, k in kinds.items() if k == "choice"])


def _kind(value: ast.expr, spec: Any) -> str:
    inner = value.args[0] if (isinstance(value, ast.Call) and isinstance(value.func, ast.Name)
                              and value.func.id == "int" and len(value.args) == 1) else value
    if spec.choice_from and isinstance(inner, ast.Subscript) and isinstance(inner.value, ast.Name) \
            and inner.value.id == spec.choice_from:
        return "choice"
    reducers = {f.split(".")[-1] for f in REDUCE} | {"len", "int", "float", "argmin", "argmax"}

    def has_array(node: ast.AST) -> bool:
        if isinstance(node, ast.Call):
            f = node.func
            fname = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
            if fname in reducers and not any(k.arg == "axis" for k in node.keywords):
                return False
        if isinstance(node, ast.Name) and node.id in spec.array_names:
            return True
        return any(has_array(c) for c in ast.iter_child_nodes(node))

    return "array" if has_array(value) else "scalar"


def build_gbnf(spec: Any, params: list[str], prefix: str = "") -> str:
    """The GBNF grammar of the rest of a body whose prompt ends with ``prefix`` (see the module doc)."""
    arr0, sc0, choice = prefix_locals(prefix, spec, params)
    taken = set(params) | set(arr0) | set(sc0) | set(choice)
    fresh = [n for n in spec.locals if n not in taken]
    typed = spec.returns == "array"
    out: list[str] = []
    rule = out.append
    rule("root ::= body-0")
    rule("num ::= [0-9]{1,3} (\".\" [0-9]{1,3})?")
    rule("addop ::= \" + \" | \" - \"")
    rule("mulop ::= \" * \" | \" / \"")
    rule("cmp ::= \" < \" | \" > \" | \" <= \" | \" >= \"")
    rule("ufn ::= " + _alt([_lit(f) for f in UNARY]))
    rule("bfn ::= " + _alt([_lit(f) for f in BINARY]))
    rule("red ::= " + _alt([_lit(f) for f in REDUCE]))
    rule("pow ::= \"**\" (\"2\" | \"3\" | \"0.5\" | num)")
    for k in range(len(fresh) + 1):
        arrays = list(spec.array_atoms) + arr0 + (fresh[:k] if typed else [])
        scalars = list(spec.scalar_atoms) + sc0 + ([] if typed else fresh[:k])
        rule(f"arr-{k} ::= " + _alt([_lit(a) for a in arrays]))
        rule(f"sc-{k} ::= " + _alt([_lit(a) for a in scalars] + ["num"]))
        # untyped expressions x (any shape)
        rule(f"x-{k} ::= p-{k} (addop p-{k}){{0,{MAX_TERMS - 1}}}")
        rule(f"p-{k} ::= f-{k} (mulop f-{k}){{0,{MAX_TERMS - 1}}}")
        rule(f"f-{k} ::= \"-\"? b-{k} pow?")
        rule(f"b-{k} ::= arr-{k} | sc-{k} | \"(\" x-{k} \")\" | ufn \"(\" x-{k} \")\" | "
             f"bfn \"(\" x-{k} \", \" x-{k} \")\" | red \"(\" x-{k} \")\" | "
             f"\"np.where(\" c-{k} \", \" x-{k} \", \" x-{k} \")\"")
        rule(f"c-{k} ::= x-{k} cmp x-{k}")
        if typed:  # array expressions a: an array atom somewhere outside a reduction
            m = MAX_TERMS - 1
            rule(f"a-{k} ::= (p-{k} addop){{0,{m}}} ap-{k} (addop p-{k}){{0,{m}}}")
            rule(f"ap-{k} ::= (f-{k} mulop){{0,{m}}} af-{k} (mulop f-{k}){{0,{m}}}")
            rule(f"af-{k} ::= \"-\"? ab-{k} pow?")
            rule(f"ab-{k} ::= arr-{k} | \"(\" a-{k} \")\" | ufn \"(\" a-{k} \")\" | "
                 f"bfn \"(\" a-{k} \", \" x-{k} \")\" | bfn \"(\" x-{k} \", \" a-{k} \")\" | "
                 f"\"np.where(\" a-{k} cmp x-{k} \", \" x-{k} \", \" x-{k} \")\" | "
                 f"\"np.where(\" c-{k} \", \" a-{k} \", \" x-{k} \")\"")
        val = f"a-{k}" if typed else f"x-{k}"
        # statements
        defined = arr0 + sc0 + fresh[:k] if not typed else arr0 + fresh[:k]
        if typed:  # a scalar local of the edit start is read, never re-assigned with an array
            defined = [n for n in defined if n not in sc0]
        if spec.returns == "choice":
            # (a choice the edit start made is not returned as is: that would repeat the parent)
            rets = [_lit(f"{INDENT}return int({spec.choice_from}[np.") + " (\"argmin\" | \"argmax\") \"(\" "
                    + f"x-{k} " + _lit(")])\n")]
        else:
            rets = [_lit(f"{INDENT}return ") + f" {val} " + _lit("\n")]
        rule(f"ret-{k} ::= " + _alt(rets))
        head = ""
        if defined:
            rule(f"re-{k} ::= \"{INDENT}\" (" + _alt([_lit(n) for n in defined]) + f") \" = \" {val} \"\\n\"")
            head = f"re-{k}{{0,{MAX_REASSIGN}}} "
        if k < len(fresh):
            rule(f"new-{k} ::= " + _lit(f"{INDENT}{fresh[k]} = ") + f" {val} " + _lit("\n"))
            rule(f"body-{k} ::= {head}(new-{k} body-{k + 1} | ret-{k})")
        else:
            rule(f"body-{k} ::= {head}ret-{k}")
    return "\n".join(out) + "\n"


def slot_params(signature: str) -> list[str]:
    """The argument names of a ``def`` line."""
    tree = ast.parse(signature.rstrip() + "\n" + INDENT + "pass\n")
    fn = tree.body[0]
    return [a.arg for a in fn.args.args] if isinstance(fn, ast.FunctionDef) else []


def grammar_for(evaluator: Any, prefix: str) -> str | None:
    """The GBNF of ``evaluator``'s slot body after ``prefix``, or None when it declares no slot grammar."""
    spec = getattr(evaluator, "slot_grammar", None)
    if spec is None:
        return None
    return build_gbnf(spec, slot_params(evaluator.template.signature), prefix)


_RULE = re.compile(r"^([a-z0-9-]+) ::= ", re.M)


def rule_names(gbnf: str) -> list[str]:
    return _RULE.findall(gbnf)


def grammar_accepts(llm: Any, gbnf: str, text: str) -> bool:
    """Whether ``gbnf`` accepts ``text`` as a complete string, checked token by token with llama.cpp's own
    grammar sampler on the vocabulary of ``llm`` (a loaded ``llama_cpp.Llama``): a token the grammar would
    mask is never accepted, and at the end the end-of-generation token must be allowed.  Raises ValueError
    when llama.cpp cannot parse the grammar."""
    import ctypes

    import llama_cpp

    vocab = llama_cpp.llama_model_get_vocab(llm.model)
    smpl = llama_cpp.llama_sampler_init_grammar(vocab, gbnf.encode(), b"root")
    if not smpl:
        raise ValueError("llama.cpp could not parse the grammar")
    try:
        def allowed(token: int) -> bool:
            data = (llama_cpp.llama_token_data * 1)(llama_cpp.llama_token_data(token, 0.0, 0.0))
            arr = llama_cpp.llama_token_data_array(data=ctypes.cast(data, llama_cpp.llama_token_data_p), size=1,
                                                   selected=-1, sorted=False)
            llama_cpp.llama_sampler_apply(smpl, ctypes.byref(arr))
            return data[0].logit != float("-inf")

        for tok in llm.tokenize(text.encode(), add_bos=False, special=False):
            if not allowed(tok):
                return False
            llama_cpp.llama_sampler_accept(smpl, tok)
        return allowed(llama_cpp.llama_vocab_eos(vocab))
    finally:
        llama_cpp.llama_sampler_free(smpl)


class GrammarMask:
    """A llama-cpp-python logits processor that keeps only tokens ``gbnf`` allows (the grammar's state
    follows the tokens sampled so far).

    llama-cpp-python's own ``grammar=`` checks the whole vocabulary at every step; with Gemma 3's 262k
    tokens that measured 1-5 tokens/s instead of ~22.  This mask checks only the ``top`` highest-scoring
    tokens (one llama.cpp call) and the whole vocabulary only when none of them is allowed.  With the
    default sampler (top-k 40, top-p 0.95, min-p 0.05 after it) this samples from the allowed tokens among
    the model's ``top`` best, where llama-cpp-python's ``grammar=`` samples from the 40 best allowed tokens:
    the two differ only when fewer than 40 of the ``top`` are allowed, i.e. in the far tail."""

    def __init__(self, llm: Any, gbnf: str, top: int = 128):
        import llama_cpp

        self._lc = llama_cpp
        self._vocab = llama_cpp.llama_model_get_vocab(llm.model)
        self._smpl = llama_cpp.llama_sampler_init_grammar(self._vocab, gbnf.encode(), b"root")
        if not self._smpl:
            raise ValueError("llama.cpp could not parse the grammar")
        self.top = top
        self._seen: int | None = None
        self.full_scans = 0  # steps where none of the top tokens was allowed

    def _allowed(self, ids: Any) -> Any:
        import ctypes

        import numpy as np

        lc = self._lc
        data = (lc.llama_token_data * len(ids))(*[lc.llama_token_data(int(t), 0.0, 0.0) for t in ids])
        arr = lc.llama_token_data_array(data=ctypes.cast(data, lc.llama_token_data_p), size=len(ids),
                                        selected=-1, sorted=False)
        lc.llama_sampler_apply(self._smpl, ctypes.byref(arr))
        # the grammar sampler masks in place and keeps the order (it never drops entries)
        return np.array([data[i].logit != float("-inf") for i in range(len(ids))], dtype=bool)

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        import numpy as np

        n = len(input_ids)
        if self._seen is None:
            self._seen = n
        for tok in input_ids[self._seen:n]:
            self._lc.llama_sampler_accept(self._smpl, int(tok))
        self._seen = n
        k = min(self.top, len(scores))
        ids = np.argpartition(-scores, k - 1)[:k]
        ok = self._allowed(ids)
        if not ok.any():
            self.full_scans += 1
            ids = np.arange(len(scores))
            ok = self._allowed(ids)
        out = np.full_like(scores, -np.inf)
        out[ids[ok]] = scores[ids[ok]]
        return out

    def close(self) -> None:
        if self._smpl:
            self._lc.llama_sampler_free(self._smpl)
            self._smpl = None

    def __del__(self) -> None:  # pragma: no cover - a safety net; callers close
        try:
            self.close()
        except Exception:
            pass
