"""experiments.induction_heads: the attention-only preset and the patterns read at hook points."""

from __future__ import annotations

import math

import torch

from transformer_math.experiments.induction_heads import (
    InductionHeadsConfig,
    loss_and_patterns,
    next_token_loss,
)
from transformer_math.nn.hooks import run_with_cache
from transformer_math.nn.transformer import build_transformer


def _model(layers: int = 2):
    cfg = InductionHeadsConfig(vocab_size=16, d_model=16, num_heads=2)
    return build_transformer(cfg.model_config(layers), 0)


def test_preset_is_attention_only_without_biases() -> None:
    model = _model()
    assert all(layer.ffn is None for layer in model.layers)
    assert model.rotary is not None and model.rotary.layout == "half"
    assert model.final_norm is not None and model.lm_head is not None
    assert not any(n.endswith("bias") for n, p in model.named_parameters() if "proj" in n)
    assert model.lm_head.bias is None


def test_loss_and_patterns_shapes_and_causality() -> None:
    model = _model()
    tokens = torch.randint(16, (2, 10), generator=torch.Generator().manual_seed(2))
    loss, patterns = loss_and_patterns(model, tokens)
    assert loss.shape == (2, 9) and patterns.shape == (2, 2, 2, 10, 10)
    assert torch.allclose(patterns.sum(-1), torch.ones(2, 2, 2, 10))
    assert torch.all(patterns.triu(1) == 0)  # causal
    assert torch.allclose(loss, next_token_loss(model(tokens), tokens))
    # a uniform-logit model has loss ln(V) at every position
    uniform = torch.zeros(2, 10, 16)
    assert torch.allclose(next_token_loss(uniform, tokens), torch.full((2, 9), math.log(16)))


def test_patterns_are_softmax_of_the_rotated_queries_and_keys() -> None:
    """The pattern at the hook equals softmax(q k^T / sqrt(d_k)) with q, k read after RoPE."""
    model = _model(1)
    tokens = torch.randint(16, (1, 8), generator=torch.Generator().manual_seed(3))
    _, cache = run_with_cache(model, tokens, names=["layers.0.attn.hook_*"])
    q, k = cache["layers.0.attn.hook_q"], cache["layers.0.attn.hook_k"]
    scores = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
    scores = scores.masked_fill(torch.ones(8, 8, dtype=torch.bool).triu(1), float("-inf"))
    assert torch.allclose(cache["layers.0.attn.hook_pattern"], scores.softmax(-1), atol=1e-6)


def test_hand_built_circuit_and_the_planted_previous_token_mask() -> None:
    from transformer_math.bugs import plant
    from transformer_math.diagnostics.icl_scores import induction_score, previous_token_score
    from transformer_math.experiments.induction_heads import (
        hand_built_induction_model,
        loss_and_patterns,
    )
    from transformer_math.functional.masks import causal_mask

    g = torch.Generator().manual_seed(0)
    first = torch.rand(8, 10, generator=g).argsort(-1)[:, :5]
    tokens = torch.cat([first, first], dim=1)
    model = hand_built_induction_model(10, 10)
    with torch.no_grad():
        _, w = loss_and_patterns(model, tokens)
        assert float(previous_token_score(w[0]).max()) > 0.999
        assert float(induction_score(w[1], 5).max()) > 0.999
        assert torch.equal(model(tokens)[:, 5:9].argmax(-1), tokens[:, 6:])
        with plant("attention.causal-blocks-previous"):
            assert not bool(causal_mask(4)[3, 2]) and bool(causal_mask(4)[3, 1])
            _, w_bug = loss_and_patterns(model, tokens)
        assert float(previous_token_score(w_bug[0]).max()) < 1e-6
    assert torch.equal(causal_mask(3), torch.tril(torch.ones(3, 3, dtype=torch.bool)))
