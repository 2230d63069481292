"""Phi-3 family (``Phi3ForCausalLM``; Abdin et al. 2024; HF ``modeling_phi3.py``).

The Llama preset (``adapters/llama.py``, no biases) with fused projections and Phi-3's RoPE:

- ``self_attn.qkv_proj`` (H d_k + 2 H_kv d_k, d) = q | k | v rows, split on load, concatenated
  on save; ``mlp.gate_up_proj`` (2 d_ff, d) = gate | up (HF: ``gate, up = chunk(2)``,
  ``down(up * silu(gate))``);
- ``partial_rotary_factor`` honoured: the first ``int(head_dim * f)`` channels of each head are
  rotated (half layout within them), the rest pass (HF ``apply_rotary_pos_emb`` of Phi-3: the
  same channels as ``nn.position.RotaryEmbedding``);
- LongRoPE (``rope_type`` longrope, legacy ``su``): ``short_factor`` for sequences up to
  ``original_max_position_embeddings`` (a top-level key in Phi-3 configs), ``long_factor`` past
  it (``functional.rope_scaling``, the registry's longrope); the attention factor defaults to
  sqrt(1 + ln(max_position_embeddings / L0) / ln L0);
- ``sliding_window`` (an integer or null) as Mistral's.

Name table (HF -> ours)::

    model.layers.i.self_attn.qkv_proj.weight     split -> layers.i.attn.{q,k,v}_proj.weight
    model.layers.i.self_attn.o_proj.weight       layers.i.attn.out_proj.weight
    model.layers.i.mlp.gate_up_proj.weight       split -> layers.i.ffn.{gate,up}.weight
    model.layers.i.mlp.down_proj.weight          layers.i.ffn.down.weight
    (embeddings, norms and head as Llama's)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from transformer_math.checkpoints.adapters import llama
from transformer_math.checkpoints.adapters.base import Adapter, Rule, mapped, packed, split
from transformer_math.checkpoints.adapters.keys import int_key, mapping_key
from transformer_math.checkpoints.info import CheckpointInfo
from transformer_math.nn.config import TransformerConfig


def _with_original_length(cfg: Mapping[str, Any], source: str) -> dict[str, Any]:
    """Phi-3 keeps ``original_max_position_embeddings`` at the top level; LongRoPE reads it
    from the rope parameters (transformers copies it there), so it is copied the same way;
    the legacy rope type names ``su`` and ``yarn`` mean longrope (transformers' Phi-3)."""
    out = dict(cfg)
    key = "rope_parameters" if cfg.get("rope_parameters") is not None else "rope_scaling"
    params = mapping_key(cfg, key, source=source)
    kind = params.get("rope_type", params.get("type"))
    if kind in ("su", "yarn"):
        params["rope_type"] = "longrope"
        params.pop("type", None)
    if params.get("rope_type", params.get("type")) == "longrope":
        original = int_key(cfg, "original_max_position_embeddings", None, source=source)
        if original is not None:
            params.setdefault("original_max_position_embeddings", original)
    if params:
        out[key] = params
    return out


def read_config(cfg: Mapping[str, Any], shapes: Mapping[str, tuple[int, ...]] | None = None,
                source: str = "config.json") -> tuple[TransformerConfig, CheckpointInfo]:
    """An HF Phi-3 ``config.json`` dict -> (preset, info); every value type-checked."""
    llama.check_activation(cfg, "phi3", ("silu",))
    window = int_key(cfg, "sliding_window", None, source=source)
    config, info = llama.read_decoder(_with_original_length(cfg, source), source, "phi3",
                                      flags={}, partial_rotary=True,
                                      extra={"sliding_window": window})
    scaling = config.rope_scaling or {}
    if config.rope_scaling and scaling.get("rope_type") != "longrope":
        raise ValueError(f"phi3 rope_type must be 'default' or 'longrope' in {source}, got "
                         f"{scaling.get('rope_type')!r}")
    return config, info


def write_config(c: TransformerConfig, info: CheckpointInfo) -> dict[str, Any]:
    """The HF ``config.json`` dict of a Phi-3 preset (inverse of :func:`read_config`)."""
    if c.attention_bias or c.out_bias or c.mlp_bias:
        raise ValueError("phi3 has no biases; got attention_bias="
                         f"{c.attention_bias}, attention_out_bias={c.out_bias}, "
                         f"mlp_bias={c.mlp_bias}")
    out = {"architectures": ["Phi3ForCausalLM"], "model_type": "phi3", **llama.sizes_to_hf(c),
           "hidden_act": "silu", "sliding_window": c.sliding_window, **info.to_config()}
    original = (c.rope_scaling or {}).get("original_max_position_embeddings")
    out["original_max_position_embeddings"] = original or c.max_seq_len
    return out


def rules(c: TransformerConfig) -> list[Rule]:
    """The Phi-3 name table (module docstring)."""
    if c.attention_bias or c.out_bias or c.mlp_bias:
        raise ValueError("phi3 has no biases")
    q, kv = c.num_heads * c.dim_per_head, c.kv_heads * c.dim_per_head
    out = [mapped("model.embed_tokens.weight", "embed_tokens.weight"),
           mapped("model.norm.weight", "final_norm.weight")]
    for i in range(c.num_layers):
        hf, ours = f"model.layers.{i}.", f"layers.{i}."
        out += [
            mapped(hf + "input_layernorm.weight", ours + "attn_norm.weight"),
            mapped(hf + "post_attention_layernorm.weight", ours + "ffn_norm.weight"),
            split(hf + "self_attn.qkv_proj.weight",
                  tuple(ours + f"attn.{n}_proj.weight" for n in "qkv"), (q, kv, kv)),
            mapped(hf + "self_attn.o_proj.weight", ours + "attn.out_proj.weight"),
            packed(hf + "mlp.gate_up_proj.weight",
                   (ours + "ffn.gate.weight", ours + "ffn.up.weight"), conv1d=False),
            mapped(hf + "mlp.down_proj.weight", ours + "ffn.down.weight"),
        ]
    if not c.tie_embeddings:
        out.append(mapped("lm_head.weight", "lm_head.weight"))
    return out


PHI3 = Adapter(family="phi3", read_config=read_config, write_config=write_config, rules=rules,
               ignored_suffixes=("rotary_emb.inv_freq",), tied_head="lm_head.weight",
               layer_prefix="model.layers.", layers_key="num_hidden_layers")
