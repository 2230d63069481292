"""The attention claims' results at size tiny, seed 0: each claim and its falsifier run once per
test session, shared by the tests of this package."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from transformer_math.claims.registry import ClaimResult, Context, Size, get_claim, run_claim

TINY = Context(seed=0, size=Size.TINY, seeds=1)  # one seed for the full-tier claim (CI time)


@pytest.fixture(scope="session")
def attention_result() -> Callable[[str], ClaimResult]:
    cache: dict[str, ClaimResult] = {}

    def get(claim_id: str) -> ClaimResult:
        if claim_id not in cache:
            cache[claim_id] = run_claim(get_claim(claim_id), TINY)
        return cache[claim_id]

    return get
