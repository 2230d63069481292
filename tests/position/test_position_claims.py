"""Every position.* claim: verdict not failed at tiny size, and its falsifier caught."""

from __future__ import annotations

import pytest
import torch

from transformer_math.claims.registry import (
    Context,
    Size,
    Tier,
    Verdict,
    all_claims,
    all_hold,
    run_claim,
)

POSITION_IDS = [
    "position.alibi",
    "position.axial-rope",
    "position.extrapolation-experiment",
    "position.kv-cache-compatibility",
    "position.learned-embedding-limit",
    "position.rope-extrapolation-mechanism",
    "position.rope-group-property",
    "position.rope-long-term-decay",
    "position.rope-orthogonal",
    "position.rope-precision",
    "position.rope-relative",
    "position.scaling-methods",
    "position.sinusoidal-shift",
]
REFUTED = {"position.axial-rope", "position.kv-cache-compatibility",
           "position.rope-extrapolation-mechanism"}


def _claims() -> dict:
    return {c.id: c for c in all_claims() if c.topic == "position"}


def test_every_catalog_entry_is_registered() -> None:
    assert sorted(_claims()) == POSITION_IDS
    assert all(c.falsifier is not None for c in _claims().values())


@pytest.mark.parametrize(
    "claim_id", [i for i in POSITION_IDS if i != "position.extrapolation-experiment"])
def test_quick_claim_and_falsifier(claim_id: str) -> None:
    c = _claims()[claim_id]
    assert c.tier is Tier.QUICK
    result = run_claim(c, Context(seed=0, size=Size.TINY))
    assert result.error is None, result.evidence.notes
    expected = Verdict.REFUTED if claim_id in REFUTED else Verdict.VERIFIED
    assert result.evidence.verdict is expected, result.evidence.notes
    assert result.falsifier_caught is True


@pytest.mark.parametrize(
    "claim_id", [i for i in POSITION_IDS if i != "position.extrapolation-experiment"])
def test_quick_claim_margins_decide_the_verdict(claim_id: str) -> None:
    """The margins are the pass conditions: they hold for the claim, one of them breaks for the
    falsifier, and their names do not depend on the seed."""
    c = _claims()[claim_id]
    assert c.falsifier is not None
    names = []
    for seed in (0, 1):
        ev = c.check(Context(seed=seed, size=Size.TINY))
        assert ev.margins, claim_id
        assert all_hold(ev.margins), [m for m in ev.margins if not m.holds]
        assert ev.verdict is not Verdict.FAILED
        names.append([m.name for m in ev.margins])
        bad = c.check(Context(seed=seed, size=Size.TINY), **c.falsifier.kwargs)
        assert bad.verdict is Verdict.FAILED
        assert not all_hold(bad.margins)
    assert names[0] == names[1]


@pytest.mark.slow
def test_extrapolation_experiment_tiny() -> None:
    c = _claims()["position.extrapolation-experiment"]
    assert c.tier is Tier.FULL
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny tensors: one thread avoids oversubscription on 2 cores
    try:
        result = run_claim(c, Context(seed=0, size=Size.TINY))
    finally:
        torch.set_num_threads(threads)
    assert result.error is None, result.evidence.notes
    assert result.evidence.verdict is Verdict.VERIFIED, result.evidence.measured
    assert result.falsifier_caught is True
    assert result.evidence.figures and len(result.evidence.figures[0].series) == 9
    margins = {m.name: m for m in result.evidence.margins}
    assert len(margins) == 3 and all(m.holds for m in margins.values())
    assert result.falsifier_evidence is not None
    assert not all_hold(result.falsifier_evidence.margins)


@pytest.mark.parametrize("claim_id", ["position.rope-relative", "position.scaling-methods"])
def test_quick_claim_is_deterministic(claim_id: str) -> None:
    c = _claims()[claim_id]
    first = c.check(Context(seed=3, size=Size.TINY))
    again = c.check(Context(seed=3, size=Size.TINY))
    assert again.measured == first.measured


def test_mechanism_numbers() -> None:
    ev = _claims()["position.rope-extrapolation-mechanism"].check(
        Context(seed=0, size=Size.TINY))
    unseen = ev.details["unseen_fraction"]
    wavelength = ev.details["wavelength"]
    # L_train = 256 at tiny size: unseen phases exactly in the pairs with wavelength > 256
    assert all((u > 0) == (w > 256) for u, w in zip(unseen, wavelength, strict=True))
    assert ev.measured["PI loss share on high pairs"] > 0.9
