"""The VLA benchmark is registered and runs; its token-count model (equality of the two
workloads' actions: tests/robotics/test_vla_policy.py)."""

from __future__ import annotations

from transformer_math.bench.harness import all_benchmarks, select_benchmarks
from transformer_math.bench.vla_bench import cache_ratio_model


def test_prefix_cache_benchmark_is_registered_and_its_workloads_agree():
    (entry,) = select_benchmarks(all_benchmarks(), r"^vla\.prefix-cache-vs-recompute$")
    bench = entry.build()
    assert bench.baseline().shape == bench.candidate().shape == (1, 4, 3)
    assert bench.target_ratio is not None and bench.target_ratio < 1
    assert abs(cache_ratio_model(72, 4, 10) - (72 + 50) / (10 * 77)) < 1e-12
    assert cache_ratio_model(0, 4, 10) == 1.0  # nothing to cache
