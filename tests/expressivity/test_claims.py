"""The expressivity.* and computation.* claims at tiny size: both directions."""

from __future__ import annotations

import pytest

from transformer_math.claims.registry import (
    Context,
    Size,
    Tier,
    Verdict,
    all_claims,
    get_claim,
    run_claim,
)

MINE = [c for c in all_claims() if c.topic in ("expressivity", "computation")]


def test_every_listed_claim_exists():
    ids = {c.id for c in MINE}
    for expected in (
        "expressivity.no-position-equivariant", "expressivity.component-ablation",
        "expressivity.contextual-mapping", "expressivity.approximation-rate",
        "computation.hahn-sensitivity", "computation.parity", "computation.parity-margin",
        "computation.precision-claims",
    ):
        assert expected in ids


@pytest.mark.parametrize("claim", [c for c in MINE if c.tier is Tier.QUICK], ids=lambda c: c.id)
def test_quick_claim_holds_and_its_falsifier_is_caught(claim):
    res = run_claim(claim, Context(seed=0, size=Size.TINY))
    assert res.evidence.verdict is not Verdict.FAILED, (res.evidence.measured, res.error)
    if claim.falsifier is not None:
        assert res.falsifier_caught is True, res.falsifier_evidence
    else:
        assert res.evidence.verdict is Verdict.CITED


def test_cited_claim_carries_primary_sources():
    ev = run_claim(get_claim("computation.precision-claims"), Context(size=Size.TINY)).evidence
    text = " ".join(ev.notes)
    for source in ("Perez", "Merrill & Sabharwal", "2411.07602"):
        assert source in text


def test_audit_refutes_the_seed_with_a_computed_circuit():
    res = run_claim(get_claim("computation.circuit-class-audit"), Context(size=Size.TINY))
    assert res.evidence.verdict is Verdict.REFUTED
    assert "TC^0[log n]" in " ".join(res.evidence.notes)


@pytest.mark.slow
@pytest.mark.parametrize("claim", [c for c in MINE if c.tier is Tier.FULL], ids=lambda c: c.id)
def test_full_claim_tiny_config_runs_with_its_falsifier(claim):
    res = run_claim(claim, Context(seed=0, size=Size.TINY))
    assert res.error is None, res.error
    assert res.evidence.measured is not None
    assert res.falsifier_evidence is not None and res.evidence.figures


# ---------------------------------------------------------------- computation.* margins (issue 12)
COMPUTATION_QUICK = [c for c in MINE if c.topic == "computation" and c.tier is Tier.QUICK]


@pytest.mark.parametrize("claim", [c for c in COMPUTATION_QUICK if c.falsifier is not None],
                         ids=lambda c: c.id)
def test_computation_margins_decide_both_directions(claim):
    res = run_claim(claim, Context(seed=0, size=Size.TINY))
    assert res.evidence.margins and all(m.holds for m in res.evidence.margins)
    f_margins = res.falsifier_evidence.margins
    assert f_margins and not all(m.holds for m in f_margins)
    assert [m.name for m in f_margins] == [m.name for m in res.evidence.margins]


def test_computation_cited_claim_reports_no_margin():
    ev = run_claim(get_claim("computation.precision-claims"), Context(size=Size.TINY)).evidence
    assert ev.verdict is Verdict.CITED and not ev.margins


def test_parity_paired_evaluation_strings_are_antithetic():
    import torch

    from transformer_math.data.parity import parity
    from transformer_math.experiments.parity_scratchpad import (
        ParityScratchpadConfig,
        evaluation_bits,
    )

    cfg = ParityScratchpadConfig.tiny(seed=0)
    assert cfg.paired_eval
    bits = evaluation_bits(cfg, 16, torch.Generator().manual_seed(0))
    half = cfg.eval_size // 2
    assert bits.shape == (cfg.eval_size, 16)
    assert bool(((bits[:half] != bits[half:]).sum(-1) == 1).all())  # one bit flipped per pair
    assert bool((parity(bits[:half]) != parity(bits[half:])).all())
    plain = ParityScratchpadConfig(eval_size=8)
    assert evaluation_bits(plain, 5, torch.Generator().manual_seed(0)).shape == (8, 5)
    with pytest.raises(ValueError, match="even"):
        ParityScratchpadConfig(eval_size=7, paired_eval=True)


@pytest.mark.slow
def test_parity_tiny_is_verified_and_its_falsifier_caught():
    res = run_claim(get_claim("computation.parity"), Context(seed=0, size=Size.TINY))
    assert res.evidence.verdict is Verdict.VERIFIED, res.evidence.measured
    assert res.falsifier_caught is True, res.falsifier_evidence.measured


def test_parity_experiment_reuses_an_arm_only_when_the_config_matches():
    from transformer_math.experiments import parity_scratchpad as ps

    cfg = ps.ParityScratchpadConfig(train_max_len=2, test_lengths=(2,), embed_dim=8,
                                    num_layers=1, window=2, steps=2, batch_size=4, eval_size=4)
    first = ps.run(cfg)
    again = ps.run(ps.ParityScratchpadConfig(**{**cfg.__dict__, "arms": ("running_parity",)}))
    fresh = ps.run(cfg, reuse=False)
    for arm in cfg.arms:
        assert fresh.arms[arm].accuracy_by_length == first.arms[arm].accuracy_by_length
        assert fresh.arms[arm].final_train_loss == first.arms[arm].final_train_loss
    assert again.arms["running_parity"] == first.arms["running_parity"]
    other_seed = ps.run(ps.ParityScratchpadConfig(**{**cfg.__dict__, "seed": 1}))
    assert other_seed.arms["none"].final_train_loss != first.arms["none"].final_train_loss
