"""The position claims after the split into claims/position/ (issue 13): ids unchanged, each in
its theme module, and the expected verdict at tiny size (runs shared with test_every_claim)."""

from __future__ import annotations

from transformer_math.claims.registry import Tier, Verdict, all_claims

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
    "position.scaling-methods": "scaling",
    "position.sinusoidal-shift": "encodings",
}
REFUTED = {"position.axial-rope", "position.kv-cache-compatibility",
           "position.rope-extrapolation-mechanism"}


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


def test_quick_verdicts(quick_runs) -> None:
    runs = quick_runs(0)
    for cid in MODULES:
        if cid == "position.extrapolation-experiment":
            continue
        expected = Verdict.REFUTED if cid in REFUTED else Verdict.VERIFIED
        assert runs[cid].result.evidence.verdict is expected, cid
