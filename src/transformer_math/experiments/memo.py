"""One memo for experiment results: several claims read the same trained run.

An experiment is ``run(config, progress) -> Result`` with a frozen (hashable) dataclass config
and no hidden state, so ``(run, config)`` determines the result and a second claim that needs
the same run can reuse it. The memo keeps the ``MAX_ENTRIES`` most recently used results (a
run at the default size can hold several trained models).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

R = TypeVar("R")

MAX_ENTRIES = 16
_RESULTS: OrderedDict[tuple[str, Hashable], Any] = OrderedDict()


def memoized(run: Callable[..., R], config: Hashable, *args: Any, **kwargs: Any) -> R:
    """``run(config, *args, **kwargs)``, or the stored result of an earlier identical call.

    Only ``config`` is part of the key: the other arguments must not change the result
    (a progress callback, for instance).
    """
    key = (f"{run.__module__}.{run.__qualname__}", config)
    if key in _RESULTS:
        _RESULTS.move_to_end(key)
        return _RESULTS[key]  # type: ignore[no-any-return]
    result = run(config, *args, **kwargs)
    _RESULTS[key] = result
    while len(_RESULTS) > MAX_ENTRIES:
        _RESULTS.popitem(last=False)
    return result


def clear() -> None:
    """Forget every stored result (tests of determinism start from an empty memo)."""
    _RESULTS.clear()
