"""Near-duplicate detection for principle text.

``similarity(a, b)`` is a number in [0, 1]; the store merges a new principle into an existing one when it
reaches the store's threshold (`DEFAULT_MERGE_THRESHOLD`).  The recipe:

1. **Normalise**: Unicode NFKC, lower case, drop parenthesised remarks — ``"(4/5 elites vs 1/6 weak)"`` is
   evidence, not content, so the same advice restated next generation with new counts still matches —
   then split into tokens (words, numbers, dotted names such as ``np.exp``), drop stop words and strip
   common English suffixes (``placing``/``placed`` → ``plac``).
2. **Guards** (similarity 0 when either fails): both texts must carry the same *anchors* — numbers and
   code identifiers (``np.exp`` vs ``np.log``, ``0.3`` vs ``0.7`` are different advice however alike the
   rest of the sentence is; a word in `backticks` is an anchor too) — and the same *polarity*: negation
   (avoid / never / not …) and direction words (more / higher / better … vs less / lower / worse …).
3. **Score**: the larger of the Jaccard index of the token sets and of the character 4-shingle sets of
   the normalised token string (the latter catches spelling variants such as ``minimise``/``minimize``).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

DEFAULT_MERGE_THRESHOLD = 0.75

_PARENS = re.compile(r"\([^()]*\)|\[[^\[\]]*\]")
_TOKEN = re.compile(r"[a-z0-9_]+(?:\.[a-z0-9_]+)*")
_NUMBER = re.compile(r"\d+(?:\.\d+)?")
_BACKTICKED = re.compile(r"`([^`]+)`")

_STOP = frozenset(
    """a an the and or of to in on at by for with from into as is are was were be been being it its this
    that these those which who whom than then so such can could should would may might will shall must do
    does did has have had each every any all some our their there here when while where if else also very
    just only one ones heuristic heuristics candidate candidates function functions""".split()
)
_NEGATION = frozenset("avoid avoids avoiding never not no don't dont without nor neither none".split())
_UP = frozenset(
    "more most higher highest larger largest increase increases increasing raise bigger better best "
    "greater longer maximise maximize".split()
)
_DOWN = frozenset(
    "less least lower lowest smaller smallest decrease decreases decreasing reduce fewer worse worst "
    "shorter minimise minimize".split()
)
_SUFFIXES = ("ing", "ed", "es", "s")


def _stem(word: str) -> str:
    if "." in word or "_" in word or word[0].isdigit():
        return word
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3 and not word.endswith("ss"):
            return word[: -len(suffix)]
    return word


@dataclass(frozen=True)
class Fingerprint:
    """What similarity compares, computed once per text."""

    tokens: frozenset[str]
    shingles: frozenset[str]
    anchors: frozenset[str]
    negated: bool
    direction: frozenset[str]


def normalise(text: str) -> str:
    """Lower-cased text with parenthesised remarks removed and whitespace collapsed."""
    text = unicodedata.normalize("NFKC", text).lower().replace("’", "'")
    previous = None
    while previous != text:  # nested parentheses: peel from the inside out
        previous, text = text, _PARENS.sub(" ", text)
    return " ".join(text.split())


def fingerprint(text: str) -> Fingerprint:
    norm = normalise(text)
    raw = _TOKEN.findall(norm.replace("'", ""))
    words = set(norm.replace("'", " ").split()) | set(raw)
    content = [_stem(t) for t in raw if t not in _STOP]
    quoted = {t for span in _BACKTICKED.findall(norm) for t in _TOKEN.findall(span)}
    anchors = frozenset(t for t in raw if _NUMBER.fullmatch(t) or "." in t or "_" in t or t in quoted)
    direction = frozenset(name for name, vocab in (("up", _UP), ("down", _DOWN)) if words & vocab)
    joined = " ".join(content)
    shingles = frozenset(joined[i : i + 4] for i in range(max(len(joined) - 3, 1))) if joined else frozenset()
    negated = bool(words & _NEGATION) or "don't" in norm
    return Fingerprint(frozenset(content), shingles, anchors, negated, direction)


def _jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    if not a and not b:
        return 1.0
    return len(a & b) / len(a | b)


def similarity(a: str | Fingerprint, b: str | Fingerprint) -> float:
    """Near-duplicate score in [0, 1] (see the module docstring for the exact recipe)."""
    fa = a if isinstance(a, Fingerprint) else fingerprint(a)
    fb = b if isinstance(b, Fingerprint) else fingerprint(b)
    if fa.anchors != fb.anchors or fa.negated != fb.negated or fa.direction != fb.direction:
        return 0.0
    return max(_jaccard(fa.tokens, fb.tokens), _jaccard(fa.shingles, fb.shingles))


def search_terms(text: str, limit: int = 64) -> list[str]:
    """Distinct content words of ``text`` (no stop words), in order, for a full-text query."""
    out: list[str] = []
    for token in re.findall(r"\w+", unicodedata.normalize("NFKC", text).lower()):
        if token not in _STOP and token not in out and (len(token) > 1 or token.isdigit()):
            out.append(token)
            if len(out) >= limit:
                break
    return out
