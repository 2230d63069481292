"""The latency benchmarks compare equal work: both members produce the same tokens/logits."""

from __future__ import annotations

import torch

from transformer_math.bench import checkpoints_bench


def test_decode_benchmark_members_agree():
    bench = checkpoints_bench.gpt2_decode()
    assert bench.name == "checkpoints.gpt2-decode"
    assert torch.equal(bench.baseline(), bench.candidate())


def test_forward_benchmark_members_agree():
    bench = checkpoints_bench.llama_forward()
    assert (bench.baseline() - bench.candidate()).abs().max() <= 1e-5


def test_every_family_has_both_benchmarks():
    from transformer_math.bench.harness import BENCHMARKS

    for family in ("llama", "gpt2", "qwen2", "mistral", "gemma", "phi3"):
        for kind in ("forward", "decode"):
            assert f"checkpoints.{family}-{kind}" in BENCHMARKS.names()


def test_new_family_benchmark_members_agree():
    for family in ("qwen2", "mistral", "gemma", "phi3"):
        bench = checkpoints_bench._forward(family)
        assert (bench.baseline() - bench.candidate()).abs().max() <= 1e-4, family


def test_decode_settings_come_from_the_environment(monkeypatch):
    import pytest

    monkeypatch.delenv(checkpoints_bench.SIZE_VARIABLE, raising=False)
    monkeypatch.delenv(checkpoints_bench.DTYPE_VARIABLE, raising=False)
    assert checkpoints_bench.decode_settings("gpt2") == ("small", "float32")
    monkeypatch.setenv(checkpoints_bench.SIZE_VARIABLE, "1b")
    monkeypatch.setenv(checkpoints_bench.DTYPE_VARIABLE, "bfloat16")
    assert checkpoints_bench.decode_settings("llama") == ("1b", "bfloat16")
    with pytest.raises(ValueError, match=checkpoints_bench.SIZE_VARIABLE):
        checkpoints_bench.decode_settings("gpt2")  # 1b is Llama-3.2-1B only
    monkeypatch.setenv(checkpoints_bench.DTYPE_VARIABLE, "float16")
    with pytest.raises(ValueError, match=checkpoints_bench.DTYPE_VARIABLE):
        checkpoints_bench.decode_settings("llama")


def test_bfloat16_decode_benchmark_compares_bfloat16_models(monkeypatch):
    """At the small size in bfloat16 both members are bfloat16 models and decode 128 tokens."""
    monkeypatch.setenv(checkpoints_bench.DTYPE_VARIABLE, "bfloat16")
    bench = checkpoints_bench._decode("gemma")
    assert "bfloat16" in bench.description
    ours, theirs = bench.candidate(), bench.baseline()
    assert ours.shape == theirs.shape == (1, checkpoints_bench.PROMPT_LEN
                                          + checkpoints_bench.NEW_TOKENS)
