"""Convex-hull membership of a point, with a certificate either way.

For points v_1..v_m in R^d and a point y, dist(y, conv{v_j}) = min_{a in simplex} ||V^T a - y||,
a quadratic programme over the probability simplex, solved here by accelerated projected gradient
(FISTA, Beck & Teboulle 2009) with the sort-based Euclidean projection onto the simplex
(Held, Wolfe & Crowder 1974; Duchi et al. 2008).

Certificates (000 §8.3.1 property (1): a single attention layer's output is a convex combination
of the value vectors):
- inside: explicit convex weights a with ||V^T a - y|| small;
- outside: a direction u with u.y > max_j u.v_j (a separating hyperplane). That inequality is
  checked exactly, so the certificate holds however inaccurately the programme was solved; the
  programme only supplies a good u (the residual y - V^T a at the optimum).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor


def project_to_simplex(a: Tensor) -> Tensor:
    """Euclidean projection of each row of ``a`` (..., m) onto {x >= 0, sum x = 1}."""
    m = a.shape[-1]
    u, _ = torch.sort(a, dim=-1, descending=True)
    css = u.cumsum(dim=-1) - 1.0
    idx = torch.arange(1, m + 1, dtype=a.dtype, device=a.device)
    cond = u - css / idx > 0
    rho = cond.to(torch.int64).cumsum(dim=-1).argmax(dim=-1, keepdim=True)  # last True
    theta = css.gather(-1, rho) / (rho + 1).to(a.dtype)
    return torch.clamp(a - theta, min=0.0)


@dataclass(frozen=True)
class HullTest:
    """Per query point: distance to the hull, the convex weights found, the separation margin."""

    distance: Tensor  # (P,) ||V^T a - y|| at the weights found
    weights: Tensor  # (P, m) convex weights found (each row in the simplex)
    margin: Tensor  # (P,) u.y - max_j u.v_j for u = y - V^T a; > 0 certifies y outside

    @property
    def certified_outside(self) -> Tensor:
        """(P,) bool: a separating hyperplane was found (an exact certificate)."""
        return self.margin > 0.0


def convex_hull_test(points: Tensor, ys: Tensor, *, iterations: int = 500) -> HullTest:
    """Distance from each query point to the convex hull of ``points``, with the certificates of
    the module docstring (computed in float64).

    Shapes: ``points`` (..., m, d) and ``ys`` (..., P, d) with the same leading (batch) shape,
    or ``points`` (m, d) and ``ys`` (d,) for one point. The result's fields have shape (..., P)
    (``weights``: (..., P, m)).
    """
    if ys.dim() == 1:
        ys = ys.unsqueeze(0)
    if (
        points.dim() < 2
        or ys.dim() != points.dim()
        or points.shape[:-2] != ys.shape[:-2]
        or points.shape[-1] != ys.shape[-1]
    ):
        raise ValueError(
            f"points must be (..., m, d) and ys (..., P, d) with the same leading shape, got "
            f"{tuple(points.shape)} and {tuple(ys.shape)}"
        )
    if iterations < 1:
        raise ValueError(f"iterations must be >= 1, got {iterations}")
    V = points.detach().to(torch.float64)  # (..., m, d)
    Y = ys.detach().to(torch.float64)  # (..., P, d)
    m = V.shape[-2]
    # Lipschitz constant of the gradient of 1/2 |a V - y|^2 is ||V||_2^2; the largest over the
    # batch gives a step that is safe for every problem.
    lipschitz = float(torch.linalg.matrix_norm(V, ord=2).max()) ** 2
    step = 1.0 / max(lipschitz, 1e-300)
    a = torch.full((*Y.shape[:-1], m), 1.0 / m, dtype=torch.float64)
    Vt = V.transpose(-2, -1)
    z, t = a.clone(), 1.0
    for _ in range(iterations):
        grad = (z @ V - Y) @ Vt  # (..., P, m)
        a_next = project_to_simplex(z - step * grad)
        t_next = (1.0 + (1.0 + 4.0 * t * t) ** 0.5) / 2.0
        z = a_next + ((t - 1.0) / t_next) * (a_next - a)
        a, t = a_next, t_next
    residual = Y - a @ V  # (..., P, d): the direction u
    margin = (residual * Y).sum(-1) - (residual @ Vt).amax(dim=-1)
    return HullTest(
        distance=torch.linalg.vector_norm(residual, dim=-1), weights=a, margin=margin
    )
