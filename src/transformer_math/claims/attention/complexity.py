"""Counts of multi-head attention: its parameters and the FLOPs of its matrix products.

Sources: the third seed 004 "Self-Attention机制" (多头注意力 参数量分析, 计算复杂度分析 table);
Vaswani et al. 2017, §3.2.2 and Table 1. The closed forms of the FLOPs are
``theory.attention_flops``.
"""

from __future__ import annotations

import itertools
from typing import Any

import torch
from torch import Tensor, nn

from transformer_math.claims.attention._common import (
    SEED_004,
    build_mha,
    forward_with_pattern,
    single_threaded,
)
from transformer_math.claims.registry import (
    Context,
    Evidence,
    Margin,
    Refutation,
    at_least,
    at_most,
    claim,
    close_to,
    decide,
)
from transformer_math.diagnostics import count_flops
from transformer_math.functional import scaled_dot_product_attention
from transformer_math.i18n.message import msg
from transformer_math.nn import MultiHeadAttention, count_parameters
from transformer_math.nn.init import no_init_draws
from transformer_math.theory.attention_flops import (
    attention_product_flops,
    linear_attention_product_flops,
    projection_flops,
)

# ---------------------------------------------------------------------------------------------
# attention.multihead-param-count (audit of the third seed's table)
# ---------------------------------------------------------------------------------------------

#: "约360K" (about 360K): a relative tolerance of 5 % is far wider than the three printed digits
#: (0.14 %) and still a factor 2.9 from the measured 1,048,576 weights.
_SEED_TOTAL_REL = 0.05


@claim(
    "attention.multihead-param-count",
    source=f"{SEED_004} 多头注意力 参数量分析",
    statement="""The third seed's table for d_model = 512, h = 8, d_k = d_v = 64 gives
    W_Q, W_K, W_V = 3 x 512 x 64 = 98,304 and a total of about 360K. Refuted: multi-head
    attention has 4 d^2 = 1,048,576 weights whatever h (786,432 in W_Q, W_K, W_V), 4 d^2 + 4 d =
    1,050,624 parameters with biases; with H_kv grouped key/value heads (H + 2 H_kv) d_k (d + 1)
    + d^2 + d.""",
    falsifier="attention.gqa-kv-heads-ignored",
    expected="refuted",
    version=2,
    seed_refs=[("004", 122, 131)],
    kind="measurement",
    refutes=[
        Refutation(seed="004", line=127, also=(129,),
                   quote=r"3\times h\times d_{\text{model}}\times d_k=3\times 512\times 64=98,304",
                   says="W_Q^i, W_K^i, W_V^i: 3 x h x d_model x d_k = 3 x 512 x 64 = 98,304; "
                   "hence (004:129) a total of about 360K parameters, comparable to one "
                   "512 x 512 head (262K)",
                   reading="the row's count of the Q, K, V weights of MHA(512, 8), exact, and "
                   "'about 360K' as the weight count within 5 %",
                   correct="3 x 8 x 512 x 64 = 786,432 (the factor h is dropped); in all 4 d^2 = "
                   "1,048,576 weights (1,050,624 with biases), independent of h"),
    ],
    audit="""Issue 31 review: sound (real arithmetic errors of the table, counted on the
    project's MHA and torch's). Version 2's two records are merged into one (004:127, also
    129): the total of 004:129 is 004:127's dropped factor h carried into the sum
    (98,304 + 262,144 = 360,448), one slip, counted once. The 5 % band on 'about 360K' is wider
    than the printed digits (0.14 %) and a factor 2.9 from the count.""",
)
@single_threaded
def check_multihead_param_count(ctx: Context) -> Evidence:
    """``count_parameters`` of the project's ``MultiHeadAttention(512, 8)`` (with and without
    biases) and of a grouped-query variant (H_kv = 2), against the closed forms; the seed's
    numbers are computed against the same counts (``seed_margins``).

    Closed form: each of W_Q, W_K, W_V, W_O is d x d (h heads of d x d_k, h d_k = d) plus a bias of
    d: 4 d^2 + 4 d; with H_kv key/value heads W_K and W_V are d x H_kv d_k. The seed's row
    "3 x h x d_model x d_k = 3 x 512 x 64" drops the factor h = 8 (3 x 8 x 512 x 64 = 786,432),
    and its remark "comparable to one 512 x 512 head" follows from that slip.
    ``torch.nn.MultiheadAttention(512, 8)`` is counted as an outside reference.

    Version 2 (issue 14): the refutation is measured (the seed's 98,304 and ~360K against the
    counted weights, ``seed_margins``) instead of ``refutes_seed=seed_total != measured``; the
    falsifier is the planted bug ``attention.gqa-kv-heads-ignored`` (the K/V projections sized
    for all H heads in a GQA configuration), not a swapped prediction.
    """
    del ctx  # the count does not depend on the weights' values
    d, h, h_kv = 512, 8, 2
    d_k = d // h
    with no_init_draws():  # only shapes are counted: no values are drawn
        mha = MultiHeadAttention(d, h)
        weights_only = MultiHeadAttention(d, h, bias=False)
        gqa = MultiHeadAttention(d, h, num_kv_heads=h_kv)
        torch_mha = nn.MultiheadAttention(d, h)
    measured = count_parameters(mha)
    measured_weights = count_parameters(weights_only)
    qkv_measured = sum(count_parameters(p) for p in (mha.q_proj, mha.k_proj, mha.v_proj))
    qkv_weights = sum(p.weight.numel() for p in (mha.q_proj, mha.k_proj, mha.v_proj))
    seed_qkv, seed_wo = 3 * d * d_k, h * d_k * d
    seed_total = seed_qkv + seed_wo  # 360,448 ("约360K")
    correct = 4 * d * d + 4 * d
    gqa_predicted = (h + 2 * h_kv) * d_k * d + (h + 2 * h_kv) * d_k + d * d + d
    torch_count, gqa_count = count_parameters(torch_mha), count_parameters(gqa)
    # Integer counts: a difference below 1/2 is equality.
    margins = [
        close_to("MultiHeadAttention(512, 8) parameters - (4 d^2 + 4 d)", measured, correct,
                 abs_=0.5),
        close_to("MultiHeadAttention(512, 8, bias=False) weights - 4 d^2", measured_weights,
                 4 * d * d, abs_=0.5),
        close_to("W_Q, W_K, W_V weights - 3 h d d_k", qkv_weights, 3 * h * d * d_k, abs_=0.5),
        close_to("torch.nn.MultiheadAttention(512, 8) parameters - (4 d^2 + 4 d)",
                 torch_count, correct, abs_=0.5),
        close_to("GQA (H_kv = 2) parameters - (H + 2 H_kv) d_k (d + 1) - d^2 - d",
                 gqa_count, gqa_predicted, abs_=0.5),
    ]
    seed_margins = [
        close_to("seed: W_Q, W_K, W_V weights = 3 x 512 x 64 = 98,304", qkv_weights, seed_qkv,
                 abs_=0.5),
        close_to("seed: total weights about 360K", measured_weights, seed_total,
                 rel=_SEED_TOTAL_REL),
    ]
    return Evidence(
        predicted=correct,
        measured=measured,
        tolerance="exact (integer counts); the seed's 'about 360K' within 5 %",
        verdict=decide(margins, seed_margins),
        notes=[
            msg("Seed (004 table): W_Q,W_K,W_V = {seed_qkv:,}, W_O = {seed_wo:,}, total "
                "{seed_total:,} (~360K). Measured: W_Q,W_K,W_V = {qkv_weights:,} weights "
                "({qkv_measured:,} with biases), total {measured_weights:,} weights, "
                "{measured:,} parameters = 4*512^2 + 4*512.", seed_qkv=seed_qkv, seed_wo=seed_wo,
                seed_total=seed_total, qkv_weights=qkv_weights, qkv_measured=qkv_measured,
                measured_weights=measured_weights, measured=measured),
            msg("Correct statement: h heads of d x d_k projections make one d x d matrix per role, "
                "so MHA has 4 d^2 (+ 4 d biases) parameters, the same as one d x d_k = d x d head, "
                "independent of h. The seed's row forgets the factor h."),
            msg("torch.nn.MultiheadAttention(512, 8) has {torch_count:,}; GQA with H_kv = 2 has "
                "{gqa_count:,} (predicted {gqa_predicted:,}).", torch_count=torch_count,
                gqa_count=gqa_count, gqa_predicted=gqa_predicted),
        ],
        details={
            "measured": measured, "correct": correct, "measured_weights": measured_weights,
            "seed_total": seed_total, "seed_qkv": seed_qkv, "measured_qkv_weights": qkv_weights,
            "without_bias": 4 * d * d, "torch_multihead_attention": torch_count,
            "gqa_kv2_measured": gqa_count, "gqa_kv2_predicted": gqa_predicted,
        },
        margins=margins,
        seed_margins=seed_margins,
    )


# ---------------------------------------------------------------------------------------------
# attention.complexity-table
# ---------------------------------------------------------------------------------------------


def _attention_flops(module: MultiHeadAttention, x: Tensor) -> tuple[int, int, dict[str, int]]:
    """(projection FLOPs, attention-product FLOPs, per-module counts) of ``module(x)``."""
    counts = count_flops(module, x)
    ops = counts.by_operator
    projections = ops.get("aten.addmm", 0) + ops.get("aten.mm", 0)
    products = ops.get("aten.bmm", 0) + ops.get("aten.baddbmm", 0)
    per_module = {name: sum(v.values()) for name, v in counts.by_module.items()}
    return projections, products, per_module


def _linear_products(module: MultiHeadAttention, x: Tensor) -> int:
    """Matrix-product FLOPs of the project's ``linear`` attention backend on ``module``'s q, k, v
    (``scaled_dot_product_attention(..., backend="linear")``, elu + 1 features, m = d_k)."""
    q, k, v = module.project_qkv(x, x, x)
    ops = count_flops(lambda: scaled_dot_product_attention(q, k, v, backend="linear")).by_operator
    return ops.get("aten.bmm", 0) + ops.get("aten.baddbmm", 0)


def _table_row(module: MultiHeadAttention, x: Tensor, h: int, h_kv: int) -> dict[str, Any]:
    """Measured and predicted counts for one setting: (batch, n, d) = shape of ``x``, H query
    and H_kv key/value heads as configured (the prediction never reads the module's state)."""
    batch, n, d = x.shape
    d_k = d // h
    with torch.no_grad():
        projections, products, per_module = _attention_flops(module, x)
        weights = forward_with_pattern(module, x)[1]
        linear = _linear_products(module, x)
    return {
        "batch": batch, "n": n, "d": d, "heads": h, "kv_heads": h_kv, "d_k": d_k,
        "projections_measured": projections,
        "projections_predicted": projection_flops(batch, n, d, h, d_k, kv_heads=h_kv),
        "products_measured": products,
        "products_predicted": attention_product_flops(batch, n, h, d_k),
        "q_proj_measured": per_module.get("MultiHeadAttention.q_proj"),
        "q_proj_predicted": batch * h * 2 * n * d * d_k,  # one projection, every head
        "linear_products_measured": linear,
        "linear_products_predicted": linear_attention_product_flops(batch, n, h, d_k),
        "weights_numel": weights.numel(),
        "projection_share": projections / max(projections + products, 1),
    }


def _table_margins(rows: list[dict[str, Any]]) -> list[Margin]:
    def worst(measured: str, predicted: str) -> int:
        return max(abs(r[measured] - r[predicted]) for r in rows)

    # Integer counts: a difference below 1/2 is equality.
    return [
        at_most("max |projection FLOPs - B (2 n d d_k (H + H_kv) + 2 n d d_v H_kv + 2 n d^2)|",
                worst("projections_measured", "projections_predicted"), 0.5),
        at_most("max |Q K^T + A V FLOPs - B H (2 n^2 d_k + 2 n^2 d_v)|",
                worst("products_measured", "products_predicted"), 0.5),
        at_most("max |q_proj FLOPs - B H 2 n d d_k|",
                max(abs((r["q_proj_measured"] if r["q_proj_measured"] is not None
                         else r["q_proj_predicted"]) - r["q_proj_predicted"]) for r in rows), 0.5),
        at_most("max |linear attention FLOPs - B H (4 n d_k d_v + 2 n d_k)|",
                worst("linear_products_measured", "linear_products_predicted"), 0.5),
        at_most("max |weights numel - B H n^2|",
                max(abs(r["weights_numel"] - r["batch"] * r["heads"] * r["n"] ** 2)
                    for r in rows), 0.5),
    ]


#: the n-sweep at fixed width (d = 16, H = 2, d_k = 8) that reads the table's "total O(n^2 d_k)"
#: in the limit it is about, n -> infinity at fixed d (issue 31)
_SWEEP_D, _SWEEP_H = 16, 2


@claim(
    "attention.complexity-table",
    source=f"{SEED_004} 计算复杂度分析 (table); 000 §8.3.2 推论 3 (linear attention)",
    statement="""The matrix products of multi-head self-attention cost, per head, 2 n d d_k FLOPs
    for each of the Q, K, V projections, 2 n^2 d_k for Q K^T and 2 n^2 d_v for A V (the third
    seed's O(n d d_k), O(n^2 d_k), O(n^2 d_k) rows); over H heads with H d_k = d, and with the
    output projection, 8 n d^2 + 4 n^2 d in total; with H_kv grouped key/value heads the K and V
    projections cost 2 n d d_k per key/value head. Linear attention phi(Q) (phi(K)^T V) replaces
    the n^2 products by 4 n d_k d_v + 2 n d_k per head (the main seed's O(n d_k^2)). The
    projections dominate while n < 2 d; at fixed d the n^2 products' share n / (n + 2 d) tends
    to 1 as n grows, so the seed's total O(n^2 d_k), a statement about large n, holds.""",
    falsifier="attention.gqa-kv-heads-ignored",
    expected="verified",
    version=4,
    kind="measurement",
    seed_refs=[("004", 60, 69), ("000", 396, 396), ("000", 456, 460)],
    statement_zh="""多头自注意力的矩阵乘法开销：每个头 Q、K、V 投影各 2 n d d_k FLOPs，Q K^T 为
    2 n^2 d_k，A V 为 2 n^2 d_v（第三份种子表中的 O(n d d_k)、O(n^2 d_k)、O(n^2 d_k) 行）；H 个头、
    H d_k = d 并计入输出投影时共 8 n d^2 + 4 n^2 d；H_kv 个分组键/值头时 K、V 投影每个键/值头
    2 n d d_k。线性注意力 phi(Q) (phi(K)^T V) 把 n^2 项换成每头 4 n d_k d_v + 2 n d_k（主种子的
    O(n d_k^2)）。n < 2 d 时投影占主导；固定 d 时 n^2 乘积所占比例 n / (n + 2 d) 随 n 增大趋于 1，
    因此种子关于大 n 的总计 O(n^2 d_k) 成立。""",
    audit="""Issue 31 review item 004:67 (weak refutation: big-O read pointwise): agreed. Version 3
    refuted 'total O(n^2 d_k)' because the projections carry more than half of the FLOPs at
    n < 2 d; the O() is a statement about n -> infinity at fixed d. Version 4 tests it in that
    limit: an n-sweep at fixed d = 16 (n = 16 ... 1024, i.e. up to 32 x 2 d) where the counted
    n^2 share must rise at every step and exceed 1/2 at the largest n (it is n / (n + 2 d)
    exactly: 0.97). The refutation is dropped; expected verified. Thresholds: counts are exact
    integers (tolerance 1/2); 1/2 is 'the n^2 products carry the total', not tuned.""",
)
@single_threaded
def check_complexity_table(ctx: Context) -> Evidence:
    """FLOPs counted by ``torch.utils.flop_counter.FlopCounterMode`` (``diagnostics.count_flops``)
    on ``MultiHeadAttention(backend="reference")`` forwards and on the project's ``linear``
    backend, against the per-head formulas summed over heads and batch
    (``theory.attention_flops``), compared exactly.

    What FlopCounterMode counts: matrix products (2 M N K each); not the softmax, the scaling or
    bias additions. So the table's "Softmax O(n^2)" row cannot be checked with it; it is
    elementwise work over the B H n^2 weights, whose materialised size (the "space O(n^2)" rows)
    is checked from the weights at ``hook_pattern`` instead.

    Version 4 (issue 31): the table's "total O(n^2 d_k)" (004:67) is read as what a big-O is, a
    statement about n -> infinity at fixed d: an n-sweep at d = 16, H = 2 (n = 16, 64, 256,
    1024) is counted like the grid, and the seed's version (``seed_margins``) is that the n^2
    products' share of the counted FLOPs rises with n and carries the total (> 1/2) at the
    largest n. It holds (the share is n / (n + 2 d)), so the claim is verified; version 3 read
    the O() pointwise (share <= 1/2 in every setting, failing at n < 2 d) and called it refuted.

    Version 3 (issue 18): the pointwise reading above. Version 2 (issue 14): a grouped-query
    setting (H_kv < H) and the linear backend's row were added, and the falsifier is the planted
    bug ``attention.gqa-kv-heads-ignored`` (K and V projections sized for all H heads).
    """
    gen = ctx.generator(1010)
    settings = ctx.pick(
        [(1, 16, 32, 4, 4), (2, 24, 16, 2, 2), (1, 12, 32, 8, 2)],
        [(1, 16, 32, 4, 4), (2, 64, 64, 8, 8), (1, 128, 32, 2, 2), (3, 40, 48, 6, 6),
         (2, 32, 64, 8, 2)],
        [(1, 16, 32, 4, 4), (2, 64, 64, 8, 8), (1, 128, 32, 2, 2), (3, 40, 48, 6, 6),
         (1, 512, 128, 8, 8), (2, 32, 64, 8, 2)],
    )
    sweep_n = ctx.pick([16, 64, 256, 1024], [16, 64, 256, 1024], [16, 64, 256, 1024, 4096])
    rows: list[dict[str, Any]] = []
    for batch, n, d, h, h_kv in settings:
        module = build_mha(d, h, gen, dtype=torch.float32, backend="reference",
                           num_kv_heads=h_kv)
        rows.append(_table_row(module, torch.randn(batch, n, d, generator=gen), h, h_kv))
    d, h = _SWEEP_D, _SWEEP_H
    sweep_module = build_mha(d, h, gen, dtype=torch.float32, backend="reference")
    sweep = [_table_row(sweep_module, torch.randn(1, n, d, generator=gen), h, h)
             for n in sweep_n]
    margins = _table_margins(rows + sweep)
    shares = [1.0 - r["projection_share"] for r in sweep]  # the n^2 products' share
    predicted_shares = [n / (n + 2 * d) for n in sweep_n]
    rise = min(b - a for a, b in itertools.pairwise(shares))
    seed_margins = [
        at_least("004:67 total O(n^2 d_k) as n -> infinity at fixed d: min rise of the n^2 "
                 "share of the FLOPs along the n-sweep", rise, 0.0),
        at_least(f"004:67: the n^2 products carry the total at the largest n = {sweep_n[-1]} "
                 "(share of the FLOPs)", shares[-1], 0.5),
    ]
    decisive = [at_least("the sweep reaches n >> d: largest n / (2 d)", sweep_n[-1] / (2 * d),
                         10.0)]
    first = rows[1] if len(rows) > 1 else rows[0]
    return Evidence(
        predicted=[first["projections_predicted"], first["products_predicted"]],
        measured=[first["projections_measured"], first["products_measured"]],
        tolerance="exact (integer FLOP counts)",
        verdict=decide(margins, seed_margins, decisive),
        notes=[
            f"Values for B = {first['batch']}, n = {first['n']}, d = {first['d']}, "
            f"H = {first['heads']}: FLOPs of the four projections (8 n d^2 per sequence) and of "
            f"Q K^T plus A V (4 n^2 d). All {len(rows)} grid settings and {len(sweep)} sweep "
            "settings match exactly (the grid's last with grouped key/value heads).",
            msg("Not checkable by FLOP counting: the softmax row (elementwise, O(n^2) exp and "
                "sums). Space: the reference backend materialises B H n^2 weights (checked by "
                "numel)."),
            "Projection share of the product FLOPs on the grid: "
            + ", ".join(f"n={r['n']}, d={r['d']}: {r['projection_share']:.2f}" for r in rows)
            + ": the projections dominate while n < 2 d.",
            f"004:67 in its limit: at d = {d}, H = {h} the n^2 share is "
            + ", ".join(f"{s:.3f} (n = {n}; predicted n/(n+2d) = {p:.3f})"
                        for n, s, p in zip(sweep_n, shares, predicted_shares, strict=True))
            + ": it tends to 1, so the total is O(n^2 d_k) for large n, as the seed says.",
        ],
        details={"settings": rows, "sweep": sweep, "sweep_n2_share": shares,
                 "sweep_predicted_n2_share": predicted_shares},
        margins=margins,
        seed_margins=seed_margins,
        decisive=decisive,
    )
