"""Mistral family (``MistralForCausalLM``; Jiang et al. 2023; HF ``modeling_mistral.py``).

The Llama preset (``adapters/llama.py``, no biases) with sliding-window attention: with
``sliding_window`` W (an integer, or null for plain causal attention) query i attends to the keys
j with ``i - W < j <= i`` (the W most recent positions, itself included; transformers'
``sliding_window_overlay``: ``kv_idx > q_idx - W``), in every layer, with or without a KV cache
(``TransformerConfig.sliding_window``). The name table is Llama's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from transformer_math.checkpoints.adapters import llama
from transformer_math.checkpoints.adapters.base import Adapter
from transformer_math.checkpoints.adapters.keys import int_key
from transformer_math.checkpoints.info import CheckpointInfo
from transformer_math.nn.config import TransformerConfig


def read_config(cfg: Mapping[str, Any], shapes: Mapping[str, tuple[int, ...]] | None = None,
                source: str = "config.json") -> tuple[TransformerConfig, CheckpointInfo]:
    """An HF Mistral ``config.json`` dict -> (preset, info); every value type-checked."""
    llama.check_activation(cfg, "mistral", ("silu",))
    if cfg.get("layer_types") is not None:
        raise ValueError(f"layer_types in {source} is not supported for mistral (alternating "
                         "attention is Ministral's; transformers' Mistral ignores it)")
    window = int_key(cfg, "sliding_window", None, source=source)
    return llama.read_decoder(cfg, source, "mistral", flags={},
                              extra={"sliding_window": window})


def write_config(c: TransformerConfig, info: CheckpointInfo) -> dict[str, Any]:
    """The HF ``config.json`` dict of a Mistral preset (inverse of :func:`read_config`)."""
    if c.attention_bias or c.out_bias or c.mlp_bias:
        raise ValueError("mistral has no biases; got attention_bias="
                         f"{c.attention_bias}, attention_out_bias={c.out_bias}, "
                         f"mlp_bias={c.mlp_bias}")
    return {"architectures": ["MistralForCausalLM"], "model_type": "mistral",
            **llama.sizes_to_hf(c), "hidden_act": "silu", "sliding_window": c.sliding_window,
            **info.to_config()}


MISTRAL = Adapter(family="mistral", read_config=read_config, write_config=write_config,
                  rules=llama.rules, ignored_suffixes=("rotary_emb.inv_freq",),
                  tied_head="lm_head.weight", layer_prefix="model.layers.",
                  layers_key="num_hidden_layers")
