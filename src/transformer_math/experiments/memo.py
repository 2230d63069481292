"""One memo for experiment results: several claims read the same trained run.

An experiment is ``run(config, progress) -> Result`` with a frozen (hashable) dataclass config
and no hidden state, so ``(run, config)`` determines the result and a second claim that needs
the same run can reuse it. The memo keeps the ``MAX_ENTRIES`` most recently used results (a
run at the default size can hold several trained models).

The planted bugs (:mod:`transformer_math.bugs`) are part of the key: a run under a bug is never
served to a clean caller, nor the reverse. Each entry keeps the bug sites its computation
queried and replays them into the caller's record on a hit, so ``tmath mutants`` knows which
bugs a claim reaches even when the run it reads was computed for another claim.
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


def memoized(run: Callable[..., R], config: Hashable, *args: Any, **kwargs: Any) -> R:
    """``run(config, *args, **kwargs)``, or the stored result of an earlier identical call.

    Only ``config`` is part of the key: the other arguments must not change the result
    (a progress callback, for instance).
    """
    key = (f"{run.__module__}.{run.__qualname__}", config, bugs.active())
    if key in _RESULTS:
        _RESULTS.move_to_end(key)
        result, reached = _RESULTS[key]
        bugs.note_reached(reached)
        return result  # type: ignore[no-any-return]
    with bugs.recording() as record:
        result = run(config, *args, **kwargs)
    _RESULTS[key] = (result, frozenset(record))
    while len(_RESULTS) > MAX_ENTRIES:
        _RESULTS.popitem(last=False)
    return result


def clear() -> None:
    """Forget every stored result (tests of determinism start from an empty memo)."""
    _RESULTS.clear()
