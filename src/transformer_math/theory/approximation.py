"""Approximation rates: how many units a network needs for accuracy eps (000 §8.3.4).

Rate (000 §8.3.4 "逼近率与深度-宽度权衡", exercise 8.3.4-4): approximating a function of
smoothness s on a d-dimensional domain to accuracy eps with a one-hidden-layer network (or any
linear, grid-based scheme) needs about

    N(eps) ~ eps^(-d/s)  units,  equivalently  eps(N) ~ N^(-s/d).

The exercise's numbers: d = 10, s = 2, eps = 0.1 -> 10^5 units; s = 5 -> 10^2. The rate is the
classical one for linear approximation of Sobolev/Hoelder classes (DeVore, Howard & Micchelli
1989 give the matching lower bound for continuous parameter selection; Yarotsky 2017 for ReLU
networks). It is a worst-case order of magnitude, constants omitted.

Explicit approximants (constructions, nothing is trained) used to *measure* the exponent:
* :func:`relu_interpolant_1d`: the piecewise-linear interpolant at m + 1 uniform knots written as
  a one-hidden-layer ReLU network with m hidden units,
      f_hat(x) = f(x_0) + sum_k c_k ReLU(x - x_k),  c_0 = slope_0, c_k = slope_k - slope_{k-1};
  its sup error is O(h^s) for s <= 2 (h = knot spacing), i.e. N^(-s) with N = m units (d = 1).
* :func:`bilinear_grid_approximant`: the tensor-product (bilinear) interpolant on an m x m grid of
  [-1, 1]^2 (N = m^2 stored values), error O(h^min(s, 2)) = O(N^(-min(s, 2)/2)) in d = 2.
* :func:`piecewise_cubic_interpolant_1d`: piecewise cubic Lagrange interpolation on M uniform
  intervals (M a multiple of 3; each group of 3 intervals shares one cubic through its 4 nodes),
  M + 1 stored values, error O(h^min(s, 4)): an approximant of higher order than the
  piecewise-linear one, so that a measured rate s < 4 is the function's smoothness, not the
  method's order (issue 31).

The rate of every scheme here is min(s, order): for a function smoother than the scheme's order
the error saturates at the order (linear interpolation: h^2 whatever s > 2 is).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from transformer_math.bugs import declare_bug, planted
from transformer_math.nn.init import no_init_draws

RELU_COEFFS_NOT_DIFFERENCED = declare_bug(
    "approximation.relu-coeffs-not-differenced",
    "the ReLU interpolant uses the segment slopes as output weights instead of their "
    "differences c_k = slope_k - slope_{k-1}: each unit adds its whole slope again",
    module=__name__,
    seen_in="writing sum_k slope_k ReLU(x - x_k) for the piecewise-linear interpolant (each "
    "ReLU keeps acting after its knot, so only the slope change belongs to it)",
)


_LOG_MAX_FLOAT = math.log(sys.float_info.max)


def _check_positive(name: str, value: float) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{name} must be a number, got {type(value).__name__}")
    try:
        value = float(value)
    except OverflowError:  # an int beyond the float range
        raise ValueError(f"{name} must be a positive finite number, got {value}") from None
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be a positive finite number, got {value}")
    return float(value)


def rate_exponent(dim: float, smoothness: float) -> float:
    """The exponent d / s of N(eps) ~ eps^(-d/s); ``ValueError`` when it leaves the positive
    finite float range (e.g. dim 1e308 with smoothness 1e-300)."""
    exponent = _check_positive("dim", dim) / _check_positive("smoothness", smoothness)
    if not (math.isfinite(exponent) and exponent > 0):
        raise ValueError(f"dim / smoothness = {dim:g} / {smoothness:g} is out of the float "
                         f"range (got {exponent})")
    return exponent


def neurons_for_accuracy(epsilon: float, dim: float, smoothness: float) -> float:
    """N(eps) = eps^(-d/s): units needed for accuracy ``epsilon`` (000 exercise 8.3.4-4).

    >>> round(neurons_for_accuracy(0.1, 10, 2))
    100000
    """
    eps = _check_positive("epsilon", epsilon)
    if eps >= 1:
        raise ValueError(f"epsilon must be in (0, 1), got {epsilon}")
    log_n = -rate_exponent(dim, smoothness) * math.log(eps)
    if not log_n < _LOG_MAX_FLOAT:
        raise ValueError(f"epsilon={epsilon:g} with d/s = {dim:g}/{smoothness:g} needs "
                         f"10^{log_n / math.log(10):.6g} units, beyond the float range")
    return math.exp(log_n)


def accuracy_for_neurons(num_neurons: float, dim: float, smoothness: float) -> float:
    """eps(N) = N^(-s/d): the accuracy reached with ``num_neurons`` units (inverse of the above)."""
    n = _check_positive("num_neurons", num_neurons)
    if n < 1:
        raise ValueError(f"num_neurons must be >= 1, got {num_neurons}")
    eps = math.exp(-math.log(n) / rate_exponent(dim, smoothness))
    if n > 1 and eps == 0.0:
        raise ValueError(f"num_neurons={num_neurons:g} with d/s = {dim:g}/{smoothness:g} gives "
                         f"an accuracy below the float range (underflow to 0)")
    return eps


def relu_interpolant_1d(
    fn: Callable[[Tensor], Tensor], num_units: int, lo: float = -1.0, hi: float = 1.0
) -> nn.Sequential:
    """One-hidden-layer ReLU network (``num_units`` hidden units) interpolating ``fn`` at the
    ``num_units + 1`` uniform knots of [lo, hi]; float64. Input (B, 1), output (B, 1)."""
    if not isinstance(num_units, int) or num_units < 1:
        raise ValueError(f"num_units must be a positive int, got {num_units!r}")
    if not hi > lo:
        raise ValueError(f"need lo < hi, got lo={lo}, hi={hi}")
    knots = torch.linspace(lo, hi, num_units + 1, dtype=torch.float64)
    values = fn(knots)
    slopes = (values[1:] - values[:-1]) / (knots[1:] - knots[:-1])  # (m,)
    coeffs = torch.cat([slopes[:1], slopes[1:] - slopes[:-1]])  # (m,)
    if planted(RELU_COEFFS_NOT_DIFFERENCED):  # planted bug: falsifier of approximation-rate
        coeffs = slopes.clone()
    with no_init_draws():  # every weight is set below
        hidden = nn.Linear(1, num_units, dtype=torch.float64)
        out = nn.Linear(num_units, 1, dtype=torch.float64)
    with torch.no_grad():
        hidden.weight.fill_(1.0)
        hidden.bias.copy_(-knots[:-1])  # unit k is ReLU(x - x_k)
        out.weight.copy_(coeffs[None, :])
        out.bias.fill_(float(values[0]))
    return nn.Sequential(hidden, nn.ReLU(), out)


def bilinear_grid_approximant(
    fn: Callable[[Tensor, Tensor], Tensor], points_per_axis: int
) -> Callable[[Tensor], Tensor]:
    """Bilinear interpolant of ``fn(x, y)`` on a uniform ``m x m`` grid of [-1, 1]^2.

    Returns ``approx(points)`` for points (P, 2) in [-1, 1]^2 -> values (P,); float64. The grid
    values are the approximant's m^2 parameters.
    """
    if not isinstance(points_per_axis, int) or points_per_axis < 2:
        raise ValueError(f"points_per_axis must be an int >= 2, got {points_per_axis!r}")
    axis = torch.linspace(-1.0, 1.0, points_per_axis, dtype=torch.float64)
    yy, xx = torch.meshgrid(axis, axis, indexing="ij")
    grid_values = fn(xx, yy)[None, None]  # (1, 1, m_y, m_x)

    def approx(points: Tensor) -> Tensor:
        if points.dim() != 2 or points.shape[-1] != 2:
            raise ValueError(f"points must have shape (P, 2), got {tuple(points.shape)}")
        sample = points.to(torch.float64)[None, :, None, :]  # (1, P, 1, 2), (x, y) order
        out = F.grid_sample(grid_values, sample, mode="bilinear", align_corners=True)
        return out[0, 0, :, 0]

    return approx


def piecewise_cubic_interpolant_1d(
    fn: Callable[[Tensor], Tensor], num_intervals: int, lo: float = -1.0, hi: float = 1.0
) -> Callable[[Tensor], Tensor]:
    """Piecewise cubic Lagrange interpolant of ``fn`` on ``num_intervals`` uniform intervals of
    [lo, hi] (a multiple of 3): on each group of 3 consecutive intervals, the cubic through its
    4 nodes. Returns ``approx(x)`` for x of any shape -> same shape, float64; its parameters are
    the ``num_intervals + 1`` node values."""
    if not isinstance(num_intervals, int) or num_intervals < 3 or num_intervals % 3:
        raise ValueError(f"num_intervals must be a positive multiple of 3, got {num_intervals!r}")
    if not hi > lo:
        raise ValueError(f"need lo < hi, got lo={lo}, hi={hi}")
    nodes = torch.linspace(lo, hi, num_intervals + 1, dtype=torch.float64)
    values = fn(nodes)
    h = (hi - lo) / num_intervals
    groups = num_intervals // 3

    def approx(x: Tensor) -> Tensor:
        t = x.to(torch.float64)
        g = torch.clamp(torch.floor((t - lo) / (3 * h)), 0, groups - 1).long()
        u = (t - lo) / h - 3 * g.to(torch.float64)  # local coordinate in [0, 3]
        out = torch.zeros_like(t)
        for j in range(4):  # Lagrange basis on the local nodes 0, 1, 2, 3
            basis = torch.ones_like(t)
            for k in range(4):
                if k != j:
                    basis = basis * (u - k) / (j - k)
            out = out + basis * values[3 * g + j]
        return out

    return approx
