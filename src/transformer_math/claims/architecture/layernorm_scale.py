"""LayerNorm's output norm with eps and after gamma, beta; its Jacobian grows like 1/sigma.

000:1108 says that after LayerNorm every token vector has the same norm (the sphere of radius
sqrt(d), "then scaled anisotropically by gamma"); 000:1110 that LayerNorm makes the input domain
a bounded sphere and so gives the network a bounded Lipschitz constant. With the normaliser
y = (x - mu) / sqrt(var + eps) (``functional.norms.layer_norm``, biased variance):

- before gamma, beta: |y| = sqrt(d) sqrt(var / (var + eps)) < sqrt(d): equal norms only in the
  limit eps / var -> 0 (slightly below sqrt(d) for ordinary inputs, far below for small var);
- after gamma, beta: |gamma * y + beta| depends on the direction of y, so the norms differ from
  token to token (an anisotropic gamma does not preserve equal norms);
- the Jacobian is J = (P - (var / (var + eps)) u u^T) / sqrt(var + eps) with P = I - 1 1^T / d
  and u = (x - mu) / |x - mu|; for d >= 3 its spectral norm is exactly 1 / sqrt(var + eps):
  1/sigma at eps = 0, unbounded as sigma -> 0, i.e. LayerNorm itself is not globally Lipschitz
  (with eps > 0 its constant is set by eps, 1/sqrt(eps), not by the sphere).

The check measures norms and autograd Jacobians of the project's LayerNorm in float64.
"""

from __future__ import annotations

import math

import torch

from transformer_math.claims.architecture._common import SEED_000, loglog_slope
from transformer_math.claims.registry import (
    Context,
    Evidence,
    Figure,
    Refutation,
    Series,
    at_most,
    claim,
    close_to,
    decide,
    exceeds,
)
from transformer_math.functional.norms import layer_norm
from transformer_math.nn.norms import LayerNorm

D = 16
SIGMAS = [1.0, 0.3, 0.1, 0.03, 0.01, 1e-3, 1e-4]
EPS = 1e-5


def spectral_jacobian(x: torch.Tensor, eps: float) -> float:
    """|d layer_norm(x) / dx|_2 by autograd (float64, one vector x of width d)."""
    jac = torch.autograd.functional.jacobian(lambda v: layer_norm(v, eps=eps), x)
    return float(torch.linalg.matrix_norm(jac, ord=2))


@claim(
    "architecture.layernorm-eps-jacobian",
    source=f"{SEED_000} 理论 B (000:1108, 000:1110); Ba et al. 2016; functional.norms",
    statement="""Before gamma and beta, LayerNorm's output norm is sqrt(d) sqrt(var / (var +
    eps)): slightly below sqrt(d) (by ~ sqrt(d) eps / (2 var)), far below for small var; after
    gamma and beta the token norms differ. LayerNorm's Jacobian has spectral norm exactly
    1 / sqrt(var + eps): it grows like 1/sigma (unbounded at eps = 0), so LayerNorm is not
    globally Lipschitz on its own; eps caps it at 1/sqrt(eps).""",
    falsifier="norm.layernorm-no-centering",
    expected="refuted",
    version=1,
    seed_refs=[("000", 1104, 1110)],
    refutes=[
        Refutation(
            seed="000", line=1108,
            says="after LayerNorm all token vectors have the same norm (on the sphere of radius "
            "sqrt(d), then scaled anisotropically by gamma)",
            correct="equal norms sqrt(d) sqrt(var / (var + eps)) only before gamma, beta and "
            "only for equal variances (eps lowers the norm below sqrt(d)); after gamma, beta "
            "the norms differ from token to token"),
        Refutation(
            seed="000", line=1110,
            says="LayerNorm maps inputs of any scale onto a bounded sphere, which gives the "
            "network a bounded Lipschitz constant",
            correct="the map onto the sphere has Jacobian norm 1 / sqrt(var + eps), 1/sigma at "
            "eps = 0: LayerNorm is not globally Lipschitz; bounded outputs do not bound "
            "sensitivity (eps alone caps it at 1/sqrt(eps) ~ 316 for eps = 1e-5)"),
    ],
    statement_zh="""在 gamma、beta 之前，LayerNorm 输出的范数为 sqrt(d) sqrt(var / (var + eps))：
    略小于 sqrt(d)（约小 sqrt(d) eps / (2 var)），方差很小时远小于 sqrt(d)；经过 gamma、beta 之后，
    各 token 的范数互不相同。LayerNorm 的 Jacobian 谱范数恰为 1 / sqrt(var + eps)：它按 1/sigma
    增长（eps = 0 时无界），所以 LayerNorm 本身不是全局 Lipschitz 的；
    eps 把它限制在 1/sqrt(eps)。""",
)
def check_layernorm_eps_jacobian(ctx: Context) -> Evidence:
    g = ctx.generator(31)
    root = math.sqrt(D)
    # tokens x = c + s z with row means c != 0 and scales s in [1e-3, 10] (float64)
    z = torch.randn(256, D, generator=g, dtype=torch.float64)
    s = 10 ** (torch.rand(256, 1, generator=g, dtype=torch.float64) * 4 - 3)
    x = torch.linspace(-3.0, 3.0, 256, dtype=torch.float64).unsqueeze(-1) + s * z
    var = x.var(-1, unbiased=False)
    y = layer_norm(x, eps=EPS)
    norm = y.norm(dim=-1)
    predicted = root * (var / (var + EPS)).sqrt()
    norm_err = float(((norm - predicted) / predicted).abs().max())
    ordinary = var >= 0.5  # the eps deficit at ordinary scales: sqrt(d) - |y| ~ sqrt(d) eps / 2var
    deficit = (root - norm)[ordinary]
    deficit_pred = (root - predicted)[ordinary]
    deficit_err = float(((deficit - deficit_pred) / deficit_pred).abs().max())
    # after gamma, beta (the project's LayerNorm module with non-trivial affine parameters)
    module = LayerNorm(D).double()
    with torch.no_grad():
        module.weight.copy_(1 + 0.3 * torch.randn(D, generator=g, dtype=torch.float64))
        module.bias.copy_(0.3 * torch.randn(D, generator=g, dtype=torch.float64))
        big = x[ordinary]
        affine_norms = module(big).norm(dim=-1)
    spread = float(affine_norms.max() / affine_norms.min() - 1)
    # Jacobians along x = c + sigma u, u a fixed unit-variance direction
    u = torch.randn(D, generator=g, dtype=torch.float64)
    u = (u - u.mean()) / u.std(unbiased=False)
    jac = {e: [spectral_jacobian(1.5 + sig * u, e) for sig in SIGMAS] for e in (0.0, EPS)}
    jac_pred = {e: [1 / math.sqrt(sig**2 + e) for sig in SIGMAS] for e in (0.0, EPS)}
    jac_err = max(abs(m / p - 1) for e in jac for m, p in zip(jac[e], jac_pred[e], strict=True))
    slope = loglog_slope(SIGMAS, jac[0.0])
    margins = [
        at_most("max |(|y| - sqrt(d) sqrt(var/(var+eps))) / prediction| (no affine)",
                norm_err, 1e-12),
        at_most("max relative error of the eps deficit sqrt(d) - |y| at var >= 0.5",
                deficit_err, 1e-4),
        exceeds("max/min token norm - 1 after gamma, beta", spread, 1e-3),
        at_most("max |Jacobian spectral norm * sqrt(var + eps) - 1| (eps = 0 and 1e-5)",
                jac_err, 1e-9),
        close_to("log-log slope of |J|_2 in sigma at eps = 0", slope, -1.0, abs_=1e-6),
    ]
    seed_margins = [
        at_most("seed: max |(|y| / sqrt(d)) - 1| over tokens (all on the sqrt(d) sphere)",
                float((norm / root - 1).abs().max()), 1e-6),
        at_most("seed: max/min token norm - 1 after gamma, beta (equal norms)", spread, 1e-6),
        at_most("seed: max over sigma of |J|_2 / |J|_2(sigma = 1) at eps = 0 (bounded)",
                max(jac[0.0]) / jac[0.0][0], 10.0),
    ]
    return Evidence(
        predicted={"norm": "sqrt(d) sqrt(var/(var+eps))", "jacobian": "1/sqrt(var+eps)"},
        measured={"norm_rel_err": float(f"{norm_err:.2e}"),
                  "min_norm_over_sqrt_d": round(float((norm / root).min()), 4),
                  "affine_norm_spread": round(spread, 4),
                  "jacobian_eps0": [float(f"{v:.4g}") for v in jac[0.0]],
                  "jacobian_eps1e-5": [float(f"{v:.4g}") for v in jac[EPS]],
                  "jacobian_slope_eps0": round(slope, 6)},
        tolerance="float64 round-off (1e-12 on norms, 1e-9 on Jacobian norms; 1e-4 on the "
        "deficit, a difference of numbers ~ sqrt(d))",
        verdict=decide(margins, seed_margins),
        margins=margins,
        seed_margins=seed_margins,
        notes=[
            f"d = {D}; 256 tokens with row means in [-3, 3] and scales 1e-3 .. 10; "
            f"eps = {EPS:g}; gamma ~ 1 + 0.3 N(0, 1), beta ~ 0.3 N(0, 1) for the affine part",
            f"Jacobians by autograd at x = 1.5 + sigma u for sigma in {SIGMAS}: at eps = 0 "
            f"|J| = 1/sigma (up to {max(jac[0.0]):.3g}); at eps = 1e-5 it saturates at "
            f"1/sqrt(eps) = {1 / math.sqrt(EPS):.1f}",
        ],
        figures=[Figure(
            title="LayerNorm Jacobian spectral norm vs input scale", xlabel="sigma",
            ylabel="|J|_2", logx=True, logy=True,
            series=[Series("measured, eps = 0", SIGMAS, jac[0.0], style="o-"),
                    Series("measured, eps = 1e-5", SIGMAS, jac[EPS], style="s-"),
                    Series("1/sqrt(sigma^2 + eps)", SIGMAS, jac_pred[EPS], style="--")])],
        details={"sigmas": SIGMAS, "jacobian": {str(k): v for k, v in jac.items()}},
    )
