"""Tests of experiments/rope_extrapolation.py that train nothing (the tiny run is in
tests/claims/position/test_extrapolation.py)."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from transformer_math.experiments.rope_extrapolation import (
    ROPE_VARIANTS,
    SCHEMES,
    RopeExtrapolationConfig,
    build_position_lm,
    copy_task_batch,
    evaluate_by_position,
    high_interpolation_frequencies,
    position_lm_config,
    variant_rotary,
)
from transformer_math.functional.rope_scaling import compute_rope_frequencies, default_inv_freq
from transformer_math.nn.transformer import Transformer


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


def test_model_is_a_transformer_config_preset() -> None:
    cfg = RopeExtrapolationConfig.tiny()
    for scheme in SCHEMES:
        tc = position_lm_config(cfg, scheme)
        assert (tc.position, tc.vocab_size, tc.hidden_size) == (scheme, 16, 32)
        assert tc.max_seq_len == cfg.eval_len and tc.head_bias and tc.causal
        assert tc.intermediate_size == cfg.mlp_ratio * cfg.d_model
        assert (tc.norm, tc.norm_placement, tc.feedforward) == ("layernorm", "pre", "gelu")
    # The pre-issue-13 PositionLM had 26512 parameters (rope/alibi) and a 96 x 32 table more
    # (learned): the preset is the same network.
    counts = {s: sum(p.numel() for p in build_position_lm(cfg, s).parameters()) for s in SCHEMES}
    assert counts == {"rope": 26512, "alibi": 26512, "learned": 26512 + 96 * 32}
    with pytest.raises(ValueError, match="scheme"):
        position_lm_config(cfg, "sinusoidal")


def test_models_build_scale_and_are_seeded() -> None:
    cfg = RopeExtrapolationConfig.tiny()
    tokens = torch.zeros(2, cfg.eval_len, dtype=torch.long)
    for scheme in SCHEMES:
        model = build_position_lm(cfg, scheme)
        assert isinstance(model, Transformer)
        assert model(tokens).shape == (2, cfg.eval_len, cfg.vocab_size)
    a, b = build_position_lm(cfg, "rope"), build_position_lm(cfg, "rope")
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters(), strict=True))
    model = build_position_lm(cfg, "rope")
    plain = model(tokens)
    for variant in ROPE_VARIANTS:
        model.set_rotary(variant_rotary(variant, cfg))
        out = model(tokens)
        assert torch.isfinite(out).all()
        if variant in ("none", "window"):  # the unscaled rotary: same model
            torch.testing.assert_close(out, plain)
    with pytest.raises(ValueError, match="position='rope'"):
        build_position_lm(cfg, "alibi").set_rotary(variant_rotary("linear", cfg))
    with pytest.raises(ValueError, match="variant"):
        variant_rotary("bogus", cfg)


def test_window_limits_attention_to_the_last_keys() -> None:
    """Issue 31: the window variant is the model's own sliding window (the library's
    sliding_window_mask through TransformerConfig.sliding_window), set for the evaluation only."""
    cfg = RopeExtrapolationConfig.tiny()
    model = build_position_lm(cfg, "rope")
    g = torch.Generator().manual_seed(1)
    tokens, mask = copy_task_batch(4, 48, cfg.vocab_size, cfg.seg_min, cfg.seg_max, g)
    wide = evaluate_by_position(model, tokens, mask, cfg.bin_width, window=48)
    plain = evaluate_by_position(model, tokens, mask, cfg.bin_width)
    # a window as long as the sequence changes nothing
    torch.testing.assert_close(torch.tensor(wide[1]), torch.tensor(plain[1]))
    narrow = evaluate_by_position(model, tokens, mask, cfg.bin_width, window=2)
    assert narrow[1] != plain[1]
    assert model.config.sliding_window is None  # restored after the evaluation


def test_window_mask_sign_bug() -> None:
    """The planted sign error (now in nn/transformer.py's sliding window) keeps every past key:
    the window does nothing."""
    from transformer_math.bugs import plant

    cfg = RopeExtrapolationConfig.tiny()
    model = build_position_lm(cfg, "rope")
    g = torch.Generator().manual_seed(1)
    tokens, mask = copy_task_batch(4, 48, cfg.vocab_size, cfg.seg_min, cfg.seg_max, g)
    plain = evaluate_by_position(model, tokens, mask, cfg.bin_width)
    narrow = evaluate_by_position(model, tokens, mask, cfg.bin_width, window=2)
    with plant("position.window-mask-sign"):
        bad = evaluate_by_position(model, tokens, mask, cfg.bin_width, window=2)
    assert narrow[1] != plain[1]
    torch.testing.assert_close(torch.tensor(bad[1]), torch.tensor(plain[1]))


def test_window_bug_run_reuses_the_trained_models(monkeypatch: pytest.MonkeyPatch) -> None:
    """The falsifier's bug (window mask) lies in the evaluation: a run with it planted trains
    nothing, changes only the window variant, and leaves the memoised models untouched."""
    from transformer_math import bugs
    from transformer_math.experiments import memo, rope_extrapolation

    cfg = dataclasses.replace(RopeExtrapolationConfig.tiny(0), steps=30, alibi_steps=10,
                              learned_steps=10, eval_sequences=8)
    trained: list[str] = []
    real = rope_extrapolation.train_model

    def counting(config, scheme, steps, progress=None):  # type: ignore[no-untyped-def]
        trained.append(scheme)
        return real(config, scheme, steps, progress)

    monkeypatch.setattr(rope_extrapolation, "train_model", counting)
    memo.clear()
    try:
        clean = rope_extrapolation.run(cfg)
        assert trained == list(cfg.schemes)
        with bugs.plant("position.window-mask-sign"):
            broken = rope_extrapolation.run(cfg)
        assert trained == list(cfg.schemes)  # nothing retrained
        again = rope_extrapolation.run(cfg)
        for a, b, c in zip(clean.curves, broken.curves, again.curves, strict=True):
            assert a.loss == c.loss  # the memoised models were not modified
            if a.variant == "window":
                assert a.loss != b.loss
            else:
                assert a.loss == b.loss
    finally:
        memo.clear()
