"""``generation_config.json`` -> ``model.generation_config`` -> the defaults of ``generate()``,
as transformers resolves them (call arguments > the file > transformers' global defaults)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
import torch

from transformer_math.checkpoints.generation_config import GenerationConfig
from transformer_math.checkpoints.io import from_pretrained, save_pretrained
from transformer_math.nn.config import TransformerConfig
from transformer_math.nn.generation import generate
from transformer_math.nn.transformer import Transformer


def _folder(ref, path: Path, **settings: Any) -> Any:
    """A tiny Llama folder whose generation_config.json holds the ids and ``settings``."""
    hf_model = ref.llama(path)
    gen = json.loads((path / "generation_config.json").read_text())
    gen.update(settings)
    (path / "generation_config.json").write_text(json.dumps(gen))
    return hf_model


SAMPLING = {"do_sample": True, "temperature": 0.7, "top_k": 20, "top_p": 0.8,
            "repetition_penalty": 1.05, "max_new_tokens": 6}


def test_the_file_is_parsed_and_attached(tmp_path, ref):
    _folder(ref, tmp_path, **SAMPLING, eos_token_id=[2, 5])
    gen = from_pretrained(tmp_path).generation_config
    assert (gen.do_sample, gen.temperature, gen.top_k, gen.top_p, gen.repetition_penalty,
            gen.max_new_tokens, gen.eos_token_id) == (True, 0.7, 20, 0.8, 1.05, 6, (2, 5))
    assert gen.bos_token_id == 1 and gen.unsupported == ()


def test_sampling_defaults_come_from_the_file(tmp_path, ref):
    _folder(ref, tmp_path, **SAMPLING)
    ours = from_pretrained(tmp_path)
    prompt = ref.tokens(2, 4)
    got = ours.generate(prompt, generator=torch.Generator().manual_seed(0), eos_token_id=None)
    assert got.shape == (2, 4 + 6)  # max_new_tokens from the file
    again = ours.generate(prompt, generator=torch.Generator().manual_seed(0), eos_token_id=None)
    assert torch.equal(got, again)  # a fixed generator: the same draws
    explicit = generate(ours, prompt, 6, temperature=0.7, top_k=20, top_p=0.8,
                        repetition_penalty=1.05, eos_token_id=None,
                        generator=torch.Generator().manual_seed(0))
    assert torch.equal(got, explicit)
    plain = dataclasses.replace(ours.generation_config, do_sample=None, repetition_penalty=None)
    ours.generation_config = plain  # greedy again
    greedy = ours.generate(prompt, eos_token_id=None)
    assert not torch.equal(got, greedy)
    ours.generation_config = dataclasses.replace(plain, do_sample=True)
    assert torch.equal(ours.generate(prompt, temperature=0.0, eos_token_id=None), greedy)
    assert torch.equal(ours.generate(prompt, do_sample=False, eos_token_id=None), greedy)


def test_top_k_default_is_transformers_50(tmp_path, ref):
    _folder(ref, tmp_path, do_sample=True)
    settings = from_pretrained(tmp_path).generation_config.resolved()
    assert (settings["do_sample"], settings["temperature"], settings["top_k"],
            settings["top_p"], settings["max_length"]) == (True, 1.0, 50, None, 20)


def test_max_length_20_when_the_file_sets_no_length(tmp_path, ref):
    _folder(ref, tmp_path)
    ours = from_pretrained(tmp_path)
    assert ours.generate(ref.tokens(1, 5), eos_token_id=None).shape == (1, 20)
    assert ours.generate(ref.tokens(1, 5), 3, eos_token_id=None).shape == (1, 8)


@pytest.mark.parametrize("padded", [False, True], ids=["one-row", "left-padded"])
def test_greedy_with_repetition_penalty_equals_transformers(tmp_path, ref, padded):
    hf_model = _folder(ref, tmp_path, do_sample=False, repetition_penalty=1.8,
                       max_new_tokens=16, pad_token_id=0)
    ours = from_pretrained(tmp_path)
    hf_model = ref.transformers.AutoModelForCausalLM.from_pretrained(tmp_path).eval()
    prompt = ref.tokens(2 if padded else 1, 5)
    mask = torch.ones_like(prompt)
    if padded:
        prompt[1, :2], mask[1, :2] = 0, 0
    with torch.no_grad():
        expected = hf_model.generate(prompt, attention_mask=mask)
    got = ours.generate(prompt, attention_mask=mask)
    assert torch.equal(got, expected)
    unpenalised = ours.generate(prompt, attention_mask=mask, repetition_penalty=1.0)
    assert not torch.equal(got, unpenalised)  # the penalty changed the continuation


@pytest.mark.parametrize("settings, match", [
    ({"temperature": "hot"}, "temperature"),
    ({"top_p": 1.5}, "top_p"),
    ({"top_k": -1}, "top_k"),
    ({"do_sample": "yes"}, "do_sample"),
    ({"repetition_penalty": 0}, "repetition_penalty"),
    ({"max_new_tokens": 2.5}, "max_new_tokens"),
    ({"eos_token_id": [2, "x"]}, "eos_token_id"),
])
def test_bad_values_are_refused_at_load(tmp_path, ref, settings, match):
    _folder(ref, tmp_path, **settings)
    with pytest.raises(ValueError, match=match):
        from_pretrained(tmp_path)


def test_unimplemented_settings_are_refused_at_generate(tmp_path, ref):
    _folder(ref, tmp_path, num_beams=4, no_repeat_ngram_size=0)
    ours = from_pretrained(tmp_path)  # loads: the file is valid
    assert ours.generation_config.unsupported == (("num_beams", 4),)
    with pytest.raises(ValueError, match="num_beams=4"):
        ours.generate(ref.tokens(1, 3), 2)
    ours.generation_config = dataclasses.replace(ours.generation_config, unsupported=())
    assert ours.generate(ref.tokens(1, 3), 2).shape[1] <= 5


def test_sampling_with_zero_temperature_is_refused(tmp_path, ref):
    _folder(ref, tmp_path, do_sample=True, temperature=0.0)
    ours = from_pretrained(tmp_path)
    with pytest.raises(ValueError, match="temperature"):
        ours.generate(ref.tokens(1, 3), 2)


def test_save_writes_the_settings_back(tmp_path, ref):
    _folder(ref, tmp_path / "a", **SAMPLING)
    ours = from_pretrained(tmp_path / "a")
    save_pretrained(ours, tmp_path / "b")
    assert from_pretrained(tmp_path / "b").generation_config == ours.generation_config
    hf_gen = ref.transformers.GenerationConfig.from_pretrained(tmp_path / "b")
    assert (hf_gen.do_sample, hf_gen.temperature, hf_gen.top_k, hf_gen.top_p) == (
        True, 0.7, 20, 0.8)


def test_a_plain_model_needs_max_new_tokens():
    model = Transformer(TransformerConfig(hidden_size=16, num_layers=1, num_heads=2,
                                          vocab_size=11))
    ids = torch.zeros(1, 2, dtype=torch.long)
    with pytest.raises(ValueError, match="max_new_tokens is required"):
        generate(model, ids)
    assert generate(model, ids, 3).shape == (1, 5)
    assert GenerationConfig().resolved()["max_length"] == 20
