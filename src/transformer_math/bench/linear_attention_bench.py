"""Linear (elu+1) attention against softmax attention: time exponents, crossover, peak memory.

Issue #4, item 8. Softmax attention forms the n x n score matrix: time O(n^2 d), memory O(n^2)
(000 §8.3.1). Linear attention with the elu+1 feature map (``functional.linear_attention``,
000 §8.3.2; Katharopoulos et al. 2020) never forms it: time O(n d^2), memory O(n d) when
non-causal, and the causal (chunked, chunk 64) form adds O(n c d) for the intra-chunk kernels.

Registered benchmarks (topic ``linear``: the harness's names need a topic of ``[a-z0-9]+``, so
``linear-attention.*`` is not a valid name; ``tmath bench -k linear`` selects them all):

- ``linear.time-exponent.softmax``: softmax attention (``backend="reference"``, non-causal);
  the same workload as ``attention.time-exponent``, registered here so that the three exponents
  come out of one run. Predicted exponent 2.
- ``linear.time-exponent.elu`` / ``linear.time-exponent.elu-causal``: :func:`linear_attention`
  with ``feature_map="elu"``, non-causal / causal. Predicted exponent 1.

  All three: (B, H, d) = (1, 2, 64) float32, n in 256 .. 4096 (geometric).
- ``linear.vs-softmax.{noncausal,causal}.n{32..1024}``: paired ratio
  t(linear) / t(softmax reference) at each n (baseline softmax, candidate linear, same mask),
  (B, H, d) = (1, 2, 64). Linear is faster where the ratio is below 1. ``number`` grows as n
  shrinks (512 // n calls per sample) so that a sample is not a handful of microseconds.

What the harness cannot express, and where it goes instead (``harness.py`` is unchanged):

- *Crossover n* (the n beyond which linear stays faster): not a single benchmark's result. The
  ratio table shows the sign change of ``ratio - 1``; :func:`crossover_n` interpolates it
  (log-log, between the two sizes that bracket the last crossing of 1) and
  :func:`crossover_from_results` applies it to ``tmath bench --json`` rows.
  ``python -m transformer_math.bench.linear_attention_bench [--from-json FILE]`` prints it.
- *Peak memory*: not a time. The factories of the three time-exponent benchmarks measure it
  while preparing (untimed) and write it into the benchmark's ``description`` (hence into
  ``tmath bench --json``): peak extra resident bytes of one call at each n, the linear /
  softmax ratio, and the memory exponents. Measurement: ``diagnostics.memory.peak_memory_of``
  (in-process: ``malloc_trim``, reset of the resident-set high-water mark through
  /proc/self/clear_refs, ``VmHWM - VmRSS`` around the call; page granularity; the output tensor
  is included). Each (method, n, causal) point is measured once per process (cached), after a
  small warm-up call. Where clear_refs is unavailable the description says so.

Shapes are deliberately small (B*H = 2) so that the default run is sized for about a minute on an
idle two-core machine; at such sizes fixed per-call overhead (Python, validation, the chunk loop)
weighs on the linear path at small n, which lowers its fitted exponent below 1 and moves the
crossover. The crossover is a property of this machine, shape and implementation, not a constant.
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, NamedTuple

import torch
from torch import Tensor

from transformer_math.bench.attention import EXPONENT_HEADS, _qkv
from transformer_math.bench.harness import (
    Benchmark,
    BenchmarkResult,
    ExponentBenchmark,
    Workload,
    benchmark,
    fit_power_law,
    run_benchmark,
)
from transformer_math.diagnostics.memory import peak_memory_of
from transformer_math.functional.attention import scaled_dot_product_attention
from transformer_math.functional.linear_attention import linear_attention

BATCH, HEADS, HEAD_DIM = 1, EXPONENT_HEADS, 64  # the shape of attention.time-exponent
EXPONENT_SIZES = (256, 512, 1024, 2048, 4096)
CROSSOVER_SIZES = (32, 64, 128, 256, 512, 1024)
MODES = {"noncausal": False, "causal": True}
METHODS = ("softmax", "linear")
MIB = 2**20


# --- workloads --------------------------------------------------------------------------------


def attention_call(
    method: str, q: Tensor, k: Tensor, v: Tensor, *, causal: bool
) -> Callable[[], Tensor]:
    """The timed call: softmax (``backend="reference"``) or elu+1 linear attention."""
    if method == "softmax":
        return lambda: scaled_dot_product_attention(
            q, k, v, is_causal=causal, backend="reference"
        ).output
    if method == "linear":
        return lambda: linear_attention(q, k, v, feature_map="elu", causal=causal)
    raise ValueError(f"method must be one of {METHODS}, got {method!r}")


def _shape(batch: int | None, heads: int | None, head_dim: int | None) -> tuple[int, int, int]:
    """(batch, heads, head_dim), the module constants (read at call time) where None."""
    return (
        BATCH if batch is None else batch,
        HEADS if heads is None else heads,
        HEAD_DIM if head_dim is None else head_dim,
    )


def attention_workload(
    method: str,
    seq_len: int,
    *,
    causal: bool,
    batch: int | None = None,
    heads: int | None = None,
    head_dim: int | None = None,
) -> Workload:
    """Inputs (batch, heads, seq_len, head_dim), seeded by ``seq_len``, and the call on them."""
    b, h, d = _shape(batch, heads, head_dim)
    q, k, v = _qkv(b, h, seq_len, d, seed=seq_len)
    return attention_call(method, q, k, v, causal=causal)


# --- peak memory ------------------------------------------------------------------------------


@dataclass(frozen=True)
class MemoryPoint:
    """Peak extra resident bytes of one call of each method at one n (one mode)."""

    seq_len: int
    causal: bool
    softmax_bytes: int
    linear_bytes: int
    matrix_bytes: int  # one float32 (B, H, n, n) matrix, for scale
    method: str

    @property
    def ratio(self) -> float:
        """linear / softmax peak bytes (inf when the softmax figure is 0, i.e. below a page)."""
        return self.linear_bytes / self.softmax_bytes if self.softmax_bytes > 0 else math.inf

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "ratio": self.ratio}


@functools.cache
def _peak_bytes(
    method: str, seq_len: int, causal: bool, batch: int, heads: int, head_dim: int
) -> tuple[int, str]:
    warm = attention_workload(
        method, min(seq_len, 16), causal=causal, batch=batch, heads=heads, head_dim=head_dim
    )
    call = attention_workload(
        method, seq_len, causal=causal, batch=batch, heads=heads, head_dim=head_dim
    )
    with torch.no_grad():
        warm()  # lazy initialisation is not counted
        _, peak, how = peak_memory_of(call)
    return peak, how


def measure_memory(
    seq_len: int,
    *,
    causal: bool,
    batch: int | None = None,
    heads: int | None = None,
    head_dim: int | None = None,
) -> MemoryPoint:
    """Peak extra memory of softmax and linear attention at one n (cached per process).

    Raises RuntimeError where the resident-set peak cannot be reset (see
    ``diagnostics.memory.peak_memory_of``).
    """
    b, h, d = _shape(batch, heads, head_dim)
    soft, how = _peak_bytes("softmax", seq_len, causal, b, h, d)
    lin, _ = _peak_bytes("linear", seq_len, causal, b, h, d)
    return MemoryPoint(seq_len, causal, soft, lin, b * h * seq_len * seq_len * 4, how)


def memory_exponent(sizes: Sequence[int], peak_bytes: Sequence[int]) -> float:
    """Slope of log(bytes) on log(n) (``diagnostics.fits.fit_power_law``); NaN if a figure is 0."""
    if any(b <= 0 for b in peak_bytes):
        return math.nan
    return fit_power_law([float(n) for n in sizes], [float(b) for b in peak_bytes]).exponent


def _mib(values: Iterable[float]) -> str:
    return "[" + ", ".join(f"{v / MIB:.3g}" for v in values) + "]"


def memory_summary(method: str, sizes: Sequence[int], *, causal: bool) -> str:
    """One sentence on peak memory across ``sizes`` for a benchmark description."""
    try:
        points = [measure_memory(n, causal=causal) for n in sizes]
    except RuntimeError as exc:
        return f"peak memory not measured ({exc})"
    soft = [p.softmax_bytes for p in points]
    text = (
        f"peak extra memory of one call at n = {list(sizes)} ({points[0].method}, MiB): "
        f"softmax {_mib(soft)} (memory exponent {memory_exponent(sizes, soft):.2f})"
    )
    if method == "linear":
        lin = [p.linear_bytes for p in points]
        ratios = ", ".join(f"{p.ratio:.3g}" for p in points)
        text += (
            f", linear {_mib(lin)} (memory exponent {memory_exponent(sizes, lin):.2f}), "
            f"linear/softmax [{ratios}]"
        )
    return text


# --- time exponents ---------------------------------------------------------------------------


def time_exponent_benchmark(
    name: str,
    method: str,
    *,
    causal: bool,
    sizes: Sequence[int] = EXPONENT_SIZES,
    memory_sizes: Sequence[int] | None = None,
) -> ExponentBenchmark:
    """Exponent of time in n of ``method``; ``memory_sizes`` (default: ``sizes``) go in the
    description as peak memory, an empty tuple skips the measurement."""
    memory_sizes = sizes if memory_sizes is None else memory_sizes
    label = "softmax (reference)" if method == "softmax" else "elu+1 linear"
    predicted = 2.0 if method == "softmax" else 1.0
    b, h, d = _shape(None, None, None)
    description = (
        f"{label} attention, {'causal' if causal else 'non-causal'}, (B, H, d) = "
        f"({b}, {h}, {d}) float32, n in {list(sizes)}; predicted exponent {predicted:g}"
    )
    if memory_sizes:
        description += "; " + memory_summary(method, memory_sizes, causal=causal)
    return ExponentBenchmark(
        name=name,
        description=description,
        make_workload=functools.partial(
            attention_workload, method, causal=causal, batch=b, heads=h, head_dim=d
        ),
        sizes=tuple(sizes),
        predicted=predicted,
    )


@benchmark("linear.time-exponent.softmax")
def time_exponent_softmax() -> ExponentBenchmark:
    return time_exponent_benchmark(
        "linear.time-exponent.softmax", "softmax", causal=False, sizes=EXPONENT_SIZES
    )


@benchmark("linear.time-exponent.elu")
def time_exponent_elu() -> ExponentBenchmark:
    return time_exponent_benchmark(
        "linear.time-exponent.elu", "linear", causal=False, sizes=EXPONENT_SIZES
    )


@benchmark("linear.time-exponent.elu-causal")
def time_exponent_elu_causal() -> ExponentBenchmark:
    return time_exponent_benchmark(
        "linear.time-exponent.elu-causal", "linear", causal=True, sizes=EXPONENT_SIZES
    )


# --- linear vs softmax at fixed n: ratios and the crossover -----------------------------------


def vs_softmax_name(mode: str, seq_len: int) -> str:
    return f"linear.vs-softmax.{mode}.n{seq_len}"


_VS_NAME = re.compile(r"linear\.vs-softmax\.(?P<mode>[a-z-]+)\.n(?P<n>\d+)")


def vs_softmax_benchmark(mode: str, seq_len: int) -> Benchmark:
    """Baseline softmax (reference), candidate elu+1 linear attention, same inputs and mask."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {sorted(MODES)}, got {mode!r}")
    causal = MODES[mode]
    q, k, v = _qkv(BATCH, HEADS, seq_len, HEAD_DIM, seed=seq_len)
    number = max(1, 512 // seq_len)
    return Benchmark(
        name=vs_softmax_name(mode, seq_len),
        description=f"elu+1 linear vs softmax (reference) attention, {mode}, (B, H, n, d) = "
        f"({BATCH}, {HEADS}, {seq_len}, {HEAD_DIM}) float32, {number} call(s) per sample; "
        f"ratio < 1: linear faster (crossover: crossover_from_results over the sizes "
        f"{list(CROSSOVER_SIZES)})",
        baseline=attention_call("softmax", q, k, v, causal=causal),
        candidate=attention_call("linear", q, k, v, causal=causal),
        number=number,
        repeats=11,
        warmup=2,
    )


def _register_vs_softmax(mode: str, seq_len: int) -> None:
    name = vs_softmax_name(mode, seq_len)

    def factory() -> Benchmark:
        return vs_softmax_benchmark(mode, seq_len)

    factory.__name__ = factory.__qualname__ = name.replace(".", "_").replace("-", "_")
    benchmark(name)(factory)


for _mode in MODES:
    for _n in CROSSOVER_SIZES:
        _register_vs_softmax(_mode, _n)


class Crossover(NamedTuple):
    """Where linear becomes faster. ``status``:

    - ``"interpolated"``: ``n`` is the log-log interpolation between the two sizes that bracket
      the last crossing of ratio 1 (every larger measured size has ratio < 1);
    - ``"below-range"``: ratio < 1 at every size; the crossover is at most ``n`` (the smallest);
    - ``"above-range"``: ratio >= 1 at the largest size; the crossover, if any, exceeds ``n``.
    """

    n: float
    status: str


def crossover_n(sizes: Sequence[float], ratios: Sequence[float]) -> Crossover:
    """The n beyond which ``ratio = t_linear / t_softmax`` stays below 1 (see :class:`Crossover`).

    Between the bracketing sizes (n0, r0 >= 1) and (n1, r1 < 1) the ratio is taken as a power of
    n (straight line in log-log, exact for ``r = c n^-a``): n* = n0 (n1/n0)^(log r0 / (log r0 -
    log r1)). Sizes need not be sorted; they must be distinct and positive, ratios positive and
    finite.
    """
    if len(sizes) != len(ratios) or not sizes:
        raise ValueError(
            f"sizes and ratios must be non-empty and of equal length, got {len(sizes)} and "
            f"{len(ratios)}"
        )
    if any(not n > 0 for n in sizes) or len(set(sizes)) != len(sizes):
        raise ValueError(f"sizes must be distinct and positive, got {list(sizes)}")
    if any(not (r > 0 and math.isfinite(r)) for r in ratios):
        raise ValueError(f"ratios must be positive and finite, got {list(ratios)}")
    pairs = sorted(zip(sizes, ratios, strict=True))
    if pairs[-1][1] >= 1:
        return Crossover(float(pairs[-1][0]), "above-range")
    i = len(pairs) - 1
    while i > 0 and pairs[i - 1][1] < 1:
        i -= 1
    if i == 0:
        return Crossover(float(pairs[0][0]), "below-range")
    (n0, r0), (n1, r1) = pairs[i - 1], pairs[i]
    t = math.log(r0) / (math.log(r0) - math.log(r1))  # in [0, 1): r0 >= 1 > r1
    return Crossover(math.exp(math.log(n0) + t * (math.log(n1) - math.log(n0))), "interpolated")


def crossover_from_results(
    results: Iterable[Mapping[str, Any] | BenchmarkResult],
) -> dict[str, Crossover]:
    """Crossover per mode from ``linear.vs-softmax.<mode>.n<N>`` results (other names ignored).

    ``results`` are :class:`BenchmarkResult` objects or their ``to_json`` rows (the
    ``"benchmarks"`` list of ``tmath bench --json``).
    """
    by_mode: dict[str, tuple[list[int], list[float]]] = {}
    for r in results:
        row = r.to_json() if isinstance(r, BenchmarkResult) else r
        match = _VS_NAME.fullmatch(str(row.get("name", "")))
        if match is None:
            continue
        sizes, ratios = by_mode.setdefault(match["mode"], ([], []))
        sizes.append(int(match["n"]))
        ratios.append(float(row["ratio"]))
    return {mode: crossover_n(s, r) for mode, (s, r) in sorted(by_mode.items())}


def main(argv: list[str] | None = None) -> None:
    """Print the crossover per mode (measured now, or read from a ``tmath bench --json`` file)
    and, when measuring, the memory points, as JSON lines."""
    parser = argparse.ArgumentParser(
        description="Linear vs softmax attention: crossover n and peak memory."
    )
    parser.add_argument("--from-json", type=Path, help="a `tmath bench --json` file to read")
    parser.add_argument("--repeats", type=int, default=None, help="timed repeats per size")
    args = parser.parse_args(argv)
    if args.from_json is not None:
        rows = json.loads(args.from_json.read_text())["benchmarks"]
    else:
        rows = [
            run_benchmark(vs_softmax_benchmark(mode, n), repeats=args.repeats).to_json()
            for mode in MODES
            for n in CROSSOVER_SIZES
        ]
        for row in rows:
            print(json.dumps({"name": row["name"], "ratio": row["ratio"]}), flush=True)
    for mode, cross in crossover_from_results(rows).items():
        print(json.dumps({"mode": mode, "crossover_n": cross.n, "status": cross.status}))
    if args.from_json is None:
        for causal in MODES.values():
            for n in EXPONENT_SIZES:
                print(json.dumps(measure_memory(n, causal=causal).to_json()), flush=True)


if __name__ == "__main__":
    main()
