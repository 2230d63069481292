"""Decoder-only LM: cached generation equals uncached, parameter counts, validation."""

from __future__ import annotations

import pytest
import torch

from transformer_math.nn.attention import count_parameters
from transformer_math.nn.language_model import (
    DecoderOnlyLM,
    LanguageModelConfig,
    predicted_parameter_count,
)

CONFIGS = [
    {},
    {"ffn_type": "swiglu", "norm_type": "rmsnorm", "bias": False, "num_kv_heads": 2},
    {"norm": "post", "tie_embeddings": True, "position": "none"},
    {"attention_backend": "tiled"},
    {"attention_backend": "reference", "num_layers": 3},
]


@pytest.mark.parametrize("kwargs", CONFIGS)
def test_cached_generation_equals_uncached(kwargs: dict) -> None:
    torch.manual_seed(0)
    model = DecoderOnlyLM(LanguageModelConfig(vocab_size=40, max_seq_len=24, dim=32, **kwargs))
    prompt = torch.randint(0, 40, (2, 4), generator=torch.Generator().manual_seed(1))
    assert torch.equal(model.generate(prompt, 12), model.generate(prompt, 12, use_cache=False))
    sampled = [
        model.generate(
            prompt,
            12,
            temperature=0.8,
            top_k=10,
            generator=torch.Generator().manual_seed(3),
            use_cache=use,
        )
        for use in (True, False)
    ]
    assert torch.equal(sampled[0], sampled[1])


def test_cached_logits_equal_full_forward() -> None:
    torch.manual_seed(0)
    model = DecoderOnlyLM(LanguageModelConfig(vocab_size=30, max_seq_len=16, dim=32)).eval()
    tokens = torch.randint(0, 30, (2, 10))
    full = model(tokens)
    caches = model.new_caches()
    steps = [model(tokens[:, :6], caches=caches)] + [
        model(tokens[:, i : i + 1], caches=caches) for i in range(6, 10)
    ]
    torch.testing.assert_close(torch.cat(steps, dim=1), full, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("kwargs", CONFIGS)
def test_parameter_count_closed_form(kwargs: dict) -> None:
    config = LanguageModelConfig(vocab_size=40, max_seq_len=24, dim=32, **kwargs)
    model = DecoderOnlyLM(config)
    assert count_parameters(model) == predicted_parameter_count(config)
    assert model.parameter_breakdown()["total"] == count_parameters(model)


def test_training_step_reduces_loss() -> None:
    torch.manual_seed(0)
    model = DecoderOnlyLM(LanguageModelConfig(vocab_size=16, max_seq_len=16, dim=32))
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    data = torch.arange(16).repeat(4, 1) % 16
    losses = []
    for _ in range(30):
        logits = model(data[:, :-1])
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, 16), data[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < 0.5 * losses[0]


def test_validation() -> None:
    with pytest.raises(ValueError, match="vocab_size"):
        LanguageModelConfig(vocab_size=0, max_seq_len=8)
    with pytest.raises(ValueError, match="position"):
        LanguageModelConfig(vocab_size=8, max_seq_len=8, position="rope")
    model = DecoderOnlyLM(LanguageModelConfig(vocab_size=8, max_seq_len=8, dim=16))
    with pytest.raises(ValueError, match="max_seq_len"):
        model(torch.zeros(1, 9, dtype=torch.long))
    with pytest.raises(ValueError, match="token ids"):
        model(torch.full((1, 3), 8, dtype=torch.long))
    with pytest.raises(ValueError, match="max_new_tokens"):
        model.generate(torch.zeros(1, 2, dtype=torch.long), -1)
    with pytest.raises(ValueError, match="exceeds"):
        model.generate(torch.zeros(1, 2, dtype=torch.long), 7)
