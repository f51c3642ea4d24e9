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
