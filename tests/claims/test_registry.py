"""The registry: a falsifier is caught only when the same check reports FAILED on it."""

from __future__ import annotations

import pytest

from transformer_math.claims import registry
from transformer_math.claims.registry import (
    Claim,
    Context,
    Evidence,
    Falsifier,
    Tier,
    Verdict,
    agreement,
    run_claim,
    select_claims,
    summarize,
    within,
)


def _check(ctx: Context, wrong: bool = False) -> Evidence:
    measured = 2.0 if wrong else 1.0
    ok = within(measured, 1.0, abs_=0.1)
    return Evidence(1.0, measured, 0.1, agreement(ok))


def _blind_check(ctx: Context, wrong: bool = False) -> Evidence:
    return Evidence(1.0, 1.0, 0.1, Verdict.VERIFIED)  # ignores its variant: cannot fail


def _crashing_check(ctx: Context) -> Evidence:
    raise RuntimeError("boom")


def _claim(check, falsifier=None, id_="demo.one", tier=Tier.QUICK) -> Claim:
    return Claim(id_, "demo", "test", "a statement", tier, check, falsifier)


def test_falsifier_caught_when_check_detects_the_wrong_variant():
    res = run_claim(_claim(_check, Falsifier("wrong", {"wrong": True})), Context())
    assert res.evidence.verdict is Verdict.VERIFIED
    assert res.falsifier_caught is True
    assert res.falsifier_evidence is not None and res.falsifier_evidence.measured == 2.0
    assert not res.problem


def test_check_that_cannot_fail_is_reported_as_a_problem():
    res = run_claim(_claim(_blind_check, Falsifier("wrong", {"wrong": True})), Context())
    assert res.falsifier_caught is False
    assert res.problem


def test_crashing_check_is_a_failed_claim_with_the_error():
    res = run_claim(_claim(_crashing_check), Context())
    assert res.evidence.verdict is Verdict.FAILED
    assert res.error == "RuntimeError: boom"
    assert res.problem
    assert res.to_json()["falsifier"] is None


def test_json_has_the_documented_keys():
    data = run_claim(_claim(_check, Falsifier("wrong", {"wrong": True})), Context()).to_json()
    for key in ("id", "topic", "source", "statement", "tier", "verdict", "predicted",
                "measured", "tolerance", "falsifier", "seconds"):
        assert key in data
    assert data["falsifier"]["name"] == "wrong" and data["falsifier"]["caught"] is True


def test_select_and_summarize():
    quick = _claim(_check, id_="demo.quick")
    full = _claim(_check, id_="demo.full", tier=Tier.FULL)
    assert [c.id for c in select_claims([quick, full], tier="quick")] == ["demo.quick"]
    assert len(select_claims([quick, full], tier="full")) == 2
    assert [c.id for c in select_claims([quick, full], pattern="full")] == ["demo.full"]
    s = summarize([run_claim(quick, Context()), run_claim(_claim(_crashing_check), Context())])
    assert s["total"] == 2 and s["verified"] == 1 and s["failed"] == 1 and s["problems"] == 1


def test_claim_ids_are_validated():
    with pytest.raises(ValueError, match=r"topic\.slug"):
        _claim(_check, id_="Bad Id")
    with pytest.raises(ValueError, match="does not start with its topic"):
        Claim("other.one", "demo", "s", "t", Tier.QUICK, _check)


def test_within_rejects_nan_and_refuted_verdict():
    assert not within(float("nan"), 1.0, rel=1.0)
    assert agreement(True, refutes_seed=True) is Verdict.REFUTED
    assert agreement(False, refutes_seed=True) is Verdict.FAILED


def test_every_registered_claim_is_well_formed():
    claims = registry.all_claims()
    ids = [c.id for c in claims]
    assert len(ids) == len(set(ids))
    for c in claims:
        assert c.source and c.statement
