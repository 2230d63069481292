"""Tests of experiments/rope_extrapolation.py that train nothing (the tiny run is in
test_position_claims.py)."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from transformer_math.experiments.rope_extrapolation import (
    PositionLM,
    RopeExtrapolationConfig,
    copy_task_batch,
    high_interpolation_frequencies,
    rope_variant_scaling,
    with_steps,
)
from transformer_math.functional.rope_scaling import compute_rope_frequencies, default_inv_freq


def test_copy_task_mask_marks_predictable_targets() -> None:
    g = torch.Generator().manual_seed(0)
    tokens, mask = copy_task_batch(4, 40, 16, 2, 6, g)
    assert tokens.shape == (4, 41) and mask.shape == (4, 40)
    assert mask.any()
    # every masked target equals a token earlier in the row (it is a copy)
    for b in range(4):
        for t in torch.nonzero(mask[b]).flatten().tolist():
            assert int(tokens[b, t + 1]) in tokens[b, : t + 1].tolist()
    again = copy_task_batch(4, 40, 16, 2, 6, torch.Generator().manual_seed(0))
    assert torch.equal(again[0], tokens)


def test_config_validation_and_presets() -> None:
    for preset in (RopeExtrapolationConfig.tiny(), RopeExtrapolationConfig.default(),
                   RopeExtrapolationConfig.large()):
        assert preset.eval_len == preset.train_len * preset.eval_factor
    with pytest.raises(ValueError, match="seg_max"):
        RopeExtrapolationConfig(train_len=8, seg_max=8)
    with pytest.raises(ValueError, match="schemes"):
        RopeExtrapolationConfig(schemes=("nope",))
    assert with_steps(RopeExtrapolationConfig.tiny(), 3).alibi_steps == 3
    with pytest.raises(dataclasses.FrozenInstanceError):
        RopeExtrapolationConfig().steps = 1  # type: ignore[misc]


def test_high_interpolation_mirrors_yarn() -> None:
    cfg = RopeExtrapolationConfig.default()
    hd = cfg.d_model // cfg.num_heads
    inv = default_inv_freq(hd, cfg.rope_base)
    yarn, _ = compute_rope_frequencies("yarn", hd, cfg.rope_base, {
        "factor": cfg.scale, "original_max_position_embeddings": cfg.train_len})
    mirror, factor = high_interpolation_frequencies(cfg)
    assert factor > 1
    kept_by_yarn = torch.isclose(yarn, inv)
    interpolated_by_yarn = torch.isclose(yarn, inv / cfg.scale)
    torch.testing.assert_close(mirror[kept_by_yarn], inv[kept_by_yarn] / cfg.scale)
    torch.testing.assert_close(mirror[interpolated_by_yarn], inv[interpolated_by_yarn])


def test_models_build_and_scale() -> None:
    cfg = RopeExtrapolationConfig.tiny()
    tokens = torch.zeros(2, cfg.eval_len, dtype=torch.long)
    for scheme in ("rope", "alibi", "learned"):
        assert PositionLM(cfg, scheme)(tokens).shape == (2, cfg.eval_len, cfg.vocab_size)
    model = PositionLM(cfg, "rope")
    for variant in ("none", "linear", "ntk", "dynamic", "yarn"):
        model.set_rope_scaling(rope_variant_scaling(variant, cfg), cfg.rope_base)
        assert torch.isfinite(model(tokens)).all()
    with pytest.raises(ValueError, match="scheme='rope'"):
        PositionLM(cfg, "alibi").set_rope_scaling(None, cfg.rope_base)
