"""Read and write checkpoint directories as :class:`~transformer_math.nn.transformer.Transformer`.

Hugging Face layout: ``config.json`` and either ``model.safetensors`` or shards listed in
``model.safetensors.index.json`` (``{"weight_map": {tensor_name: file}}``); a legacy
``pytorch_model.bin`` is read with ``torch.load(weights_only=True)``. Meta layout:
``params.json`` + ``consolidated.00.pth`` or ``consolidated.safetensors``.

What the tensors mean is the family adapter's business (``checkpoints/adapters``: one name table
per family, read in both directions); this module does the files. Loading is

1. config file -> ``TransformerConfig`` preset + :class:`CheckpointInfo` (sizes checked);
2. the model built on the ``meta`` device (no memory) and the adapter's ``save`` transforms
   applied to it give the name and shape of every tensor the checkpoint must hold; they are
   compared with the stored names and shapes (safetensors headers: no weight is read);
3. only then is the model allocated, the tensors read, converted (``load``) and copied in.

Errors: unknown architectures, unsupported options, missing or unexpected tensors and shape
mismatches raise ``ValueError`` naming the tensor(s), the expected and the received values.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from transformer_math.checkpoints.adapters import ADAPTERS, Adapter, Rule
from transformer_math.checkpoints.info import CheckpointInfo
from transformer_math.nn.config import TransformerConfig
from transformer_math.nn.init import no_init_draws
from transformer_math.nn.transformer import Transformer

Shapes = Mapping[str, tuple[int, ...]]


# ------------------------------------------------------------------------------- config mapping


def hf_family(cfg: Mapping[str, Any], source: str = "config.json") -> str:
    """The ``ADAPTERS`` name of an HF config (by ``model_type``, then ``architectures``)."""
    hf = ADAPTERS.where(layout="hf")
    model_type, archs = cfg.get("model_type"), cfg.get("architectures") or []
    for name in hf:
        if ADAPTERS.metadata(name)["model_type"] == model_type:
            return name
    for name in hf:
        if ADAPTERS.metadata(name)["architecture"] in archs:
            return name
    raise ValueError(
        f"unknown architecture in {source}: model_type={model_type!r}, architectures={archs!r}; "
        "supported: " + ", ".join(f"{n} ({ADAPTERS.metadata(n)['architecture']})" for n in hf))


def config_from_hf(cfg: Mapping[str, Any], source: str = "config.json",
                   shapes: Shapes | None = None) -> tuple[TransformerConfig, CheckpointInfo]:
    """An HF ``config.json`` dict -> (TransformerConfig preset, CheckpointInfo)."""
    family = hf_family(cfg, source)
    try:
        return ADAPTERS.get(family).read_config(cfg, shapes or {})
    except KeyError as err:
        raise ValueError(f"{source}: {family} config lacks the required key {err.args[0]!r}"
                         ) from None


_NOT_ARCHITECTURE = {"dropout": 0.0, "init": "torch", "attention_backend": "sdpa",
                     "embedding_init_std": None, "position_init_std": 0.02}


def _architecture(c: TransformerConfig) -> TransformerConfig:
    """``c`` with every size explicit and the training-only fields at their defaults."""
    return dataclasses.replace(
        c, num_kv_heads=c.kv_heads, head_dim=c.dim_per_head, intermediate_size=c.ffn_size,
        norm_eps=c.eps, final_norm=c.has_final_norm, output_size=c.head_size,
        rope_scaling=dict(c.rope_scaling) if c.rope_scaling else None, **_NOT_ARCHITECTURE)


def config_to_file(config: TransformerConfig, info: CheckpointInfo) -> dict[str, Any]:
    """The config-file dict of ``info.family`` for ``config``; raises unless reading it back
    gives the same architecture (so a config the family cannot express is never saved)."""
    adapter = ADAPTERS.get(info.family)
    cfg = adapter.write_config(config, info)
    back, _ = adapter.read_config(cfg, {"tok_embeddings.weight": (config.vocab_size or 0,),
                                        "layers.0.feed_forward.w1.weight": (config.ffn_size,)})
    want, got = _architecture(config), _architecture(back)
    if want != got:
        diff = [f"{f.name}={getattr(want, f.name)!r} (saved as {getattr(got, f.name)!r})"
                for f in dataclasses.fields(want) if getattr(want, f.name) != getattr(got, f.name)]
        raise ValueError(f"the model is not a {info.family} preset: " + ", ".join(diff))
    return cfg


def infer_info(model: Transformer) -> CheckpointInfo:
    """``model.checkpoint_info`` if set, else the first HF family whose preset ``model.config``
    is (token ids unset)."""
    info = getattr(model, "checkpoint_info", None)
    if isinstance(info, CheckpointInfo):
        return info
    reasons = []
    for name in ADAPTERS.where(layout="hf"):
        try:
            config_to_file(model.config, CheckpointInfo(family=name))
            return CheckpointInfo(family=name)
        except ValueError as err:
            reasons.append(str(err))
    raise ValueError("no checkpoint family fits this model: " + "; ".join(reasons))


# ------------------------------------------------------------------------------ file reading


def _read_json(path: Path, what: str) -> dict[str, Any]:
    if not path.is_file():
        raise FileNotFoundError(f"{str(path)!r} not found: {what}")
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError as err:
        raise ValueError(f"{str(path)!r} is not valid JSON: {err}") from None
    if not isinstance(data, dict):
        raise ValueError(f"{str(path)!r} must hold a JSON object, got {type(data).__name__}")
    return data


def read_config(path: str | Path) -> dict[str, Any]:
    """The parsed ``config.json`` of a checkpoint directory."""
    root = Path(path)
    if not root.is_dir():
        raise FileNotFoundError(f"checkpoint directory {str(root)!r} does not exist")
    return _read_json(root / "config.json", "a Hugging Face checkpoint directory needs "
                                            "config.json")


def _shards(root: Path) -> list[Path] | None:
    """The safetensors files of an HF directory (None: no safetensors)."""
    single, index = root / "model.safetensors", root / "model.safetensors.index.json"
    if single.is_file():
        return [single]
    if not index.is_file():
        return None
    weight_map = json.loads(index.read_text()).get("weight_map")
    if not isinstance(weight_map, dict) or not weight_map:
        raise ValueError(f"{str(index)!r} has no 'weight_map' object")
    files = [root / f for f in sorted(set(weight_map.values()))]
    for f in files:
        if not f.is_file():
            raise FileNotFoundError(f"shard {f.name!r} listed in {index.name} is missing")
    return files


def _legacy(root: Path) -> Path:
    legacy = root / "pytorch_model.bin"
    if not legacy.is_file():
        raise FileNotFoundError(f"no model.safetensors, model.safetensors.index.json or "
                                f"pytorch_model.bin in {str(root)!r}")
    return legacy


def _torch_load(path: Path) -> dict[str, Tensor]:
    """``torch.load`` of tensors only (``weights_only``), memory-mapped when the file allows."""
    try:
        return dict(torch.load(str(path), map_location="cpu", weights_only=True, mmap=True))
    except RuntimeError:  # the legacy (non-zip) format cannot be memory-mapped
        return dict(torch.load(str(path), map_location="cpu", weights_only=True))


def _safetensors_shapes(files: list[Path]) -> dict[str, tuple[int, ...]]:
    from safetensors import safe_open

    shapes: dict[str, tuple[int, ...]] = {}
    for f in files:
        with safe_open(str(f), framework="pt") as handle:
            for name in handle.keys():  # noqa: SIM118 (safe_open is not a dict)
                shapes[name] = tuple(handle.get_slice(name).get_shape())
    return shapes


def read_tensor_shapes(path: str | Path) -> dict[str, tuple[int, ...]]:
    """Tensor name -> shape of an HF directory from the safetensors headers (no weight read)."""
    root = Path(path)
    files = _shards(root)
    if files is None:
        return {k: tuple(v.shape) for k, v in _torch_load(_legacy(root)).items()}
    return _safetensors_shapes(files)


def read_tensors(path: str | Path) -> dict[str, Tensor]:
    """Every tensor of an HF directory (single file, sharded index, or legacy .bin)."""
    from safetensors.torch import load_file

    root = Path(path)
    files = _shards(root)
    if files is None:
        return _torch_load(_legacy(root))
    if len(files) == 1 and files[0].name == "model.safetensors":
        return load_file(str(files[0]))
    index = root / "model.safetensors.index.json"
    weight_map = json.loads(index.read_text())["weight_map"]
    out: dict[str, Tensor] = {}
    for f in files:
        tensors = load_file(str(f))
        wanted = {k for k, v in weight_map.items() if v == f.name}
        absent = sorted(wanted - set(tensors))
        if absent:
            raise ValueError(f"shard {f.name!r} lacks tensors the index assigns to it: "
                             f"{absent[:5]}")
        out.update({k: tensors[k] for k in wanted})
    return out


# ------------------------------------------------------------------ validation and conversion


def _report_mismatch(missing: list[str], unexpected: list[str]) -> None:
    msgs = []
    if missing:
        msgs.append(f"{len(missing)} missing tensor(s): {missing[:6]}")
    if unexpected:
        msgs.append(f"{len(unexpected)} unexpected tensor(s): {unexpected[:6]}")
    if msgs:
        raise ValueError("checkpoint does not match its config: " + "; ".join(msgs))


def skeleton(config: TransformerConfig) -> Transformer:
    """The model on the ``meta`` device: every name and shape, no memory, no RNG draw."""
    with torch.device("meta"), no_init_draws():
        return Transformer(config)


def export(model: Transformer, rules: list[Rule]) -> dict[str, Tensor]:
    """``model``'s tensors under the checkpoint names of ``rules`` (the ``save`` direction)."""
    own = model.state_dict()
    return {r.theirs: r.save(tuple(own[o] for o in r.ours)) for r in rules}


def validate(adapter: Adapter, config: TransformerConfig, rules: list[Rule], shapes: Shapes,
             source: str) -> None:
    """Every tensor the config needs is stored with its shape, and nothing else is stored."""
    expected = {k: tuple(v.shape) for k, v in export(skeleton(config), rules).items()}
    ignored = {k for k in shapes if k.endswith(adapter.ignored_suffixes)}
    if config.tie_embeddings and adapter.tied_head is not None:
        ignored.add(adapter.tied_head)  # a tied checkpoint may still store a copy of E
    _report_mismatch(sorted(set(expected) - set(shapes)),
                     sorted(set(shapes) - set(expected) - ignored))
    for name, shape in expected.items():
        if tuple(shapes[name]) != shape:
            raise ValueError(f"tensor {name!r} has shape {tuple(shapes[name])}, expected "
                             f"{shape} from {source}")


def _canonical(adapter: Adapter, named: Mapping[str, Any]) -> dict[str, Any]:
    return {adapter.canonical(k): v for k, v in named.items()}


def _build(adapter: Adapter, config: TransformerConfig, info: CheckpointInfo, rules: list[Rule],
           tensors: Mapping[str, Tensor], dtype: torch.dtype) -> Transformer:
    """Allocate the model (no init draws: everything is overwritten) and copy ``tensors``."""
    with no_init_draws():
        model = Transformer(config).to(dtype)
    own = model.state_dict()
    with torch.no_grad():
        for rule in rules:
            stored = tensors[rule.theirs]
            if not stored.is_floating_point():
                raise TypeError(f"tensor {rule.theirs!r} must be floating point, "
                                f"got {stored.dtype}")
            for name, t in zip(rule.ours, rule.load(stored), strict=True):
                own[name].copy_(t.to(dtype))
    model.checkpoint_info = info  # type: ignore[assignment]
    return model.eval()


def _load(adapter: Adapter, config: TransformerConfig, info: CheckpointInfo, shapes: Shapes,
          read: Any, source: str, dtype: torch.dtype, **options: Any) -> Transformer:
    rules = adapter.rules(config, **options)
    validate(adapter, config, rules, _canonical(adapter, shapes), source)
    return _build(adapter, config, info, rules, _canonical(adapter, read()), dtype)


# ----------------------------------------------------------------------------- public entry points


def from_pretrained(path: str | Path, *, dtype: torch.dtype = torch.float32) -> Transformer:
    """Load an HF-layout checkpoint directory of any ``ADAPTERS`` family with layout "hf".

    Returns a :class:`Transformer` in eval mode with ``model.checkpoint_info`` set.
    """
    source = str(Path(path) / "config.json")
    config, info = config_from_hf(read_config(path), source)  # before any tensor file
    shapes = read_tensor_shapes(path)
    return _load(ADAPTERS.get(info.family), config, info, shapes, lambda: read_tensors(path),
                 source, dtype)


def parameter_breakdown(path: str | Path) -> tuple[TransformerConfig, CheckpointInfo,
                                                   dict[str, int]]:
    """(config, info, ``Transformer.parameter_breakdown()``) of an HF directory, from its
    headers: the stored names and shapes are validated, no weight is read or allocated."""
    source = str(Path(path) / "config.json")
    config, info = config_from_hf(read_config(path), source)  # before any tensor file
    shapes = read_tensor_shapes(path)
    adapter = ADAPTERS.get(info.family)
    validate(adapter, config, adapter.rules(config), _canonical(adapter, shapes), source)
    return config, info, skeleton(config).parameter_breakdown()


def export_state_dict(model: Transformer, info: CheckpointInfo | None = None
                      ) -> dict[str, Tensor]:
    """The model's tensors under its family's names (GPT-2: Conv1D (in, out), q|k|v packed)."""
    info = info or infer_info(model)
    rules = ADAPTERS.get(info.family).rules(model.config)
    return {k: v.detach().contiguous().clone() for k, v in export(model, rules).items()}


def save_pretrained(model: Transformer, path: str | Path, *, max_shard_bytes: int | None = None,
                    info: CheckpointInfo | None = None) -> Path:
    """Write ``config.json`` and ``model.safetensors`` (or shards + index past
    ``max_shard_bytes``) in the HF layout of ``info.family`` (default ``model.checkpoint_info``,
    else the family whose preset the config is); returns the directory."""
    from safetensors.torch import save_file

    if not isinstance(model, Transformer):
        raise TypeError(f"model must be a Transformer, got {type(model).__name__}")
    if max_shard_bytes is not None and max_shard_bytes <= 0:
        raise ValueError(f"max_shard_bytes must be positive or None, got {max_shard_bytes}")
    info = info or infer_info(model)
    if ADAPTERS.metadata(info.family)["layout"] != "hf":
        raise ValueError(f"family {info.family!r} is not an HF layout (use save_meta)")
    cfg = config_to_file(model.config, info)
    cfg["dtype"] = str(next(model.parameters()).dtype).removeprefix("torch.")
    tensors = export_state_dict(model, info)
    root = Path(path)
    root.mkdir(parents=True, exist_ok=True)
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


def _meta_file(root: Path) -> Path:
    if (root / "consolidated.safetensors").is_file():
        return root / "consolidated.safetensors"
    shards = sorted(root.glob("consolidated.*.pth"))
    if len(shards) != 1:
        raise ValueError(f"expected exactly one consolidated.*.pth (model-parallel shards are "
                         f"not merged), found {len(shards)} in {str(root)!r}")
    return shards[0]


def from_meta(path: str | Path, *, dtype: torch.dtype = torch.float32,
              permute_qk: bool = True) -> Transformer:
    """Load a Meta-layout directory (``params.json`` + ``consolidated.00.pth`` or
    ``consolidated.safetensors``, single shard) into a half-layout Llama :class:`Transformer`.

    ``permute_qk=False`` skips the q/k layout permutation (to demonstrate that it is needed).
    """
    root = Path(path)
    source = str(root / "params.json")
    params = _read_json(root / "params.json", "Meta layout needs params.json")
    file = _meta_file(root)
    if file.suffix == ".safetensors":
        from safetensors.torch import load_file

        shapes = _safetensors_shapes([file])
        read: Any = lambda: load_file(str(file))  # noqa: E731
    else:
        tensors = _torch_load(file)  # memory-mapped: shapes without reading the weights
        shapes = {k: tuple(v.shape) for k, v in tensors.items()}
        read = lambda: tensors  # noqa: E731
    adapter = ADAPTERS.get("meta")
    config, info = adapter.read_config(params, shapes)
    return _load(adapter, config, info, shapes, read, source, dtype, permute_qk=permute_qk)


def meta_state_dict(model: Transformer) -> dict[str, Tensor]:
    """A Llama-preset model under Meta names with interleaved q/k rows."""
    rules = ADAPTERS.get("meta").rules(model.config)
    return {k: v.detach().contiguous().clone() for k, v in export(model, rules).items()}


def save_meta(model: Transformer, path: str | Path) -> Path:
    """Write ``params.json`` + ``consolidated.00.pth`` (Meta layout); returns the directory."""
    cfg = config_to_file(model.config, CheckpointInfo(family="meta"))
    root = Path(path)
    root.mkdir(parents=True, exist_ok=True)
    torch.save(meta_state_dict(model), root / "consolidated.00.pth")
    (root / "params.json").write_text(json.dumps(cfg, indent=2, sort_keys=True) + "\n")
    return root
