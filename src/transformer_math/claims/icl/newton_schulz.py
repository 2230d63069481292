"""Newton-Schulz iteration: quadratic convergence to M^{-1} (Giannou et al. 2023; 000 §8.3.6).

A looped transformer can implement one step A_{t+1} = A_t (2I - M A_t) with a constant number of
layers; the residual R_t = I - M A_t squares at every step (``theory.icl_construction``).
"""

from __future__ import annotations

import math

import torch

from transformer_math.claims.icl._shared import SOURCE
from transformer_math.claims.registry import (
    Context,
    Correction,
    Evidence,
    Figure,
    Series,
    Tier,
    at_most,
    claim,
    decide,
)
from transformer_math.theory.icl_construction import newton_schulz_inverse


def residual_figure(residual: list[float], bound: list[float]) -> Figure:
    ts = [float(t) for t in range(len(residual))]
    return Figure(
        title="Newton-Schulz: residual |I - M A_t|",
        xlabel="iteration t",
        ylabel="residual",
        logy=True,
        series=[
            Series("measured", ts, [max(r, 1e-17) for r in residual], "line", "o-"),
            Series("|R_0|^(2^t)", ts, [max(min(b, 1e6), 1e-17) for b in bound], "line", "--"),
        ],
    )


@claim(
    "icl.newton-schulz",
    source=f"{SOURCE} (Giannou et al. 2023: Newton-Schulz in a looped transformer)",
    statement="""A_{t+1} = A_t (2I - M A_t) from A_0 = M^T/(|M|_1 |M|_inf) converges
    quadratically to
    M^{-1}: the residual R_t = I - M A_t obeys |R_t| <= |R_0|^(2^t).""",
    tier=Tier.QUICK,
    falsifier="icl.newton-schulz-scale",
    expected="verified",
    version=2,
    seed_refs=[("000", 1054, 1054)],
    corrections=[Correction(
        seed="000", line=1054,
        says="Giannou et al. built a Newton-Schulz program that implements one iteration "
        "exactly within 13 layers",
        correct="Giannou et al.'s looped 13-layer transformer is a universal computer (a small "
        "instruction-set machine, SUBLEQ-like, programmed by its input); Newton's matrix "
        "inversion runs on it as a program of many loop passes (a basic linear-algebra "
        "library), with approximate arithmetic (softmax-based) whose error is controlled, "
        "not as one exact iteration per 13 layers",
        source="Giannou, Rajput, Sohn, Lee, Lee, Papailiopoulos, 'Looped Transformers as "
        "Programmable Computers', ICML 2023 (arXiv 2301.13196), abstract and sections 5-7")],
)
def check_newton_schulz(ctx: Context) -> Evidence:
    g = ctx.generator(508)
    d = 6
    q, _ = torch.linalg.qr(torch.randn(d, d, generator=g, dtype=torch.float64))
    m = q @ torch.diag(torch.logspace(0, 1.5, d, dtype=torch.float64)) @ q.T  # kappa ~ 32
    iterates = newton_schulz_inverse(m, 30)  # the library's initial guess A_0
    eye = torch.eye(d, dtype=torch.float64)

    def spectral(r: torch.Tensor) -> float:  # inf once the iteration has overflowed
        return float(torch.linalg.matrix_norm(r, ord=2)) if torch.isfinite(r).all() else math.inf

    residual = [spectral(eye - m @ a) for a in iterates]
    r0 = residual[0]
    bound = [r0 ** (2**t) if r0 < 1 else math.inf for t in range(len(residual))]
    inverse = torch.linalg.inv(m)
    inverse_error = float(
        torch.linalg.matrix_norm(iterates[-1] - inverse) / torch.linalg.matrix_norm(inverse)
    )
    if not math.isfinite(inverse_error):
        inverse_error = math.inf
    # |R_t| - (|R_0|^(2^t) (1 + 1e-6) + 1e-13) <= 0 for every t; -inf when |R_0| >= 1 (no bound)
    excess = max(r - (b * (1 + 1e-6) + 1e-13) for r, b in zip(residual, bound, strict=True))
    margins = [
        at_most("|R_0| = |I - M A_0|", r0, 1.0),
        at_most("max_t |R_t| - (|R_0|^(2^t) (1 + 1e-6) + 1e-13)", excess, 0.0),
        at_most("|A_30 - M^-1|_F / |M^-1|_F", inverse_error, 1e-10),
    ]
    return Evidence(
        predicted="|R_t| <= |R_0|^(2^t), A_t -> M^{-1}",
        measured={
            "residual": [f"{r:.2e}" for r in residual],
            "relative_inverse_error": inverse_error,
        },
        tolerance="bound with 1e-6 relative slack plus 1e-13 round-off; "
        "final relative error < 1e-10",
        verdict=decide(margins),
        margins=margins,
        notes=[f"kappa(M) = {10**1.5:.1f}, A_0 = M^T/(|M|_1|M|_inf) from "
               "theory.icl_construction.newton_schulz_initial",
               "version 2 (issue 14): falsifier = planted bug icl.newton-schulz-scale (A_0 "
               "without the |M|_inf factor) in the library; it was an initial guess built by "
               "the check"],
        figures=[residual_figure(residual, bound)],
    )
