"""Benchmarks: speed measured as ratios against a baseline run side by side, never timed tests.

The harness (:mod:`transformer_math.bench.harness`) times a candidate against a baseline with
warm-up excluded and interleaved repeats, and fits time exponents (``fit_time_exponent``).
``tmath bench`` and ``benchmarks/run_benchmarks.py`` run every registered benchmark.

How to add a benchmark: create (or extend) a module ``transformer_math/bench/<topic>.py`` with a
zero-argument factory decorated by :func:`~transformer_math.bench.harness.benchmark`. The factory
builds its inputs and returns a :class:`~transformer_math.bench.harness.Benchmark` (baseline and
candidate callables, optional ``target_ratio``: the benchmark passes when candidate/baseline <=
target) or an :class:`~transformer_math.bench.harness.ExponentBenchmark` (a workload of size n
and the sizes). The module is found by its place in this package; nothing is listed by hand::

    from transformer_math.bench.harness import Benchmark, benchmark

    @benchmark("norms.fused-vs-manual")
    def fused_vs_manual() -> Benchmark:
        x = torch.randn(64, 1024, generator=torch.Generator().manual_seed(0))
        return Benchmark(
            "norms.fused-vs-manual", "F.layer_norm vs our layer_norm",
            baseline=lambda: F.layer_norm(x, (1024,)),
            candidate=lambda: layer_norm(x), target_ratio=1.2,
        )

Factories run only when their benchmark is selected, so importing a benchmark module is cheap.
"""

from transformer_math.bench.harness import (
    Benchmark,
    BenchmarkResult,
    ExponentBenchmark,
    ExponentFit,
    RegisteredBenchmark,
    all_benchmarks,
    benchmark,
    fit_time_exponent,
    measure_exponent,
    measure_ratio,
    paired_ratio,
    run_benchmark,
    select_benchmarks,
)

__all__ = [
    "Benchmark",
    "BenchmarkResult",
    "ExponentBenchmark",
    "ExponentFit",
    "RegisteredBenchmark",
    "all_benchmarks",
    "benchmark",
    "fit_time_exponent",
    "measure_exponent",
    "measure_ratio",
    "paired_ratio",
    "run_benchmark",
    "select_benchmarks",
]
