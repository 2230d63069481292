"""The position claims after the split into claims/position/ (issue 13): ids unchanged, each in
its theme module, and the expected verdict at tiny size (runs shared with test_every_claim).
Issue 14: every claim declares expected/version/seed_refs and a falsifier that is a planted
bug of a library module it reaches; the refuted ones name the seed lines they refute."""

from __future__ import annotations

from transformer_math import bugs
from transformer_math.claims.registry import Falsifier, Tier, Verdict, all_claims

MODULES = {
    "position.alibi": "alibi",
    "position.axial-rope": "axial",
    "position.extrapolation-experiment": "extrapolation",
    "position.kv-cache-compatibility": "encodings",
    "position.learned-embedding-limit": "encodings",
    "position.rope-extrapolation-mechanism": "scaling",
    "position.rope-group-property": "rope",
    "position.rope-long-term-decay": "rope_numerics",
    "position.rope-orthogonal": "rope",
    "position.rope-precision": "rope_numerics",
    "position.rope-relative": "rope",
    "position.rope-torus-representation": "representation",
    "position.scaling-methods": "scaling",
    "position.sinusoidal-shift": "encodings",
    "position.window-relative": "window",
}
NEW_IN_ISSUE_14 = {"position.window-relative"}
NEW_IN_ISSUE_18 = {"position.rope-torus-representation"}
# issue 18 (the seed audit): checks extended with the seeds' versions as seed margins
VERSION_3 = {"position.axial-rope", "position.rope-group-property", "position.rope-orthogonal",
             "position.scaling-methods", "position.sinusoidal-shift"}
REFUTED = {"position.axial-rope", "position.kv-cache-compatibility",
           "position.rope-extrapolation-mechanism", "position.scaling-methods",
           "position.sinusoidal-shift", "position.rope-orthogonal",
           "position.rope-group-property", "position.rope-torus-representation"}
LIBRARY = ("transformer_math.functional.", "transformer_math.nn.", "transformer_math.theory.",
           "transformer_math.experiments.")


def _claims() -> dict:
    return {c.id: c for c in all_claims() if c.topic == "position"}


def test_ids_unchanged_and_each_in_its_theme_module() -> None:
    claims = _claims()
    assert sorted(claims) == sorted(MODULES)
    for cid, c in claims.items():
        assert c.check.__module__ == f"transformer_math.claims.position.{MODULES[cid]}", cid
        assert c.falsifier is not None
        expected_tier = Tier.FULL if cid == "position.extrapolation-experiment" else Tier.QUICK
        assert c.tier is expected_tier


def test_metadata_and_falsifiers_are_library_bugs() -> None:
    bugs.load_all()
    for cid, c in _claims().items():
        expected = Verdict.REFUTED if cid in REFUTED else Verdict.VERIFIED
        assert c.expected is expected, cid
        assert c.seed_refs, cid
        assert isinstance(c.falsifier, Falsifier), cid
        assert c.falsifier.bug in bugs.BUGS, cid
        assert bugs.BUGS[c.falsifier.bug].module.startswith(LIBRARY), cid
        assert bool(c.refutes) is (cid in REFUTED), cid
        version = 1 if cid in NEW_IN_ISSUE_14 | NEW_IN_ISSUE_18 else (
            3 if cid in VERSION_3 else 2)
        assert c.version == version, cid
        if cid in VERSION_3 | NEW_IN_ISSUE_18:
            assert c.statement_zh, cid


def test_quick_verdicts(quick_runs) -> None:
    runs = quick_runs(0)
    for cid in MODULES:
        if cid == "position.extrapolation-experiment":
            continue
        expected = Verdict.REFUTED if cid in REFUTED else Verdict.VERIFIED
        result = runs[cid].result
        assert result.evidence.verdict is expected, cid
        assert result.falsifier_caught is True, cid
        assert result.claim.falsifier.bug in result.reached, cid
        if expected is Verdict.REFUTED:
            assert result.evidence.seed_margins, cid
            assert not all(m.holds for m in result.evidence.seed_margins), cid
