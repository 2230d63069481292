"""Linear vs softmax attention benchmarks: registration, what the workloads compute, the crossover.

No timing is asserted: workloads run on tiny shapes and are checked against independent
implementations of the same attention; the crossover helper is checked on synthetic ratios.
"""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from transformer_math.bench import linear_attention_bench as lab
from transformer_math.bench.harness import (
    Benchmark,
    BenchmarkResult,
    ExponentBenchmark,
    all_benchmarks,
    select_benchmarks,
)
from transformer_math.functional.linear_attention import linear_attention_parallel

EXPONENT_NAMES = {
    "linear.time-exponent.softmax": ("softmax", False, 2.0),
    "linear.time-exponent.elu": ("linear", False, 1.0),
    "linear.time-exponent.elu-causal": ("linear", True, 1.0),
}
VS_NAMES = {
    f"linear.vs-softmax.{mode}.n{n}"
    for mode in ("noncausal", "causal")
    for n in lab.CROSSOVER_SIZES
}


@pytest.fixture
def tiny(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tiny shapes and sizes for the registered factories (read at call time)."""
    monkeypatch.setattr(lab, "HEADS", 3)
    monkeypatch.setattr(lab, "HEAD_DIM", 8)
    monkeypatch.setattr(lab, "EXPONENT_SIZES", (16, 32, 80))


def _expected(method: str, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool):
    """Independent implementations: torch SDPA for softmax, the explicit kernel for linear."""
    if method == "softmax":
        return F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    return linear_attention_parallel(q, k, v, feature_map="elu", causal=causal).output


def _close(actual: torch.Tensor, expected: torch.Tensor) -> None:
    torch.testing.assert_close(actual, expected, atol=1e-5, rtol=1e-4)


# --- registration ------------------------------------------------------------------------------


def test_benchmarks_are_registered_and_selected_by_linear() -> None:
    names = {b.name for b in all_benchmarks()}
    assert set(EXPONENT_NAMES) | VS_NAMES <= names
    selected = {b.name for b in select_benchmarks(all_benchmarks(), "linear")}
    assert set(EXPONENT_NAMES) | VS_NAMES <= selected
    causal = select_benchmarks(all_benchmarks(), r"^linear\.vs-softmax\.causal")
    assert {b.name for b in causal} == {n for n in VS_NAMES if ".causal." in n}


@pytest.mark.usefixtures("tiny")
def test_exponent_factories_build_and_workloads_compute_attention() -> None:
    for entry in select_benchmarks(all_benchmarks(), r"^linear\.time-exponent"):
        method, causal, predicted = EXPONENT_NAMES[entry.name]
        bench = entry.build()  # also measures peak memory at the tiny sizes
        assert isinstance(bench, ExponentBenchmark)
        assert bench.predicted == predicted and tuple(bench.sizes) == (16, 32, 80)
        assert "predicted exponent" in bench.description
        assert "peak" in bench.description
        for n in (16, 80):  # 80: more than one chunk of the causal linear form
            out = bench.make_workload(n)()
            q, k, v = lab._qkv(1, 3, n, 8, seed=n)  # the workload's own inputs
            assert out.shape == (1, 3, n, 8)
            _close(out, _expected(method, q, k, v, causal))


@pytest.mark.usefixtures("tiny")
def test_vs_softmax_factories_compute_softmax_and_linear_on_the_same_inputs() -> None:
    entries = select_benchmarks(all_benchmarks(), r"^linear\.vs-softmax\.")
    assert {e.name for e in entries} == VS_NAMES
    for entry in entries:
        bench = entry.build()
        assert isinstance(bench, Benchmark) and bench.target_ratio is None
        causal = ".causal." in entry.name
        n = int(entry.name.rsplit(".n", 1)[1])
        assert bench.number == max(1, 512 // n)
        if n > 128:  # built above; the numerical check on the small sizes is enough
            continue
        q, k, v = lab._qkv(1, 3, n, 8, seed=n)
        base, cand = bench.baseline(), bench.candidate()
        _close(base, _expected("softmax", q, k, v, causal))
        _close(cand, _expected("linear", q, k, v, causal))


def test_unknown_method_and_mode_are_rejected() -> None:
    q = torch.zeros(1, 1, 2, 2)
    with pytest.raises(ValueError, match="method"):
        lab.attention_call("cosine", q, q, q, causal=False)
    with pytest.raises(ValueError, match="mode"):
        lab.vs_softmax_benchmark("sideways", 16)


# --- crossover ---------------------------------------------------------------------------------


def test_crossover_is_exact_for_a_power_law() -> None:
    sizes = [32, 64, 128, 256, 512]
    ratios = [100.0 / n for n in sizes]  # ratio 1 at n = 100
    cross = lab.crossover_n(sizes, ratios)
    assert cross.status == "interpolated" and cross.n == pytest.approx(100.0)
    # order of the input does not matter
    assert lab.crossover_n(sizes[::-1], ratios[::-1]).n == pytest.approx(100.0)
    # a different power: ratio = (n / 200)^-1.5
    assert lab.crossover_n(sizes, [(n / 200) ** -1.5 for n in sizes]).n == pytest.approx(200.0)


def test_crossover_takes_the_last_crossing_and_exact_ones() -> None:
    # dips below 1 at 64, back above at 128, below from 256 on: linear stays faster beyond ~181
    sizes = [32, 64, 128, 256, 512]
    cross = lab.crossover_n(sizes, [2.0, 0.9, 2.0, 0.5, 0.25])
    assert cross.status == "interpolated"
    assert cross.n == pytest.approx(math.sqrt(128 * 256))  # log r symmetric: the geometric mean
    # ratio exactly 1 at a measured size: the crossover is that size
    assert lab.crossover_n(sizes, [3.0, 2.0, 1.0, 0.5, 0.25]).n == pytest.approx(128.0)


def test_crossover_outside_the_range() -> None:
    assert lab.crossover_n([64, 128, 256], [0.9, 0.5, 0.1]) == lab.Crossover(64.0, "below-range")
    assert lab.crossover_n([64, 128, 256], [4.0, 2.0, 1.0]) == lab.Crossover(256.0, "above-range")
    assert lab.crossover_n([64, 128, 256], [0.5, 0.7, 1.2]) == lab.Crossover(256.0, "above-range")
    assert lab.crossover_n([64], [0.5]) == lab.Crossover(64.0, "below-range")


@pytest.mark.parametrize(
    ("sizes", "ratios"),
    [([], []), ([1, 2], [1.0]), ([2, 2], [1.0, 0.5]), ([0, 2], [1.0, 0.5]), ([1, 2], [1.0, 0.0]),
     ([1, 2], [1.0, math.nan])],
)
def test_crossover_rejects_bad_input(sizes: list[int], ratios: list[float]) -> None:
    with pytest.raises(ValueError):
        lab.crossover_n(sizes, ratios)


def test_crossover_from_results_groups_by_mode() -> None:
    rows = [
        {"name": f"linear.vs-softmax.noncausal.n{n}", "kind": "ratio", "ratio": 64.0 / n}
        for n in (32, 128, 512)
    ] + [
        {"name": "attention.time-exponent", "kind": "exponent", "slope": 2.0},
        {"name": "linear.time-exponent.elu", "kind": "exponent", "slope": 1.0},
    ]
    causal = [
        BenchmarkResult(f"linear.vs-softmax.causal.n{n}", "", "ratio", ratio=r)
        for n, r in ((32, 3.0), (128, 1.5), (512, 0.75))
    ]
    out = lab.crossover_from_results([*rows, *causal])
    assert set(out) == {"noncausal", "causal"}
    assert out["noncausal"].n == pytest.approx(64.0)
    # 1.5 at 128, 0.75 at 512: log-halfway in log r -> 128 * 4^(log 1.5 / log 2)
    assert out["causal"].n == pytest.approx(128 * 4 ** (math.log(1.5) / math.log(2.0)))
    assert lab.crossover_from_results(rows[3:]) == {}


# --- memory --------------------------------------------------------------------------------------


def test_memory_exponent_and_point_ratio() -> None:
    assert lab.memory_exponent([100, 200, 400], [1e4, 4e4, 16e4]) == pytest.approx(2.0)
    assert math.isnan(lab.memory_exponent([100, 200], [0, 4096]))
    point = lab.MemoryPoint(64, False, 4096, 1024, 4 * 64 * 64, "m")
    assert point.ratio == 0.25 and point.to_json()["ratio"] == 0.25
    assert lab.MemoryPoint(64, False, 0, 1024, 1, "m").ratio == math.inf


def test_softmax_peak_memory_holds_the_score_matrix() -> None:
    """At n = 1024, (B, H) = (1, 2): the 8 MiB score matrix is resident at the peak of softmax
    attention, and linear attention stays below it (memory, not time)."""
    try:
        point = lab.measure_memory(1024, causal=False, batch=1, heads=2, head_dim=64)
    except RuntimeError as exc:  # no /proc/self/clear_refs
        pytest.skip(str(exc))
    assert point.softmax_bytes >= point.matrix_bytes
    assert point.linear_bytes < point.matrix_bytes
