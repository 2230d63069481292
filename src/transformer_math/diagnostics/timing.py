"""Timing of a callable: repeats after warm-up, on the wall clock or the calling thread's CPU clock.

Warm-up calls (first-call allocation, lazy initialisation, cache filling) are excluded. When
several sizes are timed, :func:`time_over_sizes` interleaves them (one call of every size per
round), so that a burst of load from another process spreads over all sizes instead of inflating
one of them and bending a fitted exponent. :func:`torch_threads` pins the intra-op thread count
for the measurement: on a small shared machine one thread gives far steadier timings than threads
that wait for a busy core. :func:`median_seconds` reduces repeats by the median;
:func:`time_over_sizes` by the median or the minimum (other processes can only add time).

Two clocks: ``"wall"`` (``time.perf_counter``) and ``"thread"`` (``time.thread_time``, the CPU
time of the calling thread). With one intra-op thread PyTorch runs every kernel in the calling
thread, so the thread clock measures the work itself and ignores the time the scheduler gives to
other processes; it still sees what the neighbours do to shared caches and memory bandwidth.
:func:`times_over_sizes` reads both clocks around the same calls.

Timings are not deterministic: a verdict should rest on counted work
(:mod:`transformer_math.diagnostics.op_counts`); times are information beside it, or benchmarks
(``tmath bench``), which compare exponents or ratios measured side by side, never absolute times.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import torch


@contextmanager
def torch_threads(num_threads: int) -> Iterator[None]:
    """Run the block with ``torch.set_num_threads(num_threads)``; restore the old count after."""
    if num_threads < 1:
        raise ValueError(f"num_threads must be >= 1, got {num_threads}")
    previous = torch.get_num_threads()
    torch.set_num_threads(num_threads)
    try:
        yield
    finally:
        torch.set_num_threads(previous)


CLOCKS: dict[str, Callable[[], float]] = {"wall": time.perf_counter, "thread": time.thread_time}


def _clock(name: str) -> Callable[[], float]:
    if name not in CLOCKS:
        raise ValueError(f"clock must be one of {sorted(CLOCKS)}, got {name!r}")
    return CLOCKS[name]


def median_seconds(
    fn: Callable[[], Any], *, repeats: int = 5, warmup: int = 1, clock: str = "wall"
) -> float:
    """Median seconds of ``fn()`` over ``repeats`` calls after ``warmup`` calls."""
    if repeats < 1:
        raise ValueError(f"repeats must be >= 1, got {repeats}")
    if warmup < 0:
        raise ValueError(f"warmup must be >= 0, got {warmup}")
    now = _clock(clock)
    for _ in range(warmup):
        fn()
    samples = []
    for _ in range(repeats):
        start = now()
        fn()
        samples.append(now() - start)
    return statistics.median(samples)


_REDUCERS: dict[str, Callable[[list[float]], float]] = {"median": statistics.median, "min": min}


def times_over_sizes(
    make_call: Callable[[int], Callable[[], Any]],
    sizes: Sequence[int],
    *,
    repeats: int = 5,
    warmup: int = 1,
    clocks: Sequence[str] = ("thread", "wall"),
    statistic: str = "min",
) -> dict[str, list[float]]:
    """Seconds of ``make_call(n)()`` for each ``n`` in ``sizes`` on every clock of ``clocks``,
    read around the same calls (interleaved as in :func:`time_over_sizes`)."""
    if statistic not in _REDUCERS:
        raise ValueError(f"statistic must be one of {sorted(_REDUCERS)}, got {statistic!r}")
    if repeats < 1:
        raise ValueError(f"repeats must be >= 1, got {repeats}")
    if warmup < 0:
        raise ValueError(f"warmup must be >= 0, got {warmup}")
    if not clocks:
        raise ValueError("clocks must name at least one clock")
    now = [_clock(c) for c in clocks]
    calls = [make_call(n) for n in sizes]
    for call in calls:
        for _ in range(warmup):
            call()
    samples: dict[str, list[list[float]]] = {c: [[] for _ in calls] for c in clocks}
    for _ in range(repeats):
        for i, call in enumerate(calls):
            starts = [read() for read in now]
            call()
            ends = [read() for read in now]
            for c, t0, t1 in zip(clocks, starts, ends, strict=True):
                samples[c][i].append(t1 - t0)
    return {c: [_REDUCERS[statistic](s) for s in samples[c]] for c in clocks}


def time_over_sizes(
    make_call: Callable[[int], Callable[[], Any]],
    sizes: Sequence[int],
    *,
    repeats: int = 5,
    warmup: int = 1,
    clock: str = "wall",
    statistic: str = "median",
) -> list[float]:
    """Seconds of ``make_call(n)()`` for each ``n`` in ``sizes``, interleaved.

    ``make_call(n)`` builds the inputs (outside the timed region) and returns the call to time.
    Each size is warmed up ``warmup`` times; then ``repeats`` rounds time every size once.
    ``statistic`` reduces the repeats: ``median``, or ``min`` (the least disturbed run: other
    processes can only add time, so the minimum estimates the intrinsic cost).
    """
    return times_over_sizes(
        make_call, sizes, repeats=repeats, warmup=warmup, clocks=(clock,), statistic=statistic
    )[clock]
