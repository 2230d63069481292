"""The registry: verdicts follow from the margins, falsifiers are planted bugs, and a claim's
expected verdict is enforced."""

from __future__ import annotations

import re

import pytest

from transformer_math import bugs
from transformer_math.claims import registry
from transformer_math.claims.registry import (
    Claim,
    Context,
    Evidence,
    Falsifier,
    Refutation,
    SeedRef,
    Tier,
    Verdict,
    at_most,
    close_to,
    decide,
    run_claim,
    select_claims,
    summarize,
    within,
)

WRONG = bugs.declare_bug("demo.registry-doubles", "the demo measurement doubles",
                         module=__name__)
UNUSED = bugs.declare_bug("demo.registry-unused", "a site nothing passes", module=__name__)


def _measure() -> float:  # stands in for library code with a planted bug
    return 2.0 if bugs.planted(WRONG) else 1.0


def _check(ctx: Context) -> Evidence:
    measured = _measure()
    margins = [close_to("measured = 1", measured, 1.0, abs_=0.1)]
    return Evidence(1.0, measured, 0.1, decide(margins), margins=margins)


def _refuting_check(ctx: Context) -> Evidence:
    """The seed says 3, the truth is 1; both compared with the same measurement."""
    measured = _measure()
    margins = [close_to("measured = 1", measured, 1.0, abs_=0.1)]
    seed = [close_to("the seed's 3", measured, 3.0, abs_=0.1)]
    return Evidence(1.0, measured, 0.1, decide(margins, seed), margins=margins,
                    seed_margins=seed)


def _blind_check(ctx: Context) -> Evidence:
    margins = [at_most("nothing", 0.0, 1.0)]  # passes whatever the library does
    return Evidence(1.0, 1.0, 0.1, Verdict.VERIFIED, margins=margins)


def _literal_refuted(ctx: Context) -> Evidence:
    margins = [at_most("ok", 0.0, 1.0)]
    return Evidence(1.0, 1.0, 0.1, Verdict.REFUTED, margins=margins)


def _lying_check(ctx: Context) -> Evidence:
    margins = [at_most("broken", 2.0, 1.0)]
    return Evidence(1.0, 2.0, 0.1, Verdict.VERIFIED, margins=margins)


def _crashing_check(ctx: Context) -> Evidence:
    raise RuntimeError("boom")


def _claim(check, falsifier=None, id_="demo.one", tier=Tier.QUICK, **kw) -> Claim:
    return Claim(id_, "demo", "test", "a statement", tier, check, falsifier, **kw)


def test_falsifier_is_the_same_check_with_the_bug_planted():
    res = run_claim(_claim(_check, Falsifier(WRONG), expected=Verdict.VERIFIED), Context())
    assert res.evidence.verdict is Verdict.VERIFIED
    assert res.falsifier_caught is True
    assert res.falsifier_evidence is not None and res.falsifier_evidence.measured == 2.0
    assert WRONG in res.reached and not res.problem
    assert bugs.active() == frozenset()


def test_check_that_cannot_fail_is_reported_as_a_problem():
    res = run_claim(_claim(_blind_check, Falsifier(WRONG)), Context())
    assert res.falsifier_caught is False and res.problem


def test_a_falsifier_whose_site_is_never_passed_is_noted():
    res = run_claim(_claim(_check, Falsifier(UNUSED)), Context())
    assert res.falsifier_caught is False
    assert any("never passed the site" in n for n in res.evidence.notes)


def test_refuted_is_computed_from_the_seed_version():
    c = _claim(_refuting_check, Falsifier(WRONG), expected=Verdict.REFUTED,
               refutes=(Refutation("000", 10, "3", "1"),))
    res = run_claim(c, Context())
    assert res.evidence.verdict is Verdict.REFUTED and res.falsifier_caught and not res.problem
    assert decide([close_to("a", 1.0, 1.0, abs_=0.1)], [close_to("s", 1.0, 1.0, abs_=0.1)]) \
        is Verdict.VERIFIED  # the seed right after all: verified (and unexpected if refuted)
    assert decide([at_most("a", 2.0, 1.0)], [at_most("s", 0.0, 1.0)]) is Verdict.FAILED


def test_literal_refuted_and_verdicts_against_the_margins_are_failures():
    lit = run_claim(_claim(_literal_refuted), Context())
    assert lit.evidence.verdict is Verdict.FAILED and "never a literal" in (lit.error or "")
    lie = run_claim(_claim(_lying_check), Context())
    assert lie.evidence.verdict is Verdict.FAILED and "disagrees with the margins" in lie.error


def test_a_verdict_other_than_the_expected_one_is_a_problem():
    c = _claim(_check, Falsifier(WRONG), expected=Verdict.REFUTED,
               refutes=(Refutation("000", 10, "x", "y"),))
    res = run_claim(c, Context())
    assert res.evidence.verdict is Verdict.VERIFIED
    assert not res.expected_met and res.problem
    assert summarize([res])["unexpected"] == 1


def test_claim_declarations_are_validated():
    with pytest.raises(ValueError, match="refuted statement"):
        _claim(_check, expected=Verdict.REFUTED)
    with pytest.raises(ValueError, match="lists refuted"):
        _claim(_check, expected=Verdict.VERIFIED, refutes=(Refutation("000", 1, "a", "b"),))
    with pytest.raises(ValueError, match="never expects"):
        _claim(_check, expected=Verdict.FAILED)
    with pytest.raises(ValueError, match="version"):
        _claim(_check, version=0)
    with pytest.raises(ValueError, match="seed must be"):
        SeedRef("001", (1, 2))
    with pytest.raises(ValueError, match="start <= end"):
        SeedRef("000", (5, 2))


def test_crashing_check_is_a_failed_claim_with_the_error():
    res = run_claim(_claim(_crashing_check), Context())
    assert res.evidence.verdict is Verdict.FAILED
    assert res.error == "RuntimeError: boom"
    assert res.problem
    assert res.to_json()["falsifier"] is None


def test_a_crashing_falsifier_is_not_caught():
    def check(ctx: Context) -> Evidence:
        if bugs.planted(WRONG):
            raise RuntimeError("crash under the bug")
        return _check(ctx)

    res = run_claim(_claim(check, Falsifier(WRONG)), Context())
    assert res.falsifier_caught is False and res.problem


def test_json_has_the_documented_keys():
    c = _claim(_check, Falsifier(WRONG), expected=Verdict.VERIFIED, version=2,
               seed_refs=(SeedRef("000", (3, 4)),))
    data = run_claim(c, Context()).to_json()
    for key in ("id", "topic", "source", "statement", "tier", "verdict", "predicted",
                "measured", "tolerance", "falsifier", "seconds", "expected", "version",
                "seed_refs", "refutes", "per_seed", "falsifier_bug", "expected_met",
                "seed_margins", "reached_bugs"):
        assert key in data
    assert data["falsifier"]["bug"] == WRONG and data["falsifier"]["caught"] is True
    assert data["seed_refs"] == [{"seed": "000", "lines": [3, 4]}] and data["version"] == 2


def test_select_and_summarize():
    quick = _claim(_check, id_="demo.quick")
    full = _claim(_check, id_="demo.full", tier=Tier.FULL)
    assert [c.id for c in select_claims([quick, full], tier="quick")] == ["demo.quick"]
    assert len(select_claims([quick, full], tier="full")) == 2
    assert [c.id for c in select_claims([quick, full], pattern="full")] == ["demo.full"]
    s = summarize([run_claim(quick, Context()), run_claim(_claim(_crashing_check), Context())])
    assert s["total"] == 2 and s["verified"] == 1 and s["failed"] == 1 and s["problems"] == 1


def test_k_finds_what_a_reader_of_the_chapter_expects():
    """``-k`` searches id, topic, source, statement, section and project module, each field on
    its own and case-insensitively (issue 18: ``-k 8.3.3`` and ``-k RoPE`` used to match
    nothing, ``-k`` searched only id and topic)."""
    every = registry.all_claims()
    ids = lambda pattern: {c.id for c in select_claims(every, pattern=pattern)}  # noqa: E731
    assert "position.rope-relative" in ids("8.3.3") and "position.rope-relative" in ids("§8.3.3")
    assert all(c.section == "8.3.3" or "8.3.3" in c.source or "8.3.3" in c.statement
               for c in select_claims(every, pattern=r"8\.3\.3"))
    assert "position.rope-relative" in ids("RoPE") and ids("rope") == ids("RoPE")
    assert ids("^M2$") == {"position.rope-relative"}
    assert {"attention.sqrt-dk-variance", "icl.one-step-gd", "architecture.chinchilla"} <= (
        ids("^M1$") | ids("^M3$") | ids("^M4$"))
    from transformer_math import i18n

    zh = i18n.statement(registry.get_claim("icl.one-step-gd"), "zh")
    assert "icl.one-step-gd" in ids(re.escape(zh[:12]))  # the Chinese statement is searched too
    assert ids(r"^position\.") == {c.id for c in every if c.topic == "position"}  # ^: a field
    assert ids("no claim says this 8.3.9") == set()


def test_claims_know_their_section_and_module():
    c = registry.get_claim("attention.sqrt-dk-variance")
    assert c.section == "8.3.1" and c.module == "M1"
    data = registry.claim_json(c)
    assert data["section"] == "8.3.1" and data["module"] == "M1" and "8.3.1" in data["sections"]
    assert registry.get_claim("spectrum.qk-localization").section == "004.ch12"


def test_corrections_are_cited_and_checked():
    ok = registry.Correction("000", 143, "MIT", "Stanford", "Garg et al. 2022, title page")
    assert ok.to_json()["source"].startswith("Garg")
    with pytest.raises(ValueError, match="source must not be empty"):
        registry.Correction("000", 143, "MIT", "Stanford", " ")
    with pytest.raises(ValueError, match="seed must be one of"):
        registry.Correction("001", 1, "a", "b", "c")


def test_claim_ids_are_validated():
    with pytest.raises(ValueError, match=r"topic\.slug"):
        _claim(_check, id_="Bad Id")
    with pytest.raises(ValueError, match="does not start with its topic"):
        Claim("other.one", "demo", "s", "t", Tier.QUICK, _check)


def test_context_seeds():
    ctx = Context(seed=4, seeds=3)
    assert ctx.seed_values() == [4, 5, 6]
    assert ctx.with_seed(6).seed == 6 and ctx.with_seed(6).seeds == 1
    with pytest.raises(ValueError, match="seeds"):
        Context(seeds=0)
    assert not within(float("nan"), 1.0, rel=1.0)


def test_every_registered_claim_is_well_formed():
    claims = registry.all_claims()
    ids = [c.id for c in claims]
    assert len(ids) == len(set(ids))
    for c in claims:
        assert c.source and c.statement
