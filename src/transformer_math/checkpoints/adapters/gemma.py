"""Gemma family (``GemmaForCausalLM``; Gemma Team 2024; HF ``modeling_gemma.py``).

The Llama preset (``adapters/llama.py``) with three changes and a head size of its own:

- RMSNorm with the +1 offset (``norm="rmsnorm_gemma"``, ``nn/norms.py``): HF stores w and
  multiplies by ``1 + w`` formed in float32, before the cast back. The model keeps w itself, so
  the stored tensors are copied unchanged both ways (load-then-save is bit-identical in every
  dtype) and a bf16 model forms ``1 + w`` exactly as transformers does;
- embeddings scaled by sqrt(hidden_size): HF multiplies by ``torch.tensor(d ** 0.5)`` (float32)
  cast to the weight dtype (``TransformerConfig.embedding_scale``, applied the same way);
- the gated MLP ``down(gelu_tanh(gate x) * up x)`` (``feedforward="geglu_tanh"``; Gemma's
  ``hidden_act`` ``gelu_pytorch_tanh``, and the legacy ``gelu`` which transformers maps to it);
- ``head_dim`` independent of the width (256 for Gemma 7B with d = 3072, 16 heads).

Head tied to the embedding by default (``tie_word_embeddings`` true).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from transformer_math.checkpoints.adapters import llama
from transformer_math.checkpoints.adapters.base import Adapter
from transformer_math.checkpoints.adapters.keys import bool_key
from transformer_math.checkpoints.info import CheckpointInfo
from transformer_math.nn.config import TransformerConfig

ACTIVATIONS = ("gelu_pytorch_tanh", "gelu", "gelu_new")  # transformers maps "gelu" to tanh


def read_config(cfg: Mapping[str, Any], shapes: Mapping[str, tuple[int, ...]] | None = None,
                source: str = "config.json") -> tuple[TransformerConfig, CheckpointInfo]:
    """An HF Gemma ``config.json`` dict -> (preset, info); every value type-checked."""
    llama.check_activation(cfg, "gemma", ACTIVATIONS)
    if bool_key(cfg, "use_bidirectional_attention", False, source=source):
        raise ValueError(f"use_bidirectional_attention=true in {source} is not supported")
    cfg = {"tie_word_embeddings": True, **{k: v for k, v in cfg.items() if v is not None}}
    flags = {"attention_bias": bool_key(cfg, "attention_bias", False, source=source)}
    hidden = llama.read_sizes(cfg, source)["hidden_size"]
    return llama.read_decoder(cfg, source, "gemma", flags=flags,
                              extra={"feedforward": "geglu_tanh", "norm": "rmsnorm_gemma",
                                     "embedding_scale": hidden ** 0.5})


def write_config(c: TransformerConfig, info: CheckpointInfo) -> dict[str, Any]:
    """The HF ``config.json`` dict of a Gemma preset (inverse of :func:`read_config`)."""
    if c.mlp_bias or c.out_bias != c.attention_bias:
        raise ValueError("gemma has no MLP biases and one attention_bias for all four "
                         f"projections; got mlp_bias={c.mlp_bias}, attention_bias="
                         f"{c.attention_bias}, attention_out_bias={c.out_bias}")
    return {"architectures": ["GemmaForCausalLM"], "model_type": "gemma",
            **llama.sizes_to_hf(c), "hidden_act": "gelu_pytorch_tanh",
            "attention_bias": c.attention_bias, **info.to_config()}


GEMMA = Adapter(family="gemma", read_config=read_config, write_config=write_config,
                rules=llama.rules, ignored_suffixes=("rotary_emb.inv_freq",),
                tied_head="lm_head.weight", layer_prefix="model.layers.",
                layers_key="num_hidden_layers")
