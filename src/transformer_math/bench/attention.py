"""Attention benchmarks: our wrappers against PyTorch's fused kernel, and the n^2 time law.

- ``attention.fast-vs-sdpa.{noncausal,causal}``: ``functional.scaled_dot_product_attention(...,
  backend="sdpa")`` (validation, mask handling, then the fused kernel) against calling
  ``torch.nn.functional.scaled_dot_product_attention`` directly. The wrapper must cost at most
  5 % (target ratio 1.05).
- ``attention.reference-vs-sdpa.{noncausal,causal}``: the explicit-matrix reference backend
  against the fused kernel; no target, the ratio is the price of materialising the (T, T) weights.
- ``attention.time-exponent``: wall-clock time of full (reference) attention at fixed head_dim
  64 over n = 256 .. 4096; 000 §8.3.1 predicts exponent 2 (the n x n score matrix).
- ``attention.linear-time-exponent``: the same for linear attention through the same entry point
  (``backend="linear"``, elu + 1, phi(Q) (phi(K)^T V)) over n = 1024 .. 16384 (from 1024 on the
  O(n d^2) work, not the call overhead, dominates); predicted exponent 1.

The two exponents are measured numbers, not tests: an exponent benchmark has no target and
cannot fail (the harness reports ``met = None``). Wall-clock exponents move with the machine's
load (on a shared 2-core machine from 1.1 to 2.8 for the same code), which is why the claim
``attention.quadratic-cost`` rests on counted work (``diagnostics.count_work``) and reports
times only as information.

Shapes (batch, heads, seq, head_dim) = (4, 8, 512, 64), float32, on the CPU.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

from transformer_math.bench.harness import Benchmark, ExponentBenchmark, Workload, benchmark
from transformer_math.functional import scaled_dot_product_attention

BATCH, HEADS, SEQ_LEN, HEAD_DIM = 4, 8, 512, 64
FAST_PATH_TARGET = 1.05
EXPONENT_SIZES = (256, 512, 1024, 2048, 4096)
LINEAR_EXPONENT_SIZES = (1024, 2048, 4096, 8192, 16384)
EXPONENT_HEADS = 2


def _qkv(batch: int, heads: int, seq_len: int, head_dim: int, seed: int = 0) -> tuple[Tensor, ...]:
    g = torch.Generator().manual_seed(seed)
    shape = (batch, heads, seq_len, head_dim)
    return tuple(torch.randn(shape, generator=g) for _ in range(3))


def against_torch_sdpa(
    name: str,
    backend: str,
    causal: bool,
    target: float | None,
    shape: tuple[int, int, int, int] | None = None,
) -> Benchmark:
    """Our ``scaled_dot_product_attention(backend=...)`` against torch SDPA on one input.

    ``shape`` is (batch, heads, seq, head_dim); the module constants when None.
    """
    b, h, t, d = (BATCH, HEADS, SEQ_LEN, HEAD_DIM) if shape is None else shape
    q, k, v = _qkv(b, h, t, d)

    def baseline() -> Tensor:
        return F.scaled_dot_product_attention(q, k, v, is_causal=causal)

    def candidate() -> Tensor:
        return scaled_dot_product_attention(q, k, v, is_causal=causal, backend=backend).output

    mode = "causal" if causal else "non-causal"
    return Benchmark(
        name=name,
        description=f"backend={backend!r} vs torch SDPA, {mode}, B={b} H={h} T={t} D={d} float32",
        baseline=baseline,
        candidate=candidate,
        target_ratio=target,
    )


@benchmark("attention.fast-vs-sdpa.noncausal")
def fast_vs_sdpa_noncausal() -> Benchmark:
    return against_torch_sdpa("attention.fast-vs-sdpa.noncausal", "sdpa", False, FAST_PATH_TARGET)


@benchmark("attention.fast-vs-sdpa.causal")
def fast_vs_sdpa_causal() -> Benchmark:
    return against_torch_sdpa("attention.fast-vs-sdpa.causal", "sdpa", True, FAST_PATH_TARGET)


@benchmark("attention.reference-vs-sdpa.noncausal")
def reference_vs_sdpa_noncausal() -> Benchmark:
    return against_torch_sdpa("attention.reference-vs-sdpa.noncausal", "reference", False, None)


@benchmark("attention.reference-vs-sdpa.causal")
def reference_vs_sdpa_causal() -> Benchmark:
    return against_torch_sdpa("attention.reference-vs-sdpa.causal", "reference", True, None)


def attention_workload(seq_len: int, head_dim: int = HEAD_DIM, backend: str = "reference"
                       ) -> Workload:
    """Inputs of length ``seq_len`` and the call that times ``scaled_dot_product_attention``
    with ``backend`` on them."""
    if backend == "linear":
        # Importing the module registers the "linear" backend.
        import transformer_math.functional.linear_attention  # noqa: F401
    q, k, v = _qkv(1, EXPONENT_HEADS, seq_len, head_dim, seed=seq_len)

    def run() -> Tensor:
        return scaled_dot_product_attention(q, k, v, backend=backend).output

    return run


def reference_attention_workload(seq_len: int, head_dim: int = HEAD_DIM) -> Workload:
    """Inputs of length ``seq_len`` and the call that times full (reference) attention on them."""
    return attention_workload(seq_len, head_dim, "reference")


def linear_attention_workload(seq_len: int, head_dim: int = HEAD_DIM) -> Workload:
    """Inputs of length ``seq_len`` and the call that times linear attention on them."""
    return attention_workload(seq_len, head_dim, "linear")


@benchmark("attention.time-exponent")
def time_exponent() -> ExponentBenchmark:
    return ExponentBenchmark(
        name="attention.time-exponent",
        description=f"full (reference) attention, wall clock, B=1 H={EXPONENT_HEADS} "
        f"D={HEAD_DIM}, n in {list(EXPONENT_SIZES)}; predicted exponent 2 (measured, no target)",
        make_workload=reference_attention_workload,
        sizes=EXPONENT_SIZES,
        predicted=2.0,
    )


@benchmark("attention.linear-time-exponent")
def linear_time_exponent() -> ExponentBenchmark:
    return ExponentBenchmark(
        name="attention.linear-time-exponent",
        description=f"linear (elu+1) attention, backend='linear', wall clock, B=1 "
        f"H={EXPONENT_HEADS} D={HEAD_DIM}, n in {list(LINEAR_EXPONENT_SIZES)}; predicted "
        "exponent 1 (measured, no target)",
        make_workload=linear_attention_workload,
        sizes=LINEAR_EXPONENT_SIZES,
        predicted=1.0,
    )
