"""Small helpers shared by the evaluators for their packaged reference data."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def load_refs(path: Path, make_command: str) -> dict[str, Any]:
    """Reference values stored as JSON beside the evaluator; a missing file names the command
    that regenerates it (evaluators never recompute references at run time)."""
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise FileNotFoundError(f"{path} is missing; run `{make_command}`") from None


class StaleReference(RuntimeError):
    """The stored reference data does not match the instance the generator makes now."""


def checked_reference(refs: dict[str, Any], name: str, digest: str, *, remake: str, digest_key: str = "sha256",
                      **expect: Any) -> dict[str, Any]:
    """The stored reference of the seeded instance ``name``, checked against it before use.

    ``expect`` are the fields the record must hold (n, seed, capacity, ...); ``digest`` is the
    instance's ``array_digest`` now, compared with ``record[digest_key]``. Raises
    :class:`StaleReference` (a ``RuntimeError``) naming ``remake``, the command that rebuilds the file,
    when the record is missing or was made for another instance: a reference value is only meaningful
    for the exact instance it was computed on.
    """
    ref = refs.get(name)
    if ref is None or any(ref.get(k) != v for k, v in expect.items()):
        raise StaleReference(f"no stored reference for {name}; rerun {remake}")
    if ref.get(digest_key) != digest:
        raise StaleReference(f"{name}: the generator no longer reproduces the reference instance")
    return ref
