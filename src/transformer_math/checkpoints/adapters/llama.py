"""Llama family (``LlamaForCausalLM``; Touvron et al. 2023; HF ``modeling_llama.py``).

Preset: ``norm="rmsnorm_hf"`` (RMSNorm in float32, cast back before the gain: HF's order),
``feedforward="swiglu"``, ``position="rope"`` (half layout, any HF ``rope_type`` registered in
``functional.rope_scaling`` with ``in_transformers=True``), GQA, biases per config, no head bias:

    h_0 = E[x];  a = h + Attn_RoPE(RMSNorm_1(h));  h' = a + W_down(SiLU(W_gate n) * W_up n),
    n = RMSNorm_2(a);  logits = RMSNorm_f(h_L) W_U^T  (W_U = E when tied).

Name table (HF -> ours; identical tensors, no transform)::

    model.embed_tokens.weight                            embed_tokens.weight
    model.layers.i.input_layernorm.weight                layers.i.attn_norm.weight
    model.layers.i.self_attn.{q,k,v}_proj.{weight,bias}  layers.i.attn.{q,k,v}_proj.*
    model.layers.i.self_attn.o_proj.{weight,bias}        layers.i.attn.out_proj.*
    model.layers.i.post_attention_layernorm.weight       layers.i.ffn_norm.weight
    model.layers.i.mlp.{gate,up,down}_proj.*             layers.i.ffn.{gate,up,down}.*
    model.norm.weight                                    final_norm.weight
    lm_head.weight (absent when tied)                    lm_head.weight
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from transformer_math.checkpoints.adapters.base import Adapter, Rule, mapped
from transformer_math.checkpoints.info import CheckpointInfo
from transformer_math.functional.rope_scaling import (
    ROPE_SCALING_FUNCTIONS,
    rope_parameter_names,
)
from transformer_math.nn.config import TransformerConfig


def preset(*, vocab_size: int, hidden_size: int, num_layers: int, num_heads: int,
           intermediate_size: int, max_seq_len: int, num_kv_heads: int | None = None,
           head_dim: int | None = None, norm_eps: float = 1e-6, rope_theta: float = 10000.0,
           rope_scaling: Mapping[str, Any] | None = None, partial_rotary_factor: float = 1.0,
           attention_bias: bool = False, mlp_bias: bool = False,
           tie_embeddings: bool = False) -> TransformerConfig:
    """The Llama architecture as a :class:`TransformerConfig` (sizes made explicit, so that a
    config survives ``config.json`` round trips unchanged); init N(0, 0.02^2) like HF's."""
    if head_dim is None and hidden_size % num_heads == 0:
        head_dim = hidden_size // num_heads
    return TransformerConfig(
        hidden_size=hidden_size, num_layers=num_layers, num_heads=num_heads,
        vocab_size=vocab_size, num_kv_heads=num_heads if num_kv_heads is None else num_kv_heads,
        head_dim=head_dim, intermediate_size=intermediate_size, max_seq_len=max_seq_len,
        position="rope", rope_theta=rope_theta, rope_scaling=rope_scaling,
        partial_rotary_factor=partial_rotary_factor, norm="rmsnorm_hf", norm_eps=norm_eps,
        norm_placement="pre", feedforward="swiglu", attention_bias=attention_bias,
        mlp_bias=mlp_bias, head_bias=False, tie_embeddings=tie_embeddings, init="gpt2")


def rope_from_hf(cfg: Mapping[str, Any]) -> tuple[float, dict[str, Any] | None, float]:
    """(rope_theta, rope_scaling in our parameter names or None, partial_rotary_factor).

    Accepted types and keys come from the registry: ``ROPE_SCALING_FUNCTIONS.where(
    in_transformers=True)`` and ``rope_parameter_names(type)``; anything else is rejected.
    """
    params = dict(cfg.get("rope_parameters") or {})
    legacy = cfg.get("rope_scaling")
    if legacy:
        params = {**dict(legacy), **params}
    theta = float(params.pop("rope_theta", cfg.get("rope_theta", 10000.0)))
    partial = float(params.pop("partial_rotary_factor", cfg.get("partial_rotary_factor", 1.0)))
    rope_type = params.pop("rope_type", params.pop("type", "default"))
    supported = ROPE_SCALING_FUNCTIONS.where(in_transformers=True)
    if rope_type not in supported:
        raise ValueError(f"unsupported rope_type {rope_type!r} in config.json; supported: "
                         f"{sorted(supported)}")
    # HF fills optional keys with None; drop those, then reject what we do not model.
    params = {k: v for k, v in params.items() if v is not None}
    n_max = cfg.get("max_position_embeddings")
    if rope_type == "dynamic":  # HF's dynamic NTK uses max_position_embeddings as L0
        params["original_max_position_embeddings"] = n_max
    elif rope_type in ("yarn", "llama3", "longrope"):
        params.setdefault("original_max_position_embeddings", n_max)
    if rope_type == "yarn" and "factor" not in params:
        params["factor"] = n_max / params["original_max_position_embeddings"]
    allowed = rope_parameter_names(rope_type)
    unknown = sorted(set(params) - set(allowed))
    if unknown:
        raise ValueError(f"rope_type {rope_type!r}: unsupported parameters {unknown} in "
                         f"config.json (supported: {list(allowed)})")
    if rope_type == "default":
        return theta, None, partial
    return theta, {"rope_type": rope_type, **params}, partial


def read_config(cfg: Mapping[str, Any], shapes: Mapping[str, tuple[int, ...]] | None = None
                ) -> tuple[TransformerConfig, CheckpointInfo]:
    """An HF Llama ``config.json`` dict -> (preset, info)."""
    act = cfg.get("hidden_act", "silu")
    if act != "silu":
        raise ValueError(f"llama hidden_act must be 'silu', got {act!r}")
    if cfg.get("pretraining_tp", 1) != 1:
        raise ValueError(f"pretraining_tp must be 1, got {cfg.get('pretraining_tp')}")
    theta, scaling, partial = rope_from_hf(cfg)
    config = preset(
        vocab_size=cfg["vocab_size"], hidden_size=cfg["hidden_size"],
        num_layers=cfg["num_hidden_layers"], num_heads=cfg["num_attention_heads"],
        num_kv_heads=cfg.get("num_key_value_heads"), head_dim=cfg.get("head_dim"),
        intermediate_size=cfg["intermediate_size"],
        max_seq_len=cfg.get("max_position_embeddings", 2048),
        norm_eps=float(cfg.get("rms_norm_eps", 1e-6)), rope_theta=theta, rope_scaling=scaling,
        partial_rotary_factor=partial, attention_bias=bool(cfg.get("attention_bias", False)),
        mlp_bias=bool(cfg.get("mlp_bias", False)),
        tie_embeddings=bool(cfg.get("tie_word_embeddings", False)))
    return config, CheckpointInfo.from_config("llama", cfg)


def write_config(c: TransformerConfig, info: CheckpointInfo) -> dict[str, Any]:
    """The HF ``config.json`` dict of a Llama preset (inverse of :func:`read_config`)."""
    rope: dict[str, Any] = {"rope_type": "default", "rope_theta": c.rope_theta}
    if c.rope_scaling:
        rope = {**c.rope_scaling, "rope_theta": c.rope_theta}
        if rope["rope_type"] == "dynamic":
            rope.pop("original_max_position_embeddings", None)
    if c.partial_rotary_factor != 1.0:
        rope["partial_rotary_factor"] = c.partial_rotary_factor
    return {
        "architectures": ["LlamaForCausalLM"], "model_type": "llama",
        "vocab_size": c.vocab_size, "hidden_size": c.hidden_size,
        "intermediate_size": c.ffn_size, "num_hidden_layers": c.num_layers,
        "num_attention_heads": c.num_heads, "num_key_value_heads": c.kv_heads,
        "head_dim": c.dim_per_head, "hidden_act": "silu",
        "max_position_embeddings": c.max_seq_len, "rms_norm_eps": c.eps,
        "rope_parameters": rope, "attention_bias": c.attention_bias,
        "mlp_bias": c.mlp_bias, "tie_word_embeddings": c.tie_embeddings, **info.to_config(),
    }


def rules(c: TransformerConfig) -> list[Rule]:
    """The Llama name table (module docstring)."""
    out = [mapped("model.embed_tokens.weight", "embed_tokens.weight"),
           mapped("model.norm.weight", "final_norm.weight")]
    for i in range(c.num_layers):
        hf, ours = f"model.layers.{i}.", f"layers.{i}."
        out += [mapped(hf + "input_layernorm.weight", ours + "attn_norm.weight"),
                mapped(hf + "post_attention_layernorm.weight", ours + "ffn_norm.weight")]
        for theirs, mine in (("q_proj", "q_proj"), ("k_proj", "k_proj"), ("v_proj", "v_proj"),
                             ("o_proj", "out_proj")):
            params = ("weight", "bias") if c.attention_bias else ("weight",)
            out += [mapped(hf + f"self_attn.{theirs}.{p}", ours + f"attn.{mine}.{p}")
                    for p in params]
        for part in ("gate", "up", "down"):
            params = ("weight", "bias") if c.mlp_bias else ("weight",)
            out += [mapped(hf + f"mlp.{part}_proj.{p}", ours + f"ffn.{part}.{p}")
                    for p in params]
    if not c.tie_embeddings:
        out.append(mapped("lm_head.weight", "lm_head.weight"))
    return out


LLAMA = Adapter(family="llama", read_config=read_config, write_config=write_config,
                rules=rules, ignored_suffixes=("rotary_emb.inv_freq",),
                tied_head="lm_head.weight")
