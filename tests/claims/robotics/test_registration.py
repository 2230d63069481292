"""robotics.* claims: registered in their package modules, trained runs memoised."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from transformer_math.claims.registry import Context, Size, Tier, all_claims
from transformer_math.claims.robotics import chunking
from transformer_math.claims.robotics._common import preset
from transformer_math.experiments import memo, robotics_compounding

ROBOTICS = {c.id: c for c in all_claims() if c.topic == "robotics"}


TRAINED = {
    "robotics.compounding-error",
    "robotics.chunking-tradeoff",
    "robotics.multimodal-actions",
    "robotics.dt-stitching",
    "robotics.dt-return-reachability",
    "robotics.cvae-zero-latent",
    "robotics.diffusion-decoder",
    "robotics.flow-matching-decoder",
    "robotics.ar-bins-decoder",
    "robotics.decoder-steps",
}
QUICK = {
    "robotics.dt-causal-conditioning",
    "robotics.ar-decoding-steps",
    "robotics.chunked-error-bound",
    "robotics.dt-rwr-equivalence",
    "robotics.vla-prefix-mask",
    "robotics.vla-prefix-cache",
}
CITED = {"robotics.paper-reports", "robotics.temporal-ensembling"}
#: issue 31: implementation checks moved to tests/robotics/test_mechanics_checks.py
RETIRED = {"robotics.receding-horizon", "robotics.return-to-go", "robotics.act-cvae",
           "robotics.decoder-mechanics"}


def test_all_robotics_claims_registered_with_bug_falsifiers() -> None:
    from transformer_math.bugs import load_all
    from transformer_math.claims.registry import Falsifier

    assert set(ROBOTICS) == TRAINED | QUICK | CITED
    assert not RETIRED & set(ROBOTICS)
    assert all(ROBOTICS[c].tier is Tier.FULL for c in TRAINED)
    assert all(ROBOTICS[c].tier is Tier.QUICK for c in QUICK | CITED)
    known = load_all()
    for c in ROBOTICS.values():
        assert c.expected is not None and c.seed_refs, c.id
        if c.id in CITED:
            assert c.falsifier is None and c.corrections, c.id
            continue
        assert isinstance(c.falsifier, Falsifier) and c.falsifier.bug in known, c.id
    # every robotics bug is killed by a claim or, where no claim is at risk, by a test
    robotics_bugs = {n for n in known if n.startswith("robotics.")}
    by_claims = {c.falsifier.bug for c in ROBOTICS.values() if c.falsifier}
    assert robotics_bugs <= by_claims | {n for n in robotics_bugs if known[n].test}


def test_preset_takes_size_seed_and_overrides() -> None:
    ctx = Context(seed=3, size=Size.TINY)
    cfg = preset(robotics_compounding.CompoundingConfig, ctx, noise_tau=0.01)
    assert cfg.seed == 3 and cfg.noise_tau == 0.01
    assert cfg == robotics_compounding.CompoundingConfig(
        **{**robotics_compounding.CompoundingConfig.tiny().__dict__, "seed": 3,
           "noise_tau": 0.01})


def test_compounding_trains_once_per_config(monkeypatch: pytest.MonkeyPatch) -> None:
    """A second evaluation of the same config (e.g. another claim or executor) reuses the
    trained policies; a different config trains again."""
    calls: list[object] = []

    def fake_train(cfg: object, progress: object = None) -> SimpleNamespace:
        calls.append(cfg)
        return SimpleNamespace(cfg=cfg)

    monkeypatch.setattr(robotics_compounding, "train_chunk_policies", fake_train)
    monkeypatch.setattr(robotics_compounding, "evaluate_chunk_policies",
                        lambda cfg, trained: trained)
    memo.clear()
    try:
        a = robotics_compounding.CompoundingConfig.tiny()
        b = robotics_compounding.CompoundingConfig(**{**a.__dict__, "noise_tau": 0.01})
        first = chunking._compounding(a)
        assert chunking._compounding(a) is first and len(calls) == 1
        chunking._compounding(b)
        assert calls == [a, b]
    finally:
        memo.clear()


def test_compounding_decides_the_fall_inside_the_lookahead_window() -> None:
    """Issue 19 (version 3): 'falls with k' is decided for k - 1 <= L = 12 * waypoint_stride
    (the chunk's actions track observed waypoints); issue 31 (version 4): the seed's 'larger
    chunk, smaller error' is decided beyond L where the sweep reaches it (default, large) and is
    inconclusive where it does not (tiny)."""
    tiny = robotics_compounding.CompoundingConfig.tiny()
    default = robotics_compounding.CompoundingConfig.default()
    large = robotics_compounding.CompoundingConfig.large()
    assert chunking.lookahead_window(tiny) == (24, [1, 4, 16])
    assert chunking.lookahead_window(default) == (24, [1, 2, 4, 8, 16])
    assert chunking.lookahead_window(large) == (24, [1, 2, 4, 8, 16])
    edge = robotics_compounding.CompoundingConfig(chunk_sizes=(1, 24, 25, 26))
    assert chunking.lookahead_window(edge)[1] == [1, 24, 25]
    assert ROBOTICS["robotics.compounding-error"].version == 4
    assert [r.line for r in ROBOTICS["robotics.compounding-error"].refutes] == [1324]
