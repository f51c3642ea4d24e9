"""One torch thread for these tests: the models are tiny, and on a shared 2-core machine a second
intra-op thread makes them ~10x slower, not faster."""

from __future__ import annotations

import pytest
import torch


@pytest.fixture(autouse=True, scope="module")
def _one_torch_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
