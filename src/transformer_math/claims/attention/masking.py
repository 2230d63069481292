"""Rows of the attention matrix: row-stochastic, causal masking, permutation equivariance.

Sources: the main seed 000 §8.3.1 (property (1) and its scope note, property (3), exercise
8.3.1-2, "因果掩码: 为什么用 -inf 而非直接置零"); Vaswani et al. 2017, §3.2.3 (masking) and
§3.5 (the sinusoidal code).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor

from transformer_math.claims.attention._common import (
    SEED_000,
    build_mha,
    forward_with_pattern,
    randn,
    sig,
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
    decide,
    exceeds,
)
from transformer_math.diagnostics import convex_hull_test
from transformer_math.functional import causal_mask, scaled_dot_product_attention
from transformer_math.functional.positional import sinusoidal_encoding
from transformer_math.i18n.message import msg
from transformer_math.nn import MultiHeadAttention
from transformer_math.nn.attention import KVCache
from transformer_math.nn.feedforward import FEEDFORWARDS
from transformer_math.nn.init import seeded


def _causal_attention(q: Tensor, k: Tensor, v: Tensor) -> tuple[Tensor, Tensor]:
    """(weights, output) of the project's causal attention (``is_causal=True``, the -inf mask
    added before the softmax): weights from the ``reference`` backend, output from the fused
    ``sdpa`` backend."""
    ref = scaled_dot_product_attention(q, k, v, is_causal=True, return_weights=True)
    fused = scaled_dot_product_attention(q, k, v, is_causal=True, backend="sdpa")
    assert ref.weights is not None
    return ref.weights, fused.output


# ---------------------------------------------------------------------------------------------
# attention.row-stochastic
# ---------------------------------------------------------------------------------------------


def _support_violation(points: Tensor, ys: Tensor, directions: Tensor) -> float:
    """max over y and u of u.y - max_j u.v_j: <= 0 (up to rounding) is necessary for every y to
    lie in conv(points), for every direction u."""
    support = (points @ directions.T).amax(dim=0)  # (U,) support function of the hull
    return float(((ys @ directions.T) - support).max())


def _convexity(w: Tensor, out: Tensor, v: Tensor, directions: Tensor) -> dict[str, float]:
    """Row-stochastic weights and outputs inside conv(V), for one arm (B, 1, n, .) tensors."""
    return {
        "min_weight": float(w.min()),
        "max_row_sum_error": float((w.sum(-1) - 1.0).abs().max()),
        "max_AV_minus_output": float((w @ v - out).abs().max()),
        "support_violation": max(
            _support_violation(v[b, 0], out[b, 0], directions) for b in range(v.shape[0])
        ),
    }


def _hull_exits(module: MultiHeadAttention, x: Tensor, o: Tensor, v: Tensor,
                gen: torch.Generator) -> tuple[dict[str, int], float]:
    """Per exit of the scope note (residual, an FFN, the output projection W_O), how many of its
    outputs a separating hyperplane certifies outside conv(V); and the largest hull distance of
    the outputs ``o``."""
    d = x.shape[-1]
    n = x.shape[1]
    ffn = seeded(lambda: FEEDFORWARDS.get("gelu")(d, 4 * d), gen)
    with torch.no_grad():
        exits = {"residual x + Attn(x)": x + o, "FFN(Attn(x))": ffn(o)}
    # One batched hull programme: per sequence, the attention outputs and the exits.
    with torch.no_grad():  # 000:221 exit (c): the single-head output projection W_O o + b
        exits["W_O o (output projection)"] = module.out_proj(o)
    hull = convex_hull_test(v[:, 0], torch.cat([o, *exits.values()], dim=1), iterations=500)
    outside = hull.certified_outside
    counts = {name: int(outside[:, (i + 1) * n : (i + 2) * n].sum())
              for i, name in enumerate(exits)}
    return counts, float(hull.distance[:, :n].max())


def _projected_hulls(module: MultiHeadAttention, x: Tensor, multi: MultiHeadAttention,
                     x_multi: Tensor) -> dict[str, dict[str, float]]:
    """W_O is linear (affine with its bias): the single-head output W_O o + b of a convex
    combination o = sum_j A_ij v_j is the same combination of the points W_O v_j + b, so it stays
    in conv(W_O v_j + b), while it leaves conv(v_j) (000:221's exit (c)). Several heads with
    different weights are an exit: sum_h sum_j A^h_ij v^h_j W_O^h is in general not a convex
    combination of the rows u_j = concat_h(v^h_j) W_O + b of the same module.

    Both from ``MultiHeadAttention.forward`` (the module's output) against the points built
    from its ``project_qkv`` values and ``out_proj``; one hull programme each.
    """
    out: dict[str, dict[str, float]] = {}
    with torch.no_grad():
        for name, m, xs in (("one head: W_O o in conv(W_O v_j)", module, x),
                            ("two heads: output in conv(concat(v_j) W_O)", multi, x_multi)):
            _, _, vals = m.project_qkv(xs, xs, xs)  # (B, H, n, d_k)
            points = m.out_proj(vals.transpose(1, 2).reshape(xs.shape[0], xs.shape[1], -1))
            y = m(xs)
            hull = convex_hull_test(points, y, iterations=2000)
            out[name] = {"certified_outside": int(hull.certified_outside.sum()),
                         "max_distance": float(hull.distance.max())}
    return out


@claim(
    "attention.row-stochastic",
    source=f"{SEED_000} property (1) and its scope note",
    statement="""The attention matrix is row-stochastic (A >= 0, rows sum to 1), with or without
    the causal mask, so each output of a single attention layer is a convex combination of the
    value vectors and lies in their convex hull conv(V). The three exits of the scope note take
    the output out of conv(V): the residual x + Attn(x), an FFN, and the output projection W_O
    (W_O o leaves conv(V) although, W_O being linear, it stays in conv(W_O v_j)); several heads
    with different weights leave even conv(concat(v_j) W_O).""",
    falsifier="attention.softmax-wrong-axis",
    expected="verified",
    version=5,
    kind="measurement",
    seed_refs=[("000", 217, 221)],
    statement_zh="""注意力矩阵是行随机的（A >= 0，每行和为 1），有无因果掩码皆然，
    因此单个注意力层的每个输出都是值向量的凸组合、落在其凸包 conv(V) 内。适用范围注释的三个出口
    都让输出离开 conv(V)：残差 x + Attn(x)、FFN、以及输出投影 W_O（W_O o 离开 conv(V)，
    尽管 W_O 是线性的、它仍落在 conv(W_O v_j) 内）；权重不同的多个头甚至离开
    conv(concat(v_j) W_O)。""",
    audit="""Issue 31 review item 000:221 (misread: the seed's hull is conv(V)): agreed, the
    refutation is dropped. Versions 3-4 changed the hull to conv(W_O v_j) and refuted the
    seed's exit (c); the seed says W_O takes the output out of conv(V), which is measured here
    (single head, d_k = d: W_O o certified outside conv(V) by a separating hyperplane) and
    holds. The conv(W_O v_j) and two-head measurements stay as what W_O does and does not do.
    Thresholds: float32 rounding of 12-term sums (1e-6, 1e-5), hull distance 1e-4; the exit
    counts need >= 1 certified point (an exact certificate each).""",
)
@single_threaded
def check_row_stochastic(ctx: Context) -> Evidence:
    """Weights and outputs from the project's attention (float32, the production dtype).

    Version 5 (issue 31): the seed's exit (c) is measured against the seed's hull, conv(V): the
    single-head W_O o + b is certified outside conv(v_j) (``seed_margins``, which hold), so the
    claim verifies 000:221 instead of refuting it against another hull (versions 3-4).

    Version 2 (issue 14): the falsifier is the planted bug ``attention.softmax-wrong-axis`` (the
    reference backend normalises over the queries), not a claim-local after-softmax variant.
    Version 3 (issue 18, 000:221): W_O was no longer counted as an exit. The seed's version
    ("W_O takes the output out of the hull") is measured on the same module: the single-head
    output W_O o + b against conv(W_O v_j + b) (no point certified outside, hull distance at
    rounding), and the exit the seed missed, two heads with different weights (points certified
    outside conv(concat(v_j) W_O + b)).

    Inside the hull: the weights are certified convex (>= 0, rows sum to 1 within 1e-6) and
    reproduce the output of the fused ``sdpa`` backend, A V = o, within 1e-5; independently, for
    512 random directions u, u.o <= max_j u.v_j. Outside the hull: a separating hyperplane
    u.y > max_j u.v_j found by ``diagnostics.convex_hull_test`` (an exact certificate).
    Single head with d_k = d, so that x, o and FFN(o) share the value space; the FFN is
    the project's GELU MLP (``nn.feedforward``, d -> 4 d -> d).
    """
    gen = ctx.generator(303)
    d, n = 8, 12
    batch = ctx.pick(1, 2, 4)
    module = build_mha(d, 1, gen, dtype=torch.float32, backend="reference")
    x = torch.randn(batch, n, d, generator=gen)
    multi = build_mha(d, 2, gen, dtype=torch.float32, backend="reference")
    with torch.no_grad():
        q, k, v = module.project_qkv(x, x, x)  # (B, 1, n, d)
        full = scaled_dot_product_attention(q, k, v, return_weights=True)
        full_fused = scaled_dot_product_attention(q, k, v, backend="sdpa").output
        assert full.weights is not None
        causal_w, causal_out = _causal_attention(q, k, v)
    directions = torch.randn(512, d, generator=gen)
    directions = directions / directions.norm(dim=-1, keepdim=True)
    arms = {"full": (full.weights, full_fused), "causal": (causal_w, causal_out)}
    measured = {name: _convexity(w, out, v, directions) for name, (w, out) in arms.items()}
    exit_counts, attention_distance = _hull_exits(module, x, full_fused[:, 0], v, gen)
    # the two-head exit is counted on 8 sequences (96 outputs): on one sequence (12 outputs) the
    # count was 2-6 over seeds 0-4, a slack of 1 against a spread of 1.8 (issue 18)
    x_multi = torch.randn(ctx.pick(8, 8, 16), n, d, generator=gen)
    projected = _projected_hulls(module, x, multi, x_multi)
    one, two = (projected[k] for k in projected)

    def worst(key: str, pick: Callable[..., float] = max) -> float:
        return pick(measured[a][key] for a in arms)

    margins: list[Margin] = [
        at_least("min attention weight (full, causal)", worst("min_weight", min), 0.0),
        at_most("max |row sum - 1| (full, causal)", worst("max_row_sum_error"), 1e-6),
        at_most("max |A V - output| (full, causal)", worst("max_AV_minus_output"), 1e-5),
        at_most("max u.o - max_j u.v_j over 512 directions", worst("support_violation"), 1e-5),
        *(at_least(f"{name}: points certified outside conv(V)", c, 1)
          for name, c in exit_counts.items() if not name.startswith("W_O")),
        at_most("one head: W_O o certified outside conv(W_O v_j) (integers: < 1/2 is none)",
                one["certified_outside"], 0.5),
        at_most("one head: distance of W_O o to conv(W_O v_j)", one["max_distance"], 1e-4),
        # a count whose size depends on the random weights (22-81 of 96 over seeds 0-4): what
        # matters is that it is not zero, compared in decades (``exceeds``)
        exceeds("two heads: outputs certified outside conv(concat(v_j) W_O)",
                two["certified_outside"], 1),
    ]
    seed_margins = [
        at_least("000:221 exit (c): single-head W_O o certified outside conv(V)",
                 exit_counts["W_O o (output projection)"], 1),
    ]
    points = batch * n
    return Evidence(
        predicted="A >= 0, |row sum - 1| <= 1e-6, outputs in conv(V); residual, FFN and W_O "
                  "leave it; W_O o stays in conv(W_O v_j), two heads leave that too",
        measured=[sig(worst("max_row_sum_error")), sig(worst("min_weight", min)),
                  *(f"{c}/{points} outside" for c in exit_counts.values()),
                  f"W_O: {one['certified_outside']}/{points} outside",
                  f"two heads: {two['certified_outside']}/{x_multi.shape[0] * n} outside"],
        tolerance="row sums 1e-6 and A V = output 1e-5 (float32 rounding of 12-term sums); "
                  "hull distance 1e-4",
        verdict=decide(margins, seed_margins),
        notes=[
            "Order: max |row sum - 1| and min weight over the full and causal arms; outputs "
            "certified outside conv(V) (separating hyperplane) for the residual, the FFN and "
            "W_O o; single-head W_O o against conv(W_O v_j); two heads against "
            "conv(concat(v_j) W_O).",
            msg("Attention outputs: distance to conv(V) by projected gradient <= "
                "{attention_distance:.1e} (a second, weight-free view of the same fact); W_O o: "
                "distance to conv(W_O v_j) <= {max_distance:.1e}.",
                attention_distance=attention_distance, max_distance=one['max_distance']),
            "000:221 counts W_O among the exits from conv(V): measured, W_O o leaves conv(V) "
            f"({exit_counts['W_O o (output projection)']}/{points} certified outside). A linear "
            "map keeps convex combinations (W_O sum_j a_j v_j = sum_j a_j W_O v_j), so no "
            "single-head output leaves conv(W_O v_j); several heads with different weights "
            "leave that hull too.",
            msg("The FFN is the project's GELU MLP (d -> 4d -> d); the residual and W_O come from "
                "the same MultiHeadAttention."),
        ],
        details={
            "arms": measured, "exits_certified_outside": exit_counts,
            "points_per_exit": points, "attention_output_hull_distance": attention_distance,
            "projected_hulls": projected,
        },
        margins=margins,
        seed_margins=seed_margins,
    )


# ---------------------------------------------------------------------------------------------
# attention.permutation-equivariance
# ---------------------------------------------------------------------------------------------


@claim(
    "attention.permutation-equivariance",
    source=f"{SEED_000} property (3) and exercise 8.3.1-2",
    statement="""Without position information self-attention is permutation equivariant:
    Attn(P X) = P Attn(X) for every permutation matrix P. Adding a position code with distinct
    rows (X + PE) breaks it.""",
    falsifier="attention.implicit-causal",
    expected="verified",
    version=2,
    kind="measurement",
    audit="""Issue 31 review: sound; no change. Tolerance 1e-12 relative (float64 reordered
    sums); the position-code arm must exceed 1e-3 (an O(1) effect, far from rounding).""",
    seed_refs=[("000", 263, 281), ("000", 402, 402)],
)
@single_threaded
def check_permutation_equivariance(ctx: Context) -> Evidence:
    """max |MHA(P X) - P MHA(X)| through ``MultiHeadAttention`` (reference and sdpa backends,
    float64), and the same with the sinusoidal code added after the permutation,
    MHA(P X + PE) against P MHA(X + PE) (``functional.positional.sinusoidal_encoding``).

    Version 2 (issue 14): the falsifier is the planted bug ``attention.implicit-causal`` (the
    library turns on a causal mask when none is given, as Hugging Face's sdpa path infers
    ``is_causal``), which ties each output to its position; it used to be the position-code arm
    itself, which the claim measures anyway.

    Proof (000 §8.3.1): Q, K, V -> P Q, P K, P V; the logits become P S P^T, the row softmax
    commutes with that, and (P A P^T)(P V) = P A V. Tolerance: 1e-12 relative to max |output|
    (float64, sums of a few dozen terms reordered). The position-code arm is always measured
    too and must exceed 1e-3 relative: the code breaks equivariance at O(1), not at rounding level.
    """
    gen = ctx.generator(404)
    d, heads, n = 16, 4, ctx.pick(8, 10, 32)
    batch = 2
    ref = build_mha(d, heads, gen, backend="reference")
    fused = build_mha(d, heads, gen, backend="sdpa")
    fused.load_state_dict(ref.state_dict())
    x = randn(batch, n, d, generator=gen)
    perm = torch.randperm(n, generator=gen)
    if bool((perm == torch.arange(n)).all()):
        perm = torch.roll(perm, 1)
    pe = sinusoidal_encoding(torch.arange(n, dtype=torch.float64), d).to(x.dtype)

    def equivariance_error(module: MultiHeadAttention, code: Tensor) -> float:
        with torch.no_grad():
            y = module(x + code)
            y_perm = module(x[:, perm] + code)
        return float((y_perm - y[:, perm]).abs().max() / y.abs().max())

    code = torch.zeros_like(pe)
    errors = {"reference": equivariance_error(ref, code), "sdpa": equivariance_error(fused, code)}
    with_pe = equivariance_error(ref, pe)
    tol = 1e-12
    margins = [
        at_most("max relative equivariance error (reference, sdpa)", max(errors.values()), tol),
        at_least("relative error with the sinusoidal code added", with_pe, 1e-3),
    ]
    return Evidence(
        predicted=0.0,
        measured=sig(max(errors.values())),
        tolerance=f"{tol:g} relative to max |output| (float64)",
        verdict=decide(margins),
        notes=[
            msg("Permutation {tolist} of n = {n} tokens, d = {d}, H = {heads}.",
                tolist=perm.tolist(), n=n, d=d, heads=heads),
            msg("With the sinusoidal code added (exercise 8.3.1-2) the relative error is "
                "{with_pe:.3f}: position codes break equivariance.", with_pe=with_pe),
        ],
        details={"errors": errors, "error_with_position_code": with_pe},
        margins=margins,
    )


# ---------------------------------------------------------------------------------------------
# attention.causal-mask
# ---------------------------------------------------------------------------------------------


def _mha_causal_forward(module: MultiHeadAttention, x: Tensor) -> tuple[Tensor, Tensor]:
    """(weights (B, H, T, T), output (B, T, d)) of causal self-attention through ``module``'s
    own masked forward (weights read at ``hook_pattern``)."""
    output, weights = forward_with_pattern(module, x, is_causal=True)
    return weights, output


def _prefix_changes(ref: MultiHeadAttention, fused: MultiHeadAttention, x: Tensor, y: Tensor,
                    gen: torch.Generator) -> dict[str, float]:
    """Largest change of the outputs at positions <= t when the tokens after t are redrawn
    (t = 1, n/2, n-2), through ``ref`` and the fused ``sdpa`` module."""
    batch, n, d = x.shape
    diff: dict[str, float] = {"reference": 0.0, "sdpa": 0.0}
    for t in sorted({1, n // 2, n - 2}):
        x2 = x.clone()
        x2[:, t + 1 :] = torch.randn(batch, n - t - 1, d, generator=gen) * 3.0
        with torch.no_grad():
            _, y2 = _mha_causal_forward(ref, x2)
            f1, f2 = fused(x, is_causal=True), fused(x2, is_causal=True)
        diff["reference"] = max(diff["reference"],
                                float((y2[:, : t + 1] - y[:, : t + 1]).abs().max()))
        diff["sdpa"] = max(diff["sdpa"], float((f2[:, : t + 1] - f1[:, : t + 1]).abs().max()))
    return diff


@claim(
    "attention.causal-mask",
    source=f"{SEED_000} 因果掩码 (为什么用 -inf 而非直接置零)",
    statement="""Adding -inf above the diagonal before the softmax gives weights that are exactly
    zero above the diagonal, rows that still sum to 1, and an output at position t that does not
    change when tokens after t change.""",
    falsifier="attention.mask-after-softmax",
    expected="verified",
    version=2,
    kind="measurement",
    audit="""Issue 31 review: sound; no change. Zeros exact, float32 row sums and prefix outputs
    within 1e-6.""",
    seed_refs=[("000", 315, 327)],
)
@single_threaded
def check_causal_mask(ctx: Context) -> Evidence:
    """Through ``MultiHeadAttention(is_causal=True)`` (reference backend, weights read at its
    ``hook_pattern``, and the fused sdpa backend for the prefix test), float32.

    Tolerances: zeros above the diagonal are checked exactly (exp(-inf) = 0); row sums within
    1e-6 (float32 sums); prefix outputs within 1e-6 (the future keys enter only through
    exact-zero weights, so the expected difference is 0).

    Version 2 (issue 14): the falsifier is the planted bug ``attention.mask-after-softmax`` in
    the reference backend (the seed's pitfall: zero the future after the softmax), not a
    claim-local variant.
    """
    gen = ctx.generator(505)
    d, heads, n = 16, 2, ctx.pick(8, 12, 32)
    batch = 2
    ref = build_mha(d, heads, gen, dtype=torch.float32, backend="reference")
    fused = build_mha(d, heads, gen, dtype=torch.float32, backend="sdpa")
    fused.load_state_dict(ref.state_dict())
    x = torch.randn(batch, n, d, generator=gen)
    with torch.no_grad():
        weights, y = _mha_causal_forward(ref, x)
    nonzero_future = int((weights[..., ~causal_mask(n, n)] != 0).sum())
    row_err = float((weights.sum(-1) - 1.0).abs().max())
    prefix_diff = _prefix_changes(ref, fused, x, y, gen)
    margins = [
        at_most("nonzero weights above the diagonal (integers: < 1/2 is none)", nonzero_future,
                0.5),
        at_most("max |row sum - 1|", row_err, 1e-6),
        at_most("max change of outputs at t' <= t when tokens after t change",
                max(prefix_diff.values()), 1e-6),
    ]
    details: dict[str, Any] = {
        "n": n, "heads": heads, "nonzero_future_weights": nonzero_future,
        "max_row_sum_error": row_err, "prefix_change": prefix_diff,
    }
    return Evidence(
        predicted=[0, 0.0, 0.0],
        measured=[nonzero_future, sig(row_err), sig(max(prefix_diff.values()))],
        tolerance="future weights exactly 0; row sums 1e-6; prefix outputs 1e-6 (float32)",
        verdict=decide(margins),
        notes=[
            msg("Order: number of nonzero weights above the diagonal, max |row sum - 1|, max "
                "change of outputs at positions <= t when the tokens after t are redrawn (t = 1, "
                "n/2, n-2)."),
        ],
        details=details,
        margins=margins,
    )


# ---------------------------------------------------------------------------------------------
# attention.kv-cache-causal-alignment
# ---------------------------------------------------------------------------------------------


def _incremental_forward(module: MultiHeadAttention, x: Tensor, chunks: list[int]
                         ) -> tuple[Tensor, list[tuple[int, Tensor]]]:
    """Causal self-attention of ``x`` fed in blocks of sizes ``chunks`` through a ``KVCache``:
    (concatenated outputs (B, T, d), [(past length, weights (B, H, c, past + c))] per block),
    the weights read at the module's ``hook_pattern``."""
    cache = KVCache()
    outputs: list[Tensor] = []
    patterns: list[tuple[int, Tensor]] = []
    start = 0
    for c in chunks:
        past = cache.seq_len
        out, weights = forward_with_pattern(module, x[:, start : start + c], is_causal=True,
                                            kv_cache=cache)
        outputs.append(out)
        patterns.append((past, weights))
        start += c
    return torch.cat(outputs, dim=1), patterns


def _alignment_errors(patterns: list[tuple[int, Tensor]]) -> tuple[int, int]:
    """(weights > 0 on keys j > past + i, weights == 0 on keys j <= past + i) over all blocks:
    both are 0 for the bottom-right alignment, where query i of a block is position past + i."""
    future, starved = 0, 0
    for past, w in patterns:
        c, s = w.shape[-2], w.shape[-1]
        allowed = torch.arange(s)[None, :] <= (past + torch.arange(c))[:, None]  # (c, s)
        future += int((w[..., ~allowed] != 0).sum())
        starved += int((w[..., allowed] == 0).sum())
    return future, starved


@claim(
    "attention.kv-cache-causal-alignment",
    source=f"{SEED_000} 因果掩码 (只看历史); 004 RoPE vs Sinusoidal (KV Cache兼容)",
    statement="""With a KV cache, a block of c new tokens after p cached ones are positions
    p, ..., p + c - 1: causal attention lets query i of the block see keys j <= p + i (the mask
    is bottom-right aligned), so decoding a sequence block by block (a prefill, a chunk of
    several tokens, then one token at a time) gives exactly the outputs of one causal forward
    over the whole sequence.""",
    falsifier="attention.causal-top-left",
    expected="verified",
    version=1,
    kind="measurement",
    audit="""Issue 31 review: sound; no change. Tolerance 1e-12 relative (float64), weight
    counts exact.""",
    seed_refs=[("000", 315, 327), ("004", 277, 277)],
)
@single_threaded
def check_kv_cache_causal_alignment(ctx: Context) -> Evidence:
    """Incremental decoding through ``MultiHeadAttention(..., kv_cache=KVCache())`` against the
    full causal forward of the same module, for the reference and the fused sdpa backends
    (float64, one set of weights), and the weights of every block (``hook_pattern``): zero
    exactly on the keys after position p + i, positive on every key up to it.

    The blocks: a prefill of 5 tokens, a chunk of 3 (chunked prefill / speculative
    verification: q_len = 3 < k_len = 8, where the alignment matters), then single tokens.
    Tolerance 1e-12 relative to max |output|: the same sums in another order (float64).
    """
    gen = ctx.generator(1212)
    d, heads, n = 16, 4, ctx.pick(12, 16, 32)
    batch = 2
    ref = build_mha(d, heads, gen, backend="reference")
    fused = build_mha(d, heads, gen, backend="sdpa")
    fused.load_state_dict(ref.state_dict())
    x = randn(batch, n, d, generator=gen)
    chunks = [5, 3] + [1] * (n - 8)
    errors: dict[str, float] = {}
    with torch.no_grad():
        for name, module in (("reference", ref), ("sdpa", fused)):
            full = module(x, is_causal=True)
            inc, patterns = _incremental_forward(module, x, chunks)
            errors[name] = float((inc - full).abs().max() / full.abs().max())
            if name == "reference":
                future, starved = _alignment_errors(patterns)
    tol = 1e-12
    margins = [
        at_most("max relative |incremental - full forward| (reference, sdpa)",
                max(errors.values()), tol),
        at_most("weights on keys after position past + i (integers: < 1/2 is none)", future, 0.5),
        at_most("zero weights on keys up to position past + i (integers: < 1/2 is none)",
                starved, 0.5),
    ]
    return Evidence(
        predicted=[0.0, 0, 0],
        measured=[sig(max(errors.values())), future, starved],
        tolerance=f"{tol:g} relative to max |output| (float64); weight counts exact",
        verdict=decide(margins),
        notes=[
            msg("Order: max relative difference between block-by-block decoding and one causal "
                "forward (worst backend); weights on future keys; zero weights on allowed keys."),
            msg("Blocks {chunks} of a sequence of n = {n} tokens, d = {d}, H = {heads}. A "
                "top-left aligned mask (query i sees keys j <= i, as torch SDPA's is_causal does "
                "when q_len != k_len) starves every query after the prefill of its history.",
                chunks=chunks, n=n, d=d, heads=heads),
        ],
        details={"chunks": chunks, "errors": errors, "future_weights": future,
                 "starved_allowed_keys": starved},
        margins=margins,
    )


# ---------------------------------------------------------------------------------------------
# attention.fully-masked-rows
# ---------------------------------------------------------------------------------------------


def _seed_004_masked_fill(q: Tensor, k: Tensor, padding: Tensor, allowed: Tensor
                          ) -> dict[str, Any]:
    """The third seed's masking (004:164-169): scores = Q K^T / sqrt(d_k), then
    ``scores.masked_fill(mask == 0, -1e9)`` and a softmax, with mask = 1 where a key is allowed
    (the padding and the boolean mask together); and the same masked_fill on float16 scores."""
    scores = q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5
    mask = (allowed.unsqueeze(0) & ~padding[:, None, :]).unsqueeze(1).to(torch.int64)
    weights = torch.softmax(scores.masked_fill(mask == 0, -1e9), dim=-1)
    try:
        scores.half().masked_fill(mask == 0, -1e9)
        errors, message = 0, "no error"
    except RuntimeError as exc:  # the value does not fit float16
        errors, message = 1, f"RuntimeError: {exc}"
    return {"weights": weights, "float16_errors": errors, "float16_message": message}


@claim(
    "attention.fully-masked-rows",
    source=f"{SEED_000} 因果掩码 (为什么用 -inf: e^-inf = 0); functional/softmax.py convention",
    statement="""Masks act through -inf added before the softmax, so a forbidden key gets weight
    exactly e^-inf = 0. A query whose every key is forbidden (a fully padded sequence, an
    all-False mask row) then gets all-zero weights and a zero output, never NaN and never the
    uniform average over the forbidden keys that a finite stand-in (-1e9, finfo.min) gives;
    every other row still sums to 1. The third seed's masked_fill(mask == 0, -1e9) agrees on
    every row with an allowed key and cannot run on float16 scores (-1e9 is outside float16's
    range); its uniform weights on fully masked rows are another convention, not an error.""",
    falsifier="attention.mask-finfo-min",
    expected="refuted",
    version=3,
    kind="measurement",
    seed_refs=[("000", 321, 325), ("004", 162, 167)],
    refutes=[Refutation(
        "004", 167, quote="scores = scores.masked_fill(mask == 0, -1e9)",
        says="the attention module masks its scores with masked_fill(mask == 0, -1e9)",
        reading="the seed's module run as written on float16 scores (a float16 model, or "
        "CUDA float16 autocast where Q K^T is float16; the seed's float32 default is fine): "
        "the masked_fill must not raise",
        correct="-1e9 is outside float16's range (its lowest value is -65504): masked_fill "
        "raises an overflow error on float16 scores; -inf (or the dtype's own lowest value) "
        "before the softmax works in every dtype")],
    statement_zh="""掩码通过在 softmax 之前加 -inf 起作用，被禁止的键权重恰为 e^-inf = 0。所有键都被
    禁止的查询（整条填充序列、掩码全 False 的行）因此得到全零权重与零输出，绝不会是 NaN，
    也不会是有限替代值（-1e9、finfo.min）给出的对被禁止键的均匀平均；其余各行仍和为 1。
    第三份种子的 masked_fill(mask == 0, -1e9) 在每个有允许键的行上与之一致，
    但无法在 float16 分数上运行（-1e9 超出 float16 的范围）；它在全被掩码的行上给出均匀权重，
    那是另一种约定，不是错误。""",
    audit="""Issue 31 review item 004:167: the float16 overflow is a real defect and is what is
    refuted (the seed's masked_fill(-1e9) raises on float16 scores); the uniform weights on
    fully masked rows are a convention (the project gives such rows zero weight, others give
    them the mean of the values) and are no longer part of the seed's margins (version 2 counted
    them). Thresholds: exact zeros on dead rows (exp(-inf) = 0), float32 sums within 1e-6,
    backends within 1e-5. Kind (R1 review: the refuting part is a code-audit of the seed's
    snippet): kept measurement, as the claim's statement and pass conditions are the library's
    masking; the refutation is the seed's snippet run beside it, and is a portability defect
    outside the seed's float32 default, said so in the record's reading.""",
)
@single_threaded
def check_fully_masked_rows(ctx: Context) -> Evidence:
    """``scaled_dot_product_attention`` with a key padding mask (sequence 1 fully padded,
    sequence 0 with its last 3 keys padded) and a boolean ``attn_mask`` with one all-False
    row, through the reference backend (weights) and the fused sdpa backend (outputs), float32.

    Tolerances: weights and outputs of fully masked rows exactly 0 (the convention of
    ``functional.softmax``: an all -inf row has no weight at all); other rows sum to 1 within
    1e-6 and the two backends agree within 1e-5 (float32 sums of 8 terms).

    Version 3 (issue 31): the seed's margins keep only the float16 overflow of
    masked_fill(mask == 0, -1e9); the uniform weights it gives fully masked rows are reported
    (details, notes) as the other convention they are, not as an error.
    """
    gen = ctx.generator(1313)
    b, h, t, s, d = 2, 2, 6, 8, 8
    q, k, v = (torch.randn(b, h, n, d, generator=gen) for n in (t, s, s))
    padding = torch.zeros(b, s, dtype=torch.bool)
    padding[0, -3:] = True
    padding[1] = True  # sequence 1: every key padded
    allowed = torch.rand(t, s, generator=gen) < 0.7
    allowed[:, 0] = True
    allowed[2] = False  # query 2: no key allowed
    pad_dead = (torch.arange(b) == 1).view(b, 1, 1).expand(b, h, t)  # (B, H, T) rows
    mask_dead = (torch.arange(t) == 2).view(1, 1, t).expand(b, h, t)
    dead_rows = [pad_dead, mask_dead, pad_dead | mask_dead]  # per mask case below
    weights: list[Tensor] = []
    outputs: dict[str, list[Tensor]] = {"reference": [], "sdpa": []}
    for masks in ({"key_padding_mask": padding}, {"attn_mask": allowed},
                  {"key_padding_mask": padding, "attn_mask": allowed}):
        ref = scaled_dot_product_attention(q, k, v, return_weights=True, **masks)
        fused = scaled_dot_product_attention(q, k, v, backend="sdpa", **masks)
        assert ref.weights is not None
        weights.append(ref.weights)
        outputs["reference"].append(ref.output)
        outputs["sdpa"].append(fused.output)
    dead_weight = max(float(w[m].abs().max()) for w, m in zip(weights, dead_rows, strict=True))
    dead_output = max(float(o[m].abs().max()) for outs in outputs.values()
                      for o, m in zip(outs, dead_rows, strict=True))
    live_row_err = max(float((w[~m].sum(-1) - 1.0).abs().max())
                       for w, m in zip(weights, dead_rows, strict=True))
    backend_diff = max(float((a - c).abs().max()) for a, c in
                       zip(outputs["reference"], outputs["sdpa"], strict=True))
    nonfinite = sum(int((~torch.isfinite(o)).sum()) for outs in outputs.values() for o in outs)
    seed = _seed_004_masked_fill(q, k, padding, allowed)
    live = ~(pad_dead | mask_dead)
    seed_live_diff = float((seed["weights"] - weights[2]).abs()[live].max())
    seed_dead_weight = float(seed["weights"][~live].min())
    margins = [
        at_most("max |weight| in fully masked rows", dead_weight, 0.0),
        at_most("max |output| of fully masked rows (reference, sdpa)", dead_output, 0.0),
        at_most("non-finite outputs (integers: < 1/2 is none)", nonfinite, 0.5),
        at_most("max |row sum - 1| of the other rows", live_row_err, 1e-6),
        at_most("max |reference - sdpa output|", backend_diff, 1e-5),
        at_most("004 masked_fill(-1e9) snippet: max |weight - project's| on rows with an "
                "allowed key", seed_live_diff, 1e-6),
    ]
    seed_margins = [
        at_most("004:167 masked_fill(-1e9) on float16 scores: overflow errors (integers)",
                seed["float16_errors"], 0.5),
    ]
    return Evidence(
        predicted=[0.0, 0.0, 0],
        measured=[sig(dead_weight), sig(dead_output), nonfinite],
        tolerance="fully masked rows exactly 0; other rows sum to 1 within 1e-6 (float32)",
        verdict=decide(margins, seed_margins),
        notes=[
            msg("Order: largest weight and largest output in fully masked rows (padding mask, "
                "boolean mask, both), non-finite outputs."),
            msg("A finite mask value leaves a fully masked row with weights 1/8 on the padding "
                "(softmax of equal logits), so its output is the mean of the padded values."),
            f"004:162-167: the seed's masked_fill(mask == 0, -1e9) on the same scores agrees "
            f"with the project on rows with an allowed key (max difference "
            f"{seed_live_diff:.1e}); it gives fully masked rows weights {seed_dead_weight:.4g} "
            f"(= 1/{s}), another convention (Hugging Face's finfo.min masks do the same); on "
            f"float16 scores: {seed['float16_message']}.",
        ],
        details={"dead_weight": dead_weight, "dead_output": dead_output,
                 "live_row_sum_error": live_row_err, "backend_difference": backend_diff,
                 "seed_004_fully_masked_min_weight": seed_dead_weight,
                 "seed_004_live_rows_difference": seed_live_diff,
                 "seed_004_float16_error": seed["float16_message"]},
        margins=margins,
        seed_margins=seed_margins,
    )
