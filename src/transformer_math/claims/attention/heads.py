"""One big head against H small heads at fixed width d: a heads sweep, measured.

Sources: the main seed 000 §8.3.1 (多头注意力; "为什么不直接用一个大头", 000:305-311; trap
000:301; exercise 8.3.1-4, 000:406; misconception 27, 000:1393); Bhojanapalli, Yun, Rawat,
Reddi & Kumar 2020, "Low-Rank Bottleneck in Multi-head Attention Models", ICML (Theorem 1: a
head of size d_k < n cannot represent every n x n attention pattern; §4: set the head size
independently of the number of heads).

Setting: n = d = 8 tokens of width 8. A teacher is a multi-head attention map written out head
by head (einsum, not the module),

    f*(X) = sum_h softmax(X W_Q^h (X W_K^h)^T / sqrt(d_k)) X W_V^h W_O^h,

with either one head of size d_k = d ("one relation": a single full-rank attention pattern) or
four heads of size d/4 ("four relations": four different rank-2 patterns). Students are the
project's ``MultiHeadAttention`` with H heads of size d/H (fixed d), trained with Adam on the
relative squared error over a batch of random sequences. The matched student represents its
teacher exactly, so its error goes to 0; a mismatched one keeps an error floor.
"""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import Tensor

from transformer_math.claims.attention._common import SEED_000, build_mha, sig, single_threaded
from transformer_math.claims.registry import (
    Context,
    Evidence,
    Figure,
    Series,
    Tier,
    claim,
    decide,
)
from transformer_math.claims.seeds import over_seeds
from transformer_math.i18n.message import msg

D = 8  # model width d (fixed over the sweep) and sequence length n
Teacher = tuple[Tensor, Tensor, Tensor, Tensor]


def _teacher(gen: torch.Generator, heads: int) -> Teacher:
    """Per-head (W_Q, W_K, W_V, W_O), shapes (H, d, d_k) x 3 and (H, d_k, d); the logits of
    each head have a standard deviation of about 2 on N(0, 1) tokens (patterns far from
    uniform, far from one-hot)."""
    d_k = D // heads
    logit = 2.0 * d_k ** 0.25 / math.sqrt(D)
    w_q = torch.randn(heads, D, d_k, generator=gen) * logit
    w_k = torch.randn(heads, D, d_k, generator=gen) * logit
    w_v = torch.randn(heads, D, d_k, generator=gen) / math.sqrt(D)
    w_o = torch.randn(heads, d_k, D, generator=gen) / math.sqrt(D)
    return w_q, w_k, w_v, w_o


def teacher_output(teacher: Teacher, x: Tensor) -> Tensor:
    """f*(X) of the module docstring for x (B, n, d), written head by head."""
    w_q, w_k, w_v, w_o = teacher
    d_k = w_q.shape[-1]
    q, k, v = (torch.einsum("btd,hde->bhte", x, w) for w in (w_q, w_k, w_v))
    pattern = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(d_k), dim=-1)
    return torch.einsum("bhte,hed->btd", pattern @ v, w_o)


def _fit(x: Tensor, y: Tensor, heads: int, head_dim: int, gen: torch.Generator,
         steps: int) -> float:
    """Relative squared error ||f(X) - Y||^2 / ||Y||^2 of a ``MultiHeadAttention`` (H heads of
    width ``head_dim``) after ``steps`` full-batch Adam steps (lr 0.05, cosine decay to 0)."""
    module = build_mha(D, heads, gen, dtype=torch.float32, head_dim=head_dim,
                       backend="reference").train()
    opt = torch.optim.Adam(module.parameters(), lr=0.05)
    schedule = torch.optim.lr_scheduler.CosineAnnealingLR(opt, steps)
    scale = float(y.pow(2).sum())
    for _ in range(steps):
        opt.zero_grad()
        loss = (module(x) - y).pow(2).sum() / scale
        loss.backward()
        opt.step()
        schedule.step()
    with torch.no_grad():
        return float((module(x) - y).pow(2).sum()) / scale


def _figure(sweep: list[int], errors: dict[str, list[float]]) -> Figure:
    return Figure(
        title=msg("Heads sweep at fixed d = 8: error of H heads of size d/H after training"),
        xlabel=msg("number of heads H (head size d/H)"),
        ylabel=msg("relative squared error"),
        logx=True,
        logy=True,
        series=[Series(_TEACHER_LABELS[name], [float(h) for h in sweep],
                       [max(e, 1e-12) for e in errors[name]], style="o-") for name in errors],
    )


_TEACHER_LABELS = {
    "one relation (1 head, d_k = 8)": msg("teacher: one relation ({heads} head, d_k = {d_k})",
                                          heads=1, d_k=D),
    "four relations (4 heads, d_k = 2)": msg(
        "teacher: four relations ({heads} heads, d_k = {d_k})", heads=4, d_k=D // 4),
}


@claim(
    "attention.heads-sweep",
    source=f"{SEED_000} 多头注意力 (为什么不直接用一个大头); Bhojanapalli et al. 2020 (ICML)",
    statement="""At fixed width d, neither one big head nor H small heads (size d/H) is the
    more expressive: a single full-rank attention relation is fitted exactly by one head of
    size d and not by four heads of size d/4 (the low-rank bottleneck of Bhojanapalli et al.),
    while four different rank-2 relations are fitted by four small heads and not by one big
    head. Four heads of size d (head size set independently of H) fit the single relation.
    The seed's misconception 27 (000:1393) denies that one big head is more expressive than
    several small heads; that denial holds (the big head fails on the four relations), and its
    correction is qualified (H heterogeneous maps), which is the four-relation arm.""",
    tier=Tier.FULL,
    falsifier="attention.heads-merged-without-transpose",
    expected="verified",
    version=3,
    kind="measurement",
    seed_refs=[("000", 301, 311), ("000", 406, 406), ("000", 61, 61), ("000", 1393, 1393)],
    statement_zh="""在固定宽度 d 下，一个大头与 H 个小头（每头 d/H 维）谁都不比谁表达力更强：
    单个满秩注意力关系能被一个 d 维头精确拟合，而 4 个 d/4 维的头拟合不了（Bhojanapalli 等人的
    低秩瓶颈）；四个不同的秩 2 关系则能被 4 个小头拟合，一个大头拟合不了。头维度与头数无关地取 d
    时（4 个 d 维头），单个关系也能拟合。种子误区 27（000:1393）否认"用一个大头比多个小头表达力强"：
    这一否认成立（大头在四个关系上失败），其纠正带有限定（H 张异质注意力图），正是四关系那一组。""",
    audit="""Issue 31 review items 000:61, 000:311 (weak: the seed qualifies them, heterogeneous
    relations, and 000:309 concedes the big head's single-map rank): agreed, both refutations
    dropped (version 2); 000:311's qualified statement agrees with the four-relation arm.
    000:1393 (the audit: 'V, literal misconception 27'): disputed, and the refutation is dropped
    in version 3, following the R2 adversarial review of version 2. The row calls the belief
    'one big head is more expressive than several small heads' a misconception; the negation
    of a dominance is not the reverse dominance, and the claim's own four-relation arm shows
    the big head does not dominate, so the row, read literally, is right; its correction
    ('多头用 H 张异质注意力图换多样性，比一张高秩图更高效') carries the qualifier 异质, which the
    old seed margin (small heads at least as good on a single full-rank relation) ignored.
    Expected verified; no seed margin (the seed's qualified statement is the four-relation
    ratio margin). Thresholds NOT derived: the fit thresholds (matched <= 1e-2, mismatched >=
    2e-2, ratios >= 10 and >= 1.5) were chosen while building the claim from one run per seed
    (tiny, seeds 0-2) with the planted head-merge bug's values also in view (0.18-0.25 and
    0.74-0.84); they are reported as such, not as a null model. What supports them: the
    measured separations are 2-3 orders of magnitude (matched <= 1e-4 against mismatched >=
    0.175).""",
)
@single_threaded
def check_heads_sweep(ctx: Context) -> Evidence:
    """Teachers and data from ``ctx.generator``; students trained from their own seeded
    initialisation (``_fit``). Tiny: 64 sequences, 300 steps, H in {1, 4}; default: 64
    sequences, 400 steps, H in {1, 2, 4, 8}; large: 128 sequences, 600 steps.

    Margins (relative squared error): the matched students of the one relation (H = 1; four
    heads of size d) <= 1e-2; mismatched students (one relation with H = 4 heads of size 2;
    four relations with H = 1) >= 2e-2; the one-relation error of H = 4 at least ten times
    that of H = 1, the four-relation error of H = 1 at least 1.5 times that of H = 4.
    Measured while building the claim (size tiny, seeds 0-2, one seed each): one relation
    H = 1 <= 1e-4, 4 heads of size d <= 1e-4, H = 4 (d_k = 2) >= 0.175; four relations H = 1
    >= 0.37, H = 4 <= 0.074 (ratio >= 5). The matched four-head student can stop in a local
    minimum (head symmetries; with 16 sequences it did on most seeds), so that arm is held to a
    ratio, not to a fit. With the planted head-merge bug: 4 heads of size d 0.18-0.25 and the
    four-relation ratio 0.74-0.84 (both fail). These thresholds were chosen from those runs,
    with the bug's values in view: they are not derived (issue 31).

    Version 3 (issue 31, R2 review): the refutation of 000:1393 is dropped (its seed margin,
    err(one relation, H = 4) <= err(H = 1) + 1e-3, read the row's denial of a dominance as the
    reverse dominance); the claim verifies the seed's qualified statement. The one-relation
    gap is kept as a detail.

    Version 2 (issue 31): the refutations of 000:61 and 000:311 are dropped (000:311 is about
    superpositions of heterogeneous relations and concedes the big head's single-map rank in
    000:309; its four-relation reading is what this claim verifies); only 000:1393 is refuted.
    Training errors bound the best error from above: a matched error near 0 is a fit found;
    a mismatched floor is what Adam reached from one initialisation, the same budget for all.
    """
    sweep_h = ctx.pick([1, 4], [1, 2, 4, 8], [1, 2, 4, 8])
    i1, i4 = sweep_h.index(1), sweep_h.index(4)

    def one_seed(c: Context) -> tuple[dict[str, float], dict[str, Any]]:
        errors, wide = _sweep(c, sweep_h)
        one, four = errors.values()
        return {
            "one_H1": one[i1], "one_H4": one[i4], "four_H1": four[i1], "four_H4": four[i4],
            "one_4_heads_of_size_d": wide,
            "one_ratio_H4_over_H1": one[i4] / max(one[i1], 1e-12),
            "four_ratio_H1_over_H4": four[i1] / max(four[i4], 1e-12),
            "one_H4_minus_H1": one[i4] - one[i1],
        }, {"errors": errors, "wide": wide}

    per_seed = over_seeds(ctx, one_seed)
    first = per_seed.runs[0]
    margins = [
        per_seed.at_most("one_H1", 1e-2, "one relation, H = 1 (matched): error"),
        per_seed.at_most("one_4_heads_of_size_d", 1e-2,
                         "one relation, 4 heads of size d (head size independent of H): error"),
        per_seed.at_least("one_H4", 2e-2, "one relation, H = 4 heads of size d/4: error "
                          "(bottleneck)"),
        per_seed.at_least("four_H1", 2e-2, "four relations, H = 1: error (one pattern for four)"),
        per_seed.at_least("one_ratio_H4_over_H1", 10.0,
                          "one relation: error(H = 4) / error(H = 1)"),
        per_seed.at_least("four_ratio_H1_over_H4", 1.5,
                          "four relations: error(H = 1) / error(H = 4)"),
    ]
    return Evidence(
        predicted="matched students ~0; one relation: H = 4 (d_k = 2) floor; four relations: "
                  "H = 1 floor; 4 heads of size d ~0",
        measured={name: [sig(e, 3) for e in errs] for name, errs in first["errors"].items()}
        | {"4 heads of size d, one relation": sig(first["wide"], 3)},
        tolerance="matched (one relation) <= 1e-2; mismatched >= 2e-2; ratios >= 10 (one "
                  "relation) and >= 1.5 (four relations); every seed",
        verdict=decide(margins),
        notes=[
            f"Heads sweep H = {sweep_h} at d = {D}, n = {D}; measured: the first seed's "
            "relative squared errors in the order of the sweep; margins on the worst seed.",
            "000:301 and 000:406 (too many heads degrade) agree with the one-relation row: the "
            "error grows as the head size d/H shrinks; 000:311 and misconception 27 "
            "(000:1393: heterogeneous relations favour several heads; one big head does not "
            "dominate) agree with the four-relation row. Neither dominates: on one full-rank "
            "relation the big head wins (err(H = 4) - err(H = 1) = "
            f"{per_seed.lo('one_H4_minus_H1'):.3g} on the best seed).",
            "Thresholds (issue 31): chosen from one run per seed while building the claim, "
            "with the planted bug's values in view; not derived from a null model.",
            msg("Bhojanapalli et al. 2020 (Theorem 1): a head of size d_k < n cannot express "
                "every attention pattern; their remedy, head size independent of H, is the 4 x d "
                "arm."),
        ],
        figures=[_figure(sweep_h, first["errors"])],
        details={"sweep": sweep_h, "errors": first["errors"], "wide_heads_error": first["wide"]},
        margins=margins,
        per_seed=per_seed.to_json(),
    )


def _sweep(ctx: Context, sweep: list[int]) -> tuple[dict[str, list[float]], float]:
    """One seed: teachers, data and every student of the sweep, plus 4 heads of size d on the
    one-relation teacher."""
    gen = ctx.generator(1393)
    batch, steps = ctx.pick((64, 300), (64, 400), (128, 600))
    x = torch.randn(batch, D, D, generator=gen)
    teachers = {"one relation (1 head, d_k = 8)": _teacher(gen, 1),
                "four relations (4 heads, d_k = 2)": _teacher(gen, 4)}
    errors: dict[str, list[float]] = {}
    for name, teacher in teachers.items():
        y = teacher_output(teacher, x)
        errors[name] = [_fit(x, y, heads, D // heads, ctx.generator(1400 + heads), steps)
                        for heads in sweep]
    wide = _fit(x, teacher_output(teachers[next(iter(teachers))], x), 4, D,
                ctx.generator(1450), steps)
    return errors, wide
