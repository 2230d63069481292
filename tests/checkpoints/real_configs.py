"""The real-config corpus (issue 33 item 6): eleven ``config.json`` files as published, scaled
down in width and depth only, written by ``transformers`` in float32 and bfloat16, sharded.

Each entry of :data:`PUBLISHED` is the public ``config.json`` of a model, transcribed field for
field from memory of the published file (transformers-4 spelling: ``rope_scaling`` and
``rope_theta`` at the top level, as the hub files still have them). :func:`scaled` then changes
only the sizes: width 64 (``hidden_size``/``n_embd``; 96 for the Phi-4-mini-like config, so its
3:1 query-to-key/value grouping survives), 2 layers, 4 query heads (6 for Phi-4-mini) with the
query-to-key/value ratio kept where 4 allows it (GQA stays GQA, MHA stays MHA, MQA stays MQA),
an explicit ``head_dim`` scaled by the same factor as the heads (Gemma's ``head_dim`` = width /
heads, Mistral-Nemo's ``heads * head_dim != hidden_size`` kept), the MLP width in the published
ratio to the hidden width, vocabulary 96 with special token ids above it moved to its top, and
LongRoPE factor lists cut to the new rotary half-width by taking every k-th published value.
Everything else (``rope_theta``, every ``rope_scaling`` field, ``max_position_embeddings``,
``original_max_position_embeddings``, sliding windows, epsilons, activations, ties, biases) is
as published.

Fields I am not sure of (transcribed from memory; none changes which code path runs):
- the exact LongRoPE ``short_factor``/``long_factor`` values of Phi-3-mini-128k, Phi-3.5-mini
  and Phi-4-mini: the lists here have the published length (48) and shape (short ~1.0-1.2 rising
  slowly; long rising from ~1 to the tens), not the published digits;
- Phi-4-mini's config is "-like": the published ``full_attn_mod``/``lm_head_bias`` keys are
  left out (transformers' Phi3 ignores them); its vocabulary and special ids are as recalled;
- Qwen2.5-7B's YaRN block is the one its model card says to add
  (``{"factor": 4.0, "original_max_position_embeddings": 32768, "type": "yarn"}``);
- ``max_window_layers`` of the Qwen2.5 configs and Gemma's ``hidden_act``/``hidden_activation``
  spelling.

Run as a script (``python tests/checkpoints/real_configs.py OUT``) to write the corpus to OUT;
the tests load it by path (no sibling imports under ``--import-mode=importlib``).
"""

from __future__ import annotations

import copy
import json
import sys
from pathlib import Path
from typing import Any

VOCAB = 96
LAYERS = 2


def _factors(start: float, stop: float, n: int = 48, power: float = 2.0) -> list[float]:
    """``n`` rising factors from ``start`` to ``stop`` (a stand-in for a published list)."""
    return [round(start + (stop - start) * (i / (n - 1)) ** power, 6) for i in range(n)]


_PHI3_ROPE = {"long_factor": _factors(1.08, 64.0, power=3.0),
              "short_factor": _factors(1.0, 1.21, power=2.0), "type": "longrope"}
_PHI35_ROPE = {"long_factor": _factors(1.08, 60.5, power=3.2),
               "short_factor": _factors(1.0, 1.17, power=2.5), "type": "longrope"}
_PHI4_ROPE = {"long_factor": _factors(1.0, 47.7, power=3.0),
              "short_factor": _factors(1.0, 1.0, power=1.0), "type": "longrope"}

PUBLISHED: dict[str, dict[str, Any]] = {
    "llama-3.2-1b": {
        "architectures": ["LlamaForCausalLM"], "attention_bias": False, "attention_dropout": 0.0,
        "bos_token_id": 128000, "eos_token_id": 128001, "head_dim": 64, "hidden_act": "silu",
        "hidden_size": 2048, "initializer_range": 0.02, "intermediate_size": 8192,
        "max_position_embeddings": 131072, "mlp_bias": False, "model_type": "llama",
        "num_attention_heads": 32, "num_hidden_layers": 16, "num_key_value_heads": 8,
        "pretraining_tp": 1, "rms_norm_eps": 1e-05,
        "rope_scaling": {"factor": 32.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                         "original_max_position_embeddings": 8192, "rope_type": "llama3"},
        "rope_theta": 500000.0, "tie_word_embeddings": True, "torch_dtype": "bfloat16",
        "use_cache": True, "vocab_size": 128256},
    "qwen2.5-0.5b": {
        "architectures": ["Qwen2ForCausalLM"], "attention_dropout": 0.0,
        "bos_token_id": 151643, "eos_token_id": 151643, "hidden_act": "silu",
        "hidden_size": 896, "initializer_range": 0.02, "intermediate_size": 4864,
        "max_position_embeddings": 32768, "max_window_layers": 24, "model_type": "qwen2",
        "num_attention_heads": 14, "num_hidden_layers": 24, "num_key_value_heads": 2,
        "rms_norm_eps": 1e-06, "rope_theta": 1000000.0, "sliding_window": 32768,
        "tie_word_embeddings": True, "torch_dtype": "bfloat16", "use_cache": True,
        "use_sliding_window": False, "vocab_size": 151936},
    "qwen2.5-7b-yarn": {
        "architectures": ["Qwen2ForCausalLM"], "attention_dropout": 0.0,
        "bos_token_id": 151643, "eos_token_id": 151645, "hidden_act": "silu",
        "hidden_size": 3584, "initializer_range": 0.02, "intermediate_size": 18944,
        "max_position_embeddings": 32768, "max_window_layers": 28, "model_type": "qwen2",
        "num_attention_heads": 28, "num_hidden_layers": 28, "num_key_value_heads": 4,
        "rms_norm_eps": 1e-06, "rope_theta": 1000000.0, "sliding_window": 131072,
        "rope_scaling": {"factor": 4.0, "original_max_position_embeddings": 32768,
                         "type": "yarn"},
        "tie_word_embeddings": False, "torch_dtype": "bfloat16", "use_cache": True,
        "use_sliding_window": False, "vocab_size": 152064},
    "mistral-7b-v0.1": {
        "architectures": ["MistralForCausalLM"], "bos_token_id": 1, "eos_token_id": 2,
        "hidden_act": "silu", "hidden_size": 4096, "initializer_range": 0.02,
        "intermediate_size": 14336, "max_position_embeddings": 32768, "model_type": "mistral",
        "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 8,
        "rms_norm_eps": 1e-05, "rope_theta": 10000.0, "sliding_window": 4096,
        "tie_word_embeddings": False, "torch_dtype": "bfloat16", "use_cache": True,
        "vocab_size": 32000},
    "mistral-nemo": {
        "architectures": ["MistralForCausalLM"], "attention_dropout": 0.0, "bos_token_id": 1,
        "eos_token_id": 2, "head_dim": 128, "hidden_act": "silu", "hidden_size": 5120,
        "initializer_range": 0.02, "intermediate_size": 14336,
        "max_position_embeddings": 1024000, "model_type": "mistral", "num_attention_heads": 32,
        "num_hidden_layers": 40, "num_key_value_heads": 8, "rms_norm_eps": 1e-05,
        "rope_theta": 1000000.0, "sliding_window": None, "tie_word_embeddings": False,
        "torch_dtype": "bfloat16", "use_cache": True, "vocab_size": 131072},
    "gemma-2b": {
        "architectures": ["GemmaForCausalLM"], "attention_bias": False, "attention_dropout": 0.0,
        "bos_token_id": 2, "eos_token_id": 1, "head_dim": 256, "hidden_act": "gelu",
        "hidden_activation": "gelu_pytorch_tanh", "hidden_size": 2048,
        "initializer_range": 0.02, "intermediate_size": 16384, "max_position_embeddings": 8192,
        "model_type": "gemma", "num_attention_heads": 8, "num_hidden_layers": 18,
        "num_key_value_heads": 1, "pad_token_id": 0, "rms_norm_eps": 1e-06,
        "rope_scaling": None, "rope_theta": 10000.0, "torch_dtype": "bfloat16",
        "use_cache": True, "vocab_size": 256000},
    "phi-3-mini-128k": {
        "architectures": ["Phi3ForCausalLM"], "attention_bias": False, "attention_dropout": 0.0,
        "bos_token_id": 1, "embd_pdrop": 0.0, "eos_token_id": 32000, "hidden_act": "silu",
        "hidden_size": 3072, "initializer_range": 0.02, "intermediate_size": 8192,
        "max_position_embeddings": 131072, "model_type": "phi3", "num_attention_heads": 32,
        "num_hidden_layers": 32, "num_key_value_heads": 32,
        "original_max_position_embeddings": 4096, "pad_token_id": 32000, "resid_pdrop": 0.0,
        "rms_norm_eps": 1e-05, "rope_scaling": _PHI3_ROPE, "rope_theta": 10000.0,
        "sliding_window": 262144, "tie_word_embeddings": False, "torch_dtype": "bfloat16",
        "use_cache": True, "vocab_size": 32064},
    "phi-3.5-mini": {
        "architectures": ["Phi3ForCausalLM"], "attention_bias": False, "attention_dropout": 0.0,
        "bos_token_id": 1, "embd_pdrop": 0.0, "eos_token_id": 32000, "hidden_act": "silu",
        "hidden_size": 3072, "initializer_range": 0.02, "intermediate_size": 8192,
        "max_position_embeddings": 131072, "model_type": "phi3", "num_attention_heads": 32,
        "num_hidden_layers": 32, "num_key_value_heads": 32,
        "original_max_position_embeddings": 4096, "pad_token_id": 32000, "resid_pdrop": 0.0,
        "rms_norm_eps": 1e-05, "rope_scaling": _PHI35_ROPE, "rope_theta": 10000.0,
        "sliding_window": 262144, "tie_word_embeddings": False, "torch_dtype": "bfloat16",
        "use_cache": True, "vocab_size": 32064},
    "phi-4-mini-like": {
        "architectures": ["Phi3ForCausalLM"], "attention_bias": False, "attention_dropout": 0.0,
        "bos_token_id": 199999, "embd_pdrop": 0.0, "eos_token_id": 199999,
        "hidden_act": "silu", "hidden_size": 3072, "initializer_range": 0.02,
        "intermediate_size": 8192, "max_position_embeddings": 131072, "model_type": "phi3",
        "num_attention_heads": 24, "num_hidden_layers": 32, "num_key_value_heads": 8,
        "original_max_position_embeddings": 4096, "pad_token_id": 199999,
        "partial_rotary_factor": 0.75, "resid_pdrop": 0.0, "rms_norm_eps": 1e-05,
        "rope_scaling": _PHI4_ROPE, "rope_theta": 10000.0, "sliding_window": 262144,
        "tie_word_embeddings": True, "torch_dtype": "bfloat16", "use_cache": True,
        "vocab_size": 200064},
    "vicuna-7b-16k": {
        "architectures": ["LlamaForCausalLM"], "bos_token_id": 1, "eos_token_id": 2,
        "hidden_act": "silu", "hidden_size": 4096, "initializer_range": 0.02,
        "intermediate_size": 11008, "max_position_embeddings": 4096, "model_type": "llama",
        "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 32,
        "pad_token_id": 0, "pretraining_tp": 1, "rms_norm_eps": 1e-05,
        "rope_scaling": {"factor": 4.0, "type": "linear"}, "tie_word_embeddings": False,
        "torch_dtype": "float16", "use_cache": True, "vocab_size": 32000},
    "gpt2": {
        "activation_function": "gelu_new", "architectures": ["GPT2LMHeadModel"],
        "attn_pdrop": 0.1, "bos_token_id": 50256, "embd_pdrop": 0.1, "eos_token_id": 50256,
        "initializer_range": 0.02, "layer_norm_epsilon": 1e-05, "model_type": "gpt2",
        "n_ctx": 1024, "n_embd": 768, "n_head": 12, "n_layer": 12, "n_positions": 1024,
        "resid_pdrop": 0.1, "summary_activation": None, "summary_first_dropout": 0.1,
        "summary_proj_to_labels": True, "summary_type": "cls_index", "summary_use_proj": True,
        "vocab_size": 50257},
}

#: how far each config's rotary positions reach (RoPE configs: max_position_embeddings capped
#: at 100k; GPT-2: its learned table)
LONG_POSITION = {name: min(cfg.get("max_position_embeddings", cfg.get("n_positions", 0)),
                           100_000) for name, cfg in PUBLISHED.items()}

_WIDTH = {"phi-4-mini-like": 96}
_HEADS = {"phi-4-mini-like": 6}


def _special_ids(cfg: dict[str, Any]) -> dict[int, int]:
    """Published special token ids >= VOCAB moved to the top of the small vocabulary (in order
    of first appearance, so distinct ids stay distinct and equal ids stay equal)."""
    mapping: dict[int, int] = {}
    for key in ("bos_token_id", "eos_token_id", "pad_token_id"):
        value = cfg.get(key)
        if isinstance(value, int) and value >= VOCAB and value not in mapping:
            mapping[value] = VOCAB - 1 - len(mapping)
    return mapping


def scaled(name: str) -> dict[str, Any]:
    """The published config of ``name`` scaled down in width and depth only (module docstring)."""
    cfg = copy.deepcopy(PUBLISHED[name])
    ids = _special_ids(cfg)
    for key in ("bos_token_id", "eos_token_id", "pad_token_id"):
        if isinstance(cfg.get(key), int):
            cfg[key] = ids.get(cfg[key], cfg[key])
    cfg["vocab_size"] = VOCAB
    width, heads = _WIDTH.get(name, 64), _HEADS.get(name, 4)
    if cfg["model_type"] == "gpt2":
        cfg.update(n_embd=width, n_layer=LAYERS, n_head=heads)
        return cfg
    old_width, old_heads = cfg["hidden_size"], cfg["num_attention_heads"]
    group = old_heads // cfg["num_key_value_heads"]
    cfg["num_key_value_heads"] = max(1, heads // group)
    if "head_dim" in cfg:
        # published head_dim in proportion to the published width per head
        per_head = cfg["head_dim"] * old_heads / old_width  # 1.0 except Mistral-Nemo (0.8)
        cfg["head_dim"] = 2 * round(per_head * width / heads / 2)
    ratio = cfg["intermediate_size"] / old_width
    cfg.update(hidden_size=width, num_hidden_layers=LAYERS, num_attention_heads=heads,
               intermediate_size=8 * round(ratio * width / 8))
    if "max_window_layers" in cfg:
        cfg["max_window_layers"] = LAYERS
    scaling = cfg.get("rope_scaling")
    if scaling and "long_factor" in scaling:
        rotary = int(width // heads * cfg.get("partial_rotary_factor", 1.0))
        step = len(scaling["long_factor"]) // (rotary // 2)
        for key in ("long_factor", "short_factor"):
            scaling[key] = scaling[key][::step][: rotary // 2]
    return cfg


def write(name: str, root: Path, seed: int = 0) -> dict[str, Path]:
    """Write config ``name`` under ``root``: ``fp32/`` and ``bf16/`` (the same re-drawn weights,
    the second rounded to bfloat16), each sharded by ``transformers``' ``save_pretrained``, with
    the scaled published ``config.json`` (legacy field spelling) written over the one
    transformers produced. Returns the two folders."""
    import torch
    import transformers

    cfg = scaled(name)
    config = transformers.AutoConfig.for_model(**{k: v for k, v in cfg.items()
                                                  if k != "architectures"})
    torch.manual_seed(seed)
    model = transformers.AutoModelForCausalLM.from_config(config).eval()
    redraw(model, seed)
    out = {}
    for tag, dtype in (("fp32", torch.float32), ("bf16", torch.bfloat16)):
        folder = root / tag
        model.to(dtype).save_pretrained(folder, max_shard_size="100KB")
        published = dict(cfg, torch_dtype=str(dtype).removeprefix("torch."))
        (folder / "config.json").write_text(json.dumps(published, indent=2) + "\n")
        out[tag] = folder
    return out


def redraw(model: Any, seed: int) -> None:
    """Re-draw every parameter so wrong mappings show and the next-token distribution is peaked
    (HF's init gives near-uniform logits): matrices N(0, 0.15^2), norm gains 1 + N(0, 0.1^2)
    (Gemma's stored w: N(0, 0.1^2)), biases N(0, 0.05^2); then the output projection (the tied
    embedding where tied) is scaled so that logits have standard deviation ~4."""
    import torch

    g = torch.Generator().manual_seed(seed)
    gemma = model.config.model_type == "gemma"
    with torch.no_grad():
        for name, p in model.named_parameters():
            noise = torch.randn(p.shape, generator=g)
            if p.dim() >= 2:
                p.copy_(0.15 * noise)
            elif ("norm" in name or "ln_" in name) and not gemma:
                p.copy_(1.0 + 0.1 * noise)
            else:
                p.copy_((0.1 if gemma else 0.05) * noise)
        ids = torch.randint(0, VOCAB, (2, 16), generator=g)
        logits = model(ids).logits
        model.get_output_embeddings().weight.mul_(4.0 / float(logits.std()))


if __name__ == "__main__":
    for config_name in PUBLISHED:
        write(config_name, Path(sys.argv[1]) / config_name)
