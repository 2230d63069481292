"""Peak bytes of the tensors a call allocates, counted deterministically.

The process-level measurement of ``diagnostics.memory`` (resident-set high-water mark) depends on
the allocator's state, hence on what ran before in the process. This module counts instead what
the call itself holds: :func:`peak_tensor_bytes` runs it under a
:class:`torch.utils._python_dispatch.TorchDispatchMode` that sees every ATen operator and

- records each *fresh* result (an operator whose schema does not mark its result as an alias of
  an input: not a view, not an in-place or ``out=`` op) as a new storage of
  ``untyped_storage().nbytes()`` bytes;
- counts a view of a recorded storage as one more reference to it;
- releases a storage when the last tensor referring to it is garbage collected (CPython frees by
  reference counting, so the order of releases is a function of the code alone).

The peak of the live total is a deterministic function of the code path and the shapes: the same
call gives the same number whatever ran before or beside it. Inputs that exist before the call are
not counted, and neither are buffers an operator allocates and frees inside its C++ kernel (for
the project's attention paths every n x n matrix is an operator result, so it is seen).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any, TypeVar

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

T = TypeVar("T")


def _aliases_input(func: Any) -> bool:
    return any(r.alias_info is not None for r in func._schema.returns)


class _LiveTensorBytes(TorchDispatchMode):
    def __init__(self) -> None:
        super().__init__()
        self.refs: dict[int, list[int]] = {}  # storage pointer -> [bytes, live tensors]
        self.current = 0
        self.peak = 0

    def _release(self, key: int) -> None:
        entry = self.refs.get(key)
        if entry is None:
            return
        entry[1] -= 1
        if entry[1] == 0:
            self.current -= entry[0]
            del self.refs[key]

    def _hold(self, t: torch.Tensor, fresh: bool) -> None:
        storage = t.untyped_storage()
        key = storage.data_ptr()
        if key == 0:  # an empty tensor owns no memory
            return
        entry = self.refs.get(key)
        if entry is None:
            if not fresh:  # a view of something that existed before the call
                return
            entry = self.refs[key] = [storage.nbytes(), 0]
            self.current += entry[0]
            self.peak = max(self.peak, self.current)
        entry[1] += 1
        weakref.finalize(t, self._release, key)

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        out = func(*args, **(kwargs or {}))
        fresh = not _aliases_input(func)
        for t in tree_leaves(out):
            if isinstance(t, torch.Tensor):
                self._hold(t, fresh)
        return out


def peak_tensor_bytes(fn: Callable[[], T]) -> tuple[T, int]:
    """Run ``fn()``; return (its result, the peak bytes of tensors it allocated and held).

    The result's own tensors count while the call runs (they are live at its end). Example: the
    reference attention path on (1, 1, n, d) float32 inputs peaks above 4 n^2 bytes (its n x n
    logits and weights); the tiled path stays at O(n d + block^2).
    """
    mode = _LiveTensorBytes()
    with mode:
        result = fn()
    return result, mode.peak
