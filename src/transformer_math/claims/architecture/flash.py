"""FlashAttention: the tiled online-softmax loop is exact, small in memory, and moves
Theta(N^2 d^2 / M) elements (000 §8.3.7 理论 D; Dao et al. 2022)."""

from __future__ import annotations

import torch

from transformer_math.claims.architecture._common import SEED_000, loglog_slope
from transformer_math.claims.registry import (
    Context,
    Correction,
    Evidence,
    Figure,
    Refutation,
    Series,
    Size,
    at_least,
    at_most,
    claim,
    close_to,
    decide,
)
from transformer_math.diagnostics.flops import count_flops
from transformer_math.diagnostics.tensor_memory import peak_tensor_bytes
from transformer_math.functional.attention import scaled_dot_product_attention
from transformer_math.functional.tiled_attention import (
    IOCounter,
    tiled_attention,
    tiled_attention_forward,
)
from transformer_math.i18n.message import msg
from transformer_math.theory.io_model import (
    crossover_sram,
    flash_rate,
    standard_attention_io,
    tile_sizes_for_sram,
    tiled_attention_io,
)


def _io_figure(n: int, d: int, srams: list[int], measured: list[int], standard: int) -> Figure:
    """Counted slow-memory accesses against M with the 10 N^2 d^2 / M reference."""
    xs = [float(m) for m in srams]
    return Figure(
        msg("HBM accesses vs on-chip memory M (N = {n}, d = {d})", n=n, d=d),
        msg("M (elements)"),
        msg("elements moved"),
        [
            Series(msg("tiled (counted)"), xs, [float(x) for x in measured], style="o-"),
            Series("10 N^2 d^2 / M", xs, [10 * flash_rate(n, d, m) for m in srams], style="--"),
        ],
        logx=True,
        logy=True,
        hlines=[(float(standard), msg("standard attention"))],
    )


@claim(
    "architecture.flash-io",
    source=f"{SEED_000} 理论 D, exercise 8.3.7-4; Dao et al. 2022, Theorem 2",
    statement="""Slow-memory accesses of the project's tiled attention, counted while it runs, scale
    as Theta(N^2 d^2 / M) in the on-chip size M and beat standard attention's Theta(N d + N^2) once
    M exceeds ~ d^2.""",
    falsifier="flash.kv-counted-once",
    expected="verified",
    version=1,
    kind="model",
    audit="""Issue 31 review: minor (a): the "counted" IO is an instrumentation counter inside the
    same tiled loop whose closed form it must equal exactly, and the Theta(N^2 d^2 / M) shape is
    a property of the loop's schedule; the falsifier sits in the counter. Agreed, reclassified
    honestly: kind model. Nothing here measures hardware memory traffic: the counter is an IO
    model of the library's tiled loop (every tile load/store counted as one slow-memory access
    of its elements), and the verdict (slope -1 in M, Theta within 1.5x over an 8x range of M,
    below standard attention once M ~ d^2) is that model's. Margin 1 (counter = closed form) is
    a consistency check of the model with its own formula. Check and thresholds unchanged.""",
    seed_refs=[("000", 1158, 1166), ("004", 282, 296)],
    corrections=[Correction(
        seed="000", line=1164,
        says="for d^2 <= M <= N d no exact attention algorithm can do better than "
        "Theta(N^2 d^2 / M); the lower bound is proved by Hong-Kung red-blue pebbling, and "
        "FlashAttention is tight",
        correct="Proposition 3 states that no exact algorithm achieves o(N^2 d^2 / M) HBM "
        "accesses for ALL M in [d, N d] (a statement about the whole range, not a bound at "
        "each M); its proof is an I/O count at M = Theta(N d): o(N^2 d^2 / M) would be o(N d), "
        "less than reading Q, K, V and writing O once; no pebbling argument is used, and the "
        "bound for general M is left open",
        source="Dao, Fu, Ermon, Rudra, Re, NeurIPS 2022 (arXiv 2205.14135), Proposition 3 and "
        "its proof (appendix C); FACTS.md")],
)
def check_flash_io(ctx: Context) -> Evidence:
    tiny = ctx.size is Size.TINY
    n, d = (128, 16) if tiny else (512, 64)
    g = ctx.generator(14)
    q, k, v = (torch.randn(1, 1, n, d, generator=g) for _ in range(3))
    blocks = [4, 8, 16, 32] if tiny else [16, 32, 64, 128]
    srams = [5 * d * b for b in blocks]
    measured, closed, ratios = [], [], []
    with torch.no_grad():
        for i, m in enumerate(srams):
            bq, bk = tile_sizes_for_sram(m, d)
            counter = IOCounter()
            tiled_attention_forward(q, k, v, block_q=bq, block_k=bk, io=counter)
            measured.append(counter.total)
            closed.append(tiled_attention_io(n, d, bq, bk).total)
            ratios.append(counter.total / flash_rate(n, d, m))
            ctx.report_progress((i + 1) / len(srams))
    standard = standard_attention_io(n, d).total
    slope = loglog_slope([float(m) for m in srams], [float(x) for x in measured])
    spread = max(ratios) / min(ratios)
    m_cross = crossover_sram(n, d)
    margins = [
        at_most("max |counted - closed-form accesses|",
                max(abs(a - b) for a, b in zip(measured, closed, strict=True)), 0.0),
        at_least("log-log slope vs M (lower end)", slope, -1.1),
        at_most("log-log slope vs M (upper end)", slope, -0.8),
        at_most("max/min of accesses * M / (N^2 d^2)", spread, 1.5),
        at_most("accesses at the largest M / standard attention's", measured[-1] / standard, 1.0),
    ]
    return Evidence(
        predicted={"slope_vs_M": -1.0, "standard_accesses": standard},
        measured={
            "slope_vs_M": round(slope, 3),
            "accesses_at_largest_M": measured[-1],
            "ratio_to_N2d2_over_M": [round(r, 2) for r in ratios],
        },
        tolerance="slope in [-1.1, -0.8] (the M-independent 3 N d + N term flattens it at "
        "large M); "
        "Theta: max/min of accesses * M / (N^2 d^2) <= 1.5 over an 8x range of M; counts equal the "
        "closed form exactly",
        verdict=decide(margins),
        notes=[
            msg("N = {n}, d = {d}, M = 5 d B_r elements for B_r in {blocks} (B_c = min(B_r, d)); "
                "the counter records every tile the loop loads/stores. Standard attention "
                "(Algorithm 0) moves 4 N d + 4 N^2 = {standard} elements; the tiled loop wins "
                "above M ~ {m_cross:.0f} (= {value:.1f} d^2).", n=n, d=d, blocks=blocks,
                standard=standard, m_cross=m_cross, value=m_cross / d**2),
            msg("004's table ('HBM O(n^2) -> O(nd)') is too coarse: the tiled loop's traffic is "
            "Theta(N^2 d^2 / M), which is O(N d) only when M ~ N d (Theorem 2)."),
        ],
        figures=[_io_figure(n, d, srams, measured, standard)],
        details={"srams": srams, "measured": measured, "closed_form": closed, "standard": standard},
        margins=margins,
    )


def _exactness_cases(g: torch.Generator) -> list[tuple[str, float, float]]:
    """(case, max |forward error|, max |gradient error|) of tiled vs reference attention."""
    out = []
    cases = [
        (msg("non-causal"), False, False, 7, 13),
        (msg("causal"), True, False, 16, 16),
        (msg("causal, q shorter (cache)"), True, False, 5, 64),
        (msg("additive mask with a dead row"), False, True, 64, 5),
        (msg("causal + mask, one row tile"), True, True, 1, 3),
    ]
    for name, causal, masked, bq, bk in cases:
        t = 19 if "shorter" in name else 45
        q = torch.randn(2, 3, t, 16, generator=g, requires_grad=True)
        k = torch.randn(2, 3, 45, 16, generator=g, requires_grad=True)
        v = torch.randn(2, 3, 45, 8, generator=g, requires_grad=True)
        mask = None
        if masked:
            mask = torch.randn(1, 3, t, 45, generator=g)
            mask = mask.masked_fill(torch.rand(1, 3, t, 45, generator=g) < 0.3, float("-inf"))
            mask[0, 0, 2] = float("-inf")  # a fully masked query row (zero output)
        ref = scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=causal).output
        til = tiled_attention(q, k, v, attn_mask=mask, is_causal=causal, block_q=bq, block_k=bk)
        go = torch.randn(ref.shape, generator=g)
        gr = torch.autograd.grad(ref, (q, k, v), go)
        gt = torch.autograd.grad(til, (q, k, v), go)
        out.append(
            (
                name,
                float((ref - til).detach().abs().max()),
                max(float((a - b).abs().max()) for a, b in zip(gr, gt, strict=True)),
            )
        )
    return out


@claim(
    "architecture.tiled-attention-exact",
    source=f"{SEED_000} 理论 D (online softmax); Dao et al. 2022 Algorithm 1; FACTS.md",
    statement="""Tiled online-softmax attention equals reference attention (fp32 error <= 1e-5,
    causal or not, with masks, any block split, gradients too) and never holds an n x n matrix: its
    measured
    peak memory is a small fraction of n^2 floats. It is exact up to rounding, not bitwise equal
    (000:1170): the fp32 outputs differ in their last bits (the summation order differs), and in
    float64 the difference shrinks to ~1e-16.""",
    falsifier="flash.online-softmax-no-rescale",
    expected="refuted",
    version=3,
    kind="measurement",
    audit="""Issue 31 review: sound (000:1170 V, the literal "逐位相等"); it needed a kind and a
    verbatim quote, both added. Kind measurement: the library's tiled online-softmax attention
    (functional.tiled_attention, a backend users run) against the reference attention, with
    the falsifier (the running rescale dropped) in the tiled loop. The seed margin reads
    "逐位相等" as bit-for-bit equality, its literal meaning; the correct statement (equal up to
    rounding) is what the margins verify. Check and verdict unchanged.""",
    seed_refs=[("000", 1164, 1172), ("004", 298, 300)],
    refutes=[Refutation(
        seed="000", line=1170,
        quote="结果与标准注意力**逐位相等**，只是计算顺序变了",
        reading="tiled and reference attention give bit-identical fp32 outputs (max difference "
        "exactly 0)",
        says="the result is bitwise equal to standard attention (逐位相等); only the order of "
        "computation changes",
        correct="changing the order of floating-point sums changes the last bits: tiled and "
        "reference attention differ by ~1e-7 in fp32 and ~1e-16 in float64 (exact in real "
        "arithmetic, equal up to rounding, not bit for bit)")],
    statement_zh="""分块 online-softmax 注意力与参考注意力一致（fp32 误差 <= 1e-5，
    因果与否、带掩码、任意分块、梯度亦然），并且从不存放 n×n 矩阵：测得的峰值内存只占 n^2 个
    浮点数的一小部分。它在舍入误差内精确，但不是逐位相等（000:1170）：fp32 输出在最后几位不同
    （求和顺序不同），在 float64 下差异缩小到约 1e-16。""",
)
def check_tiled_attention_exact(ctx: Context) -> Evidence:
    g = ctx.generator(15)
    cases = _exactness_cases(g)
    fwd = max(c[1] for c in cases)
    bwd = max(c[2] for c in cases)
    ctx.report_progress(0.3)
    n, d = 4096, 64
    q, kk, v = (torch.randn(1, 1, n, d, generator=g) for _ in range(3))
    block = 128
    with torch.no_grad():
        _, peak = peak_tensor_bytes(
            lambda: tiled_attention(q, kk, v, block_q=block, block_k=block, is_causal=True)
        )
    ctx.report_progress(1.0)
    matrix = n * n * 4
    # the same comparison in float64: a rounding difference shrinks with the precision
    q64, k64, v64 = (torch.randn(2, 3, 45, 16, generator=g, dtype=torch.float64)
                     for _ in range(3))
    ref64 = scaled_dot_product_attention(q64, k64, v64, is_causal=True).output
    til64 = tiled_attention(q64, k64, v64, is_causal=True, block_q=7, block_k=13)
    fwd64 = float((ref64 - til64).abs().max())
    margins = [
        at_most("max forward error", fwd, 1e-5),
        at_most("max gradient error", bwd, 1e-4),
        at_most("peak bytes / n x n fp32 bytes", peak / matrix, 0.1),
        at_most("float64 max forward error (rounding shrinks with precision)", fwd64, 1e-13),
    ]
    seed_margins = [
        at_most("seed: max fp32 forward |tiled - reference| (bitwise equal)", fwd, 0.0),
    ]
    return Evidence(
        predicted={"max_forward_error": 1e-5, "peak_bytes_at_most": int(0.1 * matrix)},
        measured={
            "max_forward_error": float(f"{fwd:.2e}"),
            "max_grad_error": float(f"{bwd:.2e}"),
            "max_forward_error_float64": float(f"{fwd64:.2e}"),
            "peak_bytes": peak,
            "n_x_n_bytes": matrix,
        },
        tolerance="forward 1e-5 (fp32 rounding of sums of 45 terms); gradients 1e-4 (longer "
        "accumulation chains); peak <= 10 % of one n x n fp32 matrix (n = 4096, d = 64: the tiled "
        "working set is O(n d + block^2) ~ 1 MiB + tiles)",
        verdict=decide(margins, seed_margins),
        seed_margins=seed_margins,
        notes=[msg("{case}: forward {fe:.1e}, grad {ge:.1e}", case=name, fe=fe, ge=ge)
               for name, fe, ge in cases]
        + [
            msg("peak measured as live tensor bytes (diagnostics.tensor_memory), causal, block "
                "{block}: {peak_mib:.2f} MiB vs n x n = {matrix_mib:.0f} MiB. Before issue 12 the "
                "peak was the process's resident-set high-water mark, which depends on the "
                "allocator's state (1.84 vs 1.88 MiB in two orders of the quick tier); the tensor "
                "count is deterministic.", block=block, peak_mib=peak / 2**20,
                matrix_mib=matrix / 2**20),
            msg("Version 3 (issue 18): the seed's 'bitwise equal' (000:1170) as a seed margin: "
                "the fp32 outputs differ by up to {fwd:.1e} (not 0); in float64 by {fwd64:.1e}",
                fwd=fwd, fwd64=fwd64),
            msg("Version 2 (issue 14): the falsifier is a bug planted in the online softmax (the "
            "running sum and output are not rescaled when the running max grows), which the "
            "exactness margins must catch; before, only the memory half was falsified (one "
            "n x n tile)."),
        ],
        details={"cases": cases, "peak_bytes": peak, "block": block},
        margins=margins,
    )


def _attention_flops(n: int, d: int, heads: int, g: torch.Generator, *,
                     block: int) -> dict[str, int]:
    """Matrix-product FLOPs (``diagnostics.flops``, FlopCounterMode) of the reference and the
    tiled attention, forward alone and forward + backward (non-causal, one batch)."""
    q, k, v = (torch.randn(1, heads, n, d, generator=g, requires_grad=True) for _ in range(3))

    def reference(backward: bool) -> None:
        out = scaled_dot_product_attention(q, k, v, backend="reference").output
        if backward:
            out.sum().backward()

    def tiled(backward: bool) -> None:
        out = tiled_attention(q, k, v, block_q=block, block_k=block)
        if backward:
            out.sum().backward()

    counts: dict[str, int] = {}
    for name, fn in (("reference", reference), ("tiled", tiled)):
        with torch.no_grad():
            counts[f"{name}_forward"] = count_flops(fn, False).total
        counts[f"{name}_train"] = count_flops(fn, True).total
    return counts


@claim(
    "architecture.flash-recompute-flops",
    source=f"{SEED_000} 理论 D 对比性思维 (000:1172) and 思维陷阱 (000:1184); Dao et al. 2022 "
    "Algorithm 4 (backward); Dao 2023 Algorithm 2",
    statement="""FlashAttention's FLOPs increase slightly, because the backward recomputes the
    attention logits instead of storing them: counted on the project's tiled attention, its
    forward has exactly the matrix-product FLOPs of reference attention (4 N^2 d per head) and
    forward + backward exactly 7/6 of them (14 N^2 d vs 12 N^2 d per head: one extra Q K^T per
    tile in the backward).""",
    falsifier="flash.backward-recomputes-output",
    expected="verified",
    version=1,
    kind="measurement",
    audit="""Issue 31: new (review section 5: "FlashAttention's FLOPs 'slightly increase'
    (backward recomputation): countable, not counted"). The prediction is derived by counting
    the matrix products of the algorithms, before any run: reference forward Q K^T and P V
    (2 x 2 N^2 d), backward dV, dP, dQ, dK (4 x 2 N^2 d), i.e. 12 N^2 d; the tiled backward
    recomputes S = Q K^T once more (+2 N^2 d), i.e. 14 N^2 d: ratio 7/6. The measurement counts
    the library's own tiled attention (functional.tiled_attention, a backend users run) with
    torch's FlopCounterMode; the counts are integers, so the tolerance is float64 rounding of
    the ratio (1e-12). The seed's "略增" is verified (7/6 = +17 %, with the FLOPs of the forward
    unchanged). The falsifier is a performance bug in the backward (the output O recomputed
    from the tiles for D = rowsum(dO * O) instead of read from the saved O): gradients are
    unchanged, only the counted FLOPs show it.""",
    seed_refs=[("000", 1172, 1172), ("000", 1184, 1184)],
    statement_zh="""FlashAttention 的 FLOP 略有增加，因为反向传播重算注意力 logits 而不存储它们：
    在本项目的分块注意力上计数，其前向的矩阵乘 FLOP 与参考注意力完全相同（每头 4 N^2 d），
    前向加反向恰为参考的 7/6（每头 14 N^2 d 对 12 N^2 d：反向中每块多算一次 Q K^T）。""",
)
def check_flash_recompute_flops(ctx: Context) -> Evidence:
    """Margins: tiled / reference matrix-product FLOPs = 1 (forward) and 7/6 (forward +
    backward) to 1e-12; the reference counts equal 4 N^2 d H and 12 N^2 d H (the counter
    counts what the algorithm says, so the ratio is not an artefact of the counter)."""
    n, d, heads = ctx.pick((64, 16, 1), (128, 16, 2), (512, 64, 4))  # counts are exact
    counts = _attention_flops(n, d, heads, ctx.generator(1172), block=32)
    unit = 2 * n * n * d * heads  # one N x N x d matrix product, all heads
    fwd_ratio = counts["tiled_forward"] / counts["reference_forward"]
    train_ratio = counts["tiled_train"] / counts["reference_train"]
    ctx.report_progress(1.0)
    margins = [
        close_to("reference forward FLOPs / (2 N^2 d H) (Q K^T and P V)",
                 counts["reference_forward"] / unit, 2.0, abs_=1e-12),
        close_to("reference forward + backward FLOPs / (2 N^2 d H) (+ dV, dP, dQ, dK)",
                 counts["reference_train"] / unit, 6.0, abs_=1e-12),
        close_to("tiled / reference forward FLOPs", fwd_ratio, 1.0, abs_=1e-12),
        close_to("tiled / reference forward + backward FLOPs (the backward recomputes S)",
                 train_ratio, 7.0 / 6.0, abs_=1e-12),
    ]
    return Evidence(
        predicted={"forward_ratio": 1.0, "train_ratio": round(7 / 6, 6)},
        measured={"forward_ratio": fwd_ratio, "train_ratio": round(train_ratio, 6),
                  **counts},
        tolerance="exact counts (ratios to 1e-12)",
        verdict=decide(margins),
        margins=margins,
        notes=[
            f"N = {n}, d = {d}, {heads} heads, blocks of 32, non-causal, float32; FLOPs of the "
            "matrix products (aten mm/bmm/matmul) under torch's FlopCounterMode; elementwise "
            "exp and the row sums are not counted (O(N^2) per head, a factor d smaller).",
            f"Counted: reference {counts['reference_forward']} (forward), "
            f"{counts['reference_train']} (forward + backward); tiled "
            f"{counts['tiled_forward']}, {counts['tiled_train']}: +{100 * (train_ratio - 1):.1f} "
            "% for training, 0 % for inference (the seed's '略增'; the wall-clock gain comes "
            "from IO, architecture.flash-io).",
        ],
        details={"counts": counts, "unit": unit},
    )
