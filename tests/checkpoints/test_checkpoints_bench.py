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
