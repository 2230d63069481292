"""Tiny configurations of the three experiments run, are deterministic, and report sane numbers."""

from __future__ import annotations

import pytest
import torch

from transformer_math.data.parity import parity_sequences, random_bits
from transformer_math.experiments import (
    component_ablation,
    parity_scratchpad,
    position_equivariance,
)
from transformer_math.nn.tiny_transformer import build_tiny_transformer


@pytest.mark.slow
def test_component_ablation_tiny_runs_and_is_deterministic():
    cfg = component_ablation.ComponentAblationConfig.tiny(seed=0)
    seen: list[float] = []
    a = component_ablation.run(cfg, progress=seen.append)
    b = component_ablation.run(cfg)
    assert set(a.results) == {"ffn_only/1L", "attention_only/1L", "full/1L"}
    assert a.results["full/1L"].eval_loss == b.results["full/1L"].eval_loss
    assert 0 < a.tokenwise_ceiling < 1
    assert seen and seen[-1] == pytest.approx(1.0)


@pytest.mark.slow
def test_position_equivariance_tiny_no_position_arm_respects_the_ceiling():
    res = position_equivariance.run(position_equivariance.PositionEquivarianceConfig.tiny(seed=0))
    assert set(res.results) == {"none", "learned"}
    # a model without positions cannot beat the equivariant ceiling (plus sampling noise)
    assert res.results["none"].eval_accuracy <= res.equivariant_ceiling + 0.2


@pytest.mark.slow
def test_parity_scratchpad_tiny_runs():
    cfg = parity_scratchpad.ParityScratchpadConfig.tiny(seed=0)
    res = parity_scratchpad.run(cfg)
    for arm in cfg.arms:
        acc = res.arms[arm].accuracy_by_length
        assert set(acc) == set(cfg.test_lengths)
        assert all(0.0 <= v <= 1.0 for v in acc.values())


def test_generation_reads_only_the_models_own_tokens():
    cfg = parity_scratchpad.ParityScratchpadConfig.tiny(seed=0)
    model = build_tiny_transformer(parity_scratchpad._model_config(cfg, "running_parity"), 0)
    bits = random_bits(4, 3, torch.Generator().manual_seed(0))
    seqs = parity_sequences(list(bits), "running_parity")
    acc = parity_scratchpad.generate_and_score(model, seqs)
    assert 0.0 <= acc <= 1.0
    mixed = parity_sequences([bits[0], bits[1, :2]], "running_parity")
    with pytest.raises(ValueError, match="one length"):
        parity_scratchpad.generate_and_score(model, mixed)


def test_config_validation():
    with pytest.raises(ValueError, match="task must be"):
        position_equivariance.PositionEquivarianceConfig(task="context_lookup")
    with pytest.raises(ValueError, match="steps"):
        component_ablation.TrainSettings(steps=0)
    with pytest.raises(ValueError, match="test length"):
        parity_scratchpad.ParityScratchpadConfig(test_lengths=())
