"""Side-by-side benchmarks: speed as a ratio against a baseline run in the same process.

Absolute times depend on the machine and its load, so nothing here is a timed test. A
:class:`Benchmark` runs a *baseline* and a *candidate* alternately (``b c c b b c ...``: the
member that goes first alternates, so slow drift such as frequency scaling or a neighbour's load
hits both equally) after warm-up calls that are not timed, and reports

    ratio = median_i ( t_candidate,i / t_baseline,i )

over the repeats i (each pair was measured back to back), together with each member's median
time. A benchmark with ``target_ratio`` passes when ``ratio <= target_ratio``.

:func:`fit_time_exponent` measures how time grows with a size n: it times a workload at each n
(sizes interleaved within every repeat; per size the fastest repeat, or the median) and fits

    log t = a log n + b

by least squares (:func:`fit_power_law`); ``a`` is the exponent (2 for full attention at fixed
head_dim, 000 §8.3.1; 1 for linear attention). The benchmarks ``attention.time-exponent`` and
``attention.linear-time-exponent`` use it; the claim ``attention.quadratic-cost`` decides on counted
work instead (``diagnostics.op_counts``), which another process cannot disturb.

Every timing function takes an injectable ``timer`` (default :data:`DEFAULT_TIMER`,
``time.perf_counter``) so that tests can use a fake clock. ``torch.set_num_threads`` is never
changed here.

Benchmarks register themselves like claims: a module ``transformer_math/bench/<topic>.py``
decorates factories with :func:`benchmark`; :func:`all_benchmarks` imports those modules.
This module imports nothing heavy (no torch), and nothing from ``claims``.
"""

from __future__ import annotations

import importlib
import math
import pkgutil
import re
import statistics
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from transformer_math.diagnostics.fits import fit_power_law
from transformer_math.registry import Registry

Timer = Callable[[], float]
Workload = Callable[[], object]

#: The clock used when no ``timer`` is passed (looked up at call time).
DEFAULT_TIMER: Timer = time.perf_counter


def _clock(timer: Timer | None) -> Timer:
    return DEFAULT_TIMER if timer is None else timer


@dataclass(frozen=True)
class Benchmark:
    """Candidate against baseline, both zero-argument callables over prepared inputs.

    ``number`` calls make one timed sample (raise it for calls of microseconds).
    """

    name: str
    description: str
    baseline: Workload
    candidate: Workload
    target_ratio: float | None = None
    repeats: int = 15
    warmup: int = 3
    number: int = 1

    def __post_init__(self) -> None:
        if self.target_ratio is not None and not self.target_ratio > 0:
            raise ValueError(f"target_ratio must be positive or None, got {self.target_ratio}")
        _check_counts(repeats=self.repeats, warmup=self.warmup, number=self.number)


@dataclass(frozen=True)
class ExponentBenchmark:
    """How time grows with n: ``make_workload(n)`` prepares inputs and returns the timed call."""

    name: str
    description: str
    make_workload: Callable[[int], Workload]
    sizes: Sequence[int]
    predicted: float | None = None
    repeats: int = 5
    warmup: int = 1
    statistic: str = "min"  # per-size summary of the repeats: "min" or "median"

    def __post_init__(self) -> None:
        _check_sizes(self.sizes)
        _check_counts(repeats=self.repeats, warmup=self.warmup, number=1)
        _check_statistic(self.statistic)


def _check_counts(*, repeats: int, warmup: int, number: int) -> None:
    if repeats < 1:
        raise ValueError(f"repeats must be >= 1, got {repeats}")
    if warmup < 0:
        raise ValueError(f"warmup must be >= 0, got {warmup}")
    if number < 1:
        raise ValueError(f"number must be >= 1, got {number}")


STATISTICS: dict[str, Callable[[Sequence[float]], float]] = {
    "min": min,
    "median": statistics.median,
}


def _check_statistic(statistic: str) -> None:
    if statistic not in STATISTICS:
        raise ValueError(f"statistic must be one of {sorted(STATISTICS)}, got {statistic!r}")


def _check_sizes(sizes: Sequence[float]) -> None:
    if len(sizes) < 2 or len(set(sizes)) < 2:
        raise ValueError(f"sizes must hold at least two distinct values, got {list(sizes)}")
    if any(n <= 0 for n in sizes):
        raise ValueError(f"sizes must be positive, got {list(sizes)}")


@dataclass
class BenchmarkResult:
    """What one benchmark measured; ``to_json`` is what ``tmath bench --json`` writes."""

    name: str
    description: str
    kind: str  # "ratio" | "exponent"
    # ratio benchmarks
    baseline_times: list[float] = field(default_factory=list)
    candidate_times: list[float] = field(default_factory=list)
    baseline_median_s: float = math.nan
    candidate_median_s: float = math.nan
    ratio: float = math.nan
    target_ratio: float | None = None
    # exponent benchmarks
    sizes: list[int] = field(default_factory=list)
    times: list[float] = field(default_factory=list)
    slope: float = math.nan
    intercept: float = math.nan
    r_squared: float = math.nan
    predicted: float | None = None
    statistic: str = "min"

    @property
    def met(self) -> bool | None:
        """Whether the ratio meets its target; None without a target (or for exponents)."""
        if self.kind != "ratio" or self.target_ratio is None:
            return None
        return self.ratio <= self.target_ratio

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "name": self.name,
            "description": self.description,
            "kind": self.kind,
        }
        if self.kind == "ratio":
            out.update(
                baseline_median_s=self.baseline_median_s,
                candidate_median_s=self.candidate_median_s,
                ratio=self.ratio,
                target_ratio=self.target_ratio,
                met=self.met,
                repeats=len(self.baseline_times),
                baseline_times=list(self.baseline_times),
                candidate_times=list(self.candidate_times),
            )
        else:
            out.update(
                sizes=list(self.sizes),
                times=list(self.times),
                slope=self.slope,
                intercept=self.intercept,
                r_squared=self.r_squared,
                predicted=self.predicted,
                statistic=self.statistic,
            )
        return out


def _time_once(fn: Workload, number: int, timer: Timer) -> float:
    start = timer()
    for _ in range(number):
        fn()
    return (timer() - start) / number


def measure_ratio(
    bench: Benchmark, *, repeats: int | None = None, timer: Timer | None = None
) -> BenchmarkResult:
    """Time ``bench`` (warm-up excluded, interleaved, alternating order); see module docstring."""
    clock = _clock(timer)
    repeats = bench.repeats if repeats is None else repeats
    _check_counts(repeats=repeats, warmup=bench.warmup, number=bench.number)
    for _ in range(bench.warmup):
        bench.baseline()
        bench.candidate()
    base: list[float] = []
    cand: list[float] = []
    for i in range(repeats):
        if i % 2 == 0:
            base.append(_time_once(bench.baseline, bench.number, clock))
            cand.append(_time_once(bench.candidate, bench.number, clock))
        else:
            cand.append(_time_once(bench.candidate, bench.number, clock))
            base.append(_time_once(bench.baseline, bench.number, clock))
    return BenchmarkResult(
        name=bench.name,
        description=bench.description,
        kind="ratio",
        baseline_times=base,
        candidate_times=cand,
        baseline_median_s=statistics.median(base),
        candidate_median_s=statistics.median(cand),
        ratio=paired_ratio(base, cand),
        target_ratio=bench.target_ratio,
    )


def paired_ratio(baseline_times: Sequence[float], candidate_times: Sequence[float]) -> float:
    """``median_i(candidate_i / baseline_i)`` over pairs measured back to back."""
    if len(baseline_times) != len(candidate_times) or not baseline_times:
        raise ValueError(
            "baseline_times and candidate_times must be non-empty and of equal length, got "
            f"{len(baseline_times)} and {len(candidate_times)}"
        )
    ratios = [
        c / b if b > 0 else math.inf for b, c in zip(baseline_times, candidate_times, strict=True)
    ]
    return statistics.median(ratios)


class ExponentFit(NamedTuple):
    """Result of :func:`fit_time_exponent`: ``slope, times = fit_time_exponent(...)[:2]``."""

    slope: float
    times: list[float]  # seconds per call at each size (min or median over the repeats)
    sizes: list[int]
    intercept: float
    r_squared: float


def fit_time_exponent(
    fn_of_n: Callable[[int], Workload],
    sizes: Sequence[int],
    repeats: int = 5,
    *,
    warmup: int = 1,
    statistic: str = "min",
    timer: Timer | None = None,
) -> ExponentFit:
    """Measure the exponent a of ``time(n) ~ c n^a``.

    ``fn_of_n(n)`` prepares the inputs of size n (not timed) and returns a zero-argument callable,
    the timed workload. All workloads are prepared first; each is called ``warmup`` times
    untimed; then each of ``repeats`` rounds times every size once (sizes interleaved, so drift
    spreads over all of them). ``times`` summarise each size's repeats by ``statistic``: ``"min"``
    (default; as ``timeit`` advises, slower repeats come from interference such as other
    processes preempting a BLAS thread, not from the workload) or ``"median"``. ``slope`` is the
    least-squares exponent of :func:`fit_power_law`. Example (``attention.time-exponent``)::

        def make(n):
            q = k = v = torch.randn(1, 2, n, 64, generator=g)
            return lambda: scaled_dot_product_attention(q, k, v, backend="reference")
        fit = fit_time_exponent(make, [256, 512, 1024, 2048, 4096], repeats=5)
        fit.slope  # about 2
    """
    _check_sizes(sizes)
    _check_counts(repeats=repeats, warmup=warmup, number=1)
    _check_statistic(statistic)
    clock = _clock(timer)
    workloads = [fn_of_n(int(n)) for n in sizes]
    for fn in workloads:
        for _ in range(warmup):
            fn()
    samples: list[list[float]] = [[] for _ in sizes]
    for _ in range(repeats):
        for j, fn in enumerate(workloads):
            samples[j].append(_time_once(fn, 1, clock))
    summarise = STATISTICS[statistic]
    times = [summarise(s) for s in samples]
    fit = fit_power_law([float(n) for n in sizes], times)
    return ExponentFit(fit.exponent, times, [int(n) for n in sizes], math.log(fit.prefactor),
                       fit.r2)


def measure_exponent(
    bench: ExponentBenchmark, *, repeats: int | None = None, timer: Timer | None = None
) -> BenchmarkResult:
    """Run an :class:`ExponentBenchmark` through :func:`fit_time_exponent`."""
    fit = fit_time_exponent(
        bench.make_workload,
        bench.sizes,
        bench.repeats if repeats is None else repeats,
        warmup=bench.warmup,
        statistic=bench.statistic,
        timer=timer,
    )
    return BenchmarkResult(
        name=bench.name,
        description=bench.description,
        kind="exponent",
        sizes=fit.sizes,
        times=fit.times,
        slope=fit.slope,
        intercept=fit.intercept,
        r_squared=fit.r_squared,
        predicted=bench.predicted,
        statistic=bench.statistic,
    )


AnyBenchmark = Benchmark | ExponentBenchmark


def run_benchmark(
    bench: AnyBenchmark, *, repeats: int | None = None, timer: Timer | None = None
) -> BenchmarkResult:
    """Measure a ratio or an exponent benchmark."""
    if isinstance(bench, Benchmark):
        return measure_ratio(bench, repeats=repeats, timer=timer)
    if isinstance(bench, ExponentBenchmark):
        return measure_exponent(bench, repeats=repeats, timer=timer)
    raise TypeError(f"expected a Benchmark or ExponentBenchmark, got {type(bench).__name__}")


# --- registry -------------------------------------------------------------------------------


@dataclass(frozen=True)
class RegisteredBenchmark:
    """A name and the factory that prepares the benchmark (inputs are built only when run)."""

    name: str
    factory: Callable[[], AnyBenchmark]

    def build(self) -> AnyBenchmark:
        bench = self.factory()
        if not isinstance(bench, Benchmark | ExponentBenchmark):
            raise TypeError(
                f"benchmark factory {self.name!r} must return a Benchmark or ExponentBenchmark, "
                f"got {type(bench).__name__}"
            )
        if bench.name != self.name:
            raise ValueError(
                f"benchmark factory {self.name!r} built a benchmark named {bench.name!r}"
            )
        return bench


BENCHMARKS: Registry[RegisteredBenchmark] = Registry("benchmark")
"""Benchmarks by ``topic.slug`` name; filled by importing the modules of ``bench/``."""
_NAME = re.compile(r"[a-z0-9]+(\.[a-z0-9-]+)+")


def benchmark(name: str) -> Callable[[Callable[[], AnyBenchmark]], Callable[[], AnyBenchmark]]:
    """Register the decorated zero-argument factory as the benchmark ``name`` (``topic.slug``)."""
    if not _NAME.fullmatch(name):
        raise ValueError(f"benchmark name must look like 'topic.slug[.variant]', got {name!r}")

    def register(factory: Callable[[], AnyBenchmark]) -> Callable[[], AnyBenchmark]:
        if name in BENCHMARKS and BENCHMARKS[name].factory is factory:
            return factory
        if name in BENCHMARKS:
            raise ValueError(f"benchmark {name!r} registered twice")
        BENCHMARKS.add(name, RegisteredBenchmark(name, factory), topic=name.split(".")[0])
        return factory

    return register


def _import_benchmark_modules() -> None:
    from transformer_math import bench as package

    for info in pkgutil.iter_modules(package.__path__):
        if info.name != "harness" and not info.name.startswith("_"):
            importlib.import_module(f"{package.__name__}.{info.name}")


def all_benchmarks() -> list[RegisteredBenchmark]:
    """Every registered benchmark, sorted by name (benchmark modules are imported first)."""
    _import_benchmark_modules()
    return sorted(BENCHMARKS.values(), key=lambda b: b.name)


def select_benchmarks(
    entries: Iterable[RegisteredBenchmark], pattern: str | None = None
) -> list[RegisteredBenchmark]:
    """Entries whose name matches the regular expression ``pattern`` (``re.search``)."""
    out = list(entries)
    if pattern:
        rx = re.compile(pattern)
        out = [b for b in out if rx.search(b.name)]
    return out


def bench_environment() -> dict[str, Any]:
    """Versions and thread count of the run (torch imported here, not at module import)."""
    import datetime as dt
    import platform

    import torch

    from transformer_math import __version__

    return {
        "version": __version__,
        "torch": torch.__version__,
        "torch_threads": torch.get_num_threads(),
        "python": platform.python_version(),
        "platform": platform.platform(terse=True),
        "timestamp": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
    }
