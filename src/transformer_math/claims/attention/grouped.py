"""Grouped-query attention: each key/value head serves a contiguous group of query heads.

Sources: the main seed 000 §8.3.1 (多头注意力: head_h = Attention(X W_Q^(h), X W_K^(h),
X W_V^(h))) and the third seed 004 §13.7.2 (QK 共享: MQA/GQA); Ainslie et al. 2023 (GQA),
Shazeer 2019 (MQA). Hugging Face's ``repeat_kv`` (expand + reshape) fixes the layout that
pretrained checkpoints assume: query head h reads key/value head h // (H / H_kv).
"""

from __future__ import annotations

import torch
from torch import Tensor

from transformer_math.claims.attention._common import (
    SEED_000,
    build_mha,
    randn,
    sig,
    single_threaded,
)
from transformer_math.claims.registry import Context, Evidence, at_most, claim, decide
from transformer_math.i18n.message import msg
from transformer_math.nn import MultiHeadAttention
from transformer_math.nn.init import no_init_draws


def _expanded_mha(gqa: MultiHeadAttention, backend: str) -> MultiHeadAttention:
    """The plain multi-head attention (H_kv = H) equal to ``gqa`` by definition: query head h
    gets a copy of key/value head g(h) = h // (H / H_kv) (rows g d_k .. (g + 1) d_k of W_K, W_V
    and their biases), every other weight is copied."""
    h, h_kv, d_k = gqa.num_heads, gqa.num_kv_heads, gqa.head_dim
    group = h // h_kv
    with no_init_draws():  # every weight is copied below: nothing is drawn
        mha = MultiHeadAttention(gqa.embed_dim, h, backend=backend).to(gqa.q_proj.weight.dtype)
    rows = torch.cat([torch.arange(g * d_k, (g + 1) * d_k)
                      for g in (head // group for head in range(h))])
    with torch.no_grad():
        for name in ("q_proj", "out_proj"):
            getattr(mha, name).load_state_dict(getattr(gqa, name).state_dict())
        for name in ("k_proj", "v_proj"):
            src, dst = getattr(gqa, name), getattr(mha, name)
            dst.weight.copy_(src.weight[rows])
            dst.bias.copy_(src.bias[rows])
    return mha.eval()


def _per_head_reference(gqa: MultiHeadAttention, x: Tensor) -> Tensor:
    """The GQA output written out head by head with torch alone: head h attends with query
    projection h and key/value projection g(h) = h // (H / H_kv), softmax(q k^T / sqrt(d_k)) v,
    then W_O of the concatenation."""
    h, h_kv, d_k = gqa.num_heads, gqa.num_kv_heads, gqa.head_dim
    q = gqa.q_proj(x).unflatten(-1, (h, d_k))  # (B, T, H, d_k)
    k = gqa.k_proj(x).unflatten(-1, (h_kv, d_k))
    v = gqa.v_proj(x).unflatten(-1, (h_kv, d_k))
    heads = []
    for head in range(h):
        g = head // (h // h_kv)
        logits = q[:, :, head] @ k[:, :, g].transpose(-2, -1) / d_k**0.5
        heads.append(torch.softmax(logits, dim=-1) @ v[:, :, g])
    return gqa.out_proj(torch.cat(heads, dim=-1))


@claim(
    "attention.gqa-grouping",
    source=f"{SEED_000} 多头注意力; 004 §13.7.2 (QK 共享: MQA/GQA); Ainslie et al. 2023",
    statement="""Grouped-query attention with H query heads and H_kv key/value heads is multi-head
    attention in which query head h uses key/value head h // (H / H_kv): it equals a plain
    multi-head attention whose key/value projections repeat each key/value head for its group of
    H / H_kv consecutive query heads (the layout of Hugging Face's repeat_kv and of pretrained
    GQA checkpoints).""",
    falsifier="attention.gqa-tiled",
    expected="verified",
    version=1,
    kind="measurement",
    audit="""Issue 31 review: sound; no change. Kind measurement: GQA output of the library
    module against the per-head formula and the expanded MHA; falsifier attention.gqa-tiled in
    functional/attention.py.""",
    seed_refs=[("000", 283, 297), ("004", 1031, 1031)],
)
@single_threaded
def check_gqa_grouping(ctx: Context) -> Evidence:
    """``MultiHeadAttention(d, H, num_kv_heads=H_kv)`` (reference and sdpa backends, float64)
    against (1) the plain ``MultiHeadAttention`` with the key/value heads copied per group
    (``_expanded_mha``) and (2) the per-head formula in torch alone (``_per_head_reference``),
    for H = 8 with H_kv = 2 and 4 (groups of 4 and 2; H_kv = 1, MQA, is the same under any
    layout and H_kv = H has nothing to group).

    Tolerance 1e-12 relative to max |output|: the same float64 sums in another order.
    """
    gen = ctx.generator(1414)
    d, h, n = 32, 8, ctx.pick(6, 10, 32)
    x = randn(2, n, d, generator=gen)
    errors: dict[str, float] = {}
    with torch.no_grad():
        for h_kv in (2, 4):
            ref = build_mha(d, h, gen, num_kv_heads=h_kv, backend="reference")
            fused = build_mha(d, h, gen, num_kv_heads=h_kv, backend="sdpa")
            fused.load_state_dict(ref.state_dict())
            expected = _per_head_reference(ref, x)
            scale = float(expected.abs().max())
            for name, module in (("reference", ref), ("sdpa", fused)):
                out = module(x)
                errors[f"H_kv = {h_kv}, {name} vs per-head formula"] = float(
                    (out - expected).abs().max()) / scale
                errors[f"H_kv = {h_kv}, {name} vs expanded MHA"] = float(
                    (out - _expanded_mha(ref, name)(x)).abs().max()) / scale
    tol = 1e-12
    margins = [
        at_most("max relative |GQA - per-head formula| (H_kv = 2, 4; reference, sdpa)",
                max(v for k, v in errors.items() if "per-head" in k), tol),
        at_most("max relative |GQA - MHA with key/value heads copied per group|",
                max(v for k, v in errors.items() if "expanded" in k), tol),
    ]
    worst = max(errors.values())
    return Evidence(
        predicted=0.0,
        measured=sig(worst),
        tolerance=f"{tol:g} relative to max |output| (float64)",
        verdict=decide(margins),
        notes=[
            msg("Value: the largest relative difference between the GQA module and either "
                "reference, over H_kv = 2, 4 and both backends (d = {d}, H = {h}, n = {n}).", d=d,
                h=h, n=n),
            msg("Tiled key/value heads (query head h reading kv head h % H_kv, torch's .repeat) "
            "give a different, equally shaped module: loading a pretrained GQA checkpoint "
            "into it pairs the wrong heads, with no error raised."),
        ],
        details={"errors": errors},
        margins=margins,
    )
