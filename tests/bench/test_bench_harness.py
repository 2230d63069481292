"""The benchmark harness, timed with a fake clock: no test here depends on real timings.

Workloads advance a :class:`FakeClock` by a known cost instead of doing work, so ratios, medians,
warm-up exclusion, interleaving and exponent fits have exact expected values.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
import torch
from typer.testing import CliRunner

from transformer_math.bench import attention as attention_bench
from transformer_math.bench import harness
from transformer_math.bench.harness import (
    Benchmark,
    ExponentBenchmark,
    RegisteredBenchmark,
    all_benchmarks,
    benchmark,
    fit_time_exponent,
    measure_ratio,
    paired_ratio,
    run_benchmark,
    select_benchmarks,
)
from transformer_math.cli import app
from transformer_math.diagnostics.fits import fit_power_law  # the one fitter, used by the harness
from transformer_math.registry import Registry


class FakeClock:
    """A clock that only moves when a workload says how long it took."""

    def __init__(self) -> None:
        self.now = 0.0
        self.calls: list[str] = []

    def __call__(self) -> float:
        return self.now

    def workload(self, name: str, *costs: float) -> Callable[[], None]:
        """A callable costing ``costs[i]`` on call i (the last cost repeats)."""

        def run() -> None:
            i = sum(1 for c in self.calls if c == name)
            self.calls.append(name)
            self.now += costs[min(i, len(costs) - 1)]

        return run


# --- ratios ----------------------------------------------------------------------------------


def test_ratio_medians_and_target() -> None:
    clock = FakeClock()
    bench = Benchmark(
        "t.ratio",
        "",
        clock.workload("b", 2.0),
        clock.workload("c", 3.0),
        target_ratio=1.05,
        repeats=5,
        warmup=0,
    )
    result = measure_ratio(bench, timer=clock)
    assert result.baseline_median_s == 2.0 and result.candidate_median_s == 3.0
    assert result.ratio == pytest.approx(1.5)
    assert result.met is False
    assert len(result.baseline_times) == len(result.candidate_times) == 5
    relaxed = Benchmark(
        "t.ratio",
        "",
        clock.workload("b", 2.0),
        clock.workload("c", 3.0),
        target_ratio=2.0,
        warmup=0,
    )
    assert measure_ratio(relaxed, repeats=3, timer=clock).met is True
    untargeted = Benchmark("t.ratio", "", clock.workload("b", 2.0), clock.workload("c", 3.0))
    assert measure_ratio(untargeted, repeats=3, timer=clock).met is None


def test_warmup_is_not_timed_and_order_alternates() -> None:
    clock = FakeClock()
    # The first call of each costs 100 (compilation, caches); warm-up must absorb it.
    bench = Benchmark(
        "t.warm",
        "",
        clock.workload("b", 100.0, 1.0),
        clock.workload("c", 100.0, 4.0),
        repeats=4,
        warmup=1,
    )
    result = measure_ratio(bench, timer=clock)
    assert result.baseline_times == [1.0] * 4 and result.candidate_times == [4.0] * 4
    assert result.ratio == 4.0
    assert clock.calls == ["b", "c", "b", "c", "c", "b", "b", "c", "c", "b"]


def test_number_divides_sample_time() -> None:
    clock = FakeClock()
    bench = Benchmark(
        "t.num",
        "",
        clock.workload("b", 1.0),
        clock.workload("c", 2.0),
        repeats=2,
        warmup=0,
        number=10,
    )
    result = measure_ratio(bench, timer=clock)
    assert result.baseline_median_s == pytest.approx(1.0)
    assert len(clock.calls) == 2 * 2 * 10


def test_paired_ratio_cancels_drift() -> None:
    clock = FakeClock()
    calls = [0]

    def drifting(cost: float) -> Callable[[], None]:
        def run() -> None:
            calls[0] += 1
            clock.now += cost * (1.0 + 0.05 * calls[0])  # the machine slows down steadily

        return run

    bench = Benchmark("t.drift", "", drifting(1.0), drifting(1.5), repeats=21, warmup=0)
    result = measure_ratio(bench, timer=clock)
    assert result.ratio == pytest.approx(1.5, rel=0.03)


def test_paired_ratio_arithmetic() -> None:
    assert paired_ratio([1.0, 2.0, 4.0], [2.0, 2.0, 2.0]) == 1.0  # median of 2, 1, 0.5
    with pytest.raises(ValueError, match="equal length"):
        paired_ratio([1.0], [1.0, 2.0])
    with pytest.raises(ValueError, match="equal length"):
        paired_ratio([], [])


def test_benchmark_validation() -> None:
    with pytest.raises(ValueError, match="target_ratio"):
        Benchmark("t.x", "", lambda: None, lambda: None, target_ratio=0.0)
    with pytest.raises(ValueError, match="repeats"):
        Benchmark("t.x", "", lambda: None, lambda: None, repeats=0)
    with pytest.raises(ValueError, match="sizes"):
        ExponentBenchmark("t.x", "", lambda n: lambda: None, sizes=[8])


# --- exponents -------------------------------------------------------------------------------


@pytest.mark.parametrize(("c", "a"), [(3e-9, 2.0), (1e-6, 1.0), (2.0, 0.5)])
def test_fit_power_law_recovers_exponent(c: float, a: float) -> None:
    sizes = [256.0, 512.0, 1024.0, 2048.0, 4096.0]
    fit = fit_power_law(sizes, [c * n**a for n in sizes])
    assert fit.exponent == pytest.approx(a, abs=1e-9)
    assert fit.prefactor == pytest.approx(c, rel=1e-9)
    assert fit.r2 == pytest.approx(1.0)


def test_fit_power_law_rejects_bad_data() -> None:
    with pytest.raises(ValueError, match="equal length"):
        fit_power_law([1.0, 2.0], [1.0])
    with pytest.raises(ValueError, match="positive"):
        fit_power_law([1.0, 2.0], [1.0, 0.0])
    with pytest.raises(ValueError, match="distinct"):
        fit_power_law([4.0, 4.0], [1.0, 2.0])


def test_fit_time_exponent_with_fake_clock() -> None:
    clock = FakeClock()
    prepared: list[int] = []

    def make(n: int) -> Callable[[], None]:
        prepared.append(n)
        # First call of each size is 1000x slower (warm-up), then t = 3e-9 n^2.
        return clock.workload(f"n{n}", 1000.0, 3e-9 * n * n)

    sizes = [256, 512, 1024, 2048, 4096]
    fit = fit_time_exponent(make, sizes, repeats=3, timer=clock)
    slope, times = fit[:2]
    assert slope == pytest.approx(2.0, abs=1e-9)
    assert times == pytest.approx([3e-9 * n * n for n in sizes])
    assert fit.sizes == sizes and prepared == sizes
    # Sizes are interleaved within each repeat (after one warm-up call each).
    assert clock.calls[len(sizes) :] == [f"n{n}" for n in sizes] * 3


@pytest.mark.parametrize(("statistic", "expected"), [("min", 1.0), ("median", 2.0)])
def test_fit_time_exponent_statistic(statistic: str, expected: float) -> None:
    clock = FakeClock()
    # Repeats cost 1, 5, 2 (times n): "min" keeps the fastest, "median" the middle one.
    fit = fit_time_exponent(
        lambda n: clock.workload(f"n{n}", n * 1.0, n * 5.0, n * 2.0),
        [1, 2, 4],
        repeats=3,
        warmup=0,
        statistic=statistic,
        timer=clock,
    )
    assert fit.times == pytest.approx([expected * n for n in (1, 2, 4)])
    assert fit.slope == pytest.approx(1.0)
    with pytest.raises(ValueError, match="statistic"):
        fit_time_exponent(lambda n: lambda: None, [1, 2], statistic="mean", timer=clock)


def test_exponent_benchmark_result() -> None:
    clock = FakeClock()
    bench = ExponentBenchmark(
        "t.exp",
        "",
        lambda n: clock.workload(f"n{n}", 1e-6 * n),
        sizes=[10, 100, 1000],
        predicted=1.0,
        repeats=2,
        warmup=0,
    )
    result = run_benchmark(bench, timer=clock)
    assert result.kind == "exponent" and result.met is None
    assert result.slope == pytest.approx(1.0)
    data = result.to_json()
    assert data["predicted"] == 1.0 and data["sizes"] == [10, 100, 1000]


# --- registry --------------------------------------------------------------------------------


def test_registry_names_and_build_checks() -> None:
    with pytest.raises(ValueError, match=r"topic\.slug"):
        benchmark("No Spaces")
    entry = RegisteredBenchmark("t.one", lambda: Benchmark("t.two", "", lambda: None, lambda: None))
    with pytest.raises(ValueError, match=r"named 't\.two'"):
        entry.build()
    with pytest.raises(TypeError, match="must return"):
        RegisteredBenchmark("t.one", lambda: 42).build()  # type: ignore[arg-type, return-value]


def test_attention_benchmarks_are_registered_and_agree(monkeypatch: pytest.MonkeyPatch) -> None:
    names = [b.name for b in all_benchmarks()]
    for name in (
        "attention.fast-vs-sdpa.causal",
        "attention.fast-vs-sdpa.noncausal",
        "attention.reference-vs-sdpa.causal",
        "attention.reference-vs-sdpa.noncausal",
        "attention.time-exponent",
    ):
        assert name in names
    assert len(select_benchmarks(all_benchmarks(), r"^attention\.fast-vs-sdpa")) == 2
    # Small inputs: baseline and candidate compute the same attention (correctness, not timing).
    for constant, value in {"BATCH": 2, "HEADS": 3, "SEQ_LEN": 17, "HEAD_DIM": 8}.items():
        monkeypatch.setattr(attention_bench, constant, value)
    for entry in select_benchmarks(all_benchmarks(), r"^attention\..*-vs-sdpa"):
        bench = entry.build()
        assert isinstance(bench, Benchmark)
        assert (bench.target_ratio == 1.05) == ("fast" in entry.name)
        assert torch.allclose(bench.candidate(), bench.baseline(), atol=1e-5, rtol=1e-4)
    (exp_entry,) = select_benchmarks(all_benchmarks(), r"^attention\.time-exponent")
    exp = exp_entry.build()
    assert isinstance(exp, ExponentBenchmark) and exp.predicted == 2.0
    assert exp.make_workload(16)().shape == (1, 2, 16, 64)


# --- command line ----------------------------------------------------------------------------


def test_bench_help() -> None:
    result = CliRunner().invoke(app, ["bench", "--help"])
    assert result.exit_code == 0, result.output
    assert "--repeats" in result.output


@pytest.fixture
def fake_benchmarks(monkeypatch: pytest.MonkeyPatch) -> FakeClock:
    """Two fake benchmarks (one meets its target, one misses it) on a fake clock."""
    clock = FakeClock()
    table: Registry[RegisteredBenchmark] = Registry("benchmark")
    monkeypatch.setattr(harness, "BENCHMARKS", table)
    monkeypatch.setattr(harness, "_import_benchmark_modules", lambda: None)
    monkeypatch.setattr(harness, "DEFAULT_TIMER", clock)

    @benchmark("fake.meets")
    def meets() -> Benchmark:
        return Benchmark(
            "fake.meets",
            "equal cost",
            clock.workload("mb", 1.0),
            clock.workload("mc", 1.0),
            target_ratio=1.05,
            warmup=0,
        )

    @benchmark("fake.misses")
    def misses() -> Benchmark:
        return Benchmark(
            "fake.misses",
            "1.5x cost",
            clock.workload("xb", 2.0),
            clock.workload("xc", 3.0),
            target_ratio=1.05,
            warmup=0,
        )

    @benchmark("fake.exponent")
    def exponent() -> ExponentBenchmark:
        return ExponentBenchmark(
            "fake.exponent",
            "n^2",
            lambda n: clock.workload(f"e{n}", n * n),
            sizes=[2, 4, 8],
            predicted=2.0,
            warmup=0,
        )

    return clock


def test_bench_command_exit_codes(fake_benchmarks: FakeClock, tmp_path: Path) -> None:
    runner = CliRunner(env={"COLUMNS": "200"})
    out = tmp_path / "bench.json"
    result = runner.invoke(app, ["bench", "--repeats", "3", "--json", str(out)])
    assert result.exit_code == 1, result.output
    assert "fake.misses" in result.stdout and "missed target" in result.stdout
    document = json.loads(out.read_text())
    by_name = {b["name"]: b for b in document["benchmarks"]}
    assert by_name["fake.misses"]["ratio"] == 1.5 and by_name["fake.misses"]["met"] is False
    assert by_name["fake.meets"]["met"] is True
    assert by_name["fake.exponent"]["slope"] == pytest.approx(2.0)
    assert "torch_threads" in document["environment"]

    result = runner.invoke(app, ["bench", "-k", "meets|exponent", "--repeats", "2"])
    assert result.exit_code == 0, result.output

    result = runner.invoke(app, ["bench", "-k", "nothing-matches"])
    assert result.exit_code == 2
    assert result.stderr.strip().startswith("tmath bench: error: no benchmark matches")
