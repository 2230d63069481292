"""Telgarsky's sawtooth: depth k and width 2 make 2^k linear pieces; one hidden layer needs
about 2^k units (Telgarsky, 'Benefits of depth in neural networks', COLT 2016).

The tent map on [0, 1], t(x) = 2 ReLU(x) - 4 ReLU(x - 1/2) (= 2x on [0, 1/2], 2 - 2x on
[1/2, 1]), is one ReLU layer of width 2 followed by a linear read-out. Composing it k times,
t^k, gives a sawtooth with 2^(k-1) teeth, i.e. 2^k linear pieces, with 2k hidden units in k
layers. A one-hidden-layer ReLU network with m units on the line is piecewise linear with at
most m + 1 pieces (one breakpoint per unit), so representing t^k needs m >= 2^k - 1 units: the
width a shallow network needs grows exponentially in the depth it replaces (000:767). The
bound is tight: the interpolant with knots at j / 2^k (``theory.approximation``) reproduces t^k.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from transformer_math.bugs import declare_bug, planted
from transformer_math.nn.init import no_init_draws

TENT_SLOPE = declare_bug(
    "expressivity.tent-second-slope",
    "the tent layer's second unit gets weight -2 instead of -4: t(x) = 2x on [0, 1/2] and 1 "
    "beyond, a ramp, so compositions no longer double the number of pieces",
    module=__name__,
    seen_in="writing the tent map as 2 ReLU(x) - 2 ReLU(x - 1/2), forgetting that the slope "
    "must change by -4 to go from +2 to -2")


def tent_layer() -> nn.Sequential:
    """x -> 2 ReLU(x) - 4 ReLU(x - 1/2): Linear(1, 2) -> ReLU -> Linear(2, 1), float64."""
    with no_init_draws():  # every weight is set below
        hidden = nn.Linear(1, 2, dtype=torch.float64)
        out = nn.Linear(2, 1, dtype=torch.float64)
    with torch.no_grad():
        hidden.weight.copy_(torch.tensor([[1.0], [1.0]], dtype=torch.float64))
        hidden.bias.copy_(torch.tensor([0.0, -0.5], dtype=torch.float64))
        second = -2.0 if planted(TENT_SLOPE) else -4.0  # planted bug: depth-separation
        out.weight.copy_(torch.tensor([[2.0, second]], dtype=torch.float64))
        out.bias.zero_()
    return nn.Sequential(hidden, nn.ReLU(), out)


def sawtooth_network(depth: int) -> nn.Sequential:
    """t^depth: ``depth`` tent layers (2 hidden units each), input and output (B, 1)."""
    if not isinstance(depth, int) or depth < 1:
        raise ValueError(f"depth must be a positive int, got {depth!r}")
    return nn.Sequential(*[tent_layer() for _ in range(depth)])


def count_linear_pieces(values: Tensor, grid: Tensor, tol: float = 1e-9) -> int:
    """Linear pieces of a piecewise-linear function sampled on a uniform grid fine enough that
    every piece spans at least two cells: 1 + the number of slope changes between cells."""
    slopes = (values[1:] - values[:-1]) / (grid[1:] - grid[:-1])
    changes = (slopes[1:] - slopes[:-1]).abs() > tol * max(1.0, float(slopes.abs().max()))
    return 1 + int(changes.sum())


def shallow_pieces(weights: Tensor, biases: Tensor, out: Tensor, lo: float = 0.0,
                   hi: float = 1.0) -> int:
    """Exact number of linear pieces on [lo, hi] of x -> sum_j out_j ReLU(w_j x + b_j): the
    breakpoints -b_j / w_j inside (lo, hi) at which the slope really changes (out_j w_j != 0),
    merged when equal."""
    keep = (weights != 0) & (out != 0)
    points = (-biases[keep] / weights[keep])
    points = points[(points > lo) & (points < hi)]
    return 1 + int(torch.unique(points).numel())
