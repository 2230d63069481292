"""Test-wide settings: one torch thread, and MKL's strict reproducible mode.

The tests use tiny tensors, where a second intra-op thread costs more in synchronisation than it
saves, and on a shared 2-core machine it oversubscribes the cores (tiny training runs measured
25x slower with 2 threads under load). One thread also makes float reductions run in one order.
"""

from __future__ import annotations

import os

# Before torch runs anything: MKL's kernels otherwise pick code paths by memory alignment, and the
# last bit of a product then depends on what ran before (see transformer_math/__init__.py).
os.environ.setdefault("MKL_CBWR", "AUTO,STRICT")

import pytest
import torch


@pytest.fixture(autouse=True)
def _one_torch_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
