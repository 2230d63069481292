"""Axial (2-D / 3-D) RoPE against the third seed's NDimensionalRoPE (004 ch. 9)."""

from __future__ import annotations

import torch
from torch import Tensor

from transformer_math.claims.position._common import randn
from transformer_math.claims.registry import (
    Context,
    Evidence,
    Refutation,
    at_least,
    at_most,
    claim,
    close_to,
    decide,
)
from transformer_math.functional.rope import (
    angles_to_cos_sin,
    apply_rotary,
    axial_rope_angles,
    axial_sections,
    rope_angles,
)
from transformer_math.functional.rope_scaling import default_inv_freq
from transformer_math.theory.positions import axial_angles_closed_form, seed_ndim_rope_tables


@claim(
    "position.axial-rope",
    source=("004 ch. 9 'N 维 RoPE' and its NDimensionalRoPE code; Liu & Zhou 2025 "
            "(arXiv 2504.06308); Qwen2-VL M-RoPE"),
    statement="""2-D and 3-D (axial) RoPE turns plane j of the a-th contiguous section by p_a θ_j
    (M-RoPE), so inner products depend only on the displacement vector and equal coordinates
    reduce to 1-D RoPE, with head_dim/2 angles per token; the third seed's NDimensionalRoPE
    builds half the needed frequencies and a cache that cannot be applied to
    (B, H, T, head_dim).""",
    falsifier="rope.axial-sections-interleaved",
    expected="refuted",
    version=2,
    seed_refs=[("004", 431, 449), ("004", 505, 562)],
    refutes=[
        Refutation(seed="004", line=527,
                   says="NDimensionalRoPE: arange(0, pairs_per_dim, 2) / pairs_per_dim "
                        "frequencies per axis",
                   correct="head_dim/2 angles are needed (pairs_per_dim per axis); the code "
                           "builds half of them (16 for head_dim 64, 2 axes)"),
        Refutation(seed="004", line=541,
                   says="cos/sin cache (1, 1, n_dims, max_pos, head_dim/n_dims) applied to x "
                        "(B, H, T, head_dim)",
                   correct="its einsum 'd,p->dp' yields (1, 1, max_pos, head_dim/2), which does "
                           "not broadcast against (B, H, T, head_dim)"),
    ],
)
def check_axial_rope(ctx: Context) -> Evidence:
    """Issue 14 (version 2): the additive variant built in the claim is gone; the library's
    angles are compared with the M-RoPE closed form (``theory/positions.py``), so a wrong
    section layout planted in ``axial_rope_angles`` fails (relativity and the 1-D reduction
    survive any linear section map). The seed's two statements are seed margins measured on
    the re-expression of its code (``seed_ndim_rope_tables``): the verdict is decided, not
    written."""
    g = ctx.generator(9)
    head_dim, trials = 48, 64
    inv = default_inv_freq(head_dim, 100.0).float()
    worst, reduce_err, layout_err = 0.0, 0.0, 0.0
    for n_axes in (2, 3):
        sections = axial_sections(head_dim // 2, n_axes)
        q, k = randn(g, trials, head_dim), randn(g, trials, head_dim)
        p = torch.randint(-200, 200, (trials, n_axes), generator=g).float()
        r = torch.randint(-200, 200, (trials, n_axes), generator=g).float()
        shift = torch.randint(-500, 500, (trials, n_axes), generator=g).float()

        def score(a: Tensor, b: Tensor, q: Tensor = q, k: Tensor = k,
                  sections: list[int] = sections) -> Tensor:
            cq, sq = angles_to_cos_sin(axial_rope_angles(a, inv, sections))
            ck, sk = angles_to_cos_sin(axial_rope_angles(b, inv, sections))
            return (apply_rotary(q.unsqueeze(1), cq.unsqueeze(1), sq.unsqueeze(1))
                    * apply_rotary(k.unsqueeze(1), ck.unsqueeze(1), sk.unsqueeze(1))
                    ).sum(-1).flatten()

        dev = (score(p, r) - score(p + shift, r + shift)).abs() / (q.norm(dim=-1)
                                                                  * k.norm(dim=-1))
        worst = max(worst, float(dev.max()))
        closed = axial_angles_closed_form(p + shift, inv.double().tolist(), sections)
        layout_err = max(layout_err, float(
            (axial_rope_angles(p + shift, inv, sections).double() - closed).abs().max()))
        c = torch.randint(0, 300, (trials,), generator=g).float()
        ang_nd = axial_rope_angles(c.unsqueeze(-1).expand(trials, n_axes), inv, sections)
        reduce_err = max(reduce_err, float((ang_nd - rope_angles(c, inv)).abs().max()))
    # The seed's NDimensionalRoPE at head_dim 64, 2 axes, against the library at that size.
    lib_angles = axial_rope_angles(torch.zeros(1, 2), default_inv_freq(64, 1e4),
                                   axial_sections(32, 2)).shape[-1]
    n_freq, cache_shape = seed_ndim_rope_tables(64, 2, 32)
    seed_applies = True
    try:
        x = torch.zeros(1, 1, 32, 64)
        _ = x * torch.zeros(cache_shape)
    except RuntimeError:
        seed_applies = False
    # float32 angles at |coordinates| < 700: deviation bound ~2 ulp(700) ~ 1e-4; use 1e-3. The
    # closed form's float64 product differs from the float32 one by <= ulp(700)/2 + 700 * 6e-8.
    margins = [
        at_most("relative deviation under a common shift", worst, 1e-3),
        at_most("reduction to 1-D (max angle difference)", reduce_err, 0.0),
        at_most("max |angle - M-RoPE closed form| (rad)", layout_err, 1e-3),
        close_to("library: angles per token for head_dim 64 (= 32)", lib_angles, 64 // 2),
    ]
    seed_margins = [
        close_to("seed: frequencies NDimensionalRoPE builds for head_dim 64 (needs 32)",
                 n_freq, 64 // 2),
        at_least("seed: its cache broadcasts to (B,H,T,64)", float(seed_applies), 1.0),
    ]
    return Evidence(
        predicted={"relative deviation": 0.0, "reduction to 1-D": 0.0, "closed form": 0.0,
                   "angles per token (head_dim 64)": 32,
                   "seed: frequencies built (needed 32 for head_dim 64)": "16 (half)",
                   "seed: cache broadcasts to (B,H,T,64)": False},
        measured={"relative deviation": worst, "reduction to 1-D": reduce_err,
                  "closed form": layout_err, "angles per token": lib_angles,
                  "seed: frequencies built": n_freq, "seed: cache shape": list(cache_shape),
                  "seed: cache broadcasts": seed_applies},
        tolerance="1e-3 relative (float32 angles, coordinates < 700); reduction exact",
        verdict=decide(margins, seed_margins),
        margins=margins,
        seed_margins=seed_margins,
        notes=["axial sections of the 1-D frequency list (M-RoPE style), 2 and 3 axes, "
               f"head_dim {head_dim}, base 100; the seed's einsum 'd,p->dp' cannot even take a "
               "(n_dims, max_pos) product of a 1-D position vector: its cache is (1, 1, max_pos, "
               "head_dim/2), which does not broadcast against (B, H, T, head_dim)"],
    )
