"""The attention claims' results at size tiny, seed 0: each claim and its falsifier run once per
test session (the shared ``full_runs`` of ``tests/claims/conftest.py``, one seed for the
full-tier claim), shared by the tests of this package and ``test_every_claim``."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from transformer_math.claims.registry import ClaimResult


@pytest.fixture(scope="session")
def attention_result(full_runs: Callable[[str], ClaimResult]) -> Callable[[str], ClaimResult]:
    return full_runs
