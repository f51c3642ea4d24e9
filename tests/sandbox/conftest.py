"""A warm pool per test module (closed at its end)."""

from __future__ import annotations

import pytest

from hifo.sandbox import WarmPool


@pytest.fixture(scope="module")
def pool():
    warm = WarmPool()
    yield warm
    warm.close()
