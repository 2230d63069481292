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
