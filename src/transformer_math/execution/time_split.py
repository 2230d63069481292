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

The hooks are PyTorch's global module forward hooks (``register_module_forward_pre_hook`` /
``register_module_forward_hook``) and optimizer step hooks; ``torch.autograd.backward`` and
``torch.autograd.grad`` are wrapped for the block and restored after it. They cost a Python call
per module call, so a profiled run is a little slower than a plain one; the split, not the
total, is what it is for.
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
        self._start = 0.0
        self._grad = False
        self._handles: list[Any] = []
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
        self._handles = [
            nn_module.register_module_forward_pre_hook(self._pre),
            nn_module.register_module_forward_hook(self._post, always_call=True),
        ]
        step_start: list[float] = []
        self._handles += [
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

    def _pre(self, module: Any, args: Any) -> None:
        import torch

        if self._depth == 0:
            self._start = time.perf_counter()
            self._grad = torch.is_grad_enabled() and not torch.is_inference_mode_enabled()
        self._depth += 1

    def _post(self, module: Any, args: Any, output: Any) -> None:
        self._depth -= 1
        if self._depth == 0:
            self._add("train_forward_s" if self._grad else "eval_forward_s", self._start)


def add_splits(into: dict[str, float], other: dict[str, float]) -> dict[str, float]:
    """``into`` plus ``other``, part by part (in place; returned for chaining)."""
    for k in PARTS:
        into[k] = into.get(k, 0.0) + float(other.get(k, 0.0))
    return into
