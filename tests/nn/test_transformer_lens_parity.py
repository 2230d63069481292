"""Parity with TransformerLens 2.x against the committed fixture (issue 34), without the library.

``tests/fixtures/transformer_lens/make_fixture.py`` ran TransformerLens once in a side
environment on two tiny HF checkpoints (GPT-2; a Llama with RMSNorm, RoPE, SwiGLU and 2 key/value
heads for 4 query heads) and stored every tensor of its ``run_with_cache``, processed
(``from_pretrained`` defaults) and unprocessed (``from_pretrained_no_processing``), and its
``detect_head`` scores. The project loads the same folders with its own checkpoint loader.
"""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from transformer_math.checkpoints.io import from_pretrained
from transformer_math.checkpoints.pretrained import logits_of
from transformer_math.diagnostics.head_detector import (
    detect_heads,
    transformer_lens_induction_score,
    transformer_lens_previous_token_score,
)
from transformer_math.diagnostics.icl_scores import induction_score, previous_token_score
from transformer_math.nn.config import TransformerConfig
from transformer_math.nn.hooks import hooks, run_with_cache
from transformer_math.nn.tl_names import MISSING, to_project_names, to_transformer_lens_name
from transformer_math.nn.transformer import build_transformer
from transformer_math.nn.weight_processing import process_weights

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "transformer_lens"
MANIFEST = json.loads((FIXTURE / "manifest.json").read_text())
MODELS = sorted(MANIFEST["models"])
KINDS = ("unprocessed", "processed")
TOL = 1e-5


def _model(name: str, kind: str):  # type: ignore[no-untyped-def]
    model = from_pretrained(FIXTURE / name).eval()
    if kind == "processed":
        process_weights(model)
    return model


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("name", MODELS)
def test_every_transformer_lens_hook_point_equals_its_value(name: str, kind: str) -> None:
    """Every hook point TransformerLens fires for the model is in the project's cache, in its
    layout, within 1e-5 (masked scores -inf at the same places); logits and log-probs too."""
    ref = load_file(str(FIXTURE / name / f"activations_{kind}.safetensors"))
    fired = MANIFEST["models"][name][kind]["fired"]
    tokens = torch.tensor(MANIFEST["tokens"])
    with torch.no_grad():
        out, cache = run_with_cache(_model(name, kind), tokens, layout="transformer_lens")
    assert sorted(cache) == sorted(fired)
    for key in fired:
        ours, theirs = cache[key], ref[key]
        assert ours.shape == theirs.shape, key
        finite = torch.isfinite(theirs)
        assert torch.equal(finite, torch.isfinite(ours)), key
        assert torch.equal(theirs[~finite], ours[~finite]), key  # -inf where masked, both
        err = (ours[finite] - theirs[finite]).abs().max().item()
        assert err <= TOL, f"{key}: {err:.2e}"
    logits = logits_of(out)
    assert (logits - ref["logits"]).abs().max() <= TOL
    assert (logits.log_softmax(-1) - ref["log_probs"]).abs().max() <= TOL


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("name", MODELS)
def test_head_scores_equal_the_head_detector(name: str, kind: str) -> None:
    """detect_head's scores (every pattern, both error measures, both exclusions) from the
    project's attention patterns on the same repeated random sequence."""
    seq = torch.tensor(MANIFEST["repeated_tokens"])
    with torch.no_grad():
        _, cache = run_with_cache(_model(name, kind), seq,
                                  names="blocks.*.attn.hook_pattern", layout="transformer_lens")
    patterns = [cache[f"blocks.{i}.attn.hook_pattern"] for i in range(len(cache))]
    for key, ref in MANIFEST["models"][name][kind]["head_detector"].items():
        pattern, _, option = key.partition(":")
        options = ({} if not option else {"error_measure": "abs"} if option == "abs"
                   else {option: True})
        ours = torch.stack([detect_heads(p, seq, pattern, **options) for p in patterns])
        assert torch.allclose(ours, torch.tensor(ref), atol=1e-6, rtol=0), key
    prev = torch.stack([transformer_lens_previous_token_score(p) for p in patterns])
    ind = torch.stack([transformer_lens_induction_score(p, seq) for p in patterns])
    detector = MANIFEST["models"][name][kind]["head_detector"]
    assert torch.allclose(prev, torch.tensor(detector["previous_token_head"]), atol=1e-6)
    assert torch.allclose(ind, torch.tensor(detector["induction_head"]), atol=1e-6)


def test_the_two_scales_of_a_perfect_head() -> None:
    """On [x, x] (2L = 24, distinct tokens) a perfect induction head scores 1 on the project's
    scale and 0.5 on TransformerLens's; a perfect previous-token head 1 and 23/24 = 0.958."""
    half = 12
    x = torch.randperm(50, generator=torch.Generator().manual_seed(0))[:half]
    seq = torch.cat([x, x])
    t = 2 * half
    induction = torch.zeros(1, t, t)
    induction[0, :half] = torch.tril(torch.ones(half, t))[:, :] / torch.arange(1, half + 1)[:, None]
    for i in range(half, t):
        induction[0, i, i - half + 1] = 1.0
    previous = torch.zeros(1, t, t)
    previous[0, 0, 0] = 1.0
    previous[0, torch.arange(1, t), torch.arange(t - 1)] = 1.0
    assert induction_score(induction, half).item() == pytest.approx(1.0)
    assert transformer_lens_induction_score(induction, seq).item() == pytest.approx(0.5)
    assert previous_token_score(previous).item() == pytest.approx(1.0)
    assert transformer_lens_previous_token_score(previous).item() == pytest.approx(23 / 24)


@pytest.mark.parametrize("name", MODELS)
def test_processing_leaves_log_probs_unchanged(name: str) -> None:
    model = from_pretrained(FIXTURE / name).eval()
    tokens = torch.tensor(MANIFEST["tokens"])
    with torch.no_grad():
        before = logits_of(model(tokens)).log_softmax(-1)
        done = process_weights(model)
        after = logits_of(model(tokens)).log_softmax(-1)
    assert (after - before).abs().max() <= 1e-5
    assert done.fold_ln and done.center_unembed and done.fold_value_biases
    assert done.center_writing_weights == (model.config.norm == "layernorm")


NORM_CASES = [
    dict(norm="layernorm", feedforward="gelu_tanh", position="learned", tie_embeddings=True),
    dict(norm="rmsnorm", feedforward="swiglu", position="rope", num_kv_heads=2),
    dict(norm="rmsnorm_hf", feedforward="swiglu", position="rope", attention_bias=True),
    dict(norm="rmsnorm_gemma", feedforward="geglu_tanh", position="rope", embedding_scale=4.0,
         tie_embeddings=True),
    dict(norm="layernorm", feedforward="gelu", position="sinusoidal", attention_bias=False,
         mlp_bias=False),
]


@pytest.mark.parametrize("case", NORM_CASES, ids=lambda c: f"{c['norm']}-{c['position']}")
def test_processing_is_invariant_for_every_norm_family(case: dict) -> None:  # type: ignore[type-arg]
    """Random (non-unit) gains and shifts in every norm; log-probs equal to float32 rounding;
    after processing every norm is the identity affine (Gemma: w = 0) and, for LayerNorm, the
    residual writers have mean zero over the model axis."""
    cfg = TransformerConfig(hidden_size=32, num_layers=2, num_heads=4, vocab_size=40,
                            max_seq_len=24, **case)
    model = build_transformer(cfg, 3).eval()
    gen = torch.Generator().manual_seed(4)
    with torch.no_grad():
        for pname, p in model.named_parameters():
            if "norm" in pname:
                p.add_(0.3 * torch.randn(p.shape, generator=gen))
            elif pname.endswith("bias"):
                p.add_(0.1 * torch.randn(p.shape, generator=gen))
    tokens = torch.randint(0, 40, (2, 11), generator=gen)
    with torch.no_grad():
        before = model(tokens).log_softmax(-1)
        done = process_weights(model)
        after = model(tokens).log_softmax(-1)
    assert (after - before).abs().max() <= 1e-5, done
    for module_name, module in model.named_modules():
        if module_name.endswith("norm") and getattr(module, "weight", None) is not None:
            identity = 0.0 if case["norm"] == "rmsnorm_gemma" else 1.0
            assert torch.all(module.weight == identity), module_name
    if case["norm"] == "layernorm":
        w = model.layers[0].attn.out_proj.weight
        assert w.mean(dim=0).abs().max() <= 1e-6
        assert model.embed_tokens.weight.mean(dim=-1).abs().max() <= 1e-6
    if case.get("tie_embeddings"):
        assert model.lm_head.weight is not model.embed_tokens.weight
        assert not model.config.tie_embeddings


def test_processing_refuses_what_it_cannot_fold() -> None:
    post = build_transformer(TransformerConfig(hidden_size=16, num_layers=1, num_heads=2,
                                               vocab_size=10, norm_placement="post"), 0)
    with pytest.raises(ValueError, match="pre-norm"):
        process_weights(post)
    with pytest.raises(ValueError, match="model must be"):
        process_weights(torch.nn.Linear(2, 2))  # type: ignore[arg-type]


def test_names_translate_both_ways_and_unknown_ones_are_explained() -> None:
    assert to_project_names("blocks.3.hook_resid_post", rotary=False) == [
        "layers.3.hook_resid_post"]
    assert to_project_names("blocks.*.attn.hook_q", rotary=True) == [
        "layers.*.attn.hook_q_pre_rope"]
    assert to_project_names("blocks.0.ln*.hook_scale", rotary=False) == [
        "layers.0.attn_norm.hook_scale", "layers.0.ffn_norm.hook_scale"]
    assert to_transformer_lens_name("layers.1.attn.hook_q", rotary=True) == (
        "blocks.1.attn.hook_rot_q")
    assert to_transformer_lens_name("hook_final", rotary=False) is None
    for missing in MISSING:
        with pytest.raises(ValueError, match="not a TransformerLens hook point"):
            to_project_names(f"blocks.0.{missing}", rotary=False)


def test_transformer_lens_names_work_in_the_default_layout_and_in_hooks() -> None:
    """``names=`` and ``hooks()`` accept TransformerLens names; the default cache keeps the
    project's names and layouts; hook points change no number (cached = plain forward)."""
    cfg = TransformerConfig(hidden_size=16, num_layers=2, num_heads=2, vocab_size=13,
                            max_seq_len=16, position="rope", norm="rmsnorm", feedforward="swiglu")
    model = build_transformer(cfg, 0).eval()
    tokens = torch.randint(0, 13, (2, 9), generator=torch.Generator().manual_seed(1))
    new_points = ["blocks.1.mlp.hook_post", "blocks.1.mlp.hook_pre_linear",
                  "blocks.*.attn.hook_q", "blocks.0.ln1.hook_scale", "ln_final.hook_normalized"]
    with torch.no_grad():
        plain = model(tokens)
        out, cache = run_with_cache(model, tokens, names=new_points)
    assert torch.equal(out, plain)  # the new hook points compute what the plain forward does
    assert sorted(cache) == ["final_norm.hook_normalized", "layers.0.attn.hook_q_pre_rope",
                             "layers.0.attn_norm.hook_scale", "layers.1.attn.hook_q_pre_rope",
                             "layers.1.ffn.hook_post", "layers.1.ffn.hook_pre_linear"]
    assert cache["layers.0.attn.hook_q_pre_rope"].shape == (2, 2, 9, 8)  # (B, H, T, d)
    with torch.no_grad():
        _, tl = run_with_cache(model, tokens, names="blocks.*.attn.hook_q",
                               layout="transformer_lens")
    assert tl["blocks.0.attn.hook_q"].shape == (2, 9, 2, 8)  # (B, T, H, d)
    with torch.no_grad(), hooks(model, {"blocks.1.mlp.hook_post": lambda t, h: t * 0}):
        ablated = model(tokens)
    assert not torch.equal(ablated, plain)
    with torch.no_grad(), hooks(model, {"blocks.0.ln1.hook_scale": lambda t, h: t * 2}):
        halved = model(tokens)
    assert not torch.allclose(halved, plain)
    with pytest.raises(ValueError, match="layout must be"):
        run_with_cache(model, tokens, layout="tl")


def test_embedding_hooks_split_token_and_position() -> None:
    cfg = TransformerConfig(hidden_size=16, num_layers=1, num_heads=2, vocab_size=13,
                            max_seq_len=16, position="learned")
    model = build_transformer(cfg, 0).eval()
    tokens = torch.randint(0, 13, (2, 9), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        _, c = run_with_cache(model, tokens)
    assert torch.equal(c["hook_tok_embed"], model.embed_tokens.weight[tokens])
    assert torch.equal(c["hook_pos_embed"][0], model.embed_positions.weight[:9])
    assert torch.equal(c["hook_embed"], c["hook_tok_embed"] + c["hook_pos_embed"])


def test_config_after_processing_rebuilds_the_same_modules() -> None:
    cfg = TransformerConfig(hidden_size=16, num_layers=1, num_heads=2, vocab_size=13,
                            max_seq_len=16, attention_bias=False, mlp_bias=False,
                            tie_embeddings=True)
    model = build_transformer(cfg, 0)
    with torch.no_grad():
        for layer in model.layers:
            layer.attn_norm.bias.fill_(0.1)
            layer.ffn_norm.bias.fill_(0.1)
        model.final_norm.bias.fill_(0.1)
    process_weights(model)
    rebuilt = build_transformer(dataclasses.replace(model.config), 0)
    assert set(rebuilt.state_dict()) >= set(model.state_dict())


def test_the_documented_example_runs(monkeypatch: pytest.MonkeyPatch, capsys) -> None:  # type: ignore[no-untyped-def]
    """docs/transformer_lens.md's python block, run from the repository root."""
    root = FIXTURE.parents[2]
    text = (root / "docs" / "transformer_lens.md").read_text(encoding="utf-8")
    (block,) = re.findall(r"```python\n(.*?)```", text, re.S)
    monkeypatch.chdir(root)
    exec(compile(block, "docs/transformer_lens.md", "exec"), {})
    assert "ProcessedWeights" in capsys.readouterr().out
