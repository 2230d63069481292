"""Read and write Hugging Face-layout checkpoints (config.json + safetensors) for CheckpointLM.

Layout: a directory with ``config.json`` and either ``model.safetensors`` or sharded files listed
in ``model.safetensors.index.json`` (``{"weight_map": {tensor_name: file}}``); a legacy
``pytorch_model.bin`` is read with ``torch.load(weights_only=True)``.

Weight mapping is explicit, name by name (no pattern guessing):

Llama (``LlamaForCausalLM``)                       -> CheckpointLM
    model.embed_tokens.weight                         embed_tokens.weight
    model.layers.i.input_layernorm.weight             layers.i.attn_norm.weight
    model.layers.i.self_attn.{q,k,v}_proj.{weight,bias}  layers.i.attn.{q,k,v}_proj.*
    model.layers.i.self_attn.o_proj.{weight,bias}     layers.i.attn.out_proj.*
    model.layers.i.post_attention_layernorm.weight    layers.i.ffn_norm.weight
    model.layers.i.mlp.{gate,up,down}_proj.*          layers.i.ffn.{gate,up,down}.*
    model.norm.weight                                 final_norm.weight
    lm_head.weight (absent when tied)                 lm_head.weight
GPT-2 (``GPT2LMHeadModel``; optional ``transformer.`` prefix). Conv1D stores W as (in, out), the
transpose of ``nn.Linear``'s (out, in); ``c_attn`` packs q, k, v along the output axis:
    wte.weight / wpe.weight                           embed_tokens / embed_positions .weight
    h.i.ln_1.*, h.i.ln_2.*                            layers.i.attn_norm.*, layers.i.ffn_norm.*
    h.i.attn.c_attn.weight (d, 3d) -> split + .T      layers.i.attn.{q,k,v}_proj.weight
    h.i.attn.c_proj.weight (d, d).T                   layers.i.attn.out_proj.weight
    h.i.mlp.c_fc.weight (d, 4d).T, c_proj (4d, d).T   layers.i.ffn.fc_in / fc_out .weight
    ln_f.*                                            final_norm.*
    (causal-mask buffers h.i.attn.bias / masked_bias of old checkpoints are ignored)

Meta layout (the original ``params.json`` + ``consolidated.*.pth`` of LLaMA): RoPE pairs channel
2i with 2i+1 ("interleaved") while this project (and HF) pairs i with i + d/2 ("half"). The q and
k projection rows are permuted head by head with ``interleaved_to_half_qk_weight``; since both q
and k get the same permutation, every logit q.k is unchanged (FACTS.md, "Layouts"). Loading
without the permutation silently gives different attention.

Errors: unknown architectures, unsupported options, missing or unexpected tensors and shape
mismatches raise ``ValueError`` naming the tensor(s), the expected and the received values.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from transformer_math.checkpoints.model import CheckpointLM, CheckpointLMConfig
from transformer_math.functional.rope import (
    half_to_interleaved_qk_weight,
    interleaved_to_half_qk_weight,
)
from transformer_math.functional.rope_scaling import compute_rope_frequencies
from transformer_math.nn.init import no_init_draws

SUPPORTED = {"llama": "LlamaForCausalLM", "gpt2": "GPT2LMHeadModel"}
_ARCH_TO_FAMILY = {v: k for k, v in SUPPORTED.items()}
_IGNORED_SUFFIXES = (".attn.bias", ".attn.masked_bias", "rotary_emb.inv_freq")
_ROPE_KEYS = {  # HF rope_parameters keys -> ours (keys we do not model are rejected)
    "default": (),
    "linear": ("factor",),
    "dynamic": ("factor", "original_max_position_embeddings"),
    "yarn": ("factor", "original_max_position_embeddings", "beta_fast", "beta_slow", "truncate",
             "attention_factor"),
    "llama3": ("factor", "low_freq_factor", "high_freq_factor",
               "original_max_position_embeddings"),
    "longrope": ("short_factor", "long_factor", "original_max_position_embeddings", "factor",
                 "attention_factor"),
}


# ------------------------------------------------------------------------------- config mapping


def _family_of(cfg: Mapping[str, Any], source: str) -> str:
    model_type = cfg.get("model_type")
    archs = cfg.get("architectures") or []
    if model_type in SUPPORTED:
        return str(model_type)
    for arch in archs:
        if arch in _ARCH_TO_FAMILY:
            return _ARCH_TO_FAMILY[arch]
    raise ValueError(
        f"unknown architecture in {source}: model_type={model_type!r}, architectures={archs!r}; "
        f"supported: " + ", ".join(f"{k} ({v})" for k, v in SUPPORTED.items()))


def _rope_from_hf(cfg: Mapping[str, Any]) -> tuple[float, dict[str, Any] | None, float]:
    """(rope_theta, rope_scaling in our parameter names or None, partial_rotary_factor)."""
    params = dict(cfg.get("rope_parameters") or {})
    legacy = cfg.get("rope_scaling")
    if legacy:
        params = {**dict(legacy), **params}
    theta = float(params.pop("rope_theta", cfg.get("rope_theta", 10000.0)))
    partial = float(params.pop("partial_rotary_factor", cfg.get("partial_rotary_factor", 1.0)))
    rope_type = params.pop("rope_type", params.pop("type", "default"))
    if rope_type not in _ROPE_KEYS:
        raise ValueError(f"unsupported rope_type {rope_type!r} in config.json; supported: "
                         f"{sorted(_ROPE_KEYS)}")
    # HF fills optional keys with None; drop those, then reject what we do not model.
    params = {k: v for k, v in params.items() if v is not None}
    n_max = cfg.get("max_position_embeddings")
    if rope_type == "dynamic":  # HF's dynamic NTK uses max_position_embeddings as L0
        params["original_max_position_embeddings"] = n_max
    elif rope_type in ("yarn", "llama3", "longrope"):
        params.setdefault("original_max_position_embeddings", n_max)
    if rope_type == "yarn" and "factor" not in params:
        params["factor"] = n_max / params["original_max_position_embeddings"]
    unknown = sorted(set(params) - set(_ROPE_KEYS[rope_type]))
    if unknown:
        raise ValueError(f"rope_type {rope_type!r}: unsupported parameters {unknown} in "
                         f"config.json (supported: {list(_ROPE_KEYS[rope_type])})")
    if rope_type == "default":
        return theta, None, partial
    return theta, {"rope_type": rope_type, **params}, partial


def config_from_hf(cfg: Mapping[str, Any], source: str = "config.json") -> CheckpointLMConfig:
    """Map an HF ``config.json`` dict to :class:`CheckpointLMConfig` (llama or gpt2)."""
    family = _family_of(cfg, source)
    tokens = {k: cfg.get(k) for k in ("bos_token_id", "eos_token_id", "pad_token_id")}
    try:
        if family == "llama":
            act = cfg.get("hidden_act", "silu")
            if act != "silu":
                raise ValueError(f"llama hidden_act must be 'silu', got {act!r}")
            if cfg.get("pretraining_tp", 1) != 1:
                raise ValueError(f"pretraining_tp must be 1, got {cfg.get('pretraining_tp')}")
            theta, scaling, partial = _rope_from_hf(cfg)
            return CheckpointLMConfig(
                family="llama", vocab_size=cfg["vocab_size"], hidden_size=cfg["hidden_size"],
                num_layers=cfg["num_hidden_layers"], num_heads=cfg["num_attention_heads"],
                num_kv_heads=cfg.get("num_key_value_heads"), head_dim=cfg.get("head_dim"),
                intermediate_size=cfg["intermediate_size"],
                max_position_embeddings=cfg.get("max_position_embeddings", 2048),
                norm_eps=float(cfg.get("rms_norm_eps", 1e-6)), rope_theta=theta,
                rope_scaling=scaling, partial_rotary_factor=partial,
                attention_bias=bool(cfg.get("attention_bias", False)),
                mlp_bias=bool(cfg.get("mlp_bias", False)), activation="silu",
                tie_word_embeddings=bool(cfg.get("tie_word_embeddings", False)), **tokens)
        act = cfg.get("activation_function", "gelu_new")
        acts = {"gelu_new": "gelu_tanh", "gelu_pytorch_tanh": "gelu_tanh", "gelu": "gelu"}
        if act not in acts:
            raise ValueError(f"gpt2 activation_function must be one of {sorted(acts)}, "
                             f"got {act!r}")
        for flag, ok in (("scale_attn_by_inverse_layer_idx", False),
                         ("reorder_and_upcast_attn", False), ("add_cross_attention", False),
                         ("scale_attn_weights", True)):
            if cfg.get(flag, ok) != ok:
                raise ValueError(f"gpt2 option {flag}={cfg.get(flag)!r} is not supported "
                                 f"(expected {ok})")
        d = cfg.get("n_embd", 768)
        return CheckpointLMConfig(
            family="gpt2", vocab_size=cfg.get("vocab_size", 50257), hidden_size=d,
            num_layers=cfg.get("n_layer", 12), num_heads=cfg.get("n_head", 12),
            intermediate_size=cfg.get("n_inner") or 4 * d,
            max_position_embeddings=cfg.get("n_positions", 1024),
            norm_eps=float(cfg.get("layer_norm_epsilon", 1e-5)), attention_bias=True,
            mlp_bias=True, activation=acts[act],
            tie_word_embeddings=bool(cfg.get("tie_word_embeddings", True)), **tokens)
    except KeyError as err:
        raise ValueError(f"{source}: {family} config lacks the required key {err.args[0]!r}"
                         ) from None


def config_to_hf(config: CheckpointLMConfig) -> dict[str, Any]:
    """The HF ``config.json`` dict for ``config`` (inverse of :func:`config_from_hf`)."""
    c = config
    tokens = {"bos_token_id": c.bos_token_id, "eos_token_id": c.eos_token_id,
              "pad_token_id": c.pad_token_id}
    if c.family == "llama":
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
            "intermediate_size": c.intermediate_size, "num_hidden_layers": c.num_layers,
            "num_attention_heads": c.num_heads, "num_key_value_heads": c.kv_heads,
            "head_dim": c.dim_per_head, "hidden_act": "silu",
            "max_position_embeddings": c.max_position_embeddings, "rms_norm_eps": c.norm_eps,
            "rope_parameters": rope, "attention_bias": c.attention_bias,
            "mlp_bias": c.mlp_bias, "tie_word_embeddings": c.tie_word_embeddings,
            "dtype": "float32", **tokens,
        }
    act = {"gelu_tanh": "gelu_new", "gelu": "gelu"}[c.activation]
    return {
        "architectures": ["GPT2LMHeadModel"], "model_type": "gpt2", "vocab_size": c.vocab_size,
        "n_embd": c.hidden_size, "n_layer": c.num_layers, "n_head": c.num_heads,
        "n_inner": c.intermediate_size, "n_positions": c.max_position_embeddings,
        "layer_norm_epsilon": c.norm_eps, "activation_function": act,
        "tie_word_embeddings": c.tie_word_embeddings, "dtype": "float32", **tokens,
    }


# ------------------------------------------------------------------------------ tensor reading


def read_config(path: str | Path) -> dict[str, Any]:
    """The parsed ``config.json`` of a checkpoint directory."""
    root = Path(path)
    if not root.is_dir():
        raise FileNotFoundError(f"checkpoint directory {str(root)!r} does not exist")
    cfg_path = root / "config.json"
    if not cfg_path.is_file():
        raise FileNotFoundError(f"{str(cfg_path)!r} not found: a Hugging Face checkpoint "
                                "directory needs config.json")
    try:
        data = json.loads(cfg_path.read_text())
    except json.JSONDecodeError as err:
        raise ValueError(f"{str(cfg_path)!r} is not valid JSON: {err}") from None
    if not isinstance(data, dict):
        raise ValueError(f"{str(cfg_path)!r} must hold a JSON object, got {type(data).__name__}")
    return data


def read_tensors(path: str | Path) -> dict[str, Tensor]:
    """Every tensor of a checkpoint directory (single file, sharded index, or legacy .bin)."""
    from safetensors.torch import load_file

    root = Path(path)
    single, index = root / "model.safetensors", root / "model.safetensors.index.json"
    if single.is_file():
        return load_file(str(single))
    if index.is_file():
        weight_map = json.loads(index.read_text()).get("weight_map")
        if not isinstance(weight_map, dict) or not weight_map:
            raise ValueError(f"{str(index)!r} has no 'weight_map' object")
        out: dict[str, Tensor] = {}
        for shard in sorted(set(weight_map.values())):
            shard_path = root / shard
            if not shard_path.is_file():
                raise FileNotFoundError(f"shard {shard!r} listed in {index.name} is missing")
            tensors = load_file(str(shard_path))
            wanted = {k for k, v in weight_map.items() if v == shard}
            absent = sorted(wanted - set(tensors))
            if absent:
                raise ValueError(f"shard {shard!r} lacks tensors the index assigns to it: "
                                 f"{absent[:5]}")
            out.update({k: tensors[k] for k in wanted})
        return out
    legacy = root / "pytorch_model.bin"
    if legacy.is_file():
        return dict(torch.load(str(legacy), map_location="cpu", weights_only=True))
    raise FileNotFoundError(f"no model.safetensors, model.safetensors.index.json or "
                            f"pytorch_model.bin in {str(root)!r}")


# ----------------------------------------------------------------------------- weight mapping

Transform = Callable[[Tensor], Tensor]


def _identity(t: Tensor) -> Tensor:
    return t


def _llama_map(c: CheckpointLMConfig) -> list[tuple[str, str]]:
    """(our name, HF name) pairs of a Llama checkpoint."""
    pairs = [("embed_tokens.weight", "model.embed_tokens.weight"),
             ("final_norm.weight", "model.norm.weight")]
    for i in range(c.num_layers):
        ours, hf = f"layers.{i}.", f"model.layers.{i}."
        pairs += [(ours + "attn_norm.weight", hf + "input_layernorm.weight"),
                  (ours + "ffn_norm.weight", hf + "post_attention_layernorm.weight")]
        for a, b in (("q_proj", "q_proj"), ("k_proj", "k_proj"), ("v_proj", "v_proj"),
                     ("out_proj", "o_proj")):
            pairs.append((ours + f"attn.{a}.weight", hf + f"self_attn.{b}.weight"))
            if c.attention_bias:
                pairs.append((ours + f"attn.{a}.bias", hf + f"self_attn.{b}.bias"))
        for a in ("gate", "up", "down"):
            pairs.append((ours + f"ffn.{a}.weight", hf + f"mlp.{a}_proj.weight"))
            if c.mlp_bias:
                pairs.append((ours + f"ffn.{a}.bias", hf + f"mlp.{a}_proj.bias"))
    if not c.tie_word_embeddings:
        pairs.append(("lm_head.weight", "lm_head.weight"))
    return pairs


def _check_shape(name: str, tensor: Tensor, expected: tuple[int, ...]) -> None:
    if tuple(tensor.shape) != expected:
        raise ValueError(f"tensor {name!r} has shape {tuple(tensor.shape)}, expected "
                         f"{expected} from config.json")


def _report_mismatch(missing: list[str], unexpected: list[str]) -> None:
    msgs = []
    if missing:
        msgs.append(f"{len(missing)} missing tensor(s): {missing[:6]}")
    if unexpected:
        msgs.append(f"{len(unexpected)} unexpected tensor(s): {unexpected[:6]}")
    if msgs:
        raise ValueError("checkpoint does not match its config: " + "; ".join(msgs))


def _convert_llama(sd: Mapping[str, Tensor], model: CheckpointLM) -> dict[str, Tensor]:
    pairs = _llama_map(model.config)
    ignored = {k for k in sd if k.endswith(_IGNORED_SUFFIXES)}
    # A tied checkpoint may still carry lm_head.weight (a copy of the embedding): accept it.
    if model.config.tie_word_embeddings and "lm_head.weight" in sd:
        ignored.add("lm_head.weight")
    missing = [hf for _, hf in pairs if hf not in sd]
    unexpected = sorted(set(sd) - {hf for _, hf in pairs} - ignored)
    _report_mismatch(missing, unexpected)
    return {ours: sd[hf] for ours, hf in pairs}


def _convert_gpt2(sd: Mapping[str, Tensor], model: CheckpointLM) -> dict[str, Tensor]:
    c = model.config
    prefix = "transformer." if any(k.startswith("transformer.") for k in sd) else ""
    d = c.hidden_size
    used: set[str] = set()
    missing: list[str] = []

    def get(name: str) -> Tensor | None:
        full = prefix + name
        if full not in sd:
            missing.append(full)
            return None
        used.add(full)
        return sd[full]

    out: dict[str, Tensor] = {}
    plain = {"embed_tokens.weight": "wte.weight", "embed_positions.weight": "wpe.weight",
             "final_norm.weight": "ln_f.weight", "final_norm.bias": "ln_f.bias"}
    for i in range(c.num_layers):
        for ours, hf in (("attn_norm", "ln_1"), ("ffn_norm", "ln_2")):
            for p in ("weight", "bias"):
                plain[f"layers.{i}.{ours}.{p}"] = f"h.{i}.{hf}.{p}"
        plain[f"layers.{i}.attn.out_proj.bias"] = f"h.{i}.attn.c_proj.bias"
        plain[f"layers.{i}.ffn.fc_in.bias"] = f"h.{i}.mlp.c_fc.bias"
        plain[f"layers.{i}.ffn.fc_out.bias"] = f"h.{i}.mlp.c_proj.bias"
    transposed = {}
    for i in range(c.num_layers):
        transposed[f"layers.{i}.attn.out_proj.weight"] = f"h.{i}.attn.c_proj.weight"
        transposed[f"layers.{i}.ffn.fc_in.weight"] = f"h.{i}.mlp.c_fc.weight"
        transposed[f"layers.{i}.ffn.fc_out.weight"] = f"h.{i}.mlp.c_proj.weight"
    for ours, hf in plain.items():
        t = get(hf)
        if t is not None:
            out[ours] = t
    for ours, hf in transposed.items():
        t = get(hf)
        if t is not None:
            if t.dim() != 2:
                raise ValueError(f"tensor {prefix + hf!r} must be 2-D (Conv1D, (in, out)), "
                                 f"got shape {tuple(t.shape)}")
            out[ours] = t.t()
    for i in range(c.num_layers):
        w, b = get(f"h.{i}.attn.c_attn.weight"), get(f"h.{i}.attn.c_attn.bias")
        if w is not None:
            _check_shape(prefix + f"h.{i}.attn.c_attn.weight", w, (d, 3 * d))
            for name, part in zip("qkv", w.split(d, dim=1), strict=True):
                out[f"layers.{i}.attn.{name}_proj.weight"] = part.t()
        if b is not None:
            _check_shape(prefix + f"h.{i}.attn.c_attn.bias", b, (3 * d,))
            for name, part in zip("qkv", b.split(d), strict=True):
                out[f"layers.{i}.attn.{name}_proj.bias"] = part
    head_keys = {"lm_head.weight"}
    if not c.tie_word_embeddings:
        if "lm_head.weight" in sd:
            out["lm_head.weight"] = sd["lm_head.weight"]
        else:
            missing.append("lm_head.weight")
    ignored = {k for k in sd if k.endswith(_IGNORED_SUFFIXES)} | head_keys
    unexpected = sorted(set(sd) - used - ignored)
    _report_mismatch(missing, unexpected)
    return out


def load_converted(model: CheckpointLM, tensors: Mapping[str, Tensor],
                   dtype: torch.dtype) -> None:
    """Copy converted tensors into ``model`` after checking every shape."""
    own = model.state_dict()
    tied = {"lm_head.weight"} if model.config.tie_word_embeddings else set()
    expected = set(own) - tied
    missing = sorted(expected - set(tensors))
    unexpected = sorted(set(tensors) - expected)
    _report_mismatch(missing, unexpected)
    with torch.no_grad():
        for name, t in tensors.items():
            _check_shape(name, t, tuple(own[name].shape))
            if not t.is_floating_point():
                raise TypeError(f"tensor {name!r} must be floating point, got {t.dtype}")
            own[name].copy_(t.to(dtype))


def from_pretrained(path: str | Path, *, dtype: torch.dtype = torch.float32) -> CheckpointLM:
    """Load an HF-layout Llama or GPT-2 checkpoint directory into a :class:`CheckpointLM`."""
    cfg = read_config(path)
    config = config_from_hf(cfg, str(Path(path) / "config.json"))
    with no_init_draws():  # every tensor is overwritten by the checkpoint's
        model = CheckpointLM(config).to(dtype)
    tensors = read_tensors(path)
    converted = (_convert_llama(tensors, model) if config.family == "llama"
                 else _convert_gpt2(tensors, model))
    load_converted(model, converted, dtype)
    return model.eval()


def export_state_dict(model: CheckpointLM) -> dict[str, Tensor]:
    """The model's tensors under HF names (GPT-2: Conv1D (in, out), q/k/v packed)."""
    c, own = model.config, model.state_dict()
    out: dict[str, Tensor] = {}
    if c.family == "llama":
        for ours, hf in _llama_map(c):
            out[hf] = own[ours]
    else:
        out["transformer.wte.weight"] = own["embed_tokens.weight"]
        out["transformer.wpe.weight"] = own["embed_positions.weight"]
        out["transformer.ln_f.weight"] = own["final_norm.weight"]
        out["transformer.ln_f.bias"] = own["final_norm.bias"]
        for i in range(c.num_layers):
            p, h = f"layers.{i}.", f"transformer.h.{i}."
            for ours, hf in (("attn_norm", "ln_1"), ("ffn_norm", "ln_2")):
                out[h + f"{hf}.weight"] = own[p + f"{ours}.weight"]
                out[h + f"{hf}.bias"] = own[p + f"{ours}.bias"]
            out[h + "attn.c_attn.weight"] = torch.cat(
                [own[p + f"attn.{n}_proj.weight"] for n in "qkv"], dim=0).t()
            out[h + "attn.c_attn.bias"] = torch.cat([own[p + f"attn.{n}_proj.bias"] for n in "qkv"])
            out[h + "attn.c_proj.weight"] = own[p + "attn.out_proj.weight"].t()
            out[h + "attn.c_proj.bias"] = own[p + "attn.out_proj.bias"]
            out[h + "mlp.c_fc.weight"] = own[p + "ffn.fc_in.weight"].t()
            out[h + "mlp.c_fc.bias"] = own[p + "ffn.fc_in.bias"]
            out[h + "mlp.c_proj.weight"] = own[p + "ffn.fc_out.weight"].t()
            out[h + "mlp.c_proj.bias"] = own[p + "ffn.fc_out.bias"]
        if not c.tie_word_embeddings:
            out["lm_head.weight"] = own["lm_head.weight"]
    return {k: v.detach().contiguous().clone() for k, v in out.items()}


def save_pretrained(model: CheckpointLM, path: str | Path, *,
                    max_shard_bytes: int | None = None) -> Path:
    """Write ``config.json`` and ``model.safetensors`` (or shards + index past
    ``max_shard_bytes``) in the HF layout; returns the directory."""
    from safetensors.torch import save_file

    if not isinstance(model, CheckpointLM):
        raise TypeError(f"model must be a CheckpointLM, got {type(model).__name__}")
    if max_shard_bytes is not None and max_shard_bytes <= 0:
        raise ValueError(f"max_shard_bytes must be positive or None, got {max_shard_bytes}")
    root = Path(path)
    root.mkdir(parents=True, exist_ok=True)
    tensors = export_state_dict(model)
    cfg = config_to_hf(model.config)
    cfg["dtype"] = str(next(model.parameters()).dtype).removeprefix("torch.")
    (root / "config.json").write_text(json.dumps(cfg, indent=2, sort_keys=True) + "\n")
    meta = {"format": "pt"}
    total = sum(t.numel() * t.element_size() for t in tensors.values())
    if max_shard_bytes is None or total <= max_shard_bytes:
        save_file(tensors, str(root / "model.safetensors"), metadata=meta)
        return root
    shards: list[dict[str, Tensor]] = [{}]
    size = 0
    for name in sorted(tensors):
        nbytes = tensors[name].numel() * tensors[name].element_size()
        if shards[-1] and size + nbytes > max_shard_bytes:
            shards.append({})
            size = 0
        shards[-1][name] = tensors[name]
        size += nbytes
    weight_map = {}
    for k, shard in enumerate(shards, start=1):
        fname = f"model-{k:05d}-of-{len(shards):05d}.safetensors"
        save_file(shard, str(root / fname), metadata=meta)
        weight_map.update({name: fname for name in shard})
    index = {"metadata": {"total_size": total}, "weight_map": weight_map}
    (root / "model.safetensors.index.json").write_text(json.dumps(index, indent=2) + "\n")
    return root


# ------------------------------------------------------------------------------ Meta layout


def _meta_config(params: Mapping[str, Any], vocab_size: int,
                 intermediate_size: int) -> CheckpointLMConfig:
    try:
        dim, n_heads = params["dim"], params["n_heads"]
        return CheckpointLMConfig(
            family="llama", vocab_size=vocab_size, hidden_size=dim, num_layers=params["n_layers"],
            num_heads=n_heads, num_kv_heads=params.get("n_kv_heads"),
            intermediate_size=intermediate_size,
            max_position_embeddings=params.get("max_seq_len", 2048),
            norm_eps=float(params.get("norm_eps", 1e-5)),
            rope_theta=float(params.get("rope_theta", 10000.0)), activation="silu",
            tie_word_embeddings=False)
    except KeyError as err:
        raise ValueError(f"params.json lacks the required key {err.args[0]!r}") from None


def convert_meta_state_dict(sd: Mapping[str, Tensor], params: Mapping[str, Any],
                            *, permute_qk: bool = True) -> tuple[CheckpointLMConfig,
                                                                 dict[str, Tensor]]:
    """Meta LLaMA names and interleaved q/k rows -> (config, CheckpointLM state dict).

    ``permute_qk=False`` skips the layout permutation (for demonstrating that it is needed).
    """
    for key in ("tok_embeddings.weight", "layers.0.feed_forward.w1.weight", "output.weight"):
        if key not in sd:
            raise ValueError(f"Meta checkpoint lacks {key!r}")
    vocab, _ = sd["tok_embeddings.weight"].shape
    hidden = sd["layers.0.feed_forward.w1.weight"].shape[0]
    config = _meta_config(params, int(vocab), int(hidden))
    hq, hkv, hd = config.num_heads, config.kv_heads, config.dim_per_head
    pairs: list[tuple[str, str, Transform]] = [
        ("embed_tokens.weight", "tok_embeddings.weight", _identity),
        ("final_norm.weight", "norm.weight", _identity),
        ("lm_head.weight", "output.weight", _identity),
    ]

    def perm(heads: int) -> Transform:
        if not permute_qk:
            return _identity
        return lambda w: interleaved_to_half_qk_weight(w, heads, hd)

    for i in range(config.num_layers):
        o, m = f"layers.{i}.", f"layers.{i}."
        pairs += [
            (o + "attn_norm.weight", m + "attention_norm.weight", _identity),
            (o + "ffn_norm.weight", m + "ffn_norm.weight", _identity),
            (o + "attn.q_proj.weight", m + "attention.wq.weight", perm(hq)),
            (o + "attn.k_proj.weight", m + "attention.wk.weight", perm(hkv)),
            (o + "attn.v_proj.weight", m + "attention.wv.weight", _identity),
            (o + "attn.out_proj.weight", m + "attention.wo.weight", _identity),
            (o + "ffn.gate.weight", m + "feed_forward.w1.weight", _identity),
            (o + "ffn.down.weight", m + "feed_forward.w2.weight", _identity),
            (o + "ffn.up.weight", m + "feed_forward.w3.weight", _identity),
        ]
    missing = [meta for _, meta, _ in pairs if meta not in sd]
    unexpected = sorted(set(sd) - {meta for _, meta, _ in pairs} - {"rope.freqs"})
    _report_mismatch(missing, unexpected)
    return config, {ours: fn(sd[meta]) for ours, meta, fn in pairs}


def meta_state_dict(model: CheckpointLM) -> dict[str, Tensor]:
    """Export a Llama-family model under Meta names with interleaved q/k rows (for tests and
    for writing Meta-layout files)."""
    c, own = model.config, model.state_dict()
    if c.family != "llama" or c.tie_word_embeddings or c.attention_bias or c.mlp_bias:
        raise ValueError("Meta layout needs an untied Llama model without biases")
    hd = c.dim_per_head
    out = {"tok_embeddings.weight": own["embed_tokens.weight"],
           "norm.weight": own["final_norm.weight"], "output.weight": own["lm_head.weight"]}
    for i in range(c.num_layers):
        o = f"layers.{i}."
        out.update({
            o + "attention_norm.weight": own[o + "attn_norm.weight"],
            o + "ffn_norm.weight": own[o + "ffn_norm.weight"],
            o + "attention.wq.weight": half_to_interleaved_qk_weight(
                own[o + "attn.q_proj.weight"], c.num_heads, hd),
            o + "attention.wk.weight": half_to_interleaved_qk_weight(
                own[o + "attn.k_proj.weight"], c.kv_heads, hd),
            o + "attention.wv.weight": own[o + "attn.v_proj.weight"],
            o + "attention.wo.weight": own[o + "attn.out_proj.weight"],
            o + "feed_forward.w1.weight": own[o + "ffn.gate.weight"],
            o + "feed_forward.w2.weight": own[o + "ffn.down.weight"],
            o + "feed_forward.w3.weight": own[o + "ffn.up.weight"],
        })
    return {k: v.detach().clone() for k, v in out.items()}


def from_meta(path: str | Path, *, dtype: torch.dtype = torch.float32,
              permute_qk: bool = True) -> CheckpointLM:
    """Load a Meta-layout directory (``params.json`` + ``consolidated.00.pth`` or
    ``consolidated.safetensors``, single shard) into a half-layout :class:`CheckpointLM`."""
    root = Path(path)
    params_path = root / "params.json"
    if not params_path.is_file():
        raise FileNotFoundError(f"{str(params_path)!r} not found (Meta layout needs params.json)")
    params = json.loads(params_path.read_text())
    shards = sorted(root.glob("consolidated.*.pth"))
    if (root / "consolidated.safetensors").is_file():
        from safetensors.torch import load_file
        sd = load_file(str(root / "consolidated.safetensors"))
    elif len(shards) == 1:
        sd = torch.load(str(shards[0]), map_location="cpu", weights_only=True)
    else:
        raise ValueError(f"expected exactly one consolidated.*.pth (model-parallel shards are "
                         f"not merged), found {len(shards)} in {str(root)!r}")
    config, tensors = convert_meta_state_dict(sd, params, permute_qk=permute_qk)
    with no_init_draws():  # every tensor is overwritten by the checkpoint's
        model = CheckpointLM(config).to(dtype)
    load_converted(model, tensors, dtype)
    return model.eval()


def rope_wavelengths(config: CheckpointLMConfig) -> Tensor | None:
    """Wavelengths 2 pi / theta_i (float64, in positions) of the RoPE pairs, None for GPT-2.

    Length-dependent scaling types are evaluated at ``max_position_embeddings``.
    """
    if config.family != "llama":
        return None
    scaling = dict(config.rope_scaling or {"rope_type": "default"})
    rope_type = scaling.pop("rope_type")
    rotary_dim = int(config.dim_per_head * config.partial_rotary_factor)
    inv, _ = compute_rope_frequencies(rope_type, rotary_dim, config.rope_theta, scaling,
                                      config.max_position_embeddings)
    return 2 * math.pi / inv.to(torch.float64)


def read_tensor_shapes(path: str | Path) -> dict[str, tuple[int, ...]]:
    """Tensor name -> shape from the safetensors headers only (no weights are read)."""
    from safetensors import safe_open

    root = Path(path)
    single, index = root / "model.safetensors", root / "model.safetensors.index.json"
    if single.is_file():
        files = [single]
    elif index.is_file():
        weight_map = json.loads(index.read_text()).get("weight_map") or {}
        files = [root / f for f in sorted(set(weight_map.values()))]
    else:
        return {k: tuple(v.shape) for k, v in read_tensors(root).items()}
    shapes: dict[str, tuple[int, ...]] = {}
    for f in files:
        if not f.is_file():
            raise FileNotFoundError(f"shard {f.name!r} listed in {index.name} is missing")
        with safe_open(str(f), framework="pt") as handle:
            for name in handle.keys():  # noqa: SIM118 (safe_open is not a dict)
                shapes[name] = tuple(handle.get_slice(name).get_shape())
    return shapes


_PARTS = (  # (substring of an HF tensor name, part); first match wins
    ("embed_tokens", "embedding"), ("wte.", "embedding"), ("wpe.", "positions"),
    ("self_attn.", "attention"), (".attn.", "attention"), ("mlp.", "feedforward"),
    ("norm", "norms"), ("ln_", "norms"), ("lm_head", "lm_head"),
)


def parameter_breakdown_from_shapes(shapes: Mapping[str, tuple[int, ...]]) -> dict[str, int]:
    """Parameters by part counted from checkpoint tensor shapes (buffers excluded); same keys
    as ``CheckpointLM.parameter_breakdown``."""
    parts = dict.fromkeys(("embedding", "positions", "attention", "feedforward", "norms",
                           "lm_head"), 0)
    for name, shape in shapes.items():
        if name.endswith(_IGNORED_SUFFIXES):
            continue
        part = next((p for key, p in _PARTS if key in name), None)
        if part is None:
            raise ValueError(f"cannot classify tensor {name!r}")
        parts[part] += math.prod(shape)
    parts["total"] = sum(parts.values())
    parts["non_embedding"] = (parts["total"] - parts["embedding"] - parts["positions"]
                              - parts["lm_head"])
    return parts
