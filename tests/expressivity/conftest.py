"""One intra-op thread for these tests: tiny models on a shared 2-core machine run faster and
do not starve other processes (the setting is restored after each test)."""

from __future__ import annotations

import pytest
import torch


@pytest.fixture(autouse=True)
def _one_thread():
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(previous)
