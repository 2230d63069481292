"""Cached generation across the LongRoPE switch equals transformers token for token (issue 33
item 1).

A Phi-3 LongRoPE model uses its short factors while the sequence has at most
``original_max_position_embeddings`` = L0 positions and its long factors beyond. transformers'
Phi-3 drops the KV cache when the sequence first passes L0 and runs the whole sequence again
with the long factors; ``generate`` does the same (``RotaryEmbedding.rebuilds_cache_at_switch``),
so a 100-token cached generation that crosses the switch equals the uncached one and
transformers'. Without the rebuild, the keys kept from before the switch are rotated with the
short factors and the tokens diverge (shown below, so the test can fail).
"""

from __future__ import annotations

from typing import Any

import pytest
import torch

from transformer_math.checkpoints.io import from_pretrained
from transformer_math.nn.position import RotaryEmbedding

L0, NEW, PROMPT = 32, 100, 20
ROPE = {"rope_type": "longrope", "rope_theta": 10000.0,
        "short_factor": [1.0, 1.0, 1.0, 1.0], "long_factor": [1.0, 4.0, 16.0, 64.0]}  # 4 pairs


def _peak(model: Any, seed: int) -> None:
    """Larger random weights (matrices N(0, 0.4^2)) so that greedy decoding is decisive and
    does not fall into a one-token loop."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() >= 2:
                p.copy_(0.4 * torch.randn(p.shape, generator=g))


@pytest.fixture(scope="module")
def models(tmp_path_factory) -> tuple[Any, Any, torch.Tensor]:
    transformers = pytest.importorskip("transformers")
    path = tmp_path_factory.mktemp("phi3_longrope")
    config = transformers.Phi3Config(
        vocab_size=64, hidden_size=32, intermediate_size=48, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=8 * L0,
        original_max_position_embeddings=L0, rope_parameters=ROPE, pad_token_id=0,
        bos_token_id=1, eos_token_id=2)
    torch.manual_seed(0)
    hf_model = transformers.Phi3ForCausalLM(config).eval()
    _peak(hf_model, 0)
    hf_model.save_pretrained(path)
    hf_model.generation_config.eos_token_id = None  # never stop, never suppress a token
    prompt = torch.randint(3, 64, (1, PROMPT), generator=torch.Generator().manual_seed(1))
    return hf_model, from_pretrained(path), prompt


def _hf_generate(hf_model: Any, prompt: torch.Tensor) -> torch.Tensor:
    with torch.no_grad():
        return hf_model.generate(prompt, attention_mask=torch.ones_like(prompt),
                                 do_sample=False, max_new_tokens=NEW, pad_token_id=0)


def test_the_rotary_module_says_where_it_switches(models):
    _, ours, _ = models
    assert ours.rotary.frequency_switch == L0 and ours.rotary.rebuilds_cache_at_switch
    plain = RotaryEmbedding(8)
    assert plain.frequency_switch is None and not plain.rebuilds_cache_at_switch
    dynamic = RotaryEmbedding(8, scaling={"rope_type": "dynamic", "factor": 2.0,
                                          "original_max_position_embeddings": 16})
    assert dynamic.frequency_switch == 16 and not dynamic.rebuilds_cache_at_switch


def test_cached_generation_across_the_switch_equals_uncached_and_transformers(models):
    hf_model, ours, prompt = models
    expected = _hf_generate(hf_model, prompt)
    assert expected.shape[1] == PROMPT + NEW > L0 + 1
    assert len(set(expected[0, PROMPT:].tolist())) > 5  # not a one-token loop
    cached = ours.generate(prompt, NEW, eos_token_id=None, pad_token_id=0)
    uncached = ours.generate(prompt, NEW, eos_token_id=None, pad_token_id=0, use_cache=False)
    assert torch.equal(cached, uncached)
    assert torch.equal(cached, expected)


def test_a_prompt_past_the_switch_and_a_batch_with_padding(models):
    hf_model, ours, _ = models
    long_prompt = torch.randint(3, 64, (1, L0 + 5), generator=torch.Generator().manual_seed(2))
    assert torch.equal(ours.generate(long_prompt, 12, eos_token_id=None, pad_token_id=0),
                       _hf_generate(hf_model, long_prompt)[:, :L0 + 5 + 12])
    ids = torch.randint(3, 64, (2, 24), generator=torch.Generator().manual_seed(3))
    mask = torch.ones_like(ids)
    mask[1, :4] = 0  # left padding: the rebuild follows the sequence length, as transformers'
    with torch.no_grad():
        expected = hf_model.generate(ids, attention_mask=mask, do_sample=False,
                                     max_new_tokens=20, pad_token_id=0)
    got = ours.generate(ids, 20, attention_mask=mask, eos_token_id=None, pad_token_id=0)
    assert torch.equal(got, expected)


def test_without_the_rebuild_the_tokens_diverge(models, monkeypatch):
    """The switch matters at these factors: keeping the short-factor keys changes the tokens
    (the issue's symptom, 11 of 20 tokens), so the rebuild is what the equality above tests."""
    hf_model, ours, prompt = models
    monkeypatch.setattr(RotaryEmbedding, "rebuilds_cache_at_switch", property(lambda s: False))
    stale = ours.generate(prompt, NEW, eos_token_id=None, pad_token_id=0)
    assert not torch.equal(stale, _hf_generate(hf_model, prompt))


def test_frequency_memo_replays_bug_sites_and_steps_aside_for_a_planted_bug():
    """A decoding step reads LongRoPE's frequencies from a memo (one entry per factor set); the
    bug sites the computation queried are replayed, and a planted bug bypasses the memo."""
    from transformer_math.bugs import plant, recording
    from transformer_math.functional.rope_scaling import LONGROPE_OFF_BY_ONE

    rotary = RotaryEmbedding(8, scaling={"rope_type": "longrope", "short_factor": [1.0] * 4,
                                         "long_factor": [1.0, 2.0, 3.0, 4.0],
                                         "original_max_position_embeddings": 16})
    short, _ = rotary.frequencies(16)
    with recording() as sites:
        again, _ = rotary.frequencies(16)
    assert again is short and LONGROPE_OFF_BY_ONE in sites
    with plant(LONGROPE_OFF_BY_ONE):  # switches at seq_len >= 16: the long factors here
        assert torch.equal(rotary.frequencies(16)[0], rotary.frequencies(17)[0])
    assert torch.equal(rotary.frequencies(16)[0], short)
    assert not torch.equal(rotary.frequencies(17)[0], short)
