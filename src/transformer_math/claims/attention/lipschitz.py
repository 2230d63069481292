"""Dot-product self-attention has no global Lipschitz constant; L2 attention and LayerNorm do.

Sources: the main seed 000 §8.3.1 ("自注意力的 Lipschitz 性质"); Kim, Papamakarios & Mnih 2021,
ICML ("The Lipschitz constant of self-attention", Theorem 3.1 and its proof).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch import Tensor

from transformer_math.claims.attention._common import (
    SEED_000,
    build_mha,
    randn,
    sig,
    single_threaded,
)
from transformer_math.claims.registry import (
    Context,
    Evidence,
    Figure,
    Series,
    at_most,
    claim,
    close_to,
    decide,
)
from transformer_math.diagnostics import fit_power_law, jacobian_spectral_norm
from transformer_math.functional.l2_attention import l2_self_attention
from transformer_math.functional.norms import layer_norm

# ---------------------------------------------------------------------------------------------
# attention.not-globally-lipschitz
# ---------------------------------------------------------------------------------------------


def _kim_path(base: Tensor, w_q: Tensor, w_key: Tensor) -> Tensor:
    """Unit-scale tokens for the path X(c) = c X0 (Kim et al. 2021, proof of Theorem 3.1).

    Token 0 is moved into the null space of the query projection (x_0 W_Q = 0), so its logits
    are constant in c and its softmax row never saturates; every token with a nonzero key is
    rescaled so that ||x_j W_key|| = 1 (equal key norms, which keeps that row spread out for the
    L2 map as well). ``w_q`` and ``w_key`` are (d, d_k) in the x @ W convention.
    """
    x0 = base.clone()
    d = x0.shape[-1]
    proj = torch.eye(d, dtype=x0.dtype) - w_q @ torch.linalg.pinv(w_q)  # onto null(W_Q^T)
    x0[0] = proj @ x0[0]
    for j in range(x0.shape[0]):
        key_norm = torch.linalg.vector_norm(x0[j] @ w_key)
        x0[j] = x0[j] / (key_norm if key_norm > 1e-9 else torch.linalg.vector_norm(x0[j]))
    return x0


Path = tuple[Callable[[Tensor], Tensor], Tensor]


def _lipschitz_maps(ctx: Context) -> dict[str, Path]:
    """The three maps X (n x d) -> output and the start X0 of each one's path c X0.

    ``MultiHeadAttention`` (dot product, one head, d = 8, d_k = 4, no bias);
    ``functional.l2_self_attention`` with the same W_Q, W_V, W_O and tied keys W_K = W_Q; and
    the dot product applied to ``functional.norms.layer_norm(X)``.
    """
    gen = ctx.generator(808)
    d, d_k, n = 8, 4, 6
    module = build_mha(d, 1, gen, head_dim=d_k, bias=False, backend="reference")
    w_q, w_k, w_v, w_o = (p.weight.detach().T for p in
                          (module.q_proj, module.k_proj, module.v_proj, module.out_proj))
    base = randn(n, d, generator=gen)

    def dot_product(x: Tensor) -> Tensor:
        return module(x.unsqueeze(0)).squeeze(0)

    def l2(x: Tensor) -> Tensor:
        return l2_self_attention(x.unsqueeze(0), w_q, w_v, w_o, num_heads=1).output[0]

    def normed(x: Tensor) -> Tensor:
        return dot_product(layer_norm(x))

    return {
        "dot-product": (dot_product, _kim_path(base, w_q, w_k)),
        "L2 (tied W_K = W_Q)": (l2, _kim_path(base, w_q, w_q)),
        "dot-product on LayerNorm(X)": (normed, _kim_path(base, w_q, w_k)),
    }


def _growth_figure(grid: list[float], norms: dict[str, list[float]]) -> Figure:
    names = list(norms)
    return Figure(
        title="Jacobian spectral norm of self-attention along X -> c X",
        xlabel="input scale c",
        ylabel="||dF/dX||_2",
        logx=True,
        logy=True,
        series=[
            *(Series(name, grid, norms[name], style="o-") for name in names),
            Series("c^2 reference", grid, [norms[names[0]][-1] * (c / grid[-1]) ** 2 for c in grid],
                   style="--"),
        ],
    )


@claim(
    "attention.not-globally-lipschitz",
    source=f"{SEED_000} 自注意力的 Lipschitz 性质; Kim, Papamakarios & Mnih 2021 (ICML)",
    statement="""Dot-product self-attention is not globally Lipschitz: along X -> c X its
    Jacobian norm grows without bound (like c^2 on the path of Kim et al.). L2-distance
    attention with tied W_Q = W_K (Kim et al.) and attention on LayerNorm-ed inputs stay
    bounded.""",
    falsifier="attention.l2-key-norm-dropped",
    expected="verified",
    version=2,
    seed_refs=[("000", 374, 386)],
)
@single_threaded
def check_not_globally_lipschitz(ctx: Context) -> Evidence:
    """Exact Jacobian spectral norms (``diagnostics.jacobian_spectral_norm``) of three maps
    (``_lipschitz_maps``) at c X0 for c on a geometric grid, and power-law fits on the top of
    the grid.

    Prediction (Kim et al. 2021; 000 §8.3.1): the row of a token with x W_Q = 0 stays uniform,
    its derivative contains the covariance of the values under that row times the key spread,
    both O(c), so ||J|| ~ c^2 (exponent 2); L2 attention is Lipschitz (exponent <= 0); LayerNorm
    makes the map invariant to c, so its Jacobian falls like 1/c. Tolerances: exponent 2 +- 0.25
    for the dot product; <= 0.25 for "bounded" (the fits run over c in [~50, ~300] where the
    asymptote holds to <1%).

    Version 2 (issue 14): the falsifier is the planted bug ``attention.l2-key-norm-dropped`` in
    ``functional.l2_attention`` (the ||k_j||^2 term of the distance dropped, which leaves a dot
    product), no longer an untied variant built by the claim.
    """
    maps = _lipschitz_maps(ctx)
    points = ctx.pick(7, 11, 16)
    grid = [10.0 ** (2.5 * i / (points - 1)) for i in range(points)]  # 1 .. ~316
    top = [c for c in grid if c >= 50.0]
    norms = {name: [jacobian_spectral_norm(fn, c * x0) for c in grid]
             for name, (fn, x0) in maps.items()}
    fits = {name: fit_power_law(top, v[len(grid) - len(top) :]).exponent
            for name, v in norms.items()}
    names = list(maps)
    dot_exp, l2_exp, ln_exp = (fits[k] for k in names)
    nonfinite = sum(not math.isfinite(v) for vs in norms.values() for v in vs)
    margins = [
        close_to("dot-product: growth exponent of ||J||_2", dot_exp, 2.0, abs_=0.25),
        at_most("L2 attention: growth exponent of ||J||_2", l2_exp, 0.25),
        at_most("dot product on LayerNorm(X): growth exponent of ||J||_2", ln_exp, 0.25),
        at_most("non-finite Jacobian norms (integers: < 1/2 is none)", nonfinite, 0.5),
    ]
    return Evidence(
        predicted=[2.0, 0.0, -1.0],
        measured=[sig(dot_exp, 3), sig(l2_exp, 3), sig(ln_exp, 3)],
        tolerance="dot-product exponent 2 +- 0.25; L2 and LayerNorm exponents <= 0.25 (bounded)",
        verdict=decide(margins),
        notes=[
            "Values: growth exponents of ||J||_2 in c (fit over c >= 50) for the dot product, "
            "L2 attention (tied keys) and the dot product on LayerNorm-ed inputs.",
            f"||J||_2 at c = {grid[-1]:.0f}: "
            + ", ".join(f"{k} {norms[k][-1]:.3g}" for k in names) + ".",
            "The growth needs a suitable path: at generic inputs dot-product attention saturates "
            "and its Jacobian stays bounded; Lipschitz constants are suprema, and Kim et al.'s "
            "path (a token with x W_Q = 0, whose softmax row stays uniform) reaches infinity.",
            "LayerNorm is functional.norms.layer_norm without affine parameters (eps = 1e-5).",
        ],
        figures=[_growth_figure(grid, norms)],
        details={"scales": grid, "jacobian_norms": norms, "exponents": fits},
        margins=margins,
    )
