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


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook reads the xdist_group markers
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Groups for ``pytest -n 2 --dist loadgroup`` (what ``make test`` runs): a session cache
    is computed once per worker, so every test that reads the shared claim runs
    (``full_runs``, ``quick_runs``) or the doctor's trained checkpoints runs in that cache's
    group, and every other test stays with the other tests of its file (module fixtures are
    then built once); a test may choose its own group (``@pytest.mark.xdist_group(name)``).
    The ``full_runs`` group is the longest one (its worker finishes last), so a test that
    only reuses one of its memoised runs (``test_dt_tiny_studies``, 80 s of its own training)
    stays out of it. Without xdist the groups are unused markers.
    (pytest 9 ignores the groups of pytest-xdist 3.8, hence the pin below 9 in pyproject.)"""
    for item in items:
        if item.get_closest_marker("xdist_group") is not None:  # the test chose its group
            continue
        fixtures = getattr(item, "fixturenames", ())
        if "full_runs" in fixtures:
            group = "full_runs"
        elif "quick_runs" in fixtures:
            group = "quick_runs"
        elif "tests/doctor/" in item.nodeid:
            group = "doctor"
        else:
            group = item.nodeid.split("::", 1)[0]
        item.add_marker(pytest.mark.xdist_group(group))
