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


def test_roofline_and_operator_counts_of_the_prefix_cache():
    from transformer_math.bench import vla_bench
    from transformer_math.robotics.vla_training import vla_config
    from transformer_math.theory.latency import get_hardware

    config = vla_config("default")
    hw = get_hardware("h100-sxm")
    roof = vla_bench.roofline_ratio(config, hw)
    tokens = cache_ratio_model(config.prefix_len, config.chunk_size, vla_bench.FLOW_STEPS)
    assert tokens < roof < 1.0  # weights are read at every step: above the token count
    parts = vla_bench.roofline_parts(config, hw)
    assert abs(vla_bench.roofline_chunk_seconds(config, hw, 10, cached=True)
               - parts["prefix (tokens + encode, once)"] - 10 * parts["cached flow step"]) < 1e-12
    policy, batch, s = vla_bench._setup(config)
    pieces = vla_bench._parts(policy, batch, s)
    counts = {name: vla_bench.count_ops(fn) for name, fn in pieces.items()}
    assert counts == {name: vla_bench.count_ops(fn) for name, fn in pieces.items()}  # fixed
    assert counts["cached flow step"] < counts["recomputing flow step"]
    assert tokens < vla_bench.op_count_ratio(counts) < 1.0


def test_report_command_rejects_bad_arguments(capsys):
    import pytest

    from transformer_math.bench import vla_bench

    with pytest.raises(SystemExit) as info:
        vla_bench.main(["--repeats", "zero"])
    assert info.value.code == 2
    assert "--repeats: must be an integer >= 1" in capsys.readouterr().err
