"""Jacobians and their norms, measured on any differentiable function of one tensor.

Math. For f: R^m -> R^p differentiable at x, the Jacobian J = df/dx (p x m) is the best linear
approximation f(x + h) = f(x) + J h + o(|h|). Its spectral norm ||J||_2 = sigma_max(J) is the
local Lipschitz constant of f at x, and for f differentiable on a convex domain the global
Lipschitz constant (in the 2-norm) is sup_x ||J(x)||_2 (Federer 1969, 3.1.6; used by Kim et al.
2021, "The Lipschitz Constant of Self-Attention", ICML, §2). A function whose Jacobian norm grows
without bound along some path x(c) is therefore not globally Lipschitz.

Two ways to get ||J||_2:
- ``exact``: build J with ``torch.autograd.functional.jacobian`` (p*m entries; fine when p*m is
  small) and take its largest singular value;
- ``power``: power iteration on J^T J using one Jacobian-vector product (forward mode) and one
  vector-Jacobian product (reverse mode) per step, never forming J.

Attention entropy (000 §8.3.1, softmax saturation): H(a_i) = -sum_j A_ij log A_ij for each row of
an attention matrix, 0 for a one-hot row and log(n) for a uniform row over n keys.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor

TensorFunction = Callable[[Tensor], Tensor]


def jacobian_matrix(fn: TensorFunction, x: Tensor) -> Tensor:
    """The Jacobian of ``fn`` at ``x`` flattened to (fn(x).numel(), x.numel())."""
    if not isinstance(x, Tensor) or not x.is_floating_point():
        raise TypeError(f"x must be a floating torch.Tensor, got {type(x).__name__}")
    x = x.detach()
    jac = torch.autograd.functional.jacobian(fn, x, vectorize=True)
    if not isinstance(jac, Tensor):
        raise TypeError("fn must return a single tensor")
    return jac.detach().reshape(-1, x.numel())


def jacobian_spectral_norm(
    fn: TensorFunction,
    x: Tensor,
    *,
    method: str = "exact",
    iterations: int = 200,
    rtol: float = 1e-7,
    generator: torch.Generator | None = None,
) -> float:
    """sigma_max of the Jacobian of ``fn`` at ``x`` (the local Lipschitz constant in the 2-norm).

    ``method="exact"`` forms the Jacobian; ``method="power"`` runs power iteration on J^T J with
    a random start drawn from ``generator`` and stops when the estimate changes by less than
    ``rtol`` (relative) or after ``iterations`` steps. Power iteration converges from below.
    """
    if method == "exact":
        return float(torch.linalg.matrix_norm(jacobian_matrix(fn, x).detach(), ord=2))
    if method != "power":
        raise ValueError(f"method must be 'exact' or 'power', got {method!r}")
    if iterations < 1:
        raise ValueError(f"iterations must be >= 1, got {iterations}")
    x = x.detach()
    _, vjp_fn = torch.func.vjp(fn, x)
    v = torch.randn(x.shape, generator=generator, dtype=x.dtype).to(x.device)
    v = v / torch.linalg.vector_norm(v)
    estimate = 0.0
    for _ in range(iterations):
        _, jv = torch.func.jvp(fn, (x,), (v,))
        (jtjv,) = vjp_fn(jv)
        jtjv = jtjv.detach()
        norm = float(torch.linalg.vector_norm(jtjv))
        if norm == 0.0:
            return 0.0
        new_estimate = norm**0.5  # ||J^T J v|| -> sigma_max^2 for unit v
        v = jtjv / norm
        if abs(new_estimate - estimate) <= rtol * new_estimate:
            return new_estimate
        estimate = new_estimate
    return estimate


def attention_entropy(weights: Tensor, dim: int = -1) -> Tensor:
    """Row entropy -sum_j A_ij log A_ij (natural log) along ``dim``, with 0 log 0 = 0."""
    if not weights.is_floating_point():
        raise TypeError(f"weights must be floating, got dtype {weights.dtype}")
    if (weights < 0).any():
        raise ValueError("weights must be non-negative (a row of probabilities)")
    logs = torch.where(weights > 0, torch.log(weights), torch.zeros_like(weights))
    return -(weights * logs).sum(dim=dim)
