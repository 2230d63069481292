"""ALiBi: slopes for any head count and a bias linear in distance (Press et al. 2022)."""

from __future__ import annotations

import torch

from transformer_math.claims.position._common import SEED_000, randn
from transformer_math.claims.registry import (
    Context,
    Evidence,
    at_most,
    claim,
    decide,
)
from transformer_math.functional.positional import alibi_bias
from transformer_math.i18n.message import msg
from transformer_math.nn.attention import MultiHeadAttention
from transformer_math.nn.hooks import run_with_cache
from transformer_math.nn.init import seeded
from transformer_math.nn.position import ALiBi
from transformer_math.theory.positions import (
    alibi_closed_form_slopes,
)


@claim(
    "position.alibi",
    source=f"{SEED_000} 'ALiBi——另一条路线'; Press et al. 2022 §3 and reference code",
    statement="""ALiBi slopes are 2^(-8h/H) for H a power of two and follow Press et al.'s
    interleaving rule otherwise; the bias is linear in distance, measured through the attention
    weights of MultiHeadAttention with zero query/key projections.""",
    falsifier="alibi.odd-head-slopes",
    expected="verified",
    version=2,
    seed_refs=[("000", 578, 578)],
    kind="measurement",
    audit="""Issue 31 review: sound (S), no item. Kept: slopes read from the module and back
    from MultiHeadAttention's weights against Press et al.'s closed form; the falsifier (a
    truncated slope table) sits in functional/positional.alibi_slopes, which ALiBi models run.""",
)
def check_alibi(ctx: Context) -> Evidence:
    """Issue 14 (version 2): the slopes are only the module's (the falsifier is the truncated
    table planted in ``functional/positional.alibi_slopes``), compared with the closed form of
    ``theory/positions.py``; the attention part uses 6 heads, so the non-power-of-two branch is
    also read through ``MultiHeadAttention``."""
    worst = 0.0
    for h in (1, 2, 4, 6, 8, 12, 16, 24):
        got = ALiBi(h).slopes.double()
        expect = torch.tensor(alibi_closed_form_slopes(h), dtype=torch.float64)
        worst = max(worst, float(((got - expect).abs() / expect).max()))
    # Linear-in-distance bias through the attention weights: with W_Q = W_K = 0 the logits are
    # the bias alone, so log w_ij - log w_ii = -m_h (i - j).
    heads, t = 6, 12
    mha = seeded(lambda: MultiHeadAttention(24, heads, alibi=True, backend="reference"),
                 ctx.generator(0))
    with torch.no_grad():
        mha.q_proj.weight.zero_()
        mha.k_proj.weight.zero_()
        mha.q_proj.bias.zero_()
        mha.k_proj.bias.zero_()
    x = randn(ctx.generator(6), 1, t, 24)
    _, cache = run_with_cache(mha, x, names=["hook_pattern"], is_causal=True)
    w = cache["hook_pattern"][0].double()  # (H, T, T) attention weights
    i = t - 1
    logw = w[:, i, : i + 1].log()
    measured_slope = (logw[:, -1:] - logw) / (i - torch.arange(i + 1)).clamp_min(1)
    measured_slope = measured_slope[:, :-1].mean(-1)
    closed = torch.tensor(alibi_closed_form_slopes(heads), dtype=torch.float64)
    slope_err = float((measured_slope.detach() - closed).abs().max())
    bias = alibi_bias(ALiBi(heads).slopes, torch.arange(t), torch.arange(t))
    row = bias[:, -1]  # (H, S): bias of the last query against every key
    second_diff = float((row[:, 2:] - 2 * row[:, 1:-1] + row[:, :-2]).abs().max())
    margins = [
        at_most("slope rel. error vs closed form", worst, 1e-6),
        at_most("|slope from weights - m_h|", slope_err, 1e-5),
        at_most("max second difference of bias", second_diff, 1e-5),
    ]
    return Evidence(
        predicted={"slope rel. error": 0.0, "slope from weights - m_h": 0.0,
                   "second difference of bias": 0.0},
        measured={"slope rel. error": worst, "slope from weights - m_h": slope_err,
                  "second difference of bias": second_diff},
        tolerance="1e-6 relative (float32 slopes), 1e-5 for float32 softmax logs",
        verdict=decide(margins),
        margins=margins,
        notes=[msg("head counts 1, 2, 4, 6, 8, 12, 16, 24; slopes read back from the attention "
                   "weights of a 6-head MultiHeadAttention (W_Q = W_K = 0) against the closed "
                   "form")],
    )
