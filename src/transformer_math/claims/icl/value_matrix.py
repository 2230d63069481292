"""The value matrix of the one-step-GD construction: the seed's W_V against the working one.

000:929 writes W_V = eta [[0, 0], [I_d^T, 0]] in the (d+1) x (d+1) block layout whose rows are
(features, label). Its bottom-left block sits in the label row (1 x d), where I_d^T (d x d) does
not fit unless d = 1; and at d = 1 (or with I_d^T read as the 1 x d row of ones, the nearest
buildable reading) the value carries the features, not the label, so the layer computes
(eta/N) sum_i (1^T x_i)(x_i^T x_q) instead of the GD step (eta/N) sum_i y_i (x_i^T x_q).
von Oswald et al. 2023, Prop. 1 (FACTS.md) put the label in the value: W_V = [[0, 0], [0, -1]]
with P = (eta/N) e_{d+1} e_{d+1}^T (``theory.icl_construction.one_step_gd_weights``). The check
builds both in the project's ``nn.linear_self_attention`` and compares with GD from residuals.
"""

from __future__ import annotations

import torch

from transformer_math.claims.icl._shared import SOURCE
from transformer_math.claims.icl.gd_construction import constructed_model
from transformer_math.claims.registry import (
    Context,
    Evidence,
    Refutation,
    Tier,
    at_least,
    at_most,
    claim,
    decide,
)
from transformer_math.nn.init import no_init_draws
from transformer_math.nn.linear_self_attention import LinearSelfAttention, regression_tokens
from transformer_math.theory.icl_construction import gd_iterates, one_step_gd_weights

DIMS = list(range(1, 9))


def seed_value_matrix(dim: int, eta: float, lower_left: torch.Tensor) -> torch.Tensor:
    """eta [[0_{d x d}, 0_{d x 1}], [lower_left, 0]] assembled block by block (000:929).

    Raises (torch's shape check) when ``lower_left`` is not 1 x d, the label row's width."""
    top = torch.cat([torch.zeros(dim, dim, dtype=torch.float64),
                     torch.zeros(dim, 1, dtype=torch.float64)], dim=1)
    bottom = torch.cat([lower_left, torch.zeros(lower_left.shape[0], 1, dtype=torch.float64)],
                       dim=1)
    return eta * torch.cat([top, bottom], dim=0)


def buildable(dim: int) -> bool:
    """Whether the seed's W_V with the block I_d^T can be assembled as a (d+1) x (d+1) matrix."""
    try:
        w = seed_value_matrix(dim, 1.0, torch.eye(dim, dtype=torch.float64).T)
    except RuntimeError:
        return False
    return tuple(w.shape) == (dim + 1, dim + 1)


def seed_reading_error(dim: int, eta: float, n: int, g: torch.Generator) -> float:
    """max |y_hat - x_q^T w_1| of one layer with the seed's W_V read as eta [[0,0],[1_d^T,0]]
    (= eta [[0,0],[I_1^T,0]] at d = 1), the construction's W_K = W_Q and P = (1/N) e e^T."""
    weights = one_step_gd_weights(dim, 1.0, n)  # W_K, W_Q of the construction (the seed's too)
    value = seed_value_matrix(dim, eta, torch.ones(1, dim, dtype=torch.float64))
    projection = torch.zeros(dim + 1, dim + 1, dtype=torch.float64)
    projection[dim, dim] = 1.0 / n
    with no_init_draws():
        model = LinearSelfAttention(dim + 1, 1, dtype=torch.float64)
    model.layers[0].load_weights(weights.key, weights.query, value, projection)
    x = torch.randn(64, n, dim, generator=g, dtype=torch.float64)
    y = torch.randn(64, n, generator=g, dtype=torch.float64)
    xq = torch.randn(64, dim, generator=g, dtype=torch.float64)
    with torch.no_grad():
        pred = model.predict(regression_tokens(x, y, xq))
    w1 = gd_iterates(x, y, eta, 1)[1]
    return float((pred - (xq * w1).sum(-1)).abs().max())


def construction_error(dim: int, eta: float, n: int, g: torch.Generator) -> float:
    """max |y_hat - x_q^T w_1| of one layer of the project's construction (label as value)."""
    x = torch.randn(64, n, dim, generator=g, dtype=torch.float64)
    y = torch.randn(64, n, generator=g, dtype=torch.float64)
    xq = torch.randn(64, dim, generator=g, dtype=torch.float64)
    with torch.no_grad():
        pred = constructed_model(dim, eta, n, 1).predict(regression_tokens(x, y, xq))
    w1 = gd_iterates(x, y, eta, 1)[1]
    return float((pred - (xq * w1).sum(-1)).abs().max())


@claim(
    "icl.seed-value-matrix",
    source=f"{SOURCE} (显式权重构造, 000:929); von Oswald et al. 2023, Prop. 1; FACTS.md",
    statement="""The one-step-GD construction needs the LABEL as the value: with
    W_V = [[0,0],[0,-1]] and P = (eta/N) e e^T one linear self-attention layer predicts
    x_q^T w_1, w_1 = (eta/N) X^T y (float64 error < 1e-10, d = 1..8). The seed's
    W_V = eta [[0,0],[I_d^T,0]] cannot be assembled in the (d+1) x (d+1) layout for any d >= 2
    (I_d^T is d x d, the label row 1 x d), and where it can (d = 1, or I_d^T read as a row of
    ones) its value carries the features, and the layer's prediction misses the GD step by
    O(1).""",
    tier=Tier.QUICK,
    falsifier="icl.gd-value-sign",
    expected="refuted",
    version=1,
    seed_refs=[("000", 929, 933)],
    refutes=[Refutation(
        seed="000", line=929,
        says="W_V = eta [[0, 0], [I_d^T, 0]] makes the value carry the label y_i",
        correct="that block is d x d in a 1 x d slot (buildable only at d = 1), and it puts the "
        "features in the value; the working construction (von Oswald et al. 2023, Prop. 1) "
        "takes the label: W_V = [[0, 0], [0, -1]], P = (eta/N) e_{d+1} e_{d+1}^T")],
    statement_zh="""一步梯度下降构造需要把标签作为值：取 W_V = [[0,0],[0,-1]]、P = (eta/N) e e^T，
    单层线性自注意力的预测等于 x_q^T w_1，w_1 = (eta/N) X^T y（float64 误差 < 1e-10，d = 1..8）。
    种子的 W_V = eta [[0,0],[I_d^T,0]] 在 (d+1)×(d+1) 分块布局中对任何 d >= 2 都无法拼出
    （I_d^T 是 d×d，而标签行只有 1×d）；能拼出时（d = 1，或把 I_d^T 读作全 1 行），值携带的是特征，
    该层的预测与梯度下降一步相差 O(1)。""",
)
def check_seed_value_matrix(ctx: Context) -> Evidence:
    g = ctx.generator(521)
    eta, n = 0.7, 12
    correct = [construction_error(d, eta, n, g) for d in DIMS]
    built = [d for d in DIMS if buildable(d)]
    seed_errors = {d: seed_reading_error(d, eta, n, g) for d in (1, 3)}
    margins = [
        at_most("max over d = 1..8 of |y_hat(label as value) - x_q^T w_1|", max(correct), 1e-10),
    ]
    seed_margins = [
        at_least("fraction of d = 1..8 for which the seed's W_V can be assembled",
                 len(built) / len(DIMS), 1.0),
        at_most("seed's W_V at d = 1: max |y_hat - x_q^T w_1|", seed_errors[1], 1e-10),
        at_most("seed's W_V read as eta [[0,0],[1^T,0]] at d = 3: max |y_hat - x_q^T w_1|",
                seed_errors[3], 1e-10),
    ]
    return Evidence(
        predicted="y_hat = x_q^T w_1 with the label as value; the seed's block does not fit",
        measured={"construction_max_error": float(f"{max(correct):.2e}"),
                  "seed_buildable_dims": built,
                  "seed_reading_error_d1": round(seed_errors[1], 4),
                  "seed_reading_error_d3": round(seed_errors[3], 4)},
        tolerance="1e-10 (float64 round-off of sums of 12 products is ~1e-15)",
        verdict=decide(margins, seed_margins),
        margins=margins,
        seed_margins=seed_margins,
        notes=[
            "the seed's W_V is assembled block by block with torch.cat; for d >= 2 torch "
            "rejects a d x d block in the 1 x d label row (the shapes the construction needs)",
            "the registry's construction (icl.one-step-gd) silently used the label as the "
            "value; this claim reports the seed's version (SEED_AUDIT 000:929)",
            f"eta = {eta}, N = {n}, 64 prompts per d; x, y, x_q ~ N(0, 1)",
        ],
        details={"construction_errors": dict(zip(map(str, DIMS), correct, strict=True)),
                 "seed_errors": {str(k): v for k, v in seed_errors.items()}},
    )
