"""Compute-optimal scaling: the training cost 6 N D, the Chinchilla optimum of the parametric
loss, and inference-aware sizing (000 §8.3.7 理论 C; Hoffmann et al. 2022; Sardana et al. 2024).

Three independent measurements, none of which restates the 20-tokens-per-parameter rule:

1. the cost model: the FLOPs of one training step of the project's Transformer, counted by
   ``torch.utils.flop_counter`` (``diagnostics.flops``), against the library's C = c N D
   (``theory.scaling_laws.training_flops``); and that C against Hoffmann et al.'s Table 3, whose
   rows list N, D and C separately;
2. the optimum: L(N, D) = E + A / N^alpha + B / D^beta with the fitted constants of Hoffmann
   et al. (eq. 10, Approach 3) minimised *numerically* along the budget line C = c N D
   (``numerical_compute_optimum``), against the Lagrange closed form N_opt = G (C/6)^a (exercise
   8.3.7-1) and against the seed's statements (D/N ~ 20; D = 1e9 -> N ~ 5e7; C = 1e21 ->
   N ~ 1e10, D ~ 2e11);
3. (``architecture.inference-aware-sizing``, kind ``model``) Sardana et al.'s inference-aware
   optimum, computed by the project's own model (fixed loss, 6 N D_train + 2 N D_inf): smaller
   and cheaper in total, with no fixed tokens-per-parameter ratio.

Issue 31: ``architecture.chinchilla`` is a ``code-audit`` of the seed's numbers (its example
recomputed against the paper's own fit and the counted cost), one record for the C = 1e21 error
(000:1148, with 1150 and 1154 that rest on it); the inference-aware part, whose verdict is the
model's, is its own claim; the records of 000:1146 / 1708 ("1800+") were dropped.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from transformer_math.claims.architecture._common import SEED_000
from transformer_math.claims.registry import (
    Context,
    Correction,
    Evidence,
    Refutation,
    at_least,
    at_most,
    claim,
    close_to,
    decide,
)
from transformer_math.diagnostics.flops import count_flops
from transformer_math.i18n.message import msg
from transformer_math.nn.config import TransformerConfig
from transformer_math.nn.transformer import build_transformer
from transformer_math.theory.scaling_laws import (
    CHINCHILLA_LOSS,
    CHINCHILLA_TABLE_3,
    ComputeOptimum,
    approach_3,
    compute_optimal,
    inference_aware_optimum,
    numerical_compute_optimum,
    training_flops,
)

SEED_C, SEED_N, SEED_D = 1e21, 1e10, 2e11  # 000 line 1148: the seed's worked example
SEED_DATA, SEED_DATA_N = 1e9, 5e7  # 000 line 1144: data-limited sizing
EXERCISE_DATA = 5e8  # 000 line 1192: exercise 8.3.7-3, 5e8 tokens of robot demonstrations
SEED_RATIO = 1800.0  # 000 lines 1146, 1152, 1708: the seed's "inference-optimal D/N"
RATIO_BAND = 2.0  # "about": within a factor 2 (the seed's numbers are orders of magnitude)


def counted_training_flops(ctx: Context) -> tuple[float, float]:
    """(counted FLOPs of one forward + backward step, library C = c N D for that step) of a
    project Transformer (d = 256, 2 layers, 16 tokens; N = every parameter that multiplies)."""
    cfg = TransformerConfig(hidden_size=256, num_layers=2, num_heads=4, vocab_size=512,
                            position="none", attention_backend="reference")
    model = build_transformer(cfg, ctx.generator(18))
    g = ctx.generator(19)
    batch, seq = 2, 16
    ids = torch.randint(0, 512, (batch, seq), generator=g)

    def step() -> None:
        logits = model(ids)
        nn.functional.cross_entropy(logits.reshape(-1, 512), ids.reshape(-1)).backward()

    counted = count_flops(step).total
    # N: parameters taking part in matrix products (the embedding lookup and the norms do not)
    params = sum(p.numel() for name, p in model.named_parameters()
                 if p.dim() == 2 and "embed_tokens" not in name)
    return float(counted), training_flops(params, batch * seq)


def _argmin_resolution(flops: float) -> float:
    """Relative resolution of a numerical argmin of L along the budget line: |d log N| ~
    sqrt(2 eps_64 L / L''), L'' the curvature in log N (finite differences)."""
    fit = approach_3()
    n0 = fit.params_for_flops(flops)

    def loss(log_n: float) -> float:
        n = math.exp(log_n)
        return CHINCHILLA_LOSS(n, flops / (6.0 * n))

    h = 1e-2
    x = math.log(n0)
    curv = (loss(x + h) - 2 * loss(x) + loss(x - h)) / h**2
    return math.sqrt(2 * 2.2e-16 * loss(x) / curv)


@claim(
    "architecture.chinchilla",
    source=f"{SEED_000} 理论 C (M4), its D = 1e9 sizing and C = 1e21 example; Hoffmann et al. "
    "2022 eq. 10 and Table 3; Kaplan et al. 2020 §2.1",
    statement="""Training costs C = 6 N D (counted on the project's Transformer, and Table 3's
    rows). Minimising Chinchilla's fitted loss E + A/N^alpha + B/D^beta along C = 6 N D
    numerically gives the Lagrange optimum N ~ C^0.46, about 20 tokens per parameter (within a
    factor 2 at C = 1e21) and D = 1e9 -> N ~ 5e7 as the seed says (D = 5e8 -> N ~ 2.5e7,
    exercise 8.3.7-3). The seed's C = 1e21 example
    (N ~ 1e10, D ~ 2e11) is refuted: it costs 6 N D = 1.2e22 FLOPs, and the optimum at 1e21 is
    N ~ 2e9, D ~ 8e10; the seed's "200x smaller" and "four orders of magnitude" rest on that
    1e10 (38x and 3.6 decades with the optimum at 1e21).""",
    falsifier="scaling.training-cost-2nd",
    expected="refuted",
    version=4,
    kind="code-audit",
    audit="""Issue 31 review: problem (f), 6 records for ~2 errors, 1146/1708 refuted through the
    project's inference-aware model. Fixed: this claim recomputes the seed's own numbers (kind
    code-audit: its example's 6 N D, and its optimum against the fit the seed quotes,
    Hoffmann et al.'s Approach 3) and books ONE error, 000:1148, with 1150 (200x) and 1154 (four
    orders of magnitude) as also= lines: both rest on the wrong 1e10. 000:1152 (N = D / 1800 at
    the same D) moved to architecture.inference-aware-sizing (kind model), where it is refuted
    on the model's terms. 000:1146 and 1708 ("D/N from 20 to 1800+") are dropped: without a
    stated inference demand the inference-aware ratio is undetermined, and 1800 is one point
    of the model's curve (40 .. 1e5 over 1e10 .. 1e15 inference tokens), so refuting it rests
    on the project's modelling choices only. The FLOP counting part (sound in the review) is
    unchanged. Added (review section 5): exercise 8.3.7-3 (1), D = 5e8 tokens -> N ~ 2.5e7 by
    D/N ~ 20, checked on the same fitted surface within the claim's factor-2 'about' band (the
    exercise is not refutable; this is a verified margin).""",
    seed_refs=[("000", 1124, 1154), ("000", 1583, 1583), ("000", 1192, 1192)],  # project M4
    refutes=[
        Refutation(
            seed="000", line=1148,
            quote="得 \\(N^\\star\\approx 10^{10}\\)（100 亿参数）、\\(D^\\star\\approx 2\\times "
            "10^{11}\\)（2000 亿 token）",
            also=(1150, 1154),
            says="C = 1e21 FLOPs -> N* ~ 1e10 parameters, D* ~ 2e11 tokens (1150: 5e7 is 200x "
            "smaller than this 1e10; 1154: the optima span four orders of magnitude, 1e10 .. "
            "5.5e5)",
            reading="the pair (1e10, 2e11) fits the budget (6 N D within 10 % of 1e21) and is "
            "the optimum of Chinchilla's fit at 1e21 within a factor 2 in N and in D; the "
            "ratio to the data-limited 5e7 is 200 within a factor 2; 1e10 / 5.5e5 spans >= 4 "
            "decades",
            correct="that pair costs 6 N D = 1.2e22 FLOPs (12x the budget); the optimum of "
            "Chinchilla's fitted loss at C = 1e21 is N ~ 2.2e9, D ~ 7.5e10 (34 tokens/param), "
            "~38x the data-limited ~5.9e7 (not 200x) and 3.6 decades above 5.5e5"),
    ],
    statement_zh="""训练代价 C = 6 N D（在项目的 Transformer 上计数，并与 Table 3 各行核对）。沿
    C = 6 N D 数值最小化 Chinchilla 拟合损失 E + A/N^alpha + B/D^beta，得到拉格朗日最优
    N ~ C^0.46，在 C = 1e21 处约每参数 20 个 token（2 倍以内），且 D = 1e9 -> N ~ 5e7，与种子一致
    （练习 8.3.7-3：D = 5e8 -> N ~ 2.5e7）。
    种子的 C = 1e21 例子（N ~ 1e10、D ~ 2e11）被否定：它的代价是 6 N D = 1.2e22 FLOPs，而 1e21 处的
    最优是 N ~ 2e9、D ~ 8e10；种子的"小 200 倍"和"跨四个数量级"依赖这个 1e10（用 1e21 的最优
    分别是 38 倍和 3.6 个数量级）。""",
)
def check_chinchilla(ctx: Context) -> Evidence:
    """Version 4 (issue 31): the inference-aware margins and 000:1146/1152/1708 moved out
    (``architecture.inference-aware-sizing``, or dropped); the C = 1e21 error is one record."""
    counted, library = counted_training_flops(ctx)
    table = [training_flops(n, d) / c for n, c, d in CHINCHILLA_TABLE_3]
    fit = approach_3()
    budgets = [1e19, 1e20, 1e21, 1e22, 1e23, 1e24]
    optima = [numerical_compute_optimum(CHINCHILLA_LOSS, c) for c in budgets]
    closed_err = max(abs(o.params / fit.params_for_flops(c) - 1)
                     for o, c in zip(optima, budgets, strict=True))
    resolution = max(_argmin_resolution(c) for c in budgets)
    slope = (math.log(optima[-1].params) - math.log(optima[0].params)) / (
        math.log(budgets[-1]) - math.log(budgets[0]))
    ratios = [o.tokens_per_param for o in optima]
    at_seed_c = optima[budgets.index(SEED_C)]
    data_limited = _data_limited_optimum()
    exercise = _data_limited_optimum(EXERCISE_DATA)  # exercise 8.3.7-3 (1), 000:1192
    seed_cost = training_flops(SEED_N, SEED_D)
    seed_small = SEED_DATA / SEED_RATIO  # the seed's N = D / 1800 at the same D (000:1152)
    ratio_200 = at_seed_c.params / data_limited.params
    decades = math.log10(at_seed_c.params / seed_small)
    ctx.report_progress(1.0)
    # Tolerances: counted FLOPs exceed 6 N per token by the attention products 4 T d per layer
    # and token over 2 N per token (T / (6 d) ~ 1 % here, d = 256, T = 16) plus nothing else
    # counted: 3 %. Table 3's rows are rounded projections (67B: 6 N D / C = 1.047): 10 %.
    # The numerical argmin is resolved to sqrt(2 eps L / L''), ~1e-8; the bound is 100x that.
    margins = [
        at_most("|counted FLOPs of a training step / (c N D) - 1|", abs(counted / library - 1),
                0.03),
        at_most("max over Table 3 rows of |c N D / C - 1|", max(abs(r - 1) for r in table), 0.10),
        at_most("max |numerical N_opt / closed-form G (C/6)^a - 1|", closed_err,
                100 * resolution),
        at_most("|log2(tokens/param at C = 1e21 / 20)| (about 20 tokens per parameter)",
                abs(math.log2(at_seed_c.tokens_per_param / 20)), math.log2(RATIO_BAND)),
        at_most("|log2(N for D = 1e9 / 5e7)| (the seed's data-limited sizing)",
                abs(math.log2(data_limited.params / SEED_DATA_N)), math.log2(RATIO_BAND)),
        at_most("|log2(N for D = 5e8 / 2.5e7)| (exercise 8.3.7-3 (1): D/N ~ 20)",
                abs(math.log2(exercise.params / (EXERCISE_DATA / 20))), math.log2(RATIO_BAND)),
    ]
    seed_margins = [
        at_most("seed 000:1148: |c N D / C - 1| (N = 1e10, D = 2e11, C = 1e21)",
                abs(seed_cost / SEED_C - 1), 0.10),
        at_most("seed 000:1148: |log2(N_opt(1e21) / 1e10)|",
                abs(math.log2(at_seed_c.params / SEED_N)), math.log2(RATIO_BAND)),
        at_most("seed 000:1148: |log2(D_opt(1e21) / 2e11)|",
                abs(math.log2(at_seed_c.tokens / SEED_D)), math.log2(RATIO_BAND)),
        at_most("seed 000:1150 (same error): |log2(N_opt(1e21) / N(D = 1e9) / 200)|",
                abs(math.log2(ratio_200 / 200)), math.log2(RATIO_BAND)),
        at_least("seed 000:1154 (same error): decades from N_opt(1e21) to the seed's 5.5e5",
                 decades, 4.0),
    ]
    return Evidence(
        predicted={"cost_per_param_token": 6.0, "N_exponent": round(fit.a, 4),
                   "N_for_D_1e9": SEED_DATA_N,
                   "seed_example": {"N": SEED_N, "D": SEED_D, "C": SEED_C}},
        measured={
            "counted_over_library_cost": round(counted / library, 4),
            "table3_cost_ratios": [round(r, 3) for r in table],
            "numerical_vs_closed_form_max_rel": float(f"{closed_err:.2e}"),
            "N_exponent": round(slope, 4),
            "tokens_per_param": {f"{c:.0e}": round(r, 1) for c, r in
                                 zip(budgets, ratios, strict=True)},
            "N_for_D_1e9": float(f"{data_limited.params:.3g}"),
            "N_for_D_5e8": float(f"{exercise.params:.3g}"),
            "at_C_1e21": {"N": float(f"{at_seed_c.params:.3g}"),
                          "D": float(f"{at_seed_c.tokens:.3g}")},
            "seed_example_cost": seed_cost,
        },
        tolerance="counted vs c N D 3 % (attention products T / (6 d) ~ 1 %); Table 3 10 % "
        "(its rounded rows, worst 4.7 %); numerical vs closed-form argmin 100 x the float64 "
        "resolution of an argmin; 'about' = within a factor 2",
        verdict=decide(margins, seed_margins),
        margins=margins,
        seed_margins=seed_margins,
        notes=[
            msg("Counted: one forward + backward step of a project Transformer (d = 256, 2 "
                "layers, 32 tokens) under FlopCounterMode: {counted:.4g} FLOPs; library c N D = "
                "{library:.4g} (N = parameters of the matrix products, embedding lookup excluded).",
                counted=counted, library=library),
            msg("Version 2 (issue 14): the former check reproduced Table 3 from Approach 1, which "
            "encodes D = 20 N and C = 6 N D, an identity; and its 'refuted' was a literal. Now "
            "the cost is counted, the optimum is found numerically on the fitted loss surface, "
            "and the seed's example is tested against both (seed_margins)."),
            msg("Numerical optimum (Approach 3 constants E 1.69, A 406.4, B 410.7, alpha 0.339, "
                "beta 0.285): N_opt ~ C^{slope:.3f}; tokens/param grows from {ratio_low:.0f} "
                "(1e19) to {ratio_high:.0f} (1e24), so '20' holds only near the small end (the "
                "Epoch replication, Besiroglu et al. 2024, gives ~20 throughout).", slope=slope,
                ratio_low=ratios[0], ratio_high=ratios[-1]),
            f"Seed's example: 6 N D = {seed_cost:.2g} = {seed_cost / SEED_C:.0f} x its budget; "
            f"the optimum at C = 1e21 is N = {at_seed_c.params:.3g}, D = {at_seed_c.tokens:.3g}; "
            f"N_opt(1e21) / N(D = 1e9) = {ratio_200:.0f} (seed 200); log10(N_opt(1e21) / 5.5e5) "
            f"= {decades:.2f} (seed: four orders).",
            "Version 4 (issue 31): one record for the 1e21 error (1148, also 1150 and 1154); "
            "the inference-aware sizing (000:1146, 1152, 1708) is architecture.inference-aware-"
            "sizing, a claim of kind model.",
        ],
        details={"table3_cost_ratios": table, "budgets": budgets,
                 "numerical_optima": [o.to_json() for o in optima]},
    )


def _data_limited_optimum(tokens: float = SEED_DATA) -> ComputeOptimum:
    """The compute optimum of Chinchilla's fit whose tokens are D = ``tokens`` (bisection in
    log C; D_opt(C) is increasing)."""
    lo, hi = math.log(1e12), math.log(1e24)
    for _ in range(40):  # bracket 27.6 / 2^40 in log C: far below the 2x tolerance
        mid = (lo + hi) / 2
        if numerical_compute_optimum(CHINCHILLA_LOSS, math.exp(mid)).tokens < tokens:
            lo = mid
        else:
            hi = mid
    return numerical_compute_optimum(CHINCHILLA_LOSS, math.exp((lo + hi) / 2))


@claim(
    "architecture.inference-aware-sizing",
    source=f"{SEED_000} 理论 C (000:1146-1152, 000:1708); Sardana et al. 2024; Hoffmann et al. "
    "2022 eq. 10 (Approach 3)",
    statement="""In the project's inference-aware model (Sardana et al.: minimise
    6 N D_train + 2 N D_inf at the loss of the compute-optimal model, on Chinchilla's fitted
    loss), the optimum is smaller and cheaper in total than the compute optimum, its
    tokens-per-parameter ratio grows with the inference demand (~40 to ~1e5 over 1e10..1e15
    inference tokens at C = 1e21) and, at a fixed loss, it trains on MORE tokens than the
    compute-optimal model. N = D / 1800 at the same D = 1e9 (the seed's 5.5e5) is a different,
    much worse model (fitted loss ~7.4 vs ~3.8 nats), not the inference-aware optimum.""",
    falsifier="scaling.inference-aware-fixed-tokens",
    expected="refuted",
    version=1,
    kind="model",
    audit="""Issue 31: new, split from architecture.chinchilla (review: 1146/1708 refuted
    through the project's own inference-aware model, a modelling choice). Its verdicts are the
    model's (kind model): fixed loss, 2 N FLOPs per inference token, Chinchilla's Approach 3
    surface. It books one error, 000:1152 (V in the review: fixed D is not fixed loss): the
    seed divides the same D = 1e9 by 1800, while the inference-aware optimum holds the loss
    and trains the smaller model on more data. 000:1146 / 1708 ("1800+") are not booked: the
    ratio depends on an inference demand the seed does not state. Thresholds: 0.01 nats for
    'the same loss' (the fitted surface's E is given to 2 decimals); the others are
    inequalities of the model (smaller, cheaper, growing) with no tolerance. The falsifier
    plants the seed's reading in the model (training tokens held fixed).""",
    seed_refs=[("000", 1146, 1152), ("000", 1708, 1708)],
    refutes=[
        Refutation(
            seed="000", line=1152,
            quote="同样 \\(D=10^9\\) token 下最优 \\(N^\\star\\approx D/1800\\approx "
            "5.5\\times 10^5\\)",
            says="with the same D = 1e9 tokens, the inference-optimal N* ~ D / 1800 ~ 5.5e5",
            reading="N = D / 1800 at the same D is an inference-aware optimum, i.e. a model "
            "of (about) the loss of the data-limited model: |L(5.5e5, 1e9) - L(N_data, 1e9)| "
            "<= 0.01 nats on Chinchilla's fitted surface",
            correct="Sardana et al. hold the LOSS fixed and train the smaller model on more "
            "tokens; dividing a fixed D by a ratio gives a model whose fitted loss is ~2x that "
            "of the data-limited model (7.4 vs 3.8 nats), not the inference-aware optimum"),
    ],
    corrections=[Correction(
        seed="000", line=1146,
        says="OpenVLA 7B trained on 970k episodes (D/N ~ 140) embodies this trade-off",
        correct="Kim et al. report a 7B model trained on 970k robot demonstrations; they give "
        "no tokens-per-parameter figure and no inference-aware sizing argument: D/N ~ 140 "
        "(~1e12 tokens) is not sourced in the paper",
        source="Kim et al. 2024, 'OpenVLA: An Open-Source Vision-Language-Action Model' "
        "(arXiv 2406.09246), abstract and training details; Sardana et al. 2024 (ICML, arXiv "
        "2401.00448) for the inference-aware objective (FACTS.md: no fixed 1800)")],
    statement_zh="""在项目的推理感知模型中（Sardana 等：在计算最优模型的损失下最小化
    6 N D_train + 2 N D_inf，基于 Chinchilla 拟合损失），最优模型比计算最优模型更小、总代价更低，
    其每参数 token 比随推理需求增长（C = 1e21 时推理 token 从 1e10 到 1e15，约从 40 增到 1e5），
    并且在固定损失下它比计算最优模型用更多训练 token。在同样 D = 1e9 下取 N = D / 1800（种子的
    5.5e5）是另一个差得多的模型（拟合损失约 7.4 对 3.8 nats），不是推理感知最优。""",
)
def check_inference_aware_sizing(ctx: Context) -> Evidence:
    """Margins (the model's): inference-aware N <= compute-optimal N and total FLOPs <= the
    compute optimum's (C = 1e21, 1e13 inference tokens); tokens/param at 1e15 inference tokens
    >= 10 x that at 1e10; at the D = 1e9 model's loss, D_train >= 1e9 and the loss equal to
    1e-6 relative. Seed margin (000:1152): |L(1e9 / 1800, 1e9) - L(N_data, 1e9)| <= 0.01."""
    base3 = compute_optimal(flops=SEED_C, approach="3")
    inf = inference_aware_optimum(base3, 1e13)
    demands = [1e10, 1e11, 1e12, 1e13, 1e14, 1e15]
    inf_ratios = [o.tokens / o.params for o in (inference_aware_optimum(base3, q)
                                                  for q in demands)]
    data_limited = _data_limited_optimum()
    data_inf = inference_aware_optimum(data_limited, 1e13, approach="3")
    seed_small = SEED_DATA / SEED_RATIO
    loss_small = CHINCHILLA_LOSS(seed_small, SEED_DATA)
    loss_data = CHINCHILLA_LOSS(data_limited.params, SEED_DATA)
    ctx.report_progress(1.0)
    margins = [
        at_most("inference-aware N / compute-optimal N", inf.params / base3.params, 1.0),
        at_most("inference-aware total FLOPs / compute-optimal total FLOPs",
                inf.total_flops / inf.compute_optimal_total_flops, 1.0),
        at_least("inference-aware tokens/param at 1e15 / at 1e10 inference tokens (it grows "
                 "with the demand)", inf_ratios[-1] / inf_ratios[0], 10.0),
        at_least("inference-aware D_train / 1e9 at the loss of the D = 1e9 model (more data, "
                 "not the same D)", data_inf.tokens / SEED_DATA, 1.0),
        close_to("inference-aware loss at D = 1e9's loss (fixed-loss optimum)",
                 data_inf.loss, loss_data, rel=1e-6),
    ]
    seed_margins = [
        at_most("seed 000:1152: |L(D/1800, D) - L(N_data-limited, D)| at D = 1e9 (an "
                "inference-aware optimum keeps the loss)", abs(loss_small - loss_data), 0.01),
    ]
    savings = 1 - inf.total_flops / inf.compute_optimal_total_flops
    return Evidence(
        predicted={"inference-aware N": "< compute-optimal N", "ratio": "grows with demand",
                   "D_train at fixed loss": "> 1e9"},
        measured={"N_ratio": round(inf.params / base3.params, 4),
                  "total_flops_ratio": round(inf.total_flops / inf.compute_optimal_total_flops,
                                             4),
                  "tokens_per_param_by_demand": {f"{q:.0e}": round(r, 1) for q, r in
                                                 zip(demands, inf_ratios, strict=True)},
                  "D_train_at_D_1e9_loss": float(f"{data_inf.tokens:.3g}"),
                  "loss_seed_N": round(loss_small, 3), "loss_data_limited": round(loss_data, 3)},
        tolerance="inequalities of the model; 'the same loss' within 0.01 nats",
        verdict=decide(margins, seed_margins),
        margins=margins,
        seed_margins=seed_margins,
        notes=[
            "A model's verdict (kind model): the objective is Sardana et al.'s (fixed loss, "
            "6 N per training token, 2 N per inference token) on Chinchilla's Approach 3 "
            "surface; nothing here is measured on a trained network.",
            "Inference-aware tokens/param at the 1e21 optimum's loss for inference demands "
            + ", ".join(f"{q:.0e}: {r:.0f}" for q, r in zip(demands, inf_ratios, strict=True))
            + f"; at the D = 1e9 model's loss (N = {data_limited.params:.3g}, L = "
            f"{loss_data:.3f}) with 1e13 inference tokens: N = {data_inf.params:.3g}, D_train = "
            f"{data_inf.tokens:.3g}; the seed's N = 1e9 / 1800 = {seed_small:.3g} has L = "
            f"{loss_small:.3f}.",
            f"C = 1e21, 1e13 inference tokens: N = {inf.params:.3g} "
            f"({inf.tokens / inf.params:.0f} tokens/param) instead of {base3.params:.3g}, "
            f"total FLOPs -{100 * savings:.0f} %.",
        ],
        details={"inference_aware": inf.to_json(), "demands": demands,
                 "tokens_per_param": inf_ratios},
    )
