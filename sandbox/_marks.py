"""Parent side of the per-instance clock: the child's progress marks on the result pipe.

The child (:mod:`hifo.sandbox._execute`) writes ``MARK_BEGIN`` before the first instance and
``MARK_INSTANCE`` as each solver call returns, ahead of its JSON result; the parent timestamps
each mark on arrival with its own clock, so per-instance times never come from the child.
"""

from __future__ import annotations

import time


def instance_seconds(marks: list[float], since: list[float] | None = None) -> list[float]:
    """Per-instance seconds from the parent's timestamps of the child's progress marks.

    ``since[i]``, when given, is the parent's clock at the read *before* the one that brought mark ``i``.
    When a busy parent reads two consecutive marks in one chunk they share a timestamp; the instance
    between them is then charged the whole window in which both arrived (``marks[i+1] - since[i+1]``),
    an overestimate, so coalescing never reads as a free (0 s) instance in the candidate's favour."""
    out = []
    for i, (a, b) in enumerate(zip(marks, marks[1:])):
        if since is not None and b == a:
            out.append(b - since[i + 1])
        else:
            out.append(b - a)
    return out


class Marks:
    """Splits the progress marks off the head of the result pipe and timestamps each on arrival.

    The child writes ``MARK_BEGIN`` once, then ``MARK_INSTANCE`` after each instance, then its JSON
    result (which starts with ``{``). Several marks read in one chunk share the read's timestamp."""

    BEGIN, INSTANCE = 2, 1

    def __init__(self) -> None:
        self.times: list[float] = []
        self.since: list[float] = []  # per mark: the parent's clock at the previous read (see instance_seconds)
        self.last_read = time.monotonic()
        self.scanned = 0  # bytes of the result buffer that were marks
        self.done = False  # the JSON has begun: no more marks

    def take(self, received: bytearray) -> None:
        if self.done:
            return
        now = time.monotonic()
        while self.scanned < len(received):
            byte = received[self.scanned]
            if byte == self.BEGIN and not self.times or byte == self.INSTANCE and self.times:
                self.times.append(now)
                self.since.append(self.last_read)
                self.scanned += 1
            else:
                self.done = True
                break
        self.last_read = now
