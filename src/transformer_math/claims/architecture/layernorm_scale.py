"""LayerNorm's sphere, its Jacobian of rank d - 2, and what eps changes (000 §8.3.7 理论 B).

000:1104-1108 state LayerNorm without eps, y = gamma (x - mu) / sigma + beta: before gamma, beta
every token lands on the sphere of radius sqrt(d) in the hyperplane sum_i y_i = 0, and the
output has two fewer degrees of freedom than the input. With the normaliser
y = (x - mu) / sqrt(var + eps) (``functional.norms.layer_norm``, biased variance):

- eps = 0: |y| = sqrt(d) and sum_i y_i = 0 exactly; the Jacobian is J = (P - u u^T) / sigma with
  P = I - 1 1^T / d and u = (x - mu) / |x - mu|: rank d - 2 (null directions 1 and u, the mean
  and the scale), its d - 2 nonzero singular values all 1/sigma;
- eps > 0: |y| = sqrt(d) sqrt(var / (var + eps)) < sqrt(d), and J = (P - (var / (var + eps))
  u u^T) / sqrt(var + eps) has spectral norm exactly 1 / sqrt(var + eps) (d >= 3): 1/sigma
  for var >> eps, capped at 1/sqrt(eps).

Issue 31: the records of 000:1108 ("all token norms equal", eps and gamma strawmen: the seed
states the eps-free formula and says "再被 γ 各向异性缩放") and 000:1110 (bounded Lipschitz
constant: with eps > 0 LayerNorm is globally Lipschitz, 1/sqrt(eps)) were dropped; the claim
now verifies what 000:1104-1108 say, including the rank d - 2 (review section 5).

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
    Series,
    at_most,
    claim,
    close_to,
    decide,
)
from transformer_math.functional.norms import layer_norm
from transformer_math.i18n.message import msg

D = 16
SIGMAS = [1.0, 0.3, 0.1, 0.03, 0.01, 1e-3, 1e-4]
EPS = 1e-5


def jacobian_singular_values(x: torch.Tensor, eps: float) -> torch.Tensor:
    """Singular values (descending) of d layer_norm(x) / dx by autograd (float64, one x)."""
    jac = torch.autograd.functional.jacobian(lambda v: layer_norm(v, eps=eps), x)
    return torch.linalg.svdvals(jac)


def spectral_jacobian(x: torch.Tensor, eps: float) -> float:
    """|d layer_norm(x) / dx|_2 by autograd (float64, one vector x of width d)."""
    return float(jacobian_singular_values(x, eps)[0])


@claim(
    "architecture.layernorm-eps-jacobian",
    source=f"{SEED_000} 理论 B (000:1104-1110); Ba et al. 2016; functional.norms",
    statement="""LayerNorm without eps (the seed's formula) maps every token, before gamma and
    beta, onto the sphere of radius sqrt(d) in the hyperplane sum_i y_i = 0, and its Jacobian has
    rank d - 2 (two degrees of freedom fewer: the mean and the scale) with all nonzero singular
    values 1/sigma. With eps > 0 the output norm is sqrt(d) sqrt(var / (var + eps)) and the
    Jacobian's spectral norm is exactly 1 / sqrt(var + eps), capped at 1/sqrt(eps).""",
    falsifier="norm.layernorm-no-centering",
    expected="verified",
    version=2,
    kind="measurement",
    audit="""Issue 31 review: problem (c), eps and gamma strawmen. Agreed and fixed: 000:1104-1108
    state the eps-free LayerNorm and say the norms are equal before gamma ("再被 γ 各向异性缩放");
    the version-1 seed margins required norms sqrt(d) to 1e-6 WITH eps = 1e-5 and equal norms
    AFTER gamma, so the records of 000:1108 and its gamma margin are dropped. 000:1110 (LayerNorm
    makes the domain a bounded sphere, so attention on it has a finite Lipschitz constant) is
    dropped too: with eps > 0 LayerNorm is globally Lipschitz (1/sqrt(eps), measured here), and
    attention on a bounded set is Lipschitz. The claim now verifies the seed's statements
    (sphere of radius sqrt(d), sum zero, rank d - 2 = "自由度比输入少 2", review section 5) and
    what eps changes. Tolerances are float64 round-off (1e-12 on norms and sums, 1e-9 on
    singular values; a zero singular value <= 1e-12 of the largest; the zero sum 1e-10, the
    rounding of x - mu for |mu| / sigma up to 3e3).""",
    seed_refs=[("000", 1104, 1110)],
    statement_zh="""不带 eps 的 LayerNorm（种子的公式）在 gamma、beta 之前把每个 token 映到超平面
    sum_i y_i = 0 内半径 sqrt(d) 的球面上，其 Jacobian 的秩为 d - 2（少两个自由度：均值与尺度），
    非零奇异值全为 1/sigma。eps > 0 时输出范数为 sqrt(d) sqrt(var / (var + eps))，Jacobian 的谱范数
    恰为 1 / sqrt(var + eps)，上限 1/sqrt(eps)。""",
)
def check_layernorm_eps_jacobian(ctx: Context) -> Evidence:
    """Version 2 (issue 31): the eps and gamma seed margins and both records dropped; the
    eps = 0 sphere, zero sum and Jacobian rank d - 2 added."""
    g = ctx.generator(31)
    root = math.sqrt(D)
    # tokens x = c + s z with row means c != 0 and scales s in [1e-3, 10] (float64)
    z = torch.randn(256, D, generator=g, dtype=torch.float64)
    s = 10 ** (torch.rand(256, 1, generator=g, dtype=torch.float64) * 4 - 3)
    x = torch.linspace(-3.0, 3.0, 256, dtype=torch.float64).unsqueeze(-1) + s * z
    var = x.var(-1, unbiased=False)
    # eps = 0: the seed's sphere
    y0 = layer_norm(x, eps=0.0)
    sphere_err = float((y0.norm(dim=-1) / root - 1).abs().max())
    sum_err = float((y0.sum(-1) / root).abs().max())
    # eps > 0: the norm deficit
    y = layer_norm(x, eps=EPS)
    norm = y.norm(dim=-1)
    predicted = root * (var / (var + EPS)).sqrt()
    norm_err = float(((norm - predicted) / predicted).abs().max())
    # Jacobians along x = c + sigma u, u a fixed unit-variance direction
    u = torch.randn(D, generator=g, dtype=torch.float64)
    u = (u - u.mean()) / u.std(unbiased=False)
    svals = {e: [jacobian_singular_values(1.5 + sig * u, e) for sig in SIGMAS] for e in (0.0, EPS)}
    jac = {e: [float(sv[0]) for sv in svals[e]] for e in svals}
    jac_pred = {e: [1 / math.sqrt(sig**2 + e) for sig in SIGMAS] for e in (0.0, EPS)}
    jac_err = max(abs(m / p - 1) for e in jac for m, p in zip(jac[e], jac_pred[e], strict=True))
    # eps = 0: d - 2 singular values equal to 1/sigma, two zero
    nonzero_err = max(float((sv[: D - 2] * sig - 1).abs().max())
                      for sv, sig in zip(svals[0.0], SIGMAS, strict=True))
    zero_rel = max(float(sv[D - 2:].max() / sv[0]) for sv in svals[0.0])
    rank = min(int((sv > 1e-8 * sv[0]).sum()) for sv in svals[0.0])
    slope = loglog_slope(SIGMAS, jac[0.0])
    margins = [
        at_most("eps = 0: max | |y| / sqrt(d) - 1 | over tokens (the sqrt(d) sphere)",
                sphere_err, 1e-12),
        # x - mu is rounded at eps_64 |x| per element and divided by sigma: with |mu| / sigma up
        # to 3 / 1e-3 the sum of d = 16 entries over sqrt(d) is ~ 4 eps_64 3e3 ~ 3e-12; 1e-10
        at_most("eps = 0: max |sum_i y_i| / sqrt(d) (the sum-zero hyperplane)", sum_err, 1e-10),
        at_most("eps = 0: max |sigma s_i - 1| over the d - 2 largest singular values of J",
                nonzero_err, 1e-9),
        at_most("eps = 0: two smallest singular values / largest (rank d - 2)", zero_rel, 1e-12),
        at_most("eps = 1e-5: max |(|y| - sqrt(d) sqrt(var/(var+eps))) / prediction|",
                norm_err, 1e-12),
        at_most("max |Jacobian spectral norm * sqrt(var + eps) - 1| (eps = 0 and 1e-5)",
                jac_err, 1e-9),
        close_to("log-log slope of |J|_2 in sigma at eps = 0", slope, -1.0, abs_=1e-6),
    ]
    return Evidence(
        predicted={"norm_eps0": "sqrt(d)", "rank_eps0": D - 2,
                   "norm": "sqrt(d) sqrt(var/(var+eps))", "jacobian": "1/sqrt(var+eps)"},
        measured={"sphere_rel_err_eps0": float(f"{sphere_err:.2e}"),
                  "jacobian_rank_eps0": rank,
                  "norm_rel_err": float(f"{norm_err:.2e}"),
                  "min_norm_over_sqrt_d": round(float((norm / root).min()), 4),
                  "jacobian_eps0": [float(f"{v:.4g}") for v in jac[0.0]],
                  "jacobian_eps1e-5": [float(f"{v:.4g}") for v in jac[EPS]],
                  "jacobian_slope_eps0": round(slope, 6)},
        tolerance="float64 round-off (1e-12 on norms, sums and zero singular values, 1e-9 on "
        "nonzero singular values)",
        verdict=decide(margins),
        margins=margins,
        notes=[
            f"d = {D}; 256 tokens with row means in [-3, 3] and scales 1e-3 .. 10; "
            f"eps = {EPS:g}.",
            f"Jacobians by autograd at x = 1.5 + sigma u for sigma in {SIGMAS}: at eps = 0 "
            f"rank {rank} = d - 2 and |J| = 1/sigma (up to {max(jac[0.0]):.3g}); at eps = 1e-5 "
            f"it saturates at 1/sqrt(eps) = {1 / math.sqrt(EPS):.1f}: LayerNorm with eps is "
            "globally Lipschitz, without eps it is not.",
            "With eps > 0 the norm falls below sqrt(d) (min |y| / sqrt(d) above) and after an "
            "anisotropic gamma the norms differ, as the seed itself says ('再被 γ 各向异性缩放').",
        ],
        figures=[Figure(
            title=msg("LayerNorm Jacobian spectral norm vs input scale"), xlabel="sigma",
            ylabel="|J|_2", logx=True, logy=True,
            series=[Series(msg("measured, eps = 0"), SIGMAS, jac[0.0], style="o-"),
                    Series(msg("measured, eps = 1e-5"), SIGMAS, jac[EPS], style="s-"),
                    Series("1/sqrt(sigma^2 + eps)", SIGMAS, jac_pred[EPS], style="--")])],
        details={"sigmas": SIGMAS, "jacobian": {str(k): v for k, v in jac.items()}},
    )
