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
    decide,
)
from transformer_math.diagnostics.tensor_memory import peak_tensor_bytes
from transformer_math.functional.attention import scaled_dot_product_attention
from transformer_math.functional.tiled_attention import (
    IOCounter,
    tiled_attention,
    tiled_attention_forward,
)
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
        f"HBM accesses vs on-chip memory M (N = {n}, d = {d})",
        "M (elements)",
        "elements moved",
        [
            Series("tiled (counted)", xs, [float(x) for x in measured], style="o-"),
            Series("10 N^2 d^2 / M", xs, [10 * flash_rate(n, d, m) for m in srams], style="--"),
        ],
        logx=True,
        logy=True,
        hlines=[(float(standard), "standard attention")],
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
            f"N = {n}, d = {d}, M = 5 d B_r elements for B_r in {blocks} (B_c = min(B_r, d)); the "
            "counter records every tile the loop loads/stores. Standard attention (Algorithm 0) "
            f"moves 4 N d + 4 N^2 = {standard} elements; the tiled loop wins above "
            f"M ~ {m_cross:.0f} "
            f"(= {m_cross / d**2:.1f} d^2).",
            "004's table ('HBM O(n^2) -> O(nd)') is too coarse: the tiled loop's traffic is "
            "Theta(N^2 d^2 / M), which is O(N d) only when M ~ N d (Theorem 2).",
        ],
        figures=[_io_figure(n, d, srams, measured, standard)],
        details={"srams": srams, "measured": measured, "closed_form": closed, "standard": standard},
        margins=margins,
    )


def _exactness_cases(g: torch.Generator) -> list[tuple[str, float, float]]:
    """(case, max |forward error|, max |gradient error|) of tiled vs reference attention."""
    out = []
    cases = [
        ("non-causal", False, False, 7, 13),
        ("causal", True, False, 16, 16),
        ("causal, q shorter (cache)", True, False, 5, 64),
        ("additive mask with a dead row", False, True, 64, 5),
        ("causal + mask, one row tile", True, True, 1, 3),
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
    seed_refs=[("000", 1164, 1172), ("004", 298, 300)],
    refutes=[Refutation(
        seed="000", line=1170,
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
    method = "live tensor bytes (diagnostics.tensor_memory)"
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
        notes=[f"{name}: forward {fe:.1e}, grad {ge:.1e}" for name, fe, ge in cases]
        + [
            f"peak measured as {method}, causal, block {block}: {peak / 2**20:.2f} MiB vs "
            f"n x n = {matrix / 2**20:.0f} MiB. Before issue 12 the peak was the process's "
            "resident-set high-water mark, which depends on the allocator's state (1.84 vs "
            "1.88 MiB in two orders of the quick tier); the tensor count is deterministic.",
            f"Version 3 (issue 18): the seed's 'bitwise equal' (000:1170) as a seed margin: the "
            f"fp32 outputs differ by up to {fwd:.1e} (not 0); in float64 by {fwd64:.1e}",
            "Version 2 (issue 14): the falsifier is a bug planted in the online softmax (the "
            "running sum and output are not rescaled when the running max grows), which the "
            "exactness margins must catch; before, only the memory half was falsified (one "
            "n x n tile).",
        ],
        details={"cases": cases, "peak_bytes": peak, "block": block},
        margins=margins,
    )
