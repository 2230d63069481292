"""The position claims after the split into claims/position/ (issue 13): ids unchanged, each in
its theme module, and the expected verdict at tiny size (runs shared with test_every_claim).
Issue 14: every claim declares expected/version/seed_refs and a falsifier that is a planted
bug of a library module it reaches; the refuted ones name the seed lines they refute. Issue 31:
kinds, the review's answer (audit=) and the retired learned-embedding-limit."""

from __future__ import annotations

from transformer_math import bugs
from transformer_math.claims.registry import Falsifier, Kind, Tier, Verdict, all_claims

MODULES = {
    "position.alibi": "alibi",
    "position.axial-rope": "axial",
    "position.extrapolation-experiment": "extrapolation",
    "position.kv-cache-compatibility": "encodings",
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
# issue 31: position.learned-embedding-limit (an API check) became
# tests/nn/test_learned_position_limit.py
RETIRED = {"position.learned-embedding-limit"}
VERSIONS = {
    "position.alibi": 2, "position.axial-rope": 4, "position.extrapolation-experiment": 3,
    "position.kv-cache-compatibility": 2, "position.rope-extrapolation-mechanism": 3,
    "position.rope-group-property": 4, "position.rope-long-term-decay": 3,
    "position.rope-orthogonal": 3, "position.rope-precision": 2, "position.rope-relative": 2,
    "position.rope-torus-representation": 2, "position.scaling-methods": 3,
    "position.sinusoidal-shift": 4, "position.window-relative": 2,
}
# the claims whose statement changed since issue 14 carry their own Chinese statement
WITH_ZH = {"position.axial-rope", "position.extrapolation-experiment",
           "position.rope-extrapolation-mechanism", "position.rope-group-property",
           "position.rope-long-term-decay", "position.rope-orthogonal",
           "position.rope-torus-representation", "position.scaling-methods",
           "position.sinusoidal-shift", "position.window-relative"}
REFUTED = {"position.axial-rope", "position.kv-cache-compatibility",
           "position.rope-extrapolation-mechanism", "position.scaling-methods",
           "position.sinusoidal-shift", "position.rope-orthogonal",
           "position.rope-torus-representation"}
KINDS = {"position.axial-rope": Kind.CODE_AUDIT,
         "position.rope-extrapolation-mechanism": Kind.MODEL}  # the others: measurement
LIBRARY = ("transformer_math.functional.", "transformer_math.nn.", "transformer_math.theory.",
           "transformer_math.experiments.")


def _claims() -> dict:
    return {c.id: c for c in all_claims() if c.topic == "position"}


def test_ids_unchanged_and_each_in_its_theme_module() -> None:
    claims = _claims()
    assert sorted(claims) == sorted(MODULES)
    assert not RETIRED & set(claims)
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
        assert c.version == VERSIONS[cid], cid
        assert c.kind is KINDS.get(cid, Kind.MEASUREMENT), cid
        assert c.audit.startswith("Issue 31 review"), cid
        if cid in WITH_ZH:
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
