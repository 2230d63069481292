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
    merge_heads,
    randn,
    sig,
    single_threaded,
)
from transformer_math.claims.registry import (
    Context,
    Evidence,
    Falsifier,
    Margin,
    agreement,
    all_hold,
    at_least,
    at_most,
    claim,
)
from transformer_math.diagnostics import convex_hull_test
from transformer_math.functional import causal_mask, scaled_dot_product_attention
from transformer_math.functional.positional import sinusoidal_encoding
from transformer_math.nn import MultiHeadAttention
from transformer_math.nn.feedforward import FEEDFORWARDS
from transformer_math.nn.init import seeded

_MASKS = ("before-softmax", "after-softmax")


def _causal_attention(q: Tensor, k: Tensor, v: Tensor, mask: str) -> tuple[Tensor, Tensor]:
    """(weights, output) of causal attention, the mask applied as ``mask`` says.

    ``"before-softmax"``: the project's -inf mask (``is_causal=True``); output from the fused
    ``sdpa`` backend, weights from ``reference``. ``"after-softmax"`` (the pitfall of 000
    §8.3.1): full softmax, then future weights zeroed without renormalising, output A V.
    """
    if mask == "before-softmax":
        ref = scaled_dot_product_attention(q, k, v, is_causal=True, return_weights=True)
        fused = scaled_dot_product_attention(q, k, v, is_causal=True, backend="sdpa")
        assert ref.weights is not None
        return ref.weights, fused.output
    if mask == "after-softmax":
        full = scaled_dot_product_attention(q, k, v, return_weights=True)
        assert full.weights is not None
        allowed = causal_mask(q.shape[-2], k.shape[-2])
        weights = full.weights * allowed  # zeroed after the softmax: rows no longer sum to 1
        return weights, weights @ v
    raise ValueError(f"mask must be one of {_MASKS}, got {mask!r}")


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
    """Per exit of the scope note (residual, W_O, an FFN), how many of its outputs a separating
    hyperplane certifies outside conv(V); and the largest hull distance of the outputs ``o``."""
    d, n = x.shape[-1], x.shape[1]
    ffn = seeded(lambda: FEEDFORWARDS.get("gelu")(d, 4 * d), gen)
    with torch.no_grad():
        exits = {"residual x + Attn(x)": x + o, "W_O (MultiHeadAttention output)":
                 module.out_proj(o), "FFN(Attn(x))": ffn(o)}
    # One batched hull programme: per sequence, the attention outputs and the three exits.
    hull = convex_hull_test(v[:, 0], torch.cat([o, *exits.values()], dim=1), iterations=500)
    outside = hull.certified_outside
    counts = {name: int(outside[:, (i + 1) * n : (i + 2) * n].sum())
              for i, name in enumerate(exits)}
    return counts, float(hull.distance[:, :n].max())


@claim(
    "attention.row-stochastic",
    source=f"{SEED_000} property (1) and its scope note",
    statement="""The attention matrix is row-stochastic (A >= 0, rows sum to 1), with or without
    the causal mask, so each output of a single attention layer is a convex combination of the
    value vectors and lies in their convex hull. A residual x + Attn(x), an FFN, or the output
    projection W_O can leave the hull.""",
    falsifier=Falsifier(
        "mask after softmax",
        {"mask": "after-softmax"},
        "zero the future weights after the softmax without renormalising: rows sum to < 1",
    ),
)
@single_threaded
def check_row_stochastic(ctx: Context, *, mask: str = "before-softmax") -> Evidence:
    """Weights and outputs from the project's attention (float32, the production dtype).

    Inside the hull: the weights are certified convex (>= 0, rows sum to 1 within 1e-6) and
    reproduce the output of the fused ``sdpa`` backend, A V = o, within 1e-5; independently, for
    512 random directions u, u.o <= max_j u.v_j. Outside the hull: a separating hyperplane
    u.y > max_j u.v_j found by ``diagnostics.convex_hull_test`` (an exact certificate).
    Single head with d_k = d, so that x, o, W_O o and FFN(o) share the value space; the FFN is
    the project's GELU MLP (``nn.feedforward``, d -> 4 d -> d).
    """
    gen = ctx.generator(303)
    d, n = 8, 12
    batch = ctx.pick(1, 2, 4)
    module = build_mha(d, 1, gen, dtype=torch.float32, backend="reference")
    x = torch.randn(batch, n, d, generator=gen)
    with torch.no_grad():
        q, k, v = module.project_qkv(x, x, x)  # (B, 1, n, d)
        full = scaled_dot_product_attention(q, k, v, return_weights=True)
        full_fused = scaled_dot_product_attention(q, k, v, backend="sdpa").output
        assert full.weights is not None
        causal_w, causal_out = _causal_attention(q, k, v, mask)
    directions = torch.randn(512, d, generator=gen)
    directions = directions / directions.norm(dim=-1, keepdim=True)
    arms = {"full": (full.weights, full_fused), "causal": (causal_w, causal_out)}
    measured = {name: _convexity(w, out, v, directions) for name, (w, out) in arms.items()}
    exit_counts, attention_distance = _hull_exits(module, x, full_fused[:, 0], v, gen)

    def worst(key: str, pick: Callable[..., float] = max) -> float:
        return pick(measured[a][key] for a in arms)

    margins: list[Margin] = [
        at_least("min attention weight (full, causal)", worst("min_weight", min), 0.0),
        at_most("max |row sum - 1| (full, causal)", worst("max_row_sum_error"), 1e-6),
        at_most("max |A V - output| (full, causal)", worst("max_AV_minus_output"), 1e-5),
        at_most("max u.o - max_j u.v_j over 512 directions", worst("support_violation"), 1e-5),
        *(at_least(f"{name}: points certified outside conv(V)", c, 1)
          for name, c in exit_counts.items()),
    ]
    points = batch * n
    return Evidence(
        predicted="A >= 0, |row sum - 1| <= 1e-6, outputs in conv(V); exits leave conv(V)",
        measured=[sig(worst("max_row_sum_error")), sig(worst("min_weight", min)),
                  *(f"{c}/{points} outside" for c in exit_counts.values())],
        tolerance="row sums 1e-6 and A V = output 1e-5 (float32 rounding of 12-term sums)",
        verdict=agreement(all_hold(margins)),
        notes=[
            "Order: max |row sum - 1| and min weight over the full and causal arms; outputs "
            "certified outside conv(V) (separating hyperplane) for the residual, W_O and FFN.",
            f"Attention outputs: distance to conv(V) by projected gradient <= "
            f"{attention_distance:.1e} (a second, weight-free view of the same fact).",
            "The FFN is the project's GELU MLP (d -> 4d -> d); the residual and W_O come from "
            "the same MultiHeadAttention.",
        ],
        details={
            "mask": mask, "arms": measured, "exits_certified_outside": exit_counts,
            "points_per_exit": points, "attention_output_hull_distance": attention_distance,
        },
        margins=margins,
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
    falsifier=Falsifier(
        "sinusoidal position code",
        {"position": "sinusoidal"},
        "add a sinusoidal position code after permuting the tokens (exercise 8.3.1-2)",
    ),
)
@single_threaded
def check_permutation_equivariance(ctx: Context, *, position: str = "none") -> Evidence:
    """max |MHA(P X + PE) - P MHA(X + PE)| through ``MultiHeadAttention`` (reference and sdpa
    backends, float64), PE = 0 for the claim and the sinusoidal code
    (``functional.positional.sinusoidal_encoding``) for the falsifier.

    Proof (000 §8.3.1): Q, K, V -> P Q, P K, P V; the logits become P S P^T, the row softmax
    commutes with that, and (P A P^T)(P V) = P A V. Tolerance: 1e-12 relative to max |output|
    (float64, sums of a few dozen terms reordered). The position-code arm is always measured
    too and must exceed 1e-3 relative: the code breaks equivariance at O(1), not at rounding level.
    """
    if position not in ("none", "sinusoidal"):
        raise ValueError(f"position must be 'none' or 'sinusoidal', got {position!r}")
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

    code = pe if position == "sinusoidal" else torch.zeros_like(pe)
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
        verdict=agreement(all_hold(margins)),
        notes=[
            f"Permutation {perm.tolist()} of n = {n} tokens, d = {d}, H = {heads}.",
            f"With the sinusoidal code added (exercise 8.3.1-2) the relative error is "
            f"{with_pe:.3f}: position codes break equivariance.",
        ],
        details={"position": position, "errors": errors, "error_with_position_code": with_pe},
        margins=margins,
    )


# ---------------------------------------------------------------------------------------------
# attention.causal-mask
# ---------------------------------------------------------------------------------------------


def _mha_causal_forward(module: MultiHeadAttention, x: Tensor, mask: str) -> tuple[Tensor, Tensor]:
    """(weights (B, H, T, T), output (B, T, d)) of causal self-attention through ``module``: its
    own masked forward (weights read at ``hook_pattern``), or the mask applied after the softmax
    to its projections."""
    if mask == "before-softmax":
        output, weights = forward_with_pattern(module, x, is_causal=True)
        return weights, output
    q, k, v = module.project_qkv(x, x, x)
    weights, heads = _causal_attention(q, k, v, "after-softmax")
    return weights, module.out_proj(merge_heads(heads))


def _prefix_changes(ref: MultiHeadAttention, fused: MultiHeadAttention, x: Tensor, y: Tensor,
                    mask: str, gen: torch.Generator) -> dict[str, float]:
    """Largest change of the outputs at positions <= t when the tokens after t are redrawn
    (t = 1, n/2, n-2), through ``ref`` and (for the -inf mask) the fused ``sdpa`` module."""
    batch, n, d = x.shape
    diff: dict[str, float] = {"reference": 0.0, "sdpa": 0.0}
    for t in sorted({1, n // 2, n - 2}):
        x2 = x.clone()
        x2[:, t + 1 :] = torch.randn(batch, n - t - 1, d, generator=gen) * 3.0
        with torch.no_grad():
            _, y2 = _mha_causal_forward(ref, x2, mask)
            if mask == "before-softmax":
                f1, f2 = fused(x, is_causal=True), fused(x2, is_causal=True)
            else:
                f1, f2 = y, y2
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
    falsifier=Falsifier(
        "mask after softmax",
        {"mask": "after-softmax"},
        "zero future weights after the softmax: rows sum to < 1 and depend on the future",
    ),
)
@single_threaded
def check_causal_mask(ctx: Context, *, mask: str = "before-softmax") -> Evidence:
    """Through ``MultiHeadAttention(is_causal=True)`` (reference backend, weights read at its
    ``hook_pattern``, and the fused sdpa backend for the prefix test), float32.

    Tolerances: zeros above the diagonal are checked exactly (exp(-inf) = 0); row sums within
    1e-6 (float32 sums); prefix outputs within 1e-6 (the future keys enter only through
    exact-zero weights, so the expected difference is 0).
    """
    if mask not in _MASKS:
        raise ValueError(f"mask must be one of {_MASKS}, got {mask!r}")
    gen = ctx.generator(505)
    d, heads, n = 16, 2, ctx.pick(8, 12, 32)
    batch = 2
    ref = build_mha(d, heads, gen, dtype=torch.float32, backend="reference")
    fused = build_mha(d, heads, gen, dtype=torch.float32, backend="sdpa")
    fused.load_state_dict(ref.state_dict())
    x = torch.randn(batch, n, d, generator=gen)
    with torch.no_grad():
        weights, y = _mha_causal_forward(ref, x, mask)
    nonzero_future = int((weights[..., ~causal_mask(n, n)] != 0).sum())
    row_err = float((weights.sum(-1) - 1.0).abs().max())
    prefix_diff = _prefix_changes(ref, fused, x, y, mask, gen)
    margins = [
        at_most("nonzero weights above the diagonal (integers: < 1/2 is none)", nonzero_future,
                0.5),
        at_most("max |row sum - 1|", row_err, 1e-6),
        at_most("max change of outputs at t' <= t when tokens after t change",
                max(prefix_diff.values()), 1e-6),
    ]
    details: dict[str, Any] = {
        "mask": mask, "n": n, "heads": heads, "nonzero_future_weights": nonzero_future,
        "max_row_sum_error": row_err, "prefix_change": prefix_diff,
    }
    return Evidence(
        predicted=[0, 0.0, 0.0],
        measured=[nonzero_future, sig(row_err), sig(max(prefix_diff.values()))],
        tolerance="future weights exactly 0; row sums 1e-6; prefix outputs 1e-6 (float32)",
        verdict=agreement(all_hold(margins)),
        notes=[
            "Order: number of nonzero weights above the diagonal, max |row sum - 1|, max change "
            "of outputs at positions <= t when the tokens after t are redrawn (t = 1, n/2, n-2).",
        ],
        details=details,
        margins=margins,
    )
