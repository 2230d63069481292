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
    Size,
    at_least,
    at_most,
    claim,
    decide,
)
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


@claim(
    "position.rope-relative",
    source=f"{SEED_000} 理论 B (boxed constraint, worked example θ=π/2); 000 M2; Su et al. 2021",
    statement="""<R_m q, R_n k> depends only on n - m (random m, n up to 1e4); the θ = π/2
    worked example gives -1 for positions (1, 3) and (5, 7).""",
    falsifier="rope.rotation-sign",
    expected="verified",
    version=2,
    seed_refs=[("000", 588, 616), ("000", 647, 647), ("004", 226, 252)],
)
def check_rope_relative(ctx: Context) -> Evidence:
    """Issue 14 (version 2): the additive-code variant built in the claim is gone; the
    falsifier is a sign slip planted in ``functional/rope.apply_rotary``, which
    ``RotaryEmbedding.rotate`` runs."""
    g = ctx.generator(2)
    d, trials = 64, 256 if ctx.size is not Size.TINY else 64
    q, k = randn(g, trials, d), randn(g, trials, d)
    m = torch.randint(0, 10_000, (trials,), generator=g)
    n = torch.randint(0, 10_000, (trials,), generator=g)
    shift = torch.randint(0, 10_000, (trials,), generator=g)
    rot = RotaryEmbedding(d)

    def score(mm: Tensor, nn_: Tensor) -> Tensor:
        rq = rot.rotate(q.view(trials, 1, 1, d), mm.view(trials, 1))
        rk = rot.rotate(k.view(trials, 1, 1, d), nn_.view(trials, 1))
        return (rq * rk).sum(-1).flatten().double()

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
    return Evidence(
        predicted={"max relative change under a common shift": 0.0, "example (1,3),(5,7)": -1},
        measured={"max relative change": deviation, "example": ex},
        tolerance="5e-3 relative (float32 angles at positions < 2e4)",
        verdict=decide(margins),
        margins=margins,
        notes=[f"{trials} random (q, k, m, n, shift), d = {d}, positions < 1e4 (+ shift < 1e4)"],
    )


@claim(
    "position.rope-orthogonal",
    source=f"{SEED_000} 性质 (范数保持), 练习 8.3.3-2, 复数视角; 004 'apply_rotary_pos_emb'",
    statement="""|R_m x| = |x| and R_m^T R_m = I; the complex-multiply, rotate-half and
    interleaved forms agree up to the documented channel permutation.""",
    falsifier="rope.layout-no-permutation",
    expected="verified",
    version=2,
    seed_refs=[("000", 626, 638), ("000", 684, 684), ("004", 258, 270)],
)
def check_rope_orthogonal(ctx: Context) -> Evidence:
    """Issue 14 (version 2): the permutation is the library's
    ``interleaved_to_half_permutation`` only (the falsifier plants the identity there, what
    loading Meta weights into a rotate-half model without the permutation does)."""
    g = ctx.generator(3)
    d, t = 32, 64
    inv = default_inv_freq(d, 1e4).float()
    x = randn(g, 2, 2, t, d)
    pos = torch.randint(0, 5000, (t,), generator=g)
    complex_form = apply_rotary_complex(x, pos, inv)
    ci, si = rope_cos_sin(pos, inv, layout="interleaved")
    interleaved = apply_rotary(x, ci, si, layout="interleaved")
    perm = interleaved_to_half_permutation(d)
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
    return Evidence(
        predicted={"form disagreement": 0.0, "norm change": 0.0, "|R^T R - I|": 0.0},
        measured={"form disagreement": err_forms, "norm change": norm_err, "|R^T R - I|": ortho},
        tolerance="forms 1e-3 (float32 angles at m < 5000), norms 1e-5 relative, R 1e-12",
        verdict=decide(margins),
        margins=margins,
        notes=["half layout = interleaved layout after x[..., (0, 2, 4, ..., 1, 3, ...)]"],
    )


@claim(
    "position.rope-group-property",
    source=f"{SEED_000} 练习 8.3.3-1, 理论 B (R(mθ)^T R(nθ) = R((n-m)θ))",
    statement="""The implementation's rotation family f(m) (the matrix of
    apply_rotary with the cos/sin tables of rope_cos_sin at position m) is orthogonal and
    satisfies f(m)^T f(n) = f(n - m); a norm-preserving family that is not a rotation group,
    such as reflections, does not.""",
    falsifier="rope.cos-sin-swapped",
    expected="verified",
    version=2,
    seed_refs=[("000", 19, 19), ("000", 96, 96), ("000", 604, 612), ("000", 682, 682)],
)
def check_rope_group_property(ctx: Context) -> Evidence:
    """Issue 14 (version 2): f(m) is read off the library (``apply_rotary`` on the identity
    basis, float64, with the float32 tables of ``rope_cos_sin``) instead of the float64 matrix
    the claim built itself; the reflection family (``theory/positions.py``) is the statement's
    contrast, measured, not the falsifier (a cos/sin swap planted in ``angles_to_cos_sin``,
    which makes f(m) = R(mθ - π/2): still orthogonal and relative, but not a group
    homomorphism)."""
    g = ctx.generator(4)
    d = 8
    inv = default_inv_freq(d, 1e4)
    eye = torch.eye(d, dtype=torch.float64).unsqueeze(1)  # (d, 1, d): rows e_j at one position

    def f(p: int) -> Tensor:
        cos, sin = rope_cos_sin(torch.tensor([p]), inv, layout="interleaved")
        return apply_rotary(eye, cos, sin, layout="interleaved").squeeze(1).T  # column j = f e_j

    pairs = torch.randint(-500, 500, (50, 2), generator=g)
    worst, ortho, worst_reflection = 0.0, 0.0, 0.0
    for m, n in pairs.tolist():
        fm, fn, fd = f(m), f(n), f(n - m)
        worst = max(worst, float((fm.T @ fn - fd).abs().max()))
        ortho = max(ortho, float((fm.T @ fm - torch.eye(d, dtype=torch.float64)).abs().max()))
        rm, rn, rd = (reflection_family(p, inv) for p in (m, n, n - m))
        worst_reflection = max(worst_reflection, float((rm.T @ rn - rd).abs().max()))
    # float32 angles p θ at |p| < 1000: rounding of the product (ulp(1000)/2 = 3e-5) plus θ's
    # (1000 * 6e-8) give <= 1e-4 per angle; three angles enter each entry: 1e-3 covers them.
    # cos/sin in float32: |c^2 + s^2 - 1| <= 2.4e-7, so orthogonality to 1e-6.
    margins = [
        at_most("max |f(m)^T f(n) - f(n-m)|", worst, 1e-3),
        at_most("max |f(m)^T f(m) - I|", ortho, 1e-6),
        at_least("reflections: max |f(m)^T f(n) - f(n-m)|", worst_reflection, 0.1),
    ]
    return Evidence(
        predicted={"max |f(m)^T f(n) - f(n-m)|": 0.0, "max |f^T f - I|": 0.0,
                   "reflections": "> 0.1"},
        measured={"max |f(m)^T f(n) - f(n-m)|": worst, "max |f^T f - I|": ortho,
                  "reflections": worst_reflection},
        tolerance="1e-3 (float32 angles, |positions| < 1000), orthogonality 1e-6",
        verdict=decide(margins),
        margins=margins,
        notes=["d = 8, 50 random (m, n) in [-500, 500); f(m) from apply_rotary + rope_cos_sin "
               "(interleaved layout)"],
    )
