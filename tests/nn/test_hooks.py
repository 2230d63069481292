"""Hook points: run_with_cache reads, hooks() intervenes, unused hooks change nothing."""

from __future__ import annotations

import pytest
import torch

from transformer_math.functional.attention import scaled_dot_product_attention
from transformer_math.nn.config import TransformerConfig
from transformer_math.nn.hooks import (
    HookPoint,
    hook_points_bypassed,
    hooks,
    run_with_cache,
    stack_layers,
)
from transformer_math.nn.transformer import build_transformer

CFG = TransformerConfig(hidden_size=16, num_layers=2, num_heads=2, vocab_size=13,
                        max_seq_len=16, position="rope")


@pytest.fixture
def model_and_tokens():  # type: ignore[no-untyped-def]
    model = build_transformer(CFG, 0).eval()
    tokens = torch.randint(0, 13, (2, 9), generator=torch.Generator().manual_seed(1))
    return model, tokens


def test_cache_holds_every_named_tensor_with_its_shape(model_and_tokens) -> None:  # type: ignore[no-untyped-def]
    model, tokens = model_and_tokens
    logits, cache = run_with_cache(model, tokens)
    assert torch.allclose(logits, model(tokens), atol=1e-6)
    assert cache["hook_embed"].shape == (2, 9, 16)
    for i in range(2):
        assert cache[f"layers.{i}.attn.hook_q"].shape == (2, 2, 9, 8)
        assert cache[f"layers.{i}.attn.hook_pattern"].shape == (2, 2, 9, 9)
        assert cache[f"layers.{i}.hook_resid_post"].shape == (2, 9, 16)
    # the residual stream adds up: resid_mid = resid_pre + attn_out, resid_post = mid + ffn_out
    c = cache
    assert torch.allclose(c["layers.0.hook_resid_pre"] + c["layers.0.hook_attn_out"],
                          c["layers.0.hook_resid_mid"], atol=1e-6)
    assert torch.allclose(c["layers.0.hook_resid_mid"] + c["layers.0.hook_ffn_out"],
                          c["layers.0.hook_resid_post"], atol=1e-6)
    assert torch.equal(c["layers.0.hook_resid_post"], c["layers.1.hook_resid_pre"])
    assert stack_layers(cache, "layers.{}.attn.hook_pattern").shape == (2, 2, 2, 9, 9)


def test_pattern_is_the_reference_attention_of_the_cached_q_and_k(model_and_tokens) -> None:  # type: ignore[no-untyped-def]
    model, tokens = model_and_tokens
    _, c = run_with_cache(model, tokens, names=["layers.1.attn.hook_*"])
    ref = scaled_dot_product_attention(c["layers.1.attn.hook_q"], c["layers.1.attn.hook_k"],
                                       c["layers.1.attn.hook_v"], is_causal=True,
                                       return_weights=True)
    assert torch.allclose(c["layers.1.attn.hook_pattern"], ref.weights, atol=1e-6)
    assert torch.allclose(c["layers.1.attn.hook_z"], ref.output, atol=1e-6)
    rows = c["layers.1.attn.hook_pattern"].sum(-1)
    assert torch.allclose(rows, torch.ones_like(rows), atol=1e-6)
    assert torch.isneginf(c["layers.1.attn.hook_scores"][0, 0, 0, 1])  # causal: blocked key


def test_interventions_change_the_output_and_are_removed_afterwards(model_and_tokens) -> None:  # type: ignore[no-untyped-def]
    model, tokens = model_and_tokens
    clean = model(tokens)
    with hooks(model, {"layers.*.hook_attn_out": lambda t, hook: torch.zeros_like(t)}):
        ablated, cache = run_with_cache(model, tokens, names=["layers.0.hook_attn_out"])
    assert not torch.allclose(ablated, clean, atol=1e-3)
    assert torch.count_nonzero(cache["layers.0.hook_attn_out"]) == 0
    assert torch.equal(model(tokens), clean)  # hooks gone
    # patching the pattern of layer 0 with uniform causal weights changes the output too
    def uniform(t: torch.Tensor, hook: HookPoint) -> torch.Tensor:
        allowed = torch.ones(t.shape[-2:], dtype=torch.bool).tril()
        return (allowed / allowed.sum(-1, keepdim=True)).expand_as(t).clone()

    with hooks(model, {"layers.0.attn.hook_pattern": uniform}):
        patched = model(tokens)
    assert not torch.allclose(patched, clean, atol=1e-3)


def test_unknown_names_and_wrong_shapes_are_refused(model_and_tokens) -> None:  # type: ignore[no-untyped-def]
    model, tokens = model_and_tokens
    with pytest.raises(ValueError, match=r"no hook point matches 'layers\.9\.\*'"):
        run_with_cache(model, tokens, names=["layers.9.*"])
    with (pytest.raises(ValueError, match="returned shape"),
          hooks(model, {"hook_embed": lambda t, hook: t[:, :1]})):
        model(tokens)


def test_bypassed_hook_points_give_the_same_output(model_and_tokens) -> None:  # type: ignore[no-untyped-def]
    model, tokens = model_and_tokens
    with hook_points_bypassed():
        bare = model(tokens)
    assert torch.equal(bare, model(tokens))
    assert not HookPoint().active()


def test_a_hook_registered_directly_on_a_point_is_seen_and_then_skipped_again() -> None:
    from transformer_math.nn.hooks import hooks_live

    model = build_transformer(CFG, 0)
    seen: list[torch.Size] = []
    handle = model.layers[0].attn.hook_pattern.register_forward_hook(
        lambda module, args, out: seen.append(out.shape))
    model(torch.tensor([[1, 2, 3]]))
    assert seen == [torch.Size([1, 2, 3, 3])]
    handle.remove()
    assert not hooks_live()
    model(torch.tensor([[1, 2]]))
    assert len(seen) == 1
    glob = torch.nn.modules.module.register_module_forward_hook(lambda m, a, o: None)
    try:
        assert hooks_live()  # torch's global module hooks must see every hook point
    finally:
        glob.remove()
