"""Axial (2-D / 3-D) RoPE against the third seed's NDimensionalRoPE (004 ch. 9)."""

from __future__ import annotations

import torch
from torch import Tensor

from transformer_math.claims.position._common import randn
from transformer_math.claims.registry import (
    Context,
    Evidence,
    Falsifier,
    agreement,
    all_hold,
    at_most,
    claim,
    close_to,
)
from transformer_math.functional.positional import sinusoidal_encoding
from transformer_math.functional.rope import (
    angles_to_cos_sin,
    apply_rotary,
    axial_rope_angles,
    axial_sections,
    rope_angles,
)
from transformer_math.functional.rope_scaling import default_inv_freq
from transformer_math.theory.positions import (
    seed_ndim_rope_tables,
)


@claim(
    "position.axial-rope",
    source=("004 ch. 9 'N 维 RoPE' and its NDimensionalRoPE code; Liu & Zhou 2025 "
            "(arXiv 2504.06308); Qwen2-VL M-RoPE"),
    statement="""2-D and 3-D (axial) RoPE inner products depend only on the displacement vector
    and reduce to 1-D RoPE on equal coordinates; the third seed's NDimensionalRoPE builds half
    the needed frequencies and a cache that cannot be applied to (B, H, T, head_dim).""",
    falsifier=Falsifier(
        "additive-axial", {"code": "additive"},
        "add per-axis sinusoidal codes instead of rotating: depends on absolute coordinates",
    ),
)
def check_axial_rope(ctx: Context, code: str = "rotary") -> Evidence:
    g = ctx.generator(9)
    head_dim, trials = 48, 64
    inv = default_inv_freq(head_dim, 100.0).float()
    worst, reduce_err = 0.0, 0.0
    for n_axes in (2, 3):
        sections = axial_sections(head_dim // 2, n_axes)
        q, k = randn(g, trials, head_dim), randn(g, trials, head_dim)
        p = torch.randint(-200, 200, (trials, n_axes), generator=g).float()
        r = torch.randint(-200, 200, (trials, n_axes), generator=g).float()
        shift = torch.randint(-500, 500, (trials, n_axes), generator=g).float()

        def score(a: Tensor, b: Tensor, q: Tensor = q, k: Tensor = k,
                  sections: list[int] = sections) -> Tensor:
            if code == "rotary":
                cq, sq = angles_to_cos_sin(axial_rope_angles(a, inv, sections))
                ck, sk = angles_to_cos_sin(axial_rope_angles(b, inv, sections))
                return (apply_rotary(q.unsqueeze(1), cq.unsqueeze(1), sq.unsqueeze(1))
                        * apply_rotary(k.unsqueeze(1), ck.unsqueeze(1), sk.unsqueeze(1))
                        ).sum(-1).flatten()
            chunks = [head_dim // len(sections)] * len(sections)
            pa = torch.cat([sinusoidal_encoding(a[:, j], c) for j, c in enumerate(chunks)], -1)
            pb = torch.cat([sinusoidal_encoding(b[:, j], c) for j, c in enumerate(chunks)], -1)
            return ((q + pa) * (k + pb)).sum(-1)

        dev = (score(p, r) - score(p + shift, r + shift)).abs() / (q.norm(dim=-1)
                                                                  * k.norm(dim=-1))
        worst = max(worst, float(dev.max()))
        c = torch.randint(0, 300, (trials,), generator=g).float()
        ang_nd = axial_rope_angles(c.unsqueeze(-1).expand(trials, n_axes), inv, sections)
        reduce_err = max(reduce_err, float((ang_nd - rope_angles(c, inv)).abs().max()))
    n_freq, cache_shape = seed_ndim_rope_tables(64, 2, 32)
    seed_applies = True
    try:
        x = torch.zeros(1, 1, 32, 64)
        _ = x * torch.zeros(cache_shape)
    except RuntimeError:
        seed_applies = False
    # float32 angles at |coordinates| < 700: deviation bound ~2 ulp(700) ~ 1e-4; use 1e-3.
    margins = [
        at_most("relative deviation under a common shift", worst, 1e-3),
        at_most("reduction to 1-D (max angle difference)", reduce_err, 0.0),
        close_to("seed: frequencies built (16 = half of 32)", n_freq, 64 // 4),
        at_most("seed: cache broadcasts to (B,H,T,64)", float(seed_applies), 0.0),
    ]
    ok = all_hold(margins)
    return Evidence(
        predicted={"relative deviation": 0.0, "reduction to 1-D": 0.0,
                   "seed: frequencies built (needed 32 for head_dim 64)": "16 (half)",
                   "seed: cache broadcasts to (B,H,T,64)": False},
        measured={"relative deviation": worst, "reduction to 1-D": reduce_err,
                  "seed: frequencies built": n_freq, "seed: cache shape": list(cache_shape),
                  "seed: cache broadcasts": seed_applies},
        tolerance="1e-3 relative (float32 angles, coordinates < 700); reduction exact",
        verdict=agreement(ok, refutes_seed=True),
        margins=margins,
        notes=["axial sections of the 1-D frequency list (M-RoPE style), 2 and 3 axes, "
               f"head_dim {head_dim}, base 100; the seed's einsum 'd,p->dp' cannot even take a "
               "(n_dims, max_pos) product of a 1-D position vector: its cache is (1, 1, max_pos, "
               "head_dim/2), which does not broadcast against (B, H, T, head_dim)"],
    )
