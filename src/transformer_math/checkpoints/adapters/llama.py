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

import dataclasses
import math
from collections.abc import Mapping
from typing import Any

from transformer_math.checkpoints.adapters.base import Adapter, Rule, mapped
from transformer_math.checkpoints.adapters.keys import (
    bool_key,
    float_key,
    int_key,
    mapping_key,
    str_key,
)
from transformer_math.checkpoints.info import CheckpointInfo
from transformer_math.functional.rope_scaling import (
    ROPE_SCALING_FUNCTIONS,
    compute_rope_frequencies,
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


_ROPE_LISTS = ("short_factor", "long_factor")  # longrope: lists of numbers
_ROPE_BOOLS = ("truncate",)  # yarn


def _rope_values(rope_type: str, params: Mapping[str, Any], where: str) -> None:
    """Every scaling parameter is a finite number (lists / booleans where the type says)."""
    for key, value in params.items():
        if key in _ROPE_BOOLS:
            bool_key(params, key, source=where)
        elif key in _ROPE_LISTS:
            if not isinstance(value, list):
                raise ValueError(f"{key} in {where} must be a list of numbers, got {value!r}"
                                 [:300])
            for v in value:
                float_key({key: v}, key, source=where, minimum=-math.inf)
        else:
            float_key(params, key, source=where, minimum=-math.inf)


def rope_from_hf(cfg: Mapping[str, Any], source: str = "config.json"
                 ) -> tuple[float, dict[str, Any] | None, float]:
    """(rope_theta, rope_scaling in our parameter names or None, partial_rotary_factor).

    ``rope_parameters`` (transformers >= 5) and the legacy ``rope_scaling`` must be JSON objects
    (or null); every value is type-checked with a message naming the key. Accepted types and
    keys come from the registry: ``ROPE_SCALING_FUNCTIONS.where(in_transformers=True)`` and
    ``rope_parameter_names(type)``; anything else is rejected. Value ranges (e.g. a factor
    < 1) are checked by :func:`check_rope` once the head size is known.
    """
    params = mapping_key(cfg, "rope_parameters", source=source)
    legacy = mapping_key(cfg, "rope_scaling", source=source)
    where = f"{source} {'rope_parameters' if params else 'rope_scaling'}"
    params = {**legacy, **params}
    theta = float_key(params, "rope_theta", float_key(cfg, "rope_theta", 10000.0, source=source),
                      source=where, minimum=1.0, strict=True)
    partial = float_key(params, "partial_rotary_factor",
                        float_key(cfg, "partial_rotary_factor", 1.0, source=source),
                        source=where, strict=True)
    for key in ("rope_theta", "partial_rotary_factor"):
        params.pop(key, None)
    rope_type = str_key(params, "rope_type", str_key(params, "type", "default", source=where),
                        source=where)
    params.pop("rope_type", None)
    params.pop("type", None)
    supported = ROPE_SCALING_FUNCTIONS.where(in_transformers=True)
    if rope_type not in supported:
        raise ValueError(f"unsupported rope_type {rope_type!r} in {source}; supported: "
                         f"{sorted(supported)}")
    # HF fills optional keys with None; drop those, then reject what we do not model.
    params = {k: v for k, v in params.items() if v is not None}
    allowed = rope_parameter_names(rope_type)
    unknown = sorted(set(params) - set(allowed) - {"original_max_position_embeddings"})
    if unknown:
        raise ValueError(f"rope_type {rope_type!r}: unsupported parameters {unknown} in "
                         f"{where} (supported: {list(allowed)})")
    _rope_values(rope_type, params, where)
    n_max = int_key(cfg, "max_position_embeddings", 2048, source=source)
    if rope_type == "dynamic":  # HF's dynamic NTK uses max_position_embeddings as L0
        params["original_max_position_embeddings"] = n_max
    elif rope_type in ("yarn", "llama3", "longrope"):
        params.setdefault("original_max_position_embeddings", n_max)
        int_key(params, "original_max_position_embeddings", source=where)
    if rope_type == "yarn" and "factor" not in params:
        params["factor"] = n_max / params["original_max_position_embeddings"]
    if rope_type == "longrope" and "factor" not in params:
        # transformers: factor = max_position_embeddings / L0, attention factor 1 when <= 1
        params["factor"] = max(1.0, n_max / params["original_max_position_embeddings"])
    unknown = sorted(set(params) - set(allowed))
    if unknown:
        raise ValueError(f"rope_type {rope_type!r}: unsupported parameters {unknown} in "
                         f"{where} (supported: {list(allowed)})")
    if rope_type == "default":
        return theta, None, partial
    return theta, {"rope_type": rope_type, **params}, partial


def check_rope(config: TransformerConfig, source: str = "config.json") -> None:
    """The RoPE of ``config`` computes: rotary dims ``head_dim * partial_rotary_factor`` even and
    positive, every scaling parameter in range (on the CPU: one vector of ``head_dim / 2``
    frequencies); raises ``ValueError`` naming the keys."""
    if config.position != "rope":
        return
    scaling = dict(config.rope_scaling or {"rope_type": "default"})
    rope_type = scaling.pop("rope_type")
    rotary = int(config.dim_per_head * config.partial_rotary_factor)
    try:
        compute_rope_frequencies(rope_type, rotary, config.rope_theta, scaling,
                                 config.max_seq_len)
    except (ValueError, TypeError) as err:
        raise ValueError(f"rope in {source} (rope_type {rope_type!r}, rope_theta "
                         f"{config.rope_theta}, partial_rotary_factor "
                         f"{config.partial_rotary_factor} of head_dim {config.dim_per_head} = "
                         f"{rotary} rotary dims): {err}") from None


def check_activation(cfg: Mapping[str, Any], family: str, allowed: tuple[str, ...],
                     key: str = "hidden_act") -> str:
    """``cfg[key]`` (default ``allowed[0]``) must be one of ``allowed``."""
    act = cfg.get(key, allowed[0])
    if not isinstance(act, str) or act not in allowed:
        one = f"must be {allowed[0]!r}" if len(allowed) == 1 else f"must be one of {list(allowed)}"
        raise ValueError(f"{family} {key} {one}, got {act!r}"[:300])
    return act


def read_sizes(cfg: Mapping[str, Any], source: str) -> dict[str, Any]:
    """The size keys shared by the Llama-like families (``config.json`` names), type-checked."""
    kw = {"source": source}
    return dict(
        vocab_size=int_key(cfg, "vocab_size", **kw),
        hidden_size=int_key(cfg, "hidden_size", **kw),
        num_layers=int_key(cfg, "num_hidden_layers", **kw),
        num_heads=int_key(cfg, "num_attention_heads", **kw),
        num_kv_heads=int_key(cfg, "num_key_value_heads", None, **kw),
        head_dim=int_key(cfg, "head_dim", None, **kw),
        intermediate_size=int_key(cfg, "intermediate_size", **kw),
        max_seq_len=int_key(cfg, "max_position_embeddings", 2048, **kw))


def refuse_partial_rotary(partial: float, family: str, source: str) -> None:
    """transformers' Llama-style rotary (``LlamaRotaryEmbedding`` and its copies in Qwen2,
    Mistral, Gemma) computes ``head_dim / 2`` frequencies for ``rope_type`` default whatever
    ``partial_rotary_factor`` says (all channels are rotated), and its ``apply_rotary_pos_emb``
    cannot broadcast the fewer frequencies of the other types: the factor has no meaning the
    reference agrees with, so anything but 1 is refused."""
    if partial != 1.0:
        raise ValueError(
            f"partial_rotary_factor {partial} in {source}: transformers' {family} ignores it "
            "(rope_type default rotates all head_dim channels; the other types fail there), "
            "so it is refused; only 1.0 is supported for this family (Phi-3 honours it)")


def read_decoder(cfg: Mapping[str, Any], source: str, family: str, *,
                 flags: Mapping[str, bool], partial_rotary: bool = False,
                 extra: Mapping[str, Any] | None = None
                 ) -> tuple[TransformerConfig, CheckpointInfo]:
    """The Llama-like part of a config: sizes, rope, ``rms_norm_eps``, ``tie_word_embeddings``;
    ``flags`` (attention_bias / mlp_bias / attention_out_bias, already read) and ``extra``
    (TransformerConfig fields) are the family's own. ``partial_rotary``: the family honours
    ``partial_rotary_factor`` (else it must be 1, :func:`refuse_partial_rotary`)."""
    theta, scaling, partial = rope_from_hf(cfg, source)
    if not partial_rotary:
        refuse_partial_rotary(partial, family, source)
    sizes = read_sizes(cfg, source)
    tie = bool_key(cfg, "tie_word_embeddings", False, source=source)
    eps = float_key(cfg, "rms_norm_eps", 1e-6, source=source)
    out_bias = flags.get("attention_out_bias")
    try:
        config = preset(**sizes, norm_eps=eps, rope_theta=theta, rope_scaling=scaling,
                        partial_rotary_factor=partial, tie_embeddings=tie,
                        attention_bias=flags.get("attention_bias", False),
                        mlp_bias=flags.get("mlp_bias", False))
        changes = dict(extra or {})
        if out_bias is not None and out_bias != config.attention_bias:
            changes["attention_out_bias"] = out_bias
        if changes:
            config = dataclasses.replace(config, **changes)
    except ValueError as err:
        raise ValueError(f"{source}: {err}") from None
    check_rope(config, source)
    return config, CheckpointInfo.from_config(family, cfg, source)


def rope_to_hf(c: TransformerConfig) -> dict[str, Any]:
    """``rope_parameters`` of a config file (inverse of :func:`rope_from_hf`)."""
    rope: dict[str, Any] = {"rope_type": "default", "rope_theta": c.rope_theta}
    if c.rope_scaling:
        rope = {**c.rope_scaling, "rope_theta": c.rope_theta}
        if rope["rope_type"] == "dynamic":
            rope.pop("original_max_position_embeddings", None)
    if c.partial_rotary_factor != 1.0:
        rope["partial_rotary_factor"] = c.partial_rotary_factor
    return rope


def sizes_to_hf(c: TransformerConfig) -> dict[str, Any]:
    """The size keys of a Llama-like ``config.json`` (inverse of :func:`read_sizes`)."""
    return {"vocab_size": c.vocab_size, "hidden_size": c.hidden_size,
            "intermediate_size": c.ffn_size, "num_hidden_layers": c.num_layers,
            "num_attention_heads": c.num_heads, "num_key_value_heads": c.kv_heads,
            "head_dim": c.dim_per_head, "max_position_embeddings": c.max_seq_len,
            "rms_norm_eps": c.eps, "rope_parameters": rope_to_hf(c),
            "tie_word_embeddings": c.tie_embeddings}


def read_config(cfg: Mapping[str, Any], shapes: Mapping[str, tuple[int, ...]] | None = None,
                source: str = "config.json") -> tuple[TransformerConfig, CheckpointInfo]:
    """An HF Llama ``config.json`` dict -> (preset, info); every value type-checked
    (``adapters/keys.py``) with a message naming the key."""
    check_activation(cfg, "llama", ("silu",))
    if cfg.get("pretraining_tp", 1) != 1:
        raise ValueError(f"pretraining_tp must be 1, got {cfg.get('pretraining_tp')!r}"[:300])
    flags = {key: bool_key(cfg, key, False, source=source)
             for key in ("attention_bias", "mlp_bias")}
    return read_decoder(cfg, source, "llama", flags=flags)


def write_config(c: TransformerConfig, info: CheckpointInfo) -> dict[str, Any]:
    """The HF ``config.json`` dict of a Llama preset (inverse of :func:`read_config`)."""
    return {
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", **sizes_to_hf(c),
        "hidden_act": "silu", "attention_bias": c.attention_bias, "mlp_bias": c.mlp_bias,
        **info.to_config(),
    }


def rules(c: TransformerConfig) -> list[Rule]:
    """The Llama name table (module docstring), shared by Qwen2, Mistral and Gemma (whose norm
    tensors hold w of the gain 1 + w on both sides: ``norm="rmsnorm_gemma"``)."""
    out = [mapped("model.embed_tokens.weight", "embed_tokens.weight"),
           mapped("model.norm.weight", "final_norm.weight")]
    qkv_params = ("weight", "bias") if c.attention_bias else ("weight",)
    for i in range(c.num_layers):
        hf, ours = f"model.layers.{i}.", f"layers.{i}."
        out += [mapped(hf + "input_layernorm.weight", ours + "attn_norm.weight"),
                mapped(hf + "post_attention_layernorm.weight", ours + "ffn_norm.weight")]
        for theirs, mine in (("q_proj", "q_proj"), ("k_proj", "k_proj"), ("v_proj", "v_proj"),
                             ("o_proj", "out_proj")):
            params = (("weight", "bias") if c.out_bias else ("weight",)) if mine == "out_proj" \
                else qkv_params
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
                tied_head="lm_head.weight", layer_prefix="model.layers.",
                layers_key="num_hidden_layers")
