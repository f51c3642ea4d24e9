"""Shared fixtures for the knowledge-base tests: a temporary store with a controllable clock."""

from __future__ import annotations

import pytest

from hifo.knowledge_base import KnowledgeBase

T0 = 1_700_000_000.0  # a fixed "now" so recency and timestamps are exact


class FakeClock:
    def __init__(self, t: float = T0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t

    def advance(self, seconds: float) -> None:
        self.t += seconds


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def kb_path(tmp_path):
    return tmp_path / "kb" / "knowledge.sqlite"


@pytest.fixture
def kb(kb_path, clock):
    with KnowledgeBase(kb_path, clock=clock) as store:
        yield store
