"""Checks shared by the environments' ``step``: the action against the action space, the order.

Contract of every ``TransformerMath/*`` environment (the unwrapped class itself, not only behind
gymnasium's ``OrderEnforcing`` wrapper):

- ``step`` before the first ``reset()``, or after a step that returned ``terminated`` or
  ``truncated``, raises ``RuntimeError`` (call ``reset()``); gymnasium leaves that undefined.
- A ``Box`` action must be a real (integer or floating, not bool or complex) array of exactly the
  space's shape, every entry finite and inside ``[low, high]``; a ``Discrete(n)`` action must be a
  Python or numpy integer (or a 0-d integer array, not bool) in ``0..n-1``. Anything else raises
  ``ValueError`` naming the action and what was expected, BEFORE the environment's state changes,
  so a refused action leaves the episode exactly as it was.

Actions that ``action_space.sample()`` or ``action_space.contains`` accept are accepted (any
real dtype is: a float64 action equal to the float32 one gives the same step).
"""

from __future__ import annotations

import numbers

import numpy as np
from gymnasium import spaces


def box_action(action: object, space: spaces.Box) -> np.ndarray:
    """``action`` as a float64 array of ``space.shape`` after the checks of the module docstring."""
    try:
        a = np.asarray(action)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"action must be a real array of shape {space.shape}, got {action!r} "
                         f"({exc})") from None
    if a.dtype.kind not in "iuf":
        raise ValueError(f"action must be a real (integer or float) array of shape {space.shape}, "
                         f"got dtype {a.dtype} ({action!r})")
    if a.shape != space.shape:
        raise ValueError(f"action must have shape {space.shape}, got shape {a.shape} "
                         f"({action!r})")
    a = a.astype(np.float64)
    if not np.isfinite(a).all():
        raise ValueError(f"action must be finite, got {action!r}")
    low, high = space.low.astype(np.float64), space.high.astype(np.float64)
    if not ((a >= low).all() and (a <= high).all()):
        raise ValueError(f"action must lie in the action space [{low.tolist()}, {high.tolist()}], "
                         f"got {a.tolist()}")
    return a


def discrete_action(action: object, space: spaces.Discrete) -> int:
    """``action`` as an int in ``start .. start + n - 1`` after the checks of the docstring."""
    if isinstance(action, np.ndarray) and action.shape == () and action.dtype.kind in "iu":
        action = action.item()
    if isinstance(action, bool | np.bool_) or not isinstance(action, numbers.Integral):
        raise ValueError(f"action must be an integer in {int(space.start)}.."
                         f"{int(space.start + space.n - 1)}, got {action!r} "
                         f"({type(action).__name__})")
    value = int(action)
    if not space.start <= value < space.start + space.n:
        raise ValueError(f"action must be in {int(space.start)}.."
                         f"{int(space.start + space.n - 1)}, got {value}")
    return value


class EpisodeOrder:
    """Tracks whether ``step`` may be called: after ``reset()`` and until the episode ends."""

    def __init__(self, env_name: str) -> None:
        self.env_name = env_name
        self._state = "new"  # "new" | "running" | "ended"

    def started(self) -> None:
        self._state = "running"

    def check(self) -> None:
        if self._state == "new":
            raise RuntimeError(f"{self.env_name}: call reset() before step()")
        if self._state == "ended":
            raise RuntimeError(f"{self.env_name}: the episode has ended (terminated or "
                               f"truncated); call reset() before stepping again")

    def stepped(self, terminated: bool, truncated: bool) -> None:
        if terminated or truncated:
            self._state = "ended"


def check_config(cfg: object, *, positive: tuple[str, ...] = (),
                 non_negative: tuple[str, ...] = (), counts: tuple[str, ...] = (),
                 unit: tuple[str, ...] = ()) -> None:
    """Validate an environment config's numeric fields before anything is simulated (issue 39.4).

    Every field named here must be a real number (not bool) and finite; ``positive`` ones > 0,
    ``non_negative`` ones >= 0, ``unit`` ones in [0, 1]; ``counts`` must be integers >= 1. A NaN
    or an infinity would otherwise pass a ``< 0`` test and turn every later state into NaN.
    Raises ``ValueError`` naming the field, the value and what was expected.
    """
    name = type(cfg).__name__
    for field in counts:
        value = getattr(cfg, field)
        if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
            raise ValueError(f"{name}.{field} must be an integer >= 1, got {value!r}")
    for field in (*positive, *non_negative, *unit):
        value = getattr(cfg, field)
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise ValueError(f"{name}.{field} must be a real number, got {value!r}")
        if not np.isfinite(float(value)):
            raise ValueError(f"{name}.{field} must be finite, got {value!r}")
        if field in positive and not value > 0:
            raise ValueError(f"{name}.{field} must be > 0, got {value!r}")
        if field in non_negative and not value >= 0:
            raise ValueError(f"{name}.{field} must be >= 0, got {value!r}")
        if field in unit and not 0 <= value <= 1:
            raise ValueError(f"{name}.{field} must be in [0, 1], got {value!r}")
