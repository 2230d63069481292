"""Additive position codes: the sinusoidal code's shift matrix, the learned table's limit, and
KV-cache decoding with an additive code or RoPE (000 §8.3.3; 004 "RoPE vs Sinusoidal")."""

from __future__ import annotations

import torch

from transformer_math.claims.position._common import SEED_000, randn
from transformer_math.claims.registry import (
    Context,
    Evidence,
    Refutation,
    Size,
    at_least,
    at_most,
    claim,
    decide,
)
from transformer_math.functional.positional import sinusoidal_table
from transformer_math.nn.config import TransformerConfig
from transformer_math.nn.position import LearnedPositionalEmbedding
from transformer_math.nn.transformer import build_transformer
from transformer_math.theory.positions import vaswani_shift_matrix, vaswani_sinusoid


@claim(
    "position.sinusoidal-shift",
    source=f"{SEED_000} 理论 A (PE(pos+Δ) as a rotation of PE(pos)); Vaswani et al. 2017 §3.5",
    statement="""The implementation's sinusoidal code equals Vaswani et al.'s PE[pos, 2i] =
    sin(pos / 10000^(2i/d)), PE[pos, 2i+1] = cos(pos / 10000^(2i/d)); PE(pos + D) = M(D) PE(pos)
    with the paper's block rotation M(D), which does not depend on pos; every value lies in
    [-1, 1] and distinct positions get distinct codes.""",
    falsifier="sinusoid.frequency-exponent",
    expected="verified",
    version=2,
    seed_refs=[("000", 564, 584), ("004", 184, 203)],
)
def check_sinusoidal_shift(ctx: Context) -> Evidence:
    """Issue 14 (version 2): the prediction (the paper's table and M(D)) is computed by
    ``theory/positions.py`` with Python floats, sharing no code with
    ``functional/positional.py``, so a wrong frequency in the implementation fails both the
    table margin and the shift margin (before, both sides used one theta)."""
    dim, n = 64, 1024 if ctx.size is not Size.TINY else 256
    table = sinusoidal_table(n + 200, dim).double()  # the implementation, float32 angles
    reference = vaswani_sinusoid(n + 200, dim)  # the paper's formula, float64
    table_err = float((table - reference).abs().max())
    shifts = [1, 7, 33, 200]
    residual = 0.0
    for D in shifts:
        M = vaswani_shift_matrix(D, dim)  # 000 line 582, independent of the implementation
        residual = max(residual, float((table[D:D + n] - table[:n] @ M.T).abs().max()))
    bounded = float(table.abs().max())
    dist = torch.cdist(table[:n], table[:n]) + torch.eye(n, dtype=torch.float64) * 1e9
    min_dist = float(dist.min())
    # float32 angles pos * theta at pos < 1300: the product's rounding (ulp(1300)/2 = 6e-5)
    # plus theta's (1300 * 6e-8 = 8e-5) bound each entry's error by ~1.5e-4; the shift residual
    # adds two such errors times |cos| + |sin| <= sqrt 2 (~4e-4). 1e-3 covers both.
    margins = [
        at_most("max |PE - Vaswani et al.'s formula|", table_err, 1e-3),
        at_most("max |PE(pos+D) - M(D) PE(pos)|", residual, 1e-3),
        at_most("max |PE|", bounded, 1.0),
        at_least("min distance between codes", min_dist, 1e-3),
    ]
    return Evidence(
        predicted={"max |PE - formula|": 0.0, "max |PE(pos+D) - M(D) PE(pos)|": 0.0,
                   "max |PE|": "<= 1", "min distance": "> 0"},
        measured={"max |PE - formula|": table_err, "residual": residual, "max |PE|": bounded,
                  "min distance": min_dist},
        tolerance="1e-3 (float32 angles at pos < 1300), min distance > 1e-3",
        verdict=decide(margins),
        margins=margins,
        notes=[f"dim {dim}, positions 0..{n + 199}, shifts {shifts}; the formula and M(D) from "
               "theory/positions.py (Python floats), PE from functional/positional.py"],
    )


@claim(
    "position.learned-embedding-limit",
    source=f"{SEED_000} '朴素方案三' and '反事实' (512-row table, 1024-step task); 误区表 #6",
    statement="""A learned absolute embedding raises a clear error for positions beyond its
    table, and rows for positions never seen in training stay at their initial values (no
    gradient reaches them).""",
    falsifier="position.learned-silent-clamp",
    expected="verified",
    version=2,
    seed_refs=[("000", 552, 556), ("000", 1372, 1372)],
)
def check_learned_embedding_limit(ctx: Context) -> Evidence:
    """Issue 14 (version 2): the lookup past the table goes through the module itself (the
    falsifier is a clamp planted in ``LearnedPositionalEmbedding.embedding``)."""
    table, train_len, dim = 32, 16, 8
    emb = LearnedPositionalEmbedding(table, dim, generator=ctx.generator(7))
    initial = emb.weight.detach().clone()
    g = ctx.generator(8)
    for _ in range(5):  # plain SGD steps on sequences of length train_len
        x = randn(g, 4, train_len, dim)
        loss = (emb(x) ** 2).mean()
        (grad,) = torch.autograd.grad(loss, emb.weight)
        with torch.no_grad():
            emb.weight -= 0.1 * grad
    trained_changed = bool((emb.weight[:train_len] != initial[:train_len]).any())
    untrained_drift = float((emb.weight[train_len:] - initial[train_len:]).detach().abs().max())
    untrained_same = untrained_drift == 0.0

    raised, message = False, ""
    try:
        emb(torch.zeros(1, table + 1, dim))
    except IndexError as exc:
        raised, message = True, str(exc)
    margins = [
        at_least("raises IndexError past the table", float(raised), 1.0),
        at_least("message says 'outside the learned table'",
                 float("outside the learned table" in message), 1.0),
        at_least("trained rows moved", float(trained_changed), 1.0),
        at_most("max |change| of never-trained rows", untrained_drift, 0.0),
    ]
    return Evidence(
        predicted={"error past the table": True, "untrained rows unchanged": True},
        measured={"error past the table": raised, "message": message[:120],
                  "untrained rows unchanged": untrained_same, "trained rows moved":
                  trained_changed},
        tolerance="exact",
        verdict=decide(margins),
        margins=margins,
    )


@claim(
    "position.kv-cache-compatibility",
    source="004 'RoPE vs Sinusoidal' table row 'KV Cache兼容: 需重新计算 | 自然兼容'",
    statement="""Incremental decoding with a KV cache equals full recomputation both for an
    additive sinusoidal code (added to the token embedding at its absolute position) and for
    RoPE; the third seed's 'sinusoidal needs recomputation' is refuted for standard decoding.""",
    falsifier="position.kv-positions-restart",
    expected="refuted",
    version=2,
    seed_refs=[("004", 272, 278)],
    refutes=[Refutation(
        seed="004", line=277,
        says="KV Cache兼容: Sinusoidal 需重新计算 (a sinusoidal model must recompute its cache)",
        correct="the sinusoidal code is added before the K/V projections, so cached keys and "
                "values never change: cached decoding equals full recomputation, as for RoPE")],
)
def check_kv_cache_compatibility(ctx: Context) -> Evidence:
    """Two-layer ``Transformer`` decoders on vector inputs, one per scheme: the prefix in one
    call, then one token per call with the layers' ``KVCache``, against one full pass.

    Issue 14 (version 2): the positions of the cached steps are the model's own (past ..
    past + t - 1 from the cache length; none are passed in), so the falsifier is a bug in that
    computation; the seed's version ("needs recomputation": cached != full) is a seed margin
    on the same measured sinusoidal error, so the refutation is measured."""
    d, heads, t, prefix = 32, 4, 12, 5
    x = randn(ctx.generator(10), 2, t, d)
    errors: dict[str, float] = {}
    for scheme in ("sinusoidal", "rope"):
        config = TransformerConfig(hidden_size=d, num_heads=heads, num_layers=2, output_size=0,
                                   max_seq_len=t, position=scheme, attention_backend="reference")
        model = build_transformer(config, ctx.generator(0))
        with torch.no_grad():
            full = model(inputs_embeds=x)
            caches = model.new_caches()
            outs = [model(inputs_embeds=x[:, :prefix], caches=caches)]
            for i in range(prefix, t):
                outs.append(model(inputs_embeds=x[:, i:i + 1], caches=caches))
        errors[scheme] = float((torch.cat(outs, dim=1) - full).abs().max())
    # float32 attention over 12 keys: differences come from summation order only (~1e-6).
    margins = [at_most(f"{scheme} |cached - full|", e, 1e-5) for scheme, e in errors.items()]
    # The seed's version: without recomputation the sinusoidal model's cached decoding departs
    # from the full pass by more than rounding.
    seed_margins = [at_least("seed: sinusoidal cached decoding departs from the full pass "
                             "(needs recomputation)", errors["sinusoidal"], 1e-5)]
    return Evidence(
        predicted={"sinusoidal |cached - full|": 0.0, "rope |cached - full|": 0.0},
        measured=errors,
        tolerance="1e-5 (float32 summation order)",
        verdict=decide(margins, seed_margins),
        margins=margins,
        seed_margins=seed_margins,
        notes=["2-layer pre-LN Transformer (hidden 32, 4 heads), prefix 5 then 7 cached steps; "
               "the sinusoidal code is added before the K/V projections, so a cached key at "
               "position j never changes; recomputation is only needed when positions of "
               "cached tokens change (e.g. sliding windows with re-indexing, dynamic NTK)"],
    )
