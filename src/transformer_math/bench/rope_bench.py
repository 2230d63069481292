"""RoPE benchmarks: the project's rotary application against a plain complex-multiply reference.

- ``rope.apply-vs-complex``: ``apply_rotary`` (rotate-half, float32 cos/sin from a
  ``RotaryEmbedding`` cache) against ``apply_rotary_complex`` (view as complex, multiply by
  e^{i m θ}), both on (B, H, T, D) = (4, 8, 1024, 64) float32 on the CPU. No target ratio: the
  ratio is reported (the rotate-half form needs no complex dtype and works for any layout, the
  complex form is the textbook one); the two outputs agree after the channel permutation
  (claim ``position.rope-orthogonal``).
"""

from __future__ import annotations

import torch
from torch import Tensor

from transformer_math.bench.harness import Benchmark, benchmark
from transformer_math.functional.rope import apply_rotary, apply_rotary_complex
from transformer_math.nn.position import RotaryEmbedding

BATCH, HEADS, SEQ_LEN, HEAD_DIM = 4, 8, 1024, 64


@benchmark("rope.apply-vs-complex")
def apply_vs_complex() -> Benchmark:
    g = torch.Generator().manual_seed(0)
    x = torch.randn(BATCH, HEADS, SEQ_LEN, HEAD_DIM, generator=g)
    positions = torch.arange(SEQ_LEN)
    rotary = RotaryEmbedding(HEAD_DIM, max_position_embeddings=SEQ_LEN)
    inv_freq = rotary.inv_freq

    def baseline() -> Tensor:
        return apply_rotary_complex(x, positions, inv_freq)

    def candidate() -> Tensor:
        cos, sin = rotary(positions)
        return apply_rotary(x, cos, sin)

    return Benchmark(
        name="rope.apply-vs-complex",
        description=f"apply_rotary (rotate-half, cached cos/sin) vs complex multiply, "
        f"B={BATCH} H={HEADS} T={SEQ_LEN} D={HEAD_DIM} float32",
        baseline=baseline,
        candidate=candidate,
        repeats=9,
    )
