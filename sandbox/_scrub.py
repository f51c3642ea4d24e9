"""Credential scrubbing of text that comes out of a candidate (errors, stdout) before it is stored
(``run.sqlite``, ``events.jsonl``) or shown to a model (the distill prompt).

A candidate cannot reach the network, but what it prints or raises is kept and may be quoted
to the model provider: a secret it managed to read must not travel that way. Two nets:

* the *values* of this process's environment variables whose names look secret (``*KEY*``,
  ``*TOKEN*``, ``*SECRET*``, ``*PASSWORD*``, ``*CREDENTIAL*``, ...; values of 8+ characters),
  replaced wherever they appear, whatever their shape;
* shapes of well-known credentials (OpenAI/Anthropic ``sk-...``, AWS ``AKIA...``, GitHub
  ``ghp_...``, Hugging Face ``hf_...``, Google ``AIza...``, Slack ``xox?-...``, JWTs, PEM
  private keys, ``Bearer ...`` and ``api_key = ...`` assignments).

This is a filter, not a proof: a secret of no known shape that is not in the environment
(say, copied from a file the sandbox hid) is only caught when it has one of these shapes.
The first line of defence is that the sandbox shows the candidate no such file.
"""

from __future__ import annotations

import os
import re
from typing import Mapping

REDACTED = "[REDACTED]"
SECRET_NAME = re.compile(r"(KEY|TOKEN|SECRET|PASSW|PASSWD|CREDENTIAL|AUTH|COOKIE|SESSION|PRIVATE)", re.I)
_MIN_VALUE = 8
_PATTERNS = [
    re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----.*?(-----END [A-Z ]*PRIVATE KEY-----|\Z)", re.S),
    re.compile(r"\bsk-(?:ant-|proj-|live-|test-)?[A-Za-z0-9_\-]{16,}"),
    re.compile(r"\b(?:AKIA|ASIA)[A-Z0-9]{16}\b"),
    re.compile(r"\bgh[pousr]_[A-Za-z0-9]{20,}"),
    re.compile(r"\bgithub_pat_[A-Za-z0-9_]{20,}"),
    re.compile(r"\bhf_[A-Za-z0-9]{20,}"),
    re.compile(r"\bAIza[0-9A-Za-z_\-]{30,}"),
    re.compile(r"\bxox[abposr]-[A-Za-z0-9\-]{10,}"),
    re.compile(r"\beyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}"),  # JWT
    re.compile(r"(?i)\bbearer\s+[A-Za-z0-9._~+/\-]{12,}=*"),
    # NAME = value / NAME: value / "NAME": "value" where NAME looks secret
    re.compile(r"(?i)\b([A-Z0-9_]*(?:api[_-]?key|secret|token|passw(?:or)?d|credential)[A-Z0-9_]*)"
               r"(['\"]?\s*[:=]\s*['\"]?)([^\s'\",;]{6,})"),
]


def secret_values(environ: Mapping[str, str] | None = None) -> list[str]:
    """Values of secret-named environment variables, longest first (so overlaps go whole)."""
    env = os.environ if environ is None else environ
    values = {v for k, v in env.items() if SECRET_NAME.search(k) and len(v.strip()) >= _MIN_VALUE}
    return sorted(values, key=len, reverse=True)


def scrub(text: str | None, *, limit: int | None = None, environ: Mapping[str, str] | None = None) -> str | None:
    """``text`` with anything credential-like replaced by ``[REDACTED]``, then capped at ``limit``
    characters (the cap applies *after* scrubbing, so a cut never leaves half a secret unscrubbed)."""
    if text is None:
        return None
    if not isinstance(text, str):
        text = str(text)
    for value in secret_values(environ):
        text = text.replace(value, REDACTED)
    for pattern in _PATTERNS:
        if pattern.groups == 3:
            text = pattern.sub(lambda m: m.group(1) + m.group(2) + REDACTED, text)
        else:
            text = pattern.sub(REDACTED, text)
    if limit is not None and len(text) > limit:
        text = text[:limit] + " [...]"
    return text
