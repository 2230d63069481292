"""Linear attention cannot retrieve exactly; its attention matrix has rank <= m.

Source: the main seed 000 §8.3.2 trap "把线性注意力的 O(n) 当成免费午餐" (000:528): a finite
feature map phi loses the sharp attention that exact retrieval needs; 000:482 (finite phi cannot
represent a sharp kernel). Katharopoulos et al. 2020 (eq. 4-6) for the linear form.

The task: n unit keys k_j in R^d, values v_j = e_j (one-hot, so the output row is the attention
row itself), queries q_i = beta k_i. Softmax attention with logits beta k_i.k_j puts weight
-> 1 on key i as beta grows (k_i.k_i = 1 > k_i.k_j). Linear attention with phi = elu + 1
(m = d features) has weights phi(q_i).phi(k_j) / sum_j' phi(q_i).phi(k_j'); its n x n weight
matrix D^-1 phi(Q) phi(K)^T has rank <= m < n, and as beta grows phi(beta k) -> beta relu(k) + 1
on the positive part, so the weight on the right key saturates below 1.
"""

from __future__ import annotations

import torch

from transformer_math.claims.registry import (
    Context,
    Evidence,
    Figure,
    Series,
    at_least,
    at_most,
    claim,
    decide,
)
from transformer_math.functional.attention import scaled_dot_product_attention
from transformer_math.functional.linear_attention import (
    linear_attention,
    linear_attention_parallel,
)
from transformer_math.i18n.message import msg

F64 = torch.float64
BETAS = [1.0, 4.0, 16.0, 64.0, 256.0]


@claim(
    "kernel.linear-vs-softmax-retrieval",
    source="000 §8.3.2 trap 线性注意力不是免费午餐 (精确检索); Katharopoulos et al. 2020",
    statement="""On exact retrieval (queries q_i = beta k_i over n unit keys, one-hot values)
    softmax attention's weight on the right key tends to 1 as beta grows, while linear attention
    with phi = elu + 1 saturates well below 1: its n x n attention matrix
    D^-1 phi(Q) phi(K)^T has rank at most the feature dimension m < n (softmax's has rank n).""",
    falsifier="linear-attention.no-normaliser",
    expected="verified",
    version=1,
    kind="measurement",
    audit="""Issue 31 review: sound; no change. The seed's trap (000:528: linear attention
    cannot focus sharply, exact retrieval needs softmax) is measured on the library's softmax
    and O(n) linear attention; the falsifier (linear attention without its normaliser) sits in
    functional.linear_attention.""",
    seed_refs=[("000", 528, 528), ("000", 482, 482)],
    statement_zh="""在精确检索任务上（n 个单位键、查询 q_i = beta k_i、独热值），随着 beta 增大，
    softmax 注意力在正确键上的权重趋于 1，而 phi = elu + 1 的线性注意力饱和在远低于 1 处：其
    n x n 注意力矩阵 D^-1 phi(Q) phi(K)^T 的秩至多为特征维数 m < n（softmax 的秩为 n）。""",
)
def check_linear_vs_softmax_retrieval(ctx: Context) -> Evidence:
    """Softmax weights from ``scaled_dot_product_attention`` (scale 1 on beta k_i.k_j);
    linear attention from the O(n) ``functional.linear_attention`` (outputs: with one-hot
    values, the attention rows) and, for the rank and a cross-check, from the explicit
    ``linear_attention_parallel`` weights. n = 32, d = m = 8, float64.

    Margins: softmax mean weight on the right key >= 0.99 at beta = 256; linear attention's
    largest mean weight on the right key over the beta grid <= 0.5; numerical rank of the
    linear weight matrix <= m, of the softmax one (beta = 1) = n; the O(n) outputs equal the
    explicit weights within 1e-10.
    """
    n, d = 32, 8
    g = ctx.generator(528)
    k = torch.randn(1, 1, n, d, generator=g, dtype=F64)
    k = k / k.norm(dim=-1, keepdim=True)
    v = torch.eye(n, dtype=F64)[None, None]
    soft, lin = [], []
    cross = 0.0
    for beta in BETAS:
        q = beta * k
        w_soft = scaled_dot_product_attention(q, k, v, scale=1.0).output[0, 0]
        w_lin = linear_attention(q, k, v, feature_map="elu")[0, 0]
        explicit = linear_attention_parallel(q, k, v, feature_map="elu").weights
        assert explicit is not None
        cross = max(cross, float((w_lin - explicit[0, 0]).abs().max()))
        soft.append(float(w_soft.diagonal().mean()))
        lin.append(float(w_lin.diagonal().mean()))
    w_lin_1 = linear_attention_parallel(k, k, v, feature_map="elu").weights
    w_soft_1 = scaled_dot_product_attention(k, k, v, scale=1.0, return_weights=True).weights
    assert w_lin_1 is not None and w_soft_1 is not None
    rank_lin = int(torch.linalg.matrix_rank(w_lin_1[0, 0]))
    rank_soft = int(torch.linalg.matrix_rank(w_soft_1[0, 0]))
    margins = [
        at_least(f"softmax: mean weight on the right key at beta = {BETAS[-1]:g}", soft[-1], 0.99),
        at_most("linear (elu + 1): largest mean weight on the right key over beta", max(lin),
                0.5),
        at_most("rank of the linear attention matrix - m (integers: < 1/2 is <= m)",
                rank_lin - d, 0.5),
        at_least("rank of the softmax attention matrix - n + 1/2 (full rank)",
                 rank_soft - n + 0.5, 0.0),
        at_most("max |O(n) linear output - explicit weights|", cross, 1e-10),
    ]
    return Evidence(
        predicted={"softmax weight": "-> 1", "linear weight": "< 1 (saturates)",
                   "rank linear": f"<= {d}", "rank softmax": n},
        measured={"softmax weight": [round(x, 4) for x in soft],
                  "linear weight": [round(x, 4) for x in lin],
                  "rank linear": rank_lin, "rank softmax": rank_soft},
        tolerance="softmax >= 0.99 at the top beta; linear <= 0.5; ranks exact",
        verdict=decide(margins),
        notes=[
            msg("Mean weight on the right key for beta = {BETAS} (one-hot values: the output row "
                "is the attention row); n = 32 unit keys in d = 8; linear attention with m = d "
                "features (elu + 1).", BETAS=BETAS),
            msg("000:528 is right here: exact retrieval needs sharp attention, which softmax gives "
            "and a finite feature map does not (the rank of phi(Q) phi(K)^T is at most m)."),
        ],
        figures=[Figure(
            title=msg("Exact retrieval: weight on the right key against the inverse temperature"),
            xlabel="beta (q_i = beta k_i)", ylabel=msg("mean weight on the right key"), logx=True,
            series=[Series(msg("softmax attention"), BETAS, soft, style="o-"),
                    Series(msg("linear attention (elu + 1)"), BETAS, lin, style="s-")],
        )],
        details={"betas": BETAS, "softmax": soft, "linear": lin, "rank_linear": rank_lin,
                 "rank_softmax": rank_soft, "max_cross_check_error": cross},
        margins=margins,
    )
