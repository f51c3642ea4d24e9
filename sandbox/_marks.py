"""Parent side of the per-instance clock: the child's progress marks on the result pipe.

The child (:mod:`hifo.sandbox._execute`) writes ``MARK_BEGIN`` before the first instance and
``MARK_INSTANCE`` as each solver call returns, ahead of its JSON result; the parent timestamps
each mark on arrival with its own clock, so per-instance times never come from the child.
"""

from __future__ import annotations

import time


def instance_seconds(marks: list[float]) -> list[float]:
    """Per-instance seconds from the parent's timestamps of the child's progress marks."""
    return [b - a for a, b in zip(marks, marks[1:])]


class Marks:
    """Splits the progress marks off the head of the result pipe and timestamps each on arrival.

    The child writes ``MARK_BEGIN`` once, then ``MARK_INSTANCE`` after each instance, then its JSON
    result (which starts with ``{``). Several marks read in one chunk share the read's timestamp."""

    BEGIN, INSTANCE = 2, 1

    def __init__(self) -> None:
        self.times: list[float] = []
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
                self.scanned += 1
            else:
                self.done = True
                return
