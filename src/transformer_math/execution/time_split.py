"""Where a task's time goes: training, evaluation and the rest (``tmath verify --profile``).

Issue 19 asks to measure before speeding up: per claim, check against falsifier (timed by
``run_claim``), and training against evaluation, timed here. Inside a :class:`TimeSplit` block
the wall-clock time is cut into

- ``train_forward_s``: outermost ``nn.Module`` calls made with autograd recording (a module
  called inside another is part of its caller's time);
- ``backward_s``: ``torch.autograd.backward`` (``Tensor.backward``) and ``torch.autograd.grad``;
- ``optimizer_s``: ``Optimizer.step`` (PyTorch's global optimizer step hooks);
- ``eval_forward_s``: outermost module calls without autograd (``torch.no_grad``, inference);
- ``other_s``: the rest: data generation, losses and metrics computed outside modules,
  rollouts' Python, the library's own functional code called directly.

``nn.Module.__call__``, ``torch.autograd.backward`` and ``torch.autograd.grad`` are wrapped
for the block and restored after it, and PyTorch's global optimizer step hooks time the steps.
Not torch's global *module* hooks: with one registered, the project's attention takes its
hooked path (``nn.hooks.hooks_live``), which materialises the pattern itself, and a profiled run
would no longer be the run it measures (issue 19's first profiled full tier missed three
falsifiers that way). The wrappers cost a Python call per module call, so a profiled run is a
little slower than a plain one; the split, not the total, is what it is for.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

PARTS = ("train_forward_s", "backward_s", "optimizer_s", "eval_forward_s", "other_s")


class TimeSplit:
    """A context manager: ``with TimeSplit() as split: ...`` then ``split.seconds`` (by part)."""

    _active = False

    def __init__(self) -> None:
        self.seconds = dict.fromkeys(PARTS, 0.0)
        self._depth = 0
        self._handles: list[Any] = []
        self._module_call: Callable[..., Any] | None = None
        self._saved: dict[str, Callable[..., Any]] = {}
        self._begin = 0.0

    def __enter__(self) -> TimeSplit:
        import torch
        from torch.nn.modules import module as nn_module
        from torch.optim import optimizer as optim_module

        if TimeSplit._active:
            raise RuntimeError("TimeSplit blocks do not nest")
        TimeSplit._active = True
        self._begin = time.perf_counter()
        self._module_call = nn_module.Module.__call__
        nn_module.Module.__call__ = self._timed_call(self._module_call)  # type: ignore[method-assign]
        step_start: list[float] = []
        self._handles = [
            optim_module.register_optimizer_step_pre_hook(
                lambda *_: step_start.append(time.perf_counter())),
            optim_module.register_optimizer_step_post_hook(
                lambda *_: self._add("optimizer_s", step_start.pop()) if step_start else None),
        ]
        for name in ("backward", "grad"):
            original = getattr(torch.autograd, name)
            self._saved[name] = original
            setattr(torch.autograd, name, self._timed(original))
        return self

    def __exit__(self, *exc: Any) -> None:
        import torch
        from torch.nn.modules import module as nn_module

        nn_module.Module.__call__ = self._module_call  # type: ignore[method-assign]
        for h in self._handles:
            h.remove()
        for name, original in self._saved.items():
            setattr(torch.autograd, name, original)
        TimeSplit._active = False
        total = time.perf_counter() - self._begin
        measured = sum(v for k, v in self.seconds.items() if k != "other_s")
        self.seconds["other_s"] = max(total - measured, 0.0)

    def _add(self, part: str, since: float) -> None:
        self.seconds[part] += time.perf_counter() - since

    def _timed(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                self._add("backward_s", start)

        return timed

    def _timed_call(self, call: Callable[..., Any]) -> Callable[..., Any]:
        import torch

        split = self

        def timed_call(module: Any, *args: Any, **kwargs: Any) -> Any:
            if split._depth > 0:  # inside an outer module call: part of its time
                return call(module, *args, **kwargs)
            split._depth = 1
            start = time.perf_counter()
            grad = torch.is_grad_enabled() and not torch.is_inference_mode_enabled()
            try:
                return call(module, *args, **kwargs)
            finally:
                split._depth = 0
                split._add("train_forward_s" if grad else "eval_forward_s", start)

        return timed_call


def add_splits(into: dict[str, float], other: dict[str, float]) -> dict[str, float]:
    """``into`` plus ``other``, part by part (in place; returned for chaining)."""
    for k in PARTS:
        into[k] = into.get(k, 0.0) + float(other.get(k, 0.0))
    return into
