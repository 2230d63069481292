"""Causal linear attention is an RNN (000 §8.3.2 corollary 3; Katharopoulos et al. 2020 §3.4).

``kernel.linear-attention-rnn``: the parallel form (explicit masked kernel matrix), the
recurrent form (S += phi(k) v^T, z += phi(k), out = phi(q)^T S / phi(q)^T z) and the chunked
O(n)-memory form of ``functional.linear_attention`` agree for elu+1, relu and positive random
features, with and without a prefix of cached keys.

Issue 31: ``kernel.linear-attention-kernel-regression`` (the O(n) form phi(q)^T S / phi(q)^T z
equals Nadaraya-Watson with the kernel phi(q)^T phi(k), an algebraic rewrite with no seed
statement at risk) was retired to ``tests/nn/test_attention_kernel_identities.py``.
"""

from __future__ import annotations

import torch

from transformer_math.claims.registry import (
    Context,
    Evidence,
    at_most,
    claim,
    decide,
)
from transformer_math.functional.linear_attention import (
    draw_random_projection,
    linear_attention,
    linear_attention_parallel,
    linear_attention_recurrent,
)
from transformer_math.i18n.message import msg

F64 = torch.float64


# --------------------------------------------------------------------------------------------
@claim(
    "kernel.linear-attention-rnn",
    source="000 §8.3.2 corollary 3, exercise 8.3.2-2; Katharopoulos et al. 2020 §3.4",
    statement="""Causal linear attention in parallel form (explicit masked kernel matrix) equals
    its recurrent form (S += phi(k) v^T, z += phi(k), out = phi(q)^T S / phi(q)^T z) and the
    chunked O(n)-memory form, for elu+1, relu and positive random features.""",
    falsifier="linear-attention.read-before-write",
    expected="verified",
    version=2,
    kind="measurement",
    audit="""Issue 31 review: sound; no change. The seed's "Transformer 即 RNN" (000:460: S and z
    updated incrementally along the sequence) is measured on the library's three
    implementations of causal linear attention (parallel, recurrent, chunked), with cached
    offsets; the falsifier (the recurrent state read before the current key is written) sits in
    functional.linear_attention. Tolerance 1e-12 is float64 round-off of sums of <= 30 terms.""",
    seed_refs=[("000", 456, 460), ("000", 534, 534)],
)
def check_linear_attention_rnn(ctx: Context) -> Evidence:
    """max |parallel - recurrent| and |parallel - chunked| <= 1e-12 (float64).

    Version 2 (issue 14): the falsifier is the planted bug linear-attention.read-before-write
    in ``functional.linear_attention`` (was a keyword of the check); the check is unchanged.
    """
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
            rec = linear_attention_recurrent(q, kk, vv, feature_map=fm, projection=p)
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
        verdict=decide(margins),
        margins=margins,
        notes=[
            msg("max |parallel - recurrent| and |parallel - chunked(c=5)| over three feature maps, "
            "with and without a prefix of cached keys (bottom-right causal alignment), float64."),
            msg("The recurrent state has m*d_v + m = {value} numbers for 'favor' whatever the "
                "length; tolerance 1e-12 covers float64 round-off of sums of <= 30 terms.",
                value=m * d_v + m),
        ],
        details={"errors": errors},
    )
