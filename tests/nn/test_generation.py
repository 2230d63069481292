"""One generation implementation: greedy, sampling (top-k, top-p), eos, left padding, cache."""

from __future__ import annotations

import pytest
import torch

from transformer_math.nn.config import TransformerConfig
from transformer_math.nn.generation import choose_next_token, generate
from transformer_math.nn.transformer import build_transformer


@pytest.fixture(params=["rope", "learned"])
def model(request):  # type: ignore[no-untyped-def]
    cfg = TransformerConfig(hidden_size=16, num_layers=2, num_heads=2, vocab_size=17,
                            max_seq_len=32, position=request.param)
    return build_transformer(cfg, 3).eval()


def test_cached_and_uncached_greedy_decoding_agree(model) -> None:  # type: ignore[no-untyped-def]
    prompt = torch.randint(0, 17, (3, 5), generator=torch.Generator().manual_seed(0))
    cached = generate(model, prompt, 8)
    assert cached.shape == (3, 13) and torch.equal(cached[:, :5], prompt)
    assert torch.equal(cached, generate(model, prompt, 8, use_cache=False))
    # greedy = argmax of the model's own logits, step by step
    step = model(cached[:, :-1])[:, 4:].argmax(-1)
    assert torch.equal(step, cached[:, 5:])


def test_left_padding_continues_like_the_unpadded_prompt(model) -> None:  # type: ignore[no-untyped-def]
    short = torch.tensor([[3, 4, 5]])
    padded = torch.tensor([[0, 0, 3, 4, 5]])
    mask = torch.tensor([[0, 0, 1, 1, 1]])
    a = generate(model, short, 6)[:, 3:]
    b = generate(model, padded, 6, attention_mask=mask)[:, 5:]
    assert torch.equal(a, b)


def test_sampling_is_reproducible_from_the_generator_and_eos_pads(model) -> None:  # type: ignore[no-untyped-def]
    prompt = torch.tensor([[1, 2, 3]])
    draws = [generate(model, prompt, 6, temperature=1.0, top_k=5,
                      generator=torch.Generator().manual_seed(7)) for _ in range(2)]
    assert torch.equal(*draws)
    first = int(generate(model, prompt, 1)[0, -1])
    out = generate(model, torch.cat([prompt, prompt]), 5, eos_token_id=first, pad_token_id=16)
    assert out.shape[1] == 4  # every row emitted eos at the first step: decoding stopped


def test_top_p_keeps_the_smallest_set_reaching_the_mass() -> None:
    logits = torch.log(torch.tensor([[0.5, 0.3, 0.15, 0.05]]))
    g = torch.Generator().manual_seed(0)
    seen = {int(choose_next_token(logits, temperature=1.0, top_p=0.7, generator=g))
            for _ in range(200)}
    assert seen == {0, 1}  # 0.5 < 0.7 needs the second token; 0.8 >= 0.7 stops there
    seen = {int(choose_next_token(logits, temperature=1.0, top_p=0.1, generator=g))
            for _ in range(50)}
    assert seen == {0}  # the most likely token is always kept


@pytest.mark.parametrize("kwargs, match", [
    ({"max_new_tokens": -1}, "max_new_tokens"),
    ({"temperature": -1.0}, "temperature"),
    ({"top_k": 0}, "top_k"),
    ({"top_p": 0.0}, "top_p"),
])
def test_bad_options_are_named(model, kwargs, match) -> None:  # type: ignore[no-untyped-def]
    args = {"max_new_tokens": 2, **kwargs}
    n = args.pop("max_new_tokens")
    with pytest.raises(ValueError, match=match):
        generate(model, torch.tensor([[1]]), n, **args)


def test_a_learned_table_refuses_to_generate_past_its_end() -> None:
    cfg = TransformerConfig(hidden_size=8, num_layers=1, num_heads=2, vocab_size=5,
                            max_seq_len=4)
    with pytest.raises(ValueError, match="max_seq_len=4"):
        generate(build_transformer(cfg, 0), torch.tensor([[1, 2]]), 3)


@pytest.mark.parametrize(("kwargs", "named"), [
    ({"pad_token_id": 17, "eos_token_id": 3}, "pad_token_id"),
    ({"pad_token_id": -1, "eos_token_id": 3}, "pad_token_id"),
    ({"eos_token_id": 99}, r"eos_token_id\[0\]"),
    ({"eos_token_id": [3, 40]}, r"eos_token_id\[1\]"),
    ({"pad_token_id": True, "eos_token_id": 3}, "pad_token_id"),
])
def test_special_ids_outside_the_vocabulary_are_refused_before_decoding(  # type: ignore[no-untyped-def]
        model, kwargs, named) -> None:
    """Issue 40.6: a pad id outside the vocabulary used to fail mid-generation, in the
    embedding, with an error that blamed input_ids."""
    prompt = torch.tensor([[1, 2, 3]])
    with pytest.raises(ValueError, match=rf"{named} must be a token id in 0\.\.16"):
        generate(model, prompt, 4, **kwargs)
