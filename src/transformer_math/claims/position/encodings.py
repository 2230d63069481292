"""Additive position codes: the sinusoidal code's shift matrix, the learned table's limit, and
KV-cache decoding with an additive code or RoPE (000 §8.3.3; 004 "RoPE vs Sinusoidal")."""

from __future__ import annotations

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
    at_least,
    at_most,
    claim,
)
from transformer_math.functional.positional import sinusoidal_shift_matrix, sinusoidal_table
from transformer_math.nn.config import TransformerConfig
from transformer_math.nn.position import LearnedPositionalEmbedding
from transformer_math.nn.transformer import build_transformer


@claim(
    "position.sinusoidal-shift",
    source=f"{SEED_000} 理论 A (PE(pos+Δ) as a rotation of PE(pos)); Vaswani et al. 2017 §3.5",
    statement="""For the sinusoidal code, PE(pos + D) = M(D) PE(pos) with a block rotation M(D)
    that does not depend on pos; every value lies in [-1, 1] and distinct positions get distinct
    codes.""",
    falsifier=Falsifier(
        "learned-table", {"code": "learned"},
        "a random (learned-style) table: no position-independent M(D) maps PE(pos) to "
        "PE(pos+D)",
    ),
)
def check_sinusoidal_shift(ctx: Context, code: str = "sinusoidal") -> Evidence:
    dim, n = 64, 1024 if ctx.size is not Size.TINY else 256
    g = ctx.generator(1)
    if code == "sinusoidal":
        table = sinusoidal_table(n + 200, dim).double()  # the implementation, float32 angles
    else:
        table = torch.rand(n + 200, dim, generator=g, dtype=torch.float64) * 2 - 1
    shifts = [1, 7, 33, 200]
    residual = 0.0
    for D in shifts:
        M = sinusoidal_shift_matrix(D, dim)  # closed form from the angle-addition identity
        residual = max(residual, float((table[D:D + n] - table[:n] @ M.T).abs().max()))
    bounded = float(table.abs().max())
    dist = torch.cdist(table[:n], table[:n]) + torch.eye(n, dtype=torch.float64) * 1e9
    min_dist = float(dist.min())
    # float32 angles at pos < 1300: |error| <= ulp(1300)/2 ~ 6e-5 per entry -> 1e-3 leaves margin.
    margins = [
        at_most("max |PE(pos+D) - M(D) PE(pos)|", residual, 1e-3),
        at_most("max |PE|", bounded, 1.0),
        at_least("min distance between codes", min_dist, 1e-3),
    ]
    ok = all_hold(margins)
    return Evidence(
        predicted={"max |PE(pos+D) - M(D) PE(pos)|": 0.0, "max |PE|": "<= 1",
                   "min distance": "> 0"},
        measured={"residual": residual, "max |PE|": bounded, "min distance": min_dist},
        tolerance="residual <= 1e-3 (float32 angles at pos < 1300), min distance > 1e-3",
        verdict=agreement(ok),
        margins=margins,
        notes=[f"dim {dim}, positions 0..{n - 1}, shifts {shifts}; M(D) built from "
               "sin(a+b), cos(a+b) identities, PE from the implementation"],
    )


@claim(
    "position.learned-embedding-limit",
    source=f"{SEED_000} '朴素方案三' and '反事实' (512-row table, 1024-step task); 误区表 #6",
    statement="""A learned absolute embedding raises a clear error for positions beyond its
    table, and rows for positions never seen in training stay at their initial values (no
    gradient reaches them).""",
    falsifier=Falsifier(
        "silent-clamp", {"silent_clamp": True},
        "an embedding that clamps out-of-range positions to the last row (silently reuses it)",
    ),
)
def check_learned_embedding_limit(ctx: Context, silent_clamp: bool = False) -> Evidence:
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

    def lookup(n: int) -> Tensor:
        if silent_clamp:
            return emb.weight[torch.arange(n).clamp(max=table - 1)]
        return emb(torch.zeros(1, n, dim))

    raised, message = False, ""
    try:
        lookup(table + 1)
    except IndexError as exc:
        raised, message = True, str(exc)
    margins = [
        at_least("raises IndexError past the table", float(raised), 1.0),
        at_least("message says 'outside the learned table'",
                 float("outside the learned table" in message), 1.0),
        at_least("trained rows moved", float(trained_changed), 1.0),
        at_most("max |change| of never-trained rows", untrained_drift, 0.0),
    ]
    ok = all_hold(margins)
    return Evidence(
        predicted={"error past the table": True, "untrained rows unchanged": True},
        measured={"error past the table": raised, "message": message[:120],
                  "untrained rows unchanged": untrained_same, "trained rows moved":
                  trained_changed},
        tolerance="exact",
        verdict=agreement(ok),
        margins=margins,
    )


@claim(
    "position.kv-cache-compatibility",
    source="004 'RoPE vs Sinusoidal' table row 'KV Cache兼容: 需重新计算 | 自然兼容'",
    statement="""Incremental decoding with a KV cache equals full recomputation both for an
    additive sinusoidal code (added to the token embedding at its absolute position) and for
    RoPE; the third seed's 'sinusoidal needs recomputation' is refuted for standard decoding.""",
    falsifier=Falsifier(
        "positions-restart", {"restart_positions": True},
        "decode every new token at position 0 (forgetting the cache offset)",
    ),
)
def check_kv_cache_compatibility(ctx: Context, restart_positions: bool = False) -> Evidence:
    """Two-layer ``Transformer`` decoders on vector inputs, one per scheme: the prefix in one
    call, then one token per call with the layers' ``KVCache``, against one full pass."""
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
                pos = 0 if restart_positions else i
                outs.append(model(inputs_embeds=x[:, i:i + 1], caches=caches,
                                  position_ids=torch.tensor([pos])))
        errors[scheme] = float((torch.cat(outs, dim=1) - full).abs().max())
    # float32 attention over 12 keys: differences come from summation order only (~1e-6).
    margins = [at_most(f"{scheme} |cached - full|", e, 1e-5) for scheme, e in errors.items()]
    ok = all_hold(margins)
    return Evidence(
        predicted={"sinusoidal |cached - full|": 0.0, "rope |cached - full|": 0.0},
        measured=errors,
        tolerance="1e-5 (float32 summation order)",
        verdict=agreement(ok, refutes_seed=True),
        margins=margins,
        notes=["2-layer pre-LN Transformer (hidden 32, 4 heads), prefix 5 then 7 cached steps; "
               "the sinusoidal code is added before the K/V projections, so a cached key at "
               "position j never changes; recomputation is only needed when positions of "
               "cached tokens change (e.g. sliding windows with re-indexing, dynamic NTK)"],
    )
