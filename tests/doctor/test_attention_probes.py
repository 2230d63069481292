"""The attention checks of ``tmath doctor`` (``doctor/attention_probes.py``): each flags its planted
bugs on tiny project models and stays silent on healthy models, on both engines."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from transformer_math import bugs
from transformer_math.doctor import examine
from transformer_math.doctor.attention_probes import (
    alibi_reference_slopes,
    allowed_keys,
    padding_positions,
    reference_attention,
)
from transformer_math.doctor.findings import Severity
from transformer_math.nn.config import TransformerConfig
from transformer_math.nn.transformer import build_transformer

MINE = ["attention.saturation", "attention.recompute", "attention.causal-leakage",
        "attention.mask-coverage", "attention.padding", "attention.masked-rows"]

LLAMA = dict(vocab_size=64, hidden_size=32, num_layers=2, num_heads=4, num_kv_heads=2,
             position="rope", norm="rmsnorm", feedforward="swiglu")
GPT2 = dict(vocab_size=64, hidden_size=32, num_layers=2, num_heads=4, position="learned",
            norm="layernorm", feedforward="gelu", max_seq_len=64)


@pytest.fixture(autouse=True)
def _one_thread() -> Any:
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def build(shape: dict[str, Any], seed: int = 0, **overrides: Any) -> Any:
    config = dict(shape)
    config.update(overrides)
    return build_transformer(TransformerConfig(**config), seed).eval()


def scaled_qk(model: Any, factor: float) -> Any:
    with torch.no_grad():
        for layer in model.layers:
            layer.attn.q_proj.weight.mul_(factor)
            layer.attn.k_proj.weight.mul_(factor)
    return model


def flagged(diagnosis: Any) -> dict[str, list[str]]:
    return {f.check: [g.summary for g in diagnosis.by_check(f.check) if g.flagged]
            for f in diagnosis.flagged}


# ------------------------------------------------------------------------------ reference math

def test_allowed_keys_causal_window_and_cache_alignment() -> None:
    causal = allowed_keys(4, 4, causal=True)
    assert causal.tolist() == [[j <= i for j in range(4)] for i in range(4)]
    window = allowed_keys(5, 5, causal=True, window=2)
    assert window.sum(-1).tolist() == [1, 2, 2, 2, 2] and bool(window[4, 3]) and not window[4, 2]
    cached = allowed_keys(2, 5, causal=True)  # queries are the last two positions
    assert cached.tolist() == [[True] * 4 + [False], [True] * 5]
    assert bool(allowed_keys(3, 3, causal=False).all())


def test_reference_attention_groups_heads_and_zeroes_dead_rows() -> None:
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(1, h, 3, 2, generator=g) for h in (4, 2, 2))
    allowed = allowed_keys(3, 3, causal=True).view(1, 1, 3, 3).clone()
    allowed[..., 0, :] = False  # a query with no key
    out, weights, live = reference_attention(q, k, v, allowed, 0.5)
    # head 1 reads kv head 0 (grouped: 1 // 2), head 2 reads kv head 1
    for h, kv in ((1, 0), (2, 1)):
        w = torch.softmax((q[0, h, 2] @ k[0, kv].T).double() * 0.5, -1)
        assert torch.allclose(out[0, h, 2], w @ v[0, kv].double())
    assert not bool(live[0, 0, 0]) and float(weights[0, :, 0].abs().max()) == 0.0
    assert torch.allclose(weights[0, :, 1:].sum(-1), torch.ones(4, 2, dtype=torch.float64))


def test_alibi_reference_slopes_follow_press_et_al() -> None:
    assert torch.allclose(alibi_reference_slopes(4), torch.tensor(
        [2 ** -2, 2 ** -4, 2 ** -6, 2 ** -8], dtype=torch.float64))
    # 3 heads: the 2 slopes of H = 2, then the first odd-indexed slope of H = 4
    assert torch.allclose(alibi_reference_slopes(3), torch.tensor(
        [2 ** -4, 2 ** -8, 2 ** -2], dtype=torch.float64))


def test_padding_positions_count_real_tokens() -> None:
    mask = torch.tensor([[0, 0, 1, 1, 1], [1, 1, 1, 0, 0]])
    assert padding_positions(mask).tolist() == [[1, 1, 0, 1, 2], [0, 1, 2, 1, 1]]


# ------------------------------------------------------------------------------ healthy

def test_healthy_project_models_are_silent(project_models: dict[str, Any]) -> None:
    for name, model in project_models.items():
        d = examine(model, checks=MINE, probe_len=32)
        assert not d.flagged, (name, flagged(d))
        assert not d.skipped, (name, d.skipped)
        assert {f.check for f in d.findings} == set(MINE), name


@pytest.mark.parametrize("variant", [
    dict(attention_backend="reference"), dict(attention_backend="tiled", max_seq_len=256),
    dict(position="alibi"), dict(position="alibi", num_heads=3, num_kv_heads=1, hidden_size=24),
    dict(sliding_window=8), dict(num_kv_heads=1), dict(causal=False, position="learned",
                                                        max_seq_len=64),
], ids=["reference", "tiled", "alibi4", "alibi3", "window", "mqa", "bidirectional"])
def test_healthy_variants_are_silent(variant: dict[str, Any]) -> None:
    d = examine(build(LLAMA, 1, **variant), checks=MINE, probe_len=32)
    assert not d.flagged, flagged(d)
    assert not d.skipped, d.skipped


def test_healthy_hf_checkpoints_are_silent_on_both_engines(
        hf_checkpoints: dict[str, str]) -> None:
    for name, path in hf_checkpoints.items():
        for engine in ("project", "transformers"):
            d = examine(path, engine=engine, checks=MINE, probe_len=32)
            assert not d.flagged, (name, engine, flagged(d))
            expected_skips = {"attention.recompute"} if engine == "transformers" else set()
            assert set(d.skipped) == expected_skips, (name, engine, d.skipped)


def test_transformers_models_given_directly(hf_factory: Any) -> None:
    for kind in ("llama", "gpt2"):
        d = examine(hf_factory.build(kind, 3), checks=MINE, probe_len=16)
        assert not d.flagged, (kind, flagged(d))


def test_figures_and_saturation_numbers(project_models: dict[str, Any]) -> None:
    d = examine(project_models["llama-s0"], checks=["attention.saturation"], probe_len=32)
    for name in ("attention.logit_spread", "attention.entropy"):
        fig = d.figures[name]
        assert fig["layers"] == 2 and fig["heads"] == 4
        assert len(fig["values"]) == 2 and all(len(row) == 4 for row in fig["values"])
    (f,) = d.findings
    details = f.details
    # random init: measured logit spread close to sigma_q sigma_k (000 §8.3.1)
    low, high = details["measured_over_predicted"]
    assert 0.7 < low <= high < 1.3
    # entropies are normalised, Jacobian norms at most 1/2
    assert all(0 < x <= 1 for row in details["normalised_entropy"] for x in row)
    assert all(0 < x <= 0.5 for row in details["jacobian_norm"] for x in row)


def test_linear_backend_output_is_checked_against_its_reported_weights() -> None:
    """No softmax to recompute: the output must still be the reported weights times v."""
    model = build(LLAMA, 0, attention_backend="linear")
    (f,) = examine(model, checks=["attention.recompute"]).findings
    assert f.severity == Severity.OK and f.measured < 1e-5, f.summary
    with bugs.plant("linear-attention.no-normaliser"):
        (f,) = examine(model, checks=["attention.recompute"]).findings
    assert f.severity == Severity.ERROR and f.measured > 1.0, f.summary


# ------------------------------------------------------------------------------ planted

SATURATING = [("llama", 30.0, ()), ("gpt2", 30.0, ()),
              ("llama", 10.0, ("attention.scale-dropped",))]


@pytest.mark.parametrize(("shape", "factor", "plant"), SATURATING)
def test_saturation_warns_on_large_logits(shape: str, factor: float,
                                          plant: tuple[str, ...]) -> None:
    model = scaled_qk(build(LLAMA if shape == "llama" else GPT2, 0), factor)
    with bugs.plant(*plant):
        d = examine(model, checks=["attention.saturation"], probe_len=32)
    (f,) = d.findings
    assert f.severity == Severity.WARNING and f.measured > 0.5, f.summary
    assert len(f.details["saturated_heads"]) >= 4


def test_moderately_large_logits_do_not_warn() -> None:
    d = examine(scaled_qk(build(LLAMA, 0), 3.0), checks=["attention.saturation"], probe_len=32)
    assert not d.flagged


def test_sharp_heads_that_still_pass_gradient_are_info() -> None:
    """W_Q, W_K x10: most heads sharp (mean max weight ~0.96) but the softmax Jacobian ~0.05,
    as in a model trained to copy: INFO, not a warning."""
    d = examine(scaled_qk(build(LLAMA, 0), 10.0), checks=["attention.saturation"], probe_len=32)
    (f,) = d.findings
    assert f.severity == Severity.INFO and f.measured <= 0.5, f.summary
    assert len(f.details["sharp_content_heads"]) > 4


# bug -> (model overrides, checks that must flag it); both shapes unless said
PLANTED: dict[str, tuple[dict[str, Any], tuple[str, ...]]] = {
    "attention.gqa-tiled": ({"num_kv_heads": 2}, ("attention.recompute",)),
    "attention.gqa-kv-heads-ignored": ({"num_kv_heads": 2}, ("attention.recompute",)),
    "attention.scale-by-dk": ({}, ("attention.recompute",)),
    "attention.scale-dropped": ({}, ("attention.recompute",)),
    "attention.scale-by-model-width": ({}, ("attention.recompute",)),
    "attention.scale-as-temperature": ({}, ("attention.recompute",)),
    "attention.mask-after-softmax": ({}, ("attention.recompute", "attention.mask-coverage")),
    "attention.softmax-wrong-axis": ({}, ("attention.recompute", "attention.mask-coverage")),
    "attention.causal-blocks-previous": ({}, ("attention.recompute", "attention.mask-coverage",
                                              "attention.padding")),
    "flash.online-softmax-no-rescale": ({"attention_backend": "tiled", "max_seq_len": 256},
                                        ("attention.recompute",)),
    "attention.implicit-causal": ({"causal": False}, ("attention.causal-leakage",)),
    "transformer.padding-mask-inverted": ({}, ("attention.padding", "attention.recompute")),
    "attention.softmax-no-max-shift": ({}, ("attention.masked-rows",)),
    "alibi.odd-head-slopes": ({"position": "alibi", "num_heads": 3, "num_kv_heads": 1,
                               "hidden_size": 24}, ("attention.recompute",)),
}


@pytest.mark.parametrize("shape", ["llama", "gpt2"])
@pytest.mark.parametrize("bug", sorted(PLANTED))
def test_planted_bug_is_flagged(bug: str, shape: str) -> None:
    overrides, expected = PLANTED[bug]
    with bugs.plant(bug), bugs.recording() as sites:
        model = build(LLAMA if shape == "llama" else GPT2, 0, **overrides)
        d = examine(model, checks=list(expected), probe_len=32)
    assert bug in sites, f"{bug} site not reached"
    for check in expected:
        errors = [f for f in d.by_check(check) if f.severity == Severity.ERROR]
        assert errors, (bug, shape, check, [f.summary for f in d.by_check(check)])


def test_mask_finfo_min_changes_only_pad_queries() -> None:
    """Documented non-flag: -finfo.min masks give pad queries uniform weights (HF eager's
    convention) and leave every real token unchanged; reported as info."""
    with bugs.plant("attention.mask-finfo-min"), bugs.recording() as sites:
        d = examine(build(LLAMA, 0), checks=["attention.recompute", "attention.padding",
                                             "attention.masked-rows"], probe_len=32)
    assert "attention.mask-finfo-min" in sites
    assert not d.flagged, flagged(d)
    info = [f for f in d.by_check("attention.recompute") if f.severity == Severity.INFO]
    assert info and info[0].measured > 0.1


def test_causal_leakage_detects_a_missing_mask(make_project_model: Any) -> None:
    """A causal model run without its mask (is_causal forced off) leaks the future."""
    model = make_project_model("gpt2", 0)
    original = model.forward

    def unmasked(*args: Any, **kwargs: Any) -> Any:
        return original(*args, **dict(kwargs, is_causal=False))

    model.forward = unmasked  # type: ignore[method-assign]
    d = examine(model, checks=["attention.causal-leakage", "attention.mask-coverage"],
                probe_len=16)
    assert d.flagged_checks() == ["attention.causal-leakage", "attention.mask-coverage"]


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_low_precision_models_are_silent_and_still_flag(dtype: torch.dtype) -> None:
    for shape in (LLAMA, GPT2):
        d = examine(build(shape, 0).to(dtype), checks=MINE, probe_len=32)
        assert not d.flagged, (dtype, flagged(d))
    with bugs.plant("attention.scale-by-model-width"):
        d = examine(build(LLAMA, 0).to(dtype), checks=["attention.recompute"], probe_len=32)
    assert d.flagged_checks() == ["attention.recompute"]


def test_hf_sliding_window_model_is_silent_on_both_engines(hf_factory: Any,
                                                            tmp_path: Any) -> None:
    path = hf_factory.checkpoint(tmp_path / "mistral", "mistral", 0, sliding_window=8)
    for engine in ("project", "transformers"):
        d = examine(path, engine=engine, checks=MINE, probe_len=24)
        assert not d.flagged, (engine, flagged(d))
        coverage = d.by_check("attention.mask-coverage")[0]
        assert coverage.details["window"] == 8
