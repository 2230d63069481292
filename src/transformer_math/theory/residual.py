"""Residual stacks as forward-Euler integrators of an ODE, and the reference ODE solution.

Math (000 §8.3.7 "理论 A"; Haber & Ruthotto 2017; Chen et al. 2018, Neural ODE): a residual stack
    x_{l+1} = x_l + h f(x_l),   h = T / L,   l = 0..L-1,
is the forward Euler method for dx/dt = f(x) on [0, T]. For f Lipschitz with constant K and a
solution with bounded second derivative, the global error is O(h) = O(1/L):
    |x_L - x(T)| <= (h / 2) max|x''| (e^{K T} - 1) / K.
The seed writes the block with h = 1 (x_{l+1} = x_l + f(x_l)); that is Euler with step 1, i.e. the
ODE on [0, L], which does not converge to any fixed-time solution as L grows.

The stack itself is the project's Transformer (``claims/architecture/residual.py`` folds h into
the blocks' output layers); the reference solution uses the classical fourth-order Runge-Kutta
method (error O(h^4)) with many
more steps, so that it is independent of (and far more accurate than) the Euler stack under test.
"""

from __future__ import annotations

from collections.abc import Callable

from torch import Tensor

VectorField = Callable[[Tensor], Tensor]


def rk4_solve(f: VectorField, x0: Tensor, *, horizon: float, num_steps: int) -> Tensor:
    """x(horizon) by classical Runge-Kutta 4 with ``num_steps`` equal steps (error O(h^4))."""
    if isinstance(num_steps, bool) or not isinstance(num_steps, int) or num_steps < 1:
        raise ValueError(f"num_steps must be a positive int, got {num_steps!r}")
    if not horizon > 0:
        raise ValueError(f"horizon must be > 0, got {horizon}")
    h = horizon / num_steps
    x = x0
    for _ in range(num_steps):
        k1 = f(x)
        k2 = f(x + 0.5 * h * k1)
        k3 = f(x + 0.5 * h * k2)
        k4 = f(x + h * k3)
        x = x + (h / 6.0) * (k1 + 2 * k2 + 2 * k3 + k4)
    return x
