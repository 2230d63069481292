"""Causal linear attention is an RNN (000 §8.3.2 corollary 3; Katharopoulos et al. 2020 §3.4).

``kernel.linear-attention-rnn``: the parallel form (explicit masked kernel matrix), the
recurrent form (S += phi(k) v^T, z += phi(k), out = phi(q)^T S / phi(q)^T z) and the chunked
O(n)-memory form of ``functional.linear_attention`` agree for elu+1, relu and positive random
features, with and without a prefix of cached keys.
"""

from __future__ import annotations

import torch

from transformer_math.claims.registry import (
    Context,
    Evidence,
    Falsifier,
    agreement,
    all_hold,
    at_most,
    claim,
)
from transformer_math.functional.linear_attention import (
    draw_random_projection,
    linear_attention,
    linear_attention_parallel,
    linear_attention_recurrent,
)

F64 = torch.float64


# --------------------------------------------------------------------------------------------
@claim(
    "kernel.linear-attention-rnn",
    source="000 §8.3.2 corollary 3, exercise 8.3.2-2; Katharopoulos et al. 2020 §3.4",
    statement="""Causal linear attention in parallel form (explicit masked kernel matrix) equals
    its recurrent form (S += phi(k) v^T, z += phi(k), out = phi(q)^T S / phi(q)^T z) and the
    chunked O(n)-memory form, for elu+1, relu and positive random features.""",
    falsifier=Falsifier(
        "read before write",
        {"read_before_write": True},
        "the recurrence reads the state before adding the current token (off by one)",
    ),
)
def check_linear_attention_rnn(ctx: Context, read_before_write: bool = False) -> Evidence:
    batch, heads, t, extra, d, d_v, m = 2, 2, 24, 6, 8, 5, 32
    g = ctx.generator(4)
    q = torch.randn(batch, heads, t, d, generator=g, dtype=F64)
    k = torch.randn(batch, heads, t + extra, d, generator=g, dtype=F64)
    v = torch.randn(batch, heads, t + extra, d_v, generator=g, dtype=F64)
    proj = draw_random_projection(d, m, generator=g, dtype=F64)
    errors: dict[str, float] = {}
    for fm, p in (("elu", None), ("relu", None), ("favor", proj)):
        for offset in (0, extra):  # offset > 0: queries are the last positions (cached decoding)
            kk, vv = k[:, :, extra - offset :], v[:, :, extra - offset :]
            par = linear_attention_parallel(q, kk, vv, feature_map=fm, causal=True, projection=p)
            rec = linear_attention_recurrent(
                q, kk, vv, feature_map=fm, projection=p, read_before_write=read_before_write
            )
            chunk = linear_attention(
                q, kk, vv, feature_map=fm, causal=True, projection=p, chunk_size=5
            )
            errors[f"{fm}/offset{offset}/recurrent"] = float((par.output - rec).abs().max())
            errors[f"{fm}/offset{offset}/chunked"] = float((par.output - chunk).abs().max())
    worst = max(errors.values())
    tol = 1e-12
    margins = [at_most("max |parallel - recurrent or chunked|", worst, tol)]
    return Evidence(
        predicted=0.0,
        measured=worst,
        tolerance=tol,
        verdict=agreement(all_hold(margins)),
        margins=margins,
        notes=[
            "max |parallel - recurrent| and |parallel - chunked(c=5)| over three feature maps, "
            "with and without a prefix of cached keys (bottom-right causal alignment), float64.",
            f"The recurrent state has m*d_v + m = {m * d_v + m} numbers for 'favor' whatever "
            "the length; tolerance 1e-12 covers float64 round-off of sums of <= 30 terms.",
        ],
        details={"errors": errors},
    )

