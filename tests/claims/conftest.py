"""Quick-tier runs shared by the claim tests: each (seed, order) is run once per session.

``quick_runs(seed)`` runs every quick claim at size tiny in registry order, after seeding the
global RNGs with a fixed value, and records for each claim whether the run left torch's, numpy's
and Python's global RNG states as it found them. ``quick_runs(seed, reverse=True)`` runs the
claims in reverse order and advances every global RNG by a claim-dependent amount before each
claim: a claim whose evidence depends on what ran before it shows up as a difference.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pytest
import torch

from transformer_math.claims.registry import (
    Claim,
    ClaimResult,
    Context,
    Size,
    Tier,
    all_claims,
    get_claim,
    run_claim,
)

QUICK: list[Claim] = [c for c in all_claims() if c.tier is Tier.QUICK]
SEEDS = (0, 1, 2, 3, 4)


@dataclass
class Run:
    result: ClaimResult
    global_rng_untouched: bool


def _rng_states() -> tuple[torch.Tensor, tuple, tuple]:
    return torch.get_rng_state(), np.random.get_state(), random.getstate()


def _same_states(a: tuple, b: tuple) -> bool:
    np_a, np_b = a[1], b[1]
    return (torch.equal(a[0], b[0]) and a[2] == b[2] and np_a[0] == np_b[0]
            and np.array_equal(np_a[1], np_b[1]) and tuple(np_a[2:]) == tuple(np_b[2:]))


def _run_all(seed: int, reverse: bool) -> dict[str, Run]:
    torch.manual_seed(1234)
    np.random.seed(1234)
    random.seed(1234)
    runs: dict[str, Run] = {}
    for i, c in enumerate(reversed(QUICK) if reverse else QUICK):
        if reverse:  # disturb every global RNG before the claim
            torch.rand(1 + 37 * i)
            np.random.rand(1 + 11 * i)
            random.random()
        before = _rng_states()
        result = run_claim(c, Context(seed=seed, size=Size.TINY))
        runs[c.id] = Run(result, _same_states(before, _rng_states()))
    return runs


@pytest.fixture(scope="session")
def quick_runs() -> Callable[..., dict[str, Run]]:
    cache: dict[tuple[int, bool], dict[str, Run]] = {}

    def get(seed: int, reverse: bool = False) -> dict[str, Run]:
        key = (seed, reverse)
        if key not in cache:
            before = torch.get_num_threads()
            torch.set_num_threads(1)
            try:
                cache[key] = _run_all(seed, reverse)
            finally:
                torch.set_num_threads(before)
        return cache[key]

    return get


@pytest.fixture(scope="session")
def full_runs() -> Callable[[str], ClaimResult]:
    """``full_runs(claim_id)``: the claim with its falsifier at size tiny, seed 0, one seed, run
    once per session (one thread) and shared by every test that reads it (a training claim
    takes tens of seconds; the topic tests and ``test_every_claim`` read the same run)."""
    cache: dict[str, ClaimResult] = {}

    def get(claim_id: str) -> ClaimResult:
        if claim_id not in cache:
            before = torch.get_num_threads()
            torch.set_num_threads(1)
            try:
                cache[claim_id] = run_claim(get_claim(claim_id),
                                            Context(seed=0, size=Size.TINY, seeds=1))
            finally:
                torch.set_num_threads(before)
        return cache[claim_id]

    return get
