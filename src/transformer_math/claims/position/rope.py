"""RoPE as a rotation: relative inner products, orthogonality and its three equivalent forms,
the group property (000 §8.3.3 理论 B, 性质; Su et al. 2021)."""

from __future__ import annotations

import math

import torch
from torch import Tensor

from transformer_math.claims.position._common import SEED_000, randn
from transformer_math.claims.registry import (
    Context,
    Evidence,
    Falsifier,
    Size,
    agreement,
    all_hold,
    at_most,
    claim,
)
from transformer_math.functional.positional import sinusoidal_encoding
from transformer_math.functional.rope import (
    apply_rotary,
    apply_rotary_complex,
    interleaved_to_half_permutation,
    rope_cos_sin,
    rotary_matrix,
)
from transformer_math.functional.rope_scaling import default_inv_freq
from transformer_math.nn.position import RotaryEmbedding
from transformer_math.theory.positions import reflection_family


def _additive_score(q: Tensor, k: Tensor, m: Tensor, n: Tensor) -> Tensor:
    d = q.shape[-1]
    return ((q + sinusoidal_encoding(m, d)) * (k + sinusoidal_encoding(n, d))).sum(-1)


@claim(
    "position.rope-relative",
    source=f"{SEED_000} 理论 B (boxed constraint, worked example θ=π/2); 000 M2; Su et al. 2021",
    statement="""<R_m q, R_n k> depends only on n - m (random m, n up to 1e4); the θ = π/2
    worked example gives -1 for positions (1, 3) and (5, 7).""",
    falsifier=Falsifier(
        "additive-sinusoidal", {"code": "additive"},
        "q + PE(m), k + PE(n): the inner product depends on absolute positions",
    ),
)
def check_rope_relative(ctx: Context, code: str = "rope") -> Evidence:
    g = ctx.generator(2)
    d, trials = 64, 256 if ctx.size is not Size.TINY else 64
    q, k = randn(g, trials, d), randn(g, trials, d)
    m = torch.randint(0, 10_000, (trials,), generator=g)
    n = torch.randint(0, 10_000, (trials,), generator=g)
    shift = torch.randint(0, 10_000, (trials,), generator=g)
    rot = RotaryEmbedding(d)
    if code == "rope":
        def score(mm: Tensor, nn_: Tensor) -> Tensor:
            rq = rot.rotate(q.view(trials, 1, 1, d), mm.view(trials, 1))
            rk = rot.rotate(k.view(trials, 1, 1, d), nn_.view(trials, 1))
            return (rq * rk).sum(-1).flatten().double()
    elif code == "additive":
        def score(mm: Tensor, nn_: Tensor) -> Tensor:
            return _additive_score(q, k, mm, nn_).double()
    else:
        raise ValueError(f"code must be 'rope' or 'additive', got {code!r}")
    a, b = score(m, n), score(m + shift, n + shift)
    scale = (q.norm(dim=-1) * k.norm(dim=-1)).double()
    deviation = float(((a - b).abs() / scale).max())
    # Worked example: 2-D, θ = π/2, q = k = (1, 0), explicit matrices from rotary_matrix.
    theta = torch.tensor([math.pi / 2], dtype=torch.float64)
    e = torch.tensor([1.0, 0.0], dtype=torch.float64)
    ex = [float((rotary_matrix(mm, theta) @ e) @ (rotary_matrix(nn_, theta) @ e))
          for mm, nn_ in ((1, 3), (5, 7))]
    # float32 angles at |m| < 2e4: angle error <= ulp(2e4)/2 ~ 1e-3 rad per plane, so the
    # normalised inner-product deviation is bounded by ~2e-3; 5e-3 leaves margin.
    margins = [
        at_most("max relative change under a common shift", deviation, 5e-3),
        at_most("worked example max |score + 1|", max(abs(v + 1.0) for v in ex), 1e-12),
    ]
    ok = all_hold(margins)
    return Evidence(
        predicted={"max relative change under a common shift": 0.0, "example (1,3),(5,7)": -1},
        measured={"max relative change": deviation, "example": ex},
        tolerance="5e-3 relative (float32 angles at positions < 2e4)",
        verdict=agreement(ok),
        margins=margins,
        notes=[f"{trials} random (q, k, m, n, shift), d = {d}, positions < 1e4 (+ shift < 1e4)"],
    )


@claim(
    "position.rope-orthogonal",
    source=f"{SEED_000} 性质 (范数保持), 练习 8.3.3-2, 复数视角; 004 'apply_rotary_pos_emb'",
    statement="""|R_m x| = |x| and R_m^T R_m = I; the complex-multiply, rotate-half and
    interleaved forms agree up to the documented channel permutation.""",
    falsifier=Falsifier(
        "no-permutation", {"permute": False},
        "compare the half layout with the interleaved one WITHOUT the channel permutation "
        "(what silently loading Meta weights into a Hugging Face layout does)",
    ),
)
def check_rope_orthogonal(ctx: Context, permute: bool = True) -> Evidence:
    g = ctx.generator(3)
    d, t = 32, 64
    inv = default_inv_freq(d, 1e4).float()
    x = randn(g, 2, 2, t, d)
    pos = torch.randint(0, 5000, (t,), generator=g)
    complex_form = apply_rotary_complex(x, pos, inv)
    ci, si = rope_cos_sin(pos, inv, layout="interleaved")
    interleaved = apply_rotary(x, ci, si, layout="interleaved")
    perm = interleaved_to_half_permutation(d) if permute else torch.arange(d)
    ch, sh = rope_cos_sin(pos, inv, layout="half")
    half = apply_rotary(x[..., perm], ch, sh, layout="half")
    err_forms = max(float((interleaved - complex_form).abs().max()),
                    float((half - interleaved[..., perm]).abs().max()))
    norm_err = float(((interleaved.norm(dim=-1) - x.norm(dim=-1)).abs()
                      / x.norm(dim=-1)).max())
    R = rotary_matrix(1234, inv.double(), layout="half")
    ortho = float((R.T @ R - torch.eye(d, dtype=torch.float64)).abs().max())
    # float32 rotation of O(1) entries at positions < 5000: errors ~1e-4 at most.
    margins = [
        at_most("form disagreement", err_forms, 1e-3),
        at_most("relative norm change", norm_err, 1e-5),
        at_most("max |R^T R - I|", ortho, 1e-12),
    ]
    ok = all_hold(margins)
    return Evidence(
        predicted={"form disagreement": 0.0, "norm change": 0.0, "|R^T R - I|": 0.0},
        measured={"form disagreement": err_forms, "norm change": norm_err, "|R^T R - I|": ortho},
        tolerance="forms 1e-3 (float32 angles at m < 5000), norms 1e-5 relative, R 1e-12",
        verdict=agreement(ok),
        margins=margins,
        notes=["half layout = interleaved layout after x[..., (0, 2, 4, ..., 1, 3, ...)]"],
    )


@claim(
    "position.rope-group-property",
    source=f"{SEED_000} 练习 8.3.3-1, 理论 B (R(mθ)^T R(nθ) = R((n-m)θ))",
    statement="""f(m)^T f(n) = f(n - m) holds for the rotation family f(m) = R(mθ) and fails for
    other norm-preserving families such as reflections.""",
    falsifier=Falsifier(
        "reflections", {"family": "reflection"},
        "f(m) = reflection across the line at angle mθ/2: orthogonal, but f(m)^T f(n) is a "
        "rotation, not f(n - m)",
    ),
)
def check_rope_group_property(ctx: Context, family: str = "rotation") -> Evidence:
    g = ctx.generator(4)
    inv = default_inv_freq(8, 1e4)
    pairs = torch.randint(-500, 500, (50, 2), generator=g)
    worst, ortho = 0.0, 0.0
    for m, n in pairs.tolist():
        if family == "rotation":
            fm, fn, fd = (rotary_matrix(p, inv) for p in (m, n, n - m))
        elif family == "reflection":
            fm, fn, fd = (reflection_family(p, inv) for p in (m, n, n - m))
        else:
            raise ValueError(f"family must be 'rotation' or 'reflection', got {family!r}")
        worst = max(worst, float((fm.T @ fn - fd).abs().max()))
        ortho = max(ortho, float((fm.T @ fm - torch.eye(8, dtype=torch.float64)).abs().max()))
    margins = [at_most("max |f(m)^T f(n) - f(n-m)|", worst, 1e-9)]
    ok = all_hold(margins)
    return Evidence(
        predicted={"max |f(m)^T f(n) - f(n-m)|": 0.0},
        measured={"max |f(m)^T f(n) - f(n-m)|": worst, "max |f^T f - I|": ortho},
        tolerance="1e-9 (float64 matrices, |m|, |n| < 500)",
        verdict=agreement(ok),
        margins=margins,
        notes=[f"family {family!r}, d = 8, 50 random (m, n)"],
    )
