"""Checkpoint families by name: :data:`ADAPTERS` (``transformer_math.registry.Registry``).

HF layouts: llama, gpt2, qwen2, mistral, gemma, phi3 (one module each; the Llama-like ones share
``llama.read_decoder`` and, except Phi-3's fused projections, Llama's name table); the Meta
layout: meta.

Each adapter (``adapters/base.py``) holds one name table, read in both directions, and the
tensor transforms of its format; ``checkpoints/io.py`` does the file handling. Metadata:
``architecture`` (the HF ``architectures`` entry, or a description for non-HF layouts),
``model_type`` (the HF ``model_type``; None for non-HF layouts), ``layout`` ("hf": a
``config.json`` directory; "meta": ``params.json`` + ``consolidated.*``), ``config_file``.
"""

from __future__ import annotations

from transformer_math.checkpoints.adapters.base import Adapter, Rule
from transformer_math.checkpoints.adapters.gemma import GEMMA
from transformer_math.checkpoints.adapters.gpt2 import GPT2
from transformer_math.checkpoints.adapters.llama import LLAMA
from transformer_math.checkpoints.adapters.meta import META
from transformer_math.checkpoints.adapters.mistral import MISTRAL
from transformer_math.checkpoints.adapters.phi3 import PHI3
from transformer_math.checkpoints.adapters.qwen2 import QWEN2
from transformer_math.registry import Registry

ADAPTERS: Registry[Adapter] = Registry("checkpoint family")
ADAPTERS.add("llama", LLAMA, architecture="LlamaForCausalLM", model_type="llama", layout="hf",
             config_file="config.json")
ADAPTERS.add("gpt2", GPT2, architecture="GPT2LMHeadModel", model_type="gpt2", layout="hf",
             config_file="config.json")
for _name, _adapter, _arch in (("qwen2", QWEN2, "Qwen2ForCausalLM"),
                               ("mistral", MISTRAL, "MistralForCausalLM"),
                               ("gemma", GEMMA, "GemmaForCausalLM"),
                               ("phi3", PHI3, "Phi3ForCausalLM")):
    ADAPTERS.add(_name, _adapter, architecture=_arch, model_type=_name, layout="hf",
                 config_file="config.json")
ADAPTERS.add("meta", META, architecture="LLaMA (Meta consolidated.*.pth)", model_type=None,
             layout="meta", config_file="params.json")

__all__ = ["ADAPTERS", "Adapter", "Rule"]
