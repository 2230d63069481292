"""Clocks and repeated timing of a callable, for every layer (stdlib only, no torch).

A timed call is warmed up first (first-call allocation, lazy initialisation, cache filling are
excluded), then repeated; the repeats are reduced by the median, or by the minimum where other
processes can only add time. :func:`time_over_sizes` interleaves several sizes (one call of every
size per round), so a burst of load from another process spreads over all sizes instead of
inflating one of them and bending a fitted exponent.

Two clocks: ``"wall"`` (``time.perf_counter``) and ``"thread"`` (``time.thread_time``, the CPU
time of the calling thread; with one intra-op thread PyTorch runs every kernel in the calling
thread, so it measures the work and ignores the time the scheduler gives to other processes).

This module sits at the bottom of the one-way layers (ARCHITECTURE.md) beside ``registry`` and
``bugs``: ``theory.latency`` (layer 3) measures this machine's matmul with it and
``diagnostics.timing`` (layer 4) re-exports it, so no arrow runs from ``theory`` up to
``diagnostics`` (issue 37, item 3).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

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
