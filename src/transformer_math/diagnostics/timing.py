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

The clocks and the repeat loops live in :mod:`transformer_math.clocks` (the lowest layer, so
``theory`` can use them too) and are re-exported here; this module adds the thread pinning.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import torch

from transformer_math.clocks import (
    CLOCKS,
    median_seconds,
    time_over_sizes,
    times_over_sizes,
)

__all__ = ["CLOCKS", "median_seconds", "time_over_sizes", "times_over_sizes", "torch_threads"]


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


