"""One memo for experiment results: several claims read the same trained run.

An experiment is ``run(config, progress) -> Result`` with a frozen (hashable) dataclass config
and no hidden state, so ``(run, config)`` determines the result and a second claim that needs
the same run can reuse it. The memo keeps the ``MAX_ENTRIES`` most recently used results (a
run at the default size can hold several trained models).

Planted bugs (:mod:`transformer_math.bugs`) are handled exactly. A result is stored with the set
``R`` of bug sites its computation queried (``bugs.recording``) and the bugs ``A & R`` planted
among them. A later call with planted bugs ``A'`` reuses it when ``A' & R == A & R``: every site
on the computation's path then answers as it did, so the path, the sites it queries and (the run
being deterministic given its config) the result are the same. A bug whose site the run passes
(a training's attention mask) recomputes; a bug it never passes (one in an evaluation that runs
afterwards) does not retrain anything. On a hit the stored sites are replayed into the caller's
record, so ``tmath mutants`` knows which bugs a claim reaches even through a cached run.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

from transformer_math import bugs

R = TypeVar("R")

MAX_ENTRIES = 16
_RESULTS: OrderedDict[tuple[str, Hashable, frozenset[str]], tuple[Any, frozenset[str]]] = (
    OrderedDict())
_REACHED: dict[tuple[str, Hashable], set[frozenset[str]]] = {}


def memoized(run: Callable[..., R], config: Hashable, *args: Any, **kwargs: Any) -> R:
    """``run(config, *args, **kwargs)``, or the stored result of an earlier identical call.

    Only ``config`` (and the planted bugs among the sites the run queried) is part of the key:
    the other arguments must not change the result (a progress callback, for instance).
    """
    name = f"{run.__module__}.{run.__qualname__}"
    active = bugs.active()
    for reached in _REACHED.get((name, config), ()):
        key = (name, config, active & reached)
        if key in _RESULTS and _RESULTS[key][1] == reached:
            _RESULTS.move_to_end(key)
            bugs.note_reached(reached)
            return _RESULTS[key][0]  # type: ignore[no-any-return]
    with bugs.recording() as record:
        result = run(config, *args, **kwargs)
    reached = frozenset(record)
    _RESULTS[(name, config, active & reached)] = (result, reached)
    _REACHED.setdefault((name, config), set()).add(reached)
    while len(_RESULTS) > MAX_ENTRIES:  # (a stale reached set in _REACHED is only a miss)
        _RESULTS.popitem(last=False)
    return result


def clear() -> None:
    """Forget every stored result (tests of determinism start from an empty memo)."""
    _RESULTS.clear()
    _REACHED.clear()
