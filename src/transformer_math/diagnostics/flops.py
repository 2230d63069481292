"""FLOP counts of actual computations, by ``torch.utils.flop_counter.FlopCounterMode``.

FlopCounterMode intercepts the ATen operators that a call dispatches and applies, per operator,
the standard count from the operands' shapes: a matrix product (M x K)(K x N) costs 2 M K N
floating-point operations (one multiply and one add per term), batched products multiply that
by the batch size, fused SDPA kernels count their two matrix products. Elementwise work (softmax,
exp, bias additions, scaling) is not counted. The counts therefore measure what the code really
multiplies, with the shapes it really uses, which is what the third seed's complexity table
(004 "计算复杂度分析") predicts for the matrix products.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from torch.utils.flop_counter import FlopCounterMode


@dataclass(frozen=True)
class FlopCount:
    """Total FLOPs of a call, per ATen operator and per module (dotted module path)."""

    total: int
    by_operator: dict[str, int]
    by_module: dict[str, dict[str, int]] = field(default_factory=dict)

    def module_total(self, name: str) -> int:
        """FLOPs attributed to the module ``name`` (as FlopCounterMode names it), 0 if absent."""
        return sum(self.by_module.get(name, {}).values())


def count_flops(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> FlopCount:
    """Run ``fn(*args, **kwargs)`` under FlopCounterMode and return the counts.

    ``by_operator`` maps names such as ``"aten.mm"``, ``"aten.addmm"``, ``"aten.bmm"`` to FLOPs
    of the whole call; ``by_module`` holds the same split for each ``torch.nn.Module`` that ran
    (keys like ``"MultiHeadAttention.q_proj"``; ``"Global"`` is the whole call).
    """
    with FlopCounterMode(display=False) as counter:
        fn(*args, **kwargs)
    raw = counter.get_flop_counts()
    by_module = {
        name: {str(op): int(n) for op, n in ops.items()} for name, ops in raw.items()
    }
    return FlopCount(
        total=int(counter.get_total_flops()),
        by_operator=dict(by_module.get("Global", {})),
        by_module=by_module,
    )
