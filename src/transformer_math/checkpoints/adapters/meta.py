"""Meta's original LLaMA layout: ``params.json`` + ``consolidated.00.pth`` (one shard).

Same architecture as the Llama preset (``adapters/llama.py``), different names, and RoPE pairs
channel 2i with 2i+1 ("interleaved", RoFormer) where this project and HF pair i with i + d/2
("half"). The q and k projection rows are permuted head by head on load
(``functional.rope.interleaved_to_half_qk_weight``) and back on save; since q and k get the same
permutation every logit q.k is unchanged (FACTS.md, "Layouts"). Loading without it
(``permute_qk=False``) silently gives different attention.

Name table (Meta -> ours)::

    tok_embeddings.weight                      embed_tokens.weight
    layers.i.attention_norm.weight             layers.i.attn_norm.weight
    layers.i.attention.w{q,k}.weight           layers.i.attn.{q,k}_proj.weight (permuted)
    layers.i.attention.w{v,o}.weight           layers.i.attn.{v,out}_proj.weight
    layers.i.ffn_norm.weight                   layers.i.ffn_norm.weight
    layers.i.feed_forward.w{1,3,2}.weight      layers.i.ffn.{gate,up,down}.weight
    norm.weight / output.weight                final_norm.weight / lm_head.weight

``params.json`` has no vocabulary or FFN size: they are read from the tensor shapes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from transformer_math.checkpoints.adapters import llama
from transformer_math.checkpoints.adapters.base import Adapter, Rule, mapped
from transformer_math.checkpoints.adapters.keys import float_key, int_key
from transformer_math.checkpoints.info import CheckpointInfo
from transformer_math.functional.rope import (
    half_to_interleaved_qk_weight,
    interleaved_to_half_qk_weight,
)
from transformer_math.nn.config import TransformerConfig

_SIZE_TENSORS = ("tok_embeddings.weight", "layers.0.feed_forward.w1.weight")


def read_config(params: Mapping[str, Any], shapes: Mapping[str, tuple[int, ...]],
                source: str = "params.json") -> tuple[TransformerConfig, CheckpointInfo]:
    """``params.json`` (+ the stored shapes, for vocabulary and FFN width) -> (preset, info);
    every value type-checked (``adapters/keys.py``) with a message naming the key."""
    for key in _SIZE_TENSORS:
        if key not in shapes or len(shapes[key]) != 2:
            raise ValueError(f"Meta checkpoint lacks the matrix {key!r}")
    kw = {"source": source}
    sizes = dict(vocab_size=int(shapes[_SIZE_TENSORS[0]][0]),
                 hidden_size=int_key(params, "dim", **kw),
                 num_layers=int_key(params, "n_layers", **kw),
                 num_heads=int_key(params, "n_heads", **kw),
                 num_kv_heads=int_key(params, "n_kv_heads", None, **kw),
                 intermediate_size=int(shapes[_SIZE_TENSORS[1]][0]),
                 max_seq_len=int_key(params, "max_seq_len", 2048, **kw))
    eps = float_key(params, "norm_eps", 1e-5, **kw)
    theta = float_key(params, "rope_theta", 10000.0, **kw, minimum=1.0, strict=True)
    try:
        config = llama.preset(**sizes, norm_eps=eps, rope_theta=theta)
    except ValueError as err:
        raise ValueError(f"{source}: {err}") from None
    return config, CheckpointInfo(family="meta")


def _check_representable(c: TransformerConfig) -> None:
    if (c.position != "rope" or c.rope_scaling or c.partial_rotary_factor != 1.0
            or c.tie_embeddings or c.attention_bias or c.mlp_bias or c.feedforward != "swiglu"):
        raise ValueError("Meta layout needs an untied Llama preset without biases, rope "
                         "scaling or partial rotary")


def write_config(c: TransformerConfig, info: CheckpointInfo) -> dict[str, Any]:
    """The ``params.json`` dict (inverse of :func:`read_config`)."""
    _check_representable(c)
    return {"dim": c.hidden_size, "n_layers": c.num_layers, "n_heads": c.num_heads,
            "n_kv_heads": c.kv_heads, "norm_eps": c.eps, "rope_theta": c.rope_theta,
            "max_seq_len": c.max_seq_len}


def rules(c: TransformerConfig, *, permute_qk: bool = True) -> list[Rule]:
    """The Meta name table; ``permute_qk=False`` drops the q/k layout permutation (to show
    that it is needed)."""
    _check_representable(c)
    hd = c.dim_per_head

    def qk(theirs: str, ours: str, heads: int) -> Rule:
        if not permute_qk:
            return mapped(theirs, ours)
        return mapped(theirs, ours, lambda w: interleaved_to_half_qk_weight(w, heads, hd),
                      lambda w: half_to_interleaved_qk_weight(w, heads, hd))

    out = [mapped("tok_embeddings.weight", "embed_tokens.weight"),
           mapped("norm.weight", "final_norm.weight"),
           mapped("output.weight", "lm_head.weight")]
    for i in range(c.num_layers):
        m = o = f"layers.{i}."
        out += [
            mapped(m + "attention_norm.weight", o + "attn_norm.weight"),
            mapped(m + "ffn_norm.weight", o + "ffn_norm.weight"),
            qk(m + "attention.wq.weight", o + "attn.q_proj.weight", c.num_heads),
            qk(m + "attention.wk.weight", o + "attn.k_proj.weight", c.kv_heads),
            mapped(m + "attention.wv.weight", o + "attn.v_proj.weight"),
            mapped(m + "attention.wo.weight", o + "attn.out_proj.weight"),
            mapped(m + "feed_forward.w1.weight", o + "ffn.gate.weight"),
            mapped(m + "feed_forward.w2.weight", o + "ffn.down.weight"),
            mapped(m + "feed_forward.w3.weight", o + "ffn.up.weight"),
        ]
    return out


META = Adapter(family="meta", read_config=read_config, write_config=write_config, rules=rules,
               ignored_suffixes=("rope.freqs",), layer_prefix="layers.",
               layers_key="n_layers")
