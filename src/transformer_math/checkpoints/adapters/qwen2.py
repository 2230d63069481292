"""Qwen2 family (``Qwen2ForCausalLM``; Yang et al. 2024; HF ``modeling_qwen2.py``).

The Llama preset (``adapters/llama.py``) with biases on the q, k and v projections and none on
the output projection (``attention_bias=True, attention_out_bias=False``); the name table is
Llama's. Sliding-window attention (``use_sliding_window: true``, per-layer ``layer_types``) is
refused: Qwen2 applies it only to the layers from ``max_window_layers`` on, and this project's
window is one for every layer; every released Qwen2 / Qwen2.5 checkpoint has it off.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from transformer_math.checkpoints.adapters import llama
from transformer_math.checkpoints.adapters.base import Adapter
from transformer_math.checkpoints.adapters.keys import bool_key
from transformer_math.checkpoints.info import CheckpointInfo
from transformer_math.nn.config import TransformerConfig


def check_layer_types(cfg: Mapping[str, Any], family: str, source: str,
                      allowed: tuple[str, ...] = ("full_attention",)) -> None:
    """``layer_types`` (absent, null, or a list of strings) holds only ``allowed`` kinds."""
    kinds = cfg.get("layer_types")
    if kinds is None:
        return
    if not isinstance(kinds, list) or not all(isinstance(k, str) for k in kinds):
        raise ValueError(f"layer_types in {source} must be a list of strings, got "
                         f"{kinds!r}"[:300])
    other = sorted(set(kinds) - set(allowed))
    if other:
        raise ValueError(f"{family} layer_types {other} in {source} are not supported (every "
                         f"layer must be one of {list(allowed)})")


def read_config(cfg: Mapping[str, Any], shapes: Mapping[str, tuple[int, ...]] | None = None,
                source: str = "config.json") -> tuple[TransformerConfig, CheckpointInfo]:
    """An HF Qwen2 ``config.json`` dict -> (preset, info); every value type-checked."""
    llama.check_activation(cfg, "qwen2", ("silu",))
    if bool_key(cfg, "use_sliding_window", False, source=source):
        raise ValueError(f"use_sliding_window=true in {source} is not supported for qwen2 (its "
                         "window covers only the layers from max_window_layers on)")
    check_layer_types(cfg, "qwen2", source)
    flags = {"attention_bias": True, "attention_out_bias": False}
    return llama.read_decoder(cfg, source, "qwen2", flags=flags)


def write_config(c: TransformerConfig, info: CheckpointInfo) -> dict[str, Any]:
    """The HF ``config.json`` dict of a Qwen2 preset (inverse of :func:`read_config`)."""
    if not c.attention_bias or c.out_bias or c.mlp_bias:
        raise ValueError("qwen2 needs q/k/v biases, no output-projection bias and no MLP "
                         f"biases; got attention_bias={c.attention_bias}, attention_out_bias="
                         f"{c.out_bias}, mlp_bias={c.mlp_bias}")
    return {"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", **llama.sizes_to_hf(c),
            "hidden_act": "silu", "use_sliding_window": False, **info.to_config()}


QWEN2 = Adapter(family="qwen2", read_config=read_config, write_config=write_config,
                rules=llama.rules, ignored_suffixes=("rotary_emb.inv_freq",),
                tied_head="lm_head.weight", layer_prefix="model.layers.",
                layers_key="num_hidden_layers")
