"""Read and write checkpoint directories as :class:`~transformer_math.nn.transformer.Transformer`.

Hugging Face layout: ``config.json`` and either ``model.safetensors`` or shards listed in
``model.safetensors.index.json`` (``{"weight_map": {tensor_name: file}}``); a legacy
``pytorch_model.bin`` is read with ``torch.load(weights_only=True)``. Meta layout:
``params.json`` + ``consolidated.00.pth`` or ``consolidated.safetensors``.

What the tensors mean is the family adapter's business (``checkpoints/adapters``: one name table
per family, read in both directions); this module does the files. Nothing in a directory is
trusted, and the whole directory is checked before the first tensor is read. Loading is

1. every file resolved inside the directory (``checkpoints/files.py``: plain file names only,
   no ``..``, no absolute shard names, symbolic links followed only while they stay inside;
   nothing outside is opened or stat'ed);
2. config file -> ``TransformerConfig`` preset + :class:`CheckpointInfo`: every value
   type-checked with a message naming the key (``adapters/keys.py``), sizes bounded
   (``nn.config.MAX_SIZE`` per field, ``MAX_PARAMETERS`` for the weights they imply);
3. the safetensors headers checked against the file sizes (``files.read_header``: header length,
   dtypes, shapes against byte ranges, byte ranges against the file; no weight read);
4. the config's layer count compared with the stored layer indices, then the name and shape of
   every tensor the checkpoint must hold (the adapter's ``save`` transforms applied to a
   ONE-layer ``meta``-device model: no memory, cost independent of the layer count) compared
   with the stored names, shapes and dtypes (floating point);
5. only then is the model allocated (on the CPU directly), the tensors read, converted
   (``load``) and copied in.

Errors: unknown architectures, unsupported options, wrong value types, files leaving the
directory, forged headers, missing or unexpected tensors and shape mismatches raise
``ValueError`` (``FileNotFoundError`` for an absent file) naming the file, key or tensor, the
expected and the received values.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from transformer_math import safe_write
from transformer_math.checkpoints.adapters import ADAPTERS, Adapter, Rule
from transformer_math.checkpoints.files import (
    check_name,
    inside,
    optional_file,
    read_json,
    read_layout,
    read_tensor,
    regular_file,
)
from transformer_math.checkpoints.generation_config import GenerationConfig
from transformer_math.checkpoints.info import CheckpointInfo
from transformer_math.checkpoints.pretrained import PretrainedTransformer
from transformer_math.nn.config import TransformerConfig
from transformer_math.nn.init import no_init_draws
from transformer_math.nn.position import POSITIONS
from transformer_math.nn.transformer import Transformer

Shapes = Mapping[str, tuple[int, ...]]


# ------------------------------------------------------------------------------- config mapping


def hf_family(cfg: Mapping[str, Any], source: str = "config.json") -> str:
    """The ``ADAPTERS`` name of an HF config (by ``model_type``, then ``architectures``)."""
    hf = ADAPTERS.where(layout="hf")
    model_type, archs = cfg.get("model_type"), cfg.get("architectures") or []
    if model_type is not None and not isinstance(model_type, str):
        raise ValueError(f"model_type in {source} must be a string, got {model_type!r}"[:300])
    if not isinstance(archs, list) or not all(isinstance(a, str) for a in archs):
        raise ValueError(f"architectures in {source} must be a list of strings, got "
                         f"{archs!r}"[:300])
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
        return ADAPTERS.get(family).read_config(cfg, shapes or {}, source=source)
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
        attention_out_bias=c.out_bias,
        rope_scaling=dict(c.rope_scaling) if c.rope_scaling else None, **_NOT_ARCHITECTURE)


def config_to_file(config: TransformerConfig, info: CheckpointInfo) -> dict[str, Any]:
    """The config-file dict of ``info.family`` for ``config``; raises unless reading it back
    gives the same architecture (so a config the family cannot express is never saved)."""
    adapter = ADAPTERS.get(info.family)
    cfg = adapter.write_config(config, info)
    sizes = {"tok_embeddings.weight": (config.vocab_size or 0, config.hidden_size),
             "layers.0.feed_forward.w1.weight": (config.ffn_size, config.hidden_size)}
    back, _ = adapter.read_config(cfg, sizes)
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


INDEX = "model.safetensors.index.json"


def _root(path: str | Path) -> Path:
    root = Path(path)
    if not root.is_dir():
        raise FileNotFoundError(f"checkpoint directory {str(root)!r} does not exist")
    return root


def read_config(path: str | Path) -> dict[str, Any]:
    """The parsed ``config.json`` of a checkpoint directory (a regular file inside it, a JSON
    object)."""
    root = _root(path)
    file = inside(root, "config.json", "config file")
    if not os.path.lexists(file):
        raise FileNotFoundError(f"{str(root / 'config.json')!r} not found: a Hugging Face "
                                "checkpoint directory needs config.json")
    return read_json(file, "config file")


@dataclass(frozen=True)
class Stored:
    """What a checkpoint directory holds, from its headers only: tensor name -> shape, dtype
    name and whether the dtype is floating point; ``get(name)`` then reads ONE tensor into
    memory of its own (call it only after validation), ``read()`` every tensor."""

    shapes: dict[str, tuple[int, ...]]
    dtypes: dict[str, str]
    floating: dict[str, bool]
    get: Callable[[str], Tensor]

    def read(self) -> dict[str, Tensor]:
        """Every tensor (all resident at once: the lazy loader uses :attr:`get` instead)."""
        return {name: self.get(name) for name in self.shapes}


def _shard_files(root: Path, index: Path) -> tuple[list[tuple[str, Path]], dict[str, str]]:
    """The checked shard files of ``index`` as (name in the index, resolved path) and its weight
    map (every entry a plain file name inside ``root``, checked before any shard is
    touched)."""
    data = read_json(index, "index file")
    weight_map = data.get("weight_map")
    if not isinstance(weight_map, dict) or not weight_map:
        raise ValueError(f"{index.name} has no 'weight_map' object (tensor name -> file name)")
    for tensor, name in weight_map.items():
        check_name(name, f"{index.name} entry {tensor!r}: the file")
    files = []
    for name in sorted(set(weight_map.values())):
        shard = inside(root, name, f"{index.name} entry for shard")
        if not os.path.lexists(shard):
            raise FileNotFoundError(f"shard {name!r} listed in {index.name} is missing")
        files.append((name, regular_file(shard, f"shard {name!r} listed in {index.name}")))
    return files, weight_map


def _from_safetensors(files: list[tuple[str, Path]], weight_map: dict[str, str] | None
                      ) -> Stored:
    """Headers of every (name, path) file (checked), and the one-tensor reader
    (``files.read_tensor``: its checked byte range read into memory of its own)."""
    layouts = {fname: (f, *read_layout(f, fname)) for fname, f in files}
    shapes, dtypes, floating = {}, {}, {}
    where: dict[str, str] = {}
    for fname, (_, header, _) in layouts.items():
        for name, t in header.items():
            if weight_map is not None and weight_map.get(name) != fname:
                continue  # the index assigns this tensor elsewhere (or not at all)
            shapes[name], dtypes[name], floating[name] = t.shape, t.dtype, t.floating
            where[name] = fname
    if weight_map is not None:
        absent = sorted(k for k in weight_map if k not in shapes)
        if absent:
            raise ValueError(f"shard {weight_map[absent[0]]!r} lacks tensors the index assigns "
                             f"to it: {absent[:5]}"[:400])

    def get(name: str) -> Tensor:
        fname = where[name]
        file, header, start = layouts[fname]
        return read_tensor(file, header[name], start, fname)

    return Stored(shapes, dtypes, floating, get)


def _from_torch(file: Path) -> Stored:
    """A ``torch.save`` file (``weights_only``: tensors only, memory-mapped when possible)."""
    try:
        try:
            tensors = torch.load(str(file), map_location="cpu", weights_only=True, mmap=True)
        except RuntimeError:  # the legacy (non-zip) format cannot be memory-mapped
            tensors = torch.load(str(file), map_location="cpu", weights_only=True)
    except MemoryError:
        raise
    except Exception as err:  # pickle, zip and torch errors alike
        raise ValueError(f"{file.name!r} is not a readable torch tensor file: "
                         f"{type(err).__name__}: {err}"[:400]) from None
    if not isinstance(tensors, dict) or not all(
            isinstance(k, str) and isinstance(v, Tensor) for k, v in tensors.items()):
        raise ValueError(f"{file.name!r} must hold a dict of tensor name -> tensor")
    return Stored({k: tuple(v.shape) for k, v in tensors.items()},
                  {k: str(v.dtype).removeprefix("torch.") for k, v in tensors.items()},
                  {k: v.is_floating_point() for k, v in tensors.items()}, tensors.__getitem__)


def stored_tensors(path: str | Path) -> Stored:
    """Names, shapes and dtypes of an HF directory's tensors from the safetensors headers (a
    legacy ``pytorch_model.bin`` is memory-mapped); every file confined to the directory
    (``checkpoints/files.py``). No weight is read."""
    root = _root(path)
    single = optional_file(root, "model.safetensors", "weights file")
    if single is not None:
        return _from_safetensors([("model.safetensors", single)], None)
    index = optional_file(root, INDEX, "index file")
    if index is not None:
        return _from_safetensors(*_shard_files(root, index))
    legacy = optional_file(root, "pytorch_model.bin", "weights file")
    if legacy is None:
        raise FileNotFoundError(f"no model.safetensors, {INDEX} or pytorch_model.bin in "
                                f"{str(root)!r}")
    return _from_torch(legacy)


def read_tensor_shapes(path: str | Path) -> dict[str, tuple[int, ...]]:
    """Tensor name -> shape of an HF directory from the safetensors headers (no weight read)."""
    return stored_tensors(path).shapes


def read_tensors(path: str | Path) -> dict[str, Tensor]:
    """Every tensor of an HF directory (single file, sharded index, or legacy .bin)."""
    return stored_tensors(path).read()  # type: ignore[no-any-return]


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
    """The model on the ``meta`` device: every name and shape, no memory, no RNG draw.

    RoPE scaling changes no shape, and some scalings check their factors with a host read
    (impossible on ``meta``): the skeleton is built without it (``check_rope`` validated it
    on the CPU)."""
    if config.rope_scaling:
        config = dataclasses.replace(config, rope_scaling=None)
    with torch.device("meta"), no_init_draws():
        return Transformer(config)


def export(model: Transformer, rules: list[Rule]) -> dict[str, Tensor]:
    """``model``'s tensors under the checkpoint names of ``rules`` (the ``save`` direction)."""
    own = model.state_dict()
    return {r.theirs: r.save(tuple(own[o] for o in r.ours)) for r in rules}


_OUR_LAYER = re.compile(r"^layers\.\d+\.")


def check_layers(adapter: Adapter, config: TransformerConfig, shapes: Shapes,
                 source: str) -> None:
    """The config's layer count equals the layer indices of the stored tensor names (checked
    first: a config asking for 10**6 layers is refused before any per-layer work)."""
    if not adapter.layer_prefix:
        return
    pattern = re.compile(re.escape(adapter.layer_prefix) + r"(\d{1,9})\.")
    stored = {int(m.group(1)) for k in shapes if (m := pattern.match(k))}
    if stored != set(range(config.num_layers)):
        got = (f"layers {min(stored)}..{max(stored)} ({len(stored)} distinct indices)" if stored
               else "no layer tensors")
        raise ValueError(f"{adapter.layers_key} in {source} is {config.num_layers} but the "
                         f"checkpoint stores {got} under {adapter.layer_prefix!r}")


def expected_shapes(config: TransformerConfig, rules: list[Rule]) -> dict[str, tuple[int, ...]]:
    """Checkpoint name -> shape for ``config``: the ``save`` transforms of ``rules`` applied to a
    ONE-layer meta-device model (every layer of a preset has the same shapes), so the cost does
    not grow with the layer count and nothing is allocated."""
    one = skeleton(dataclasses.replace(config, num_layers=1)).state_dict()
    filled = {_OUR_LAYER.sub("layers.0.", o) for r in rules for o in r.ours}
    tied = {"lm_head.weight"} if config.tie_embeddings else set()
    unfilled = sorted(set(one) - filled - tied)
    if unfilled:  # a model tensor no checkpoint tensor fills would keep uninitialised memory
        raise ValueError(f"the {config.position!r}/{config.feedforward!r} model has tensors the "
                         f"family's name table does not fill: {unfilled[:6]}")

    def own(name: str) -> Tensor:
        return one[_OUR_LAYER.sub("layers.0.", name)]

    return {r.theirs: tuple(r.save(tuple(own(o) for o in r.ours)).shape) for r in rules}


def validate(adapter: Adapter, config: TransformerConfig, rules: list[Rule], shapes: Shapes,
             source: str, floating: Mapping[str, bool] | None = None) -> None:
    """Every tensor the config needs is stored with its shape (and, given ``floating``, a
    floating-point dtype), and nothing else is stored."""
    expected = expected_shapes(config, rules)
    ignored = {k for k in shapes if k.endswith(adapter.ignored_suffixes)}
    if config.tie_embeddings and adapter.tied_head is not None:
        ignored.add(adapter.tied_head)  # a tied checkpoint may still store a copy of E
    _report_mismatch(sorted(set(expected) - set(shapes)),
                     sorted(set(shapes) - set(expected) - ignored))
    for name, shape in expected.items():
        if tuple(shapes[name]) != shape:
            raise ValueError(f"tensor {name!r} has shape {tuple(shapes[name])}, expected "
                             f"{shape} from {source}")
    for name in expected:
        if floating is not None and not floating.get(name, True):
            raise ValueError(f"tensor {name!r} must be floating point")


def _canonical(adapter: Adapter, named: Mapping[str, Any]) -> dict[str, Any]:
    return {adapter.canonical(k): v for k, v in named.items()}


def _build(adapter: Adapter, config: TransformerConfig, info: CheckpointInfo, rules: list[Rule],
           get: Callable[[str], Tensor], dtype: torch.dtype) -> PretrainedTransformer:
    """Build the model on the ``meta`` device (no memory, no init draws) and materialise it one
    checkpoint tensor at a time: ``get(name)`` reads one stored tensor, the rule's ``load``
    maps it to the model's tensors, each becomes its parameter in ``dtype`` (the read memory
    itself when it already is a whole contiguous tensor of that dtype, else one converted
    copy), and the stored tensor is dropped before the next is read. The peak is the model in
    ``dtype`` plus one stored tensor (and its converted copy), never a second model.

    Only the parameters take ``dtype``: the RoPE frequencies and cos/sin tables (non-persistent
    buffers) are then computed on the CPU in float32 (``RotaryEmbedding.reset_buffers``, run
    when a module leaves the meta device), as transformers keeps them (its rotary embedding
    computes in float32 and casts cos/sin to the activations' dtype)."""
    model = _empty_model(config)
    slots = _slots(model)
    with torch.no_grad():
        for rule in rules:
            stored = get(rule.theirs)
            if not stored.is_floating_point():
                raise TypeError(f"tensor {rule.theirs!r} must be floating point, "
                                f"got {stored.dtype}")
            for name, t in zip(rule.ours, rule.load(stored), strict=True):
                _place(slots[name], name, t, dtype)
            del stored
    _leave_meta(model)
    if model.rotary is not None:  # the angles the checkpoint was trained with (issue 33.2)
        model.rotary.set_precision("library")
    model.checkpoint_info = info  # type: ignore[assignment]
    return model.eval()


def _empty_model(config: TransformerConfig) -> PretrainedTransformer:
    """The model with every parameter on the ``meta`` device and its RoPE module on the CPU.

    Some RoPE scalings check their factors with a host read while the module is built
    (impossible on ``meta``; ``functional/rope_scaling.py``), and no shape depends on the
    scaling: the model is built on ``meta`` without it (as :func:`skeleton`), then given the
    real config and a rotary module built from it on the CPU (``Transformer.set_rotary``; it
    holds buffers only, computed exactly as in an eager build)."""
    plain = dataclasses.replace(config, rope_scaling=None) if config.rope_scaling else config
    with torch.device("meta"), no_init_draws():
        model = PretrainedTransformer(plain)
    model.config = config
    for block in model.layers:
        block.config = config
    if model.rotary is not None:
        rotary = POSITIONS.get(config.position)(config).rotary
        assert rotary is not None
        model.set_rotary(rotary)
    return model


_Slot = tuple[list[tuple[torch.nn.Module, str]], Tensor, bool]
"""Where one state-dict tensor lives: every (module, attribute) holding it (a tied head and
its embedding are one Parameter), its meta-device template, and whether it is a Parameter."""


def _slots(model: torch.nn.Module) -> dict[str, _Slot]:
    """State-dict name -> :data:`_Slot` for every parameter and persistent buffer."""
    holders: dict[int, list[tuple[torch.nn.Module, str]]] = {}
    slots: dict[str, _Slot] = {}
    for prefix, module in model.named_modules():
        skip = module._non_persistent_buffers_set
        owned = [(a, t, True) for a, t in module._parameters.items()] + [
            (a, t, False) for a, t in module._buffers.items() if a not in skip]
        for attr, tensor, is_param in owned:
            if tensor is None:
                continue
            where = holders.setdefault(id(tensor), [])
            where.append((module, attr))
            slots[f"{prefix}.{attr}" if prefix else attr] = (where, tensor, is_param)
    return slots


def _place(slot: _Slot, name: str, value: Tensor, dtype: torch.dtype) -> None:
    """Put ``value`` (converted to ``dtype`` for a parameter, to the buffer's own dtype for a
    buffer) in every holder of ``slot``, reusing its memory when it is a whole contiguous
    tensor of that dtype (no copy) and copying it into a fresh contiguous tensor otherwise."""
    holders, template, is_param = slot
    if tuple(value.shape) != tuple(template.shape):
        raise ValueError(f"the checkpoint gives {name!r} the shape {tuple(value.shape)}, the "
                         f"model needs {tuple(template.shape)}")
    want = dtype if is_param else template.dtype
    value = value.detach().to(want, memory_format=torch.contiguous_format)
    whole = (value.is_contiguous() and value.storage_offset() == 0
             and value.untyped_storage().nbytes() == value.numel() * value.element_size())
    if not whole:
        value = torch.empty(value.shape, dtype=want).copy_(value)
    tensor: Tensor = (torch.nn.Parameter(value, requires_grad=template.requires_grad)
                      if is_param else value)
    for module, attr in holders:
        (module._parameters if is_param else module._buffers)[attr] = tensor


def _leave_meta(model: torch.nn.Module) -> None:
    """Move what is still on the meta device (non-persistent buffers only) to the CPU: each
    module's ``_apply`` recomputes such buffers (``nn/position.py``); anything else left on
    ``meta`` is a tensor no checkpoint tensor filled (an error, never uninitialised memory)."""
    def empty(t: Tensor) -> Tensor:
        return torch.empty_like(t, device="cpu") if t.is_meta else t

    for module in model.modules():
        if any(b is not None and b.is_meta for b in module._buffers.values()):
            if type(module)._apply is torch.nn.Module._apply:  # nothing would recompute them
                raise ValueError(f"{type(module).__name__} has buffers no checkpoint tensor "
                                 "fills and no rule recomputes")
            module._apply(empty, recurse=False)
    left = [n for n, t in [*model.named_parameters(), *model.named_buffers()] if t.is_meta]
    if left:
        raise ValueError(f"no checkpoint tensor fills {left[:6]}")


def _load(adapter: Adapter, config: TransformerConfig, info: CheckpointInfo, stored: Stored,
          source: str, dtype: DtypeArg, **options: Any) -> PretrainedTransformer:
    """Check everything (layer count, names, shapes, dtypes), then allocate and read."""
    chosen = resolve_dtype(dtype, info.dtype, stored, source)
    shapes = _canonical(adapter, stored.shapes)
    check_layers(adapter, config, shapes, source)
    rules = adapter.rules(config, **options)
    validate(adapter, config, rules, shapes, source, _canonical(adapter, stored.floating))
    names = {adapter.canonical(k): k for k in stored.shapes}
    return _build(adapter, config, info, rules, lambda name: stored.get(names[name]), chosen)


# ------------------------------------------------------------------------------------ dtype


DtypeArg = str | torch.dtype
DTYPES: dict[str, torch.dtype] = {"float32": torch.float32, "bfloat16": torch.bfloat16,
                                  "float16": torch.float16, "float64": torch.float64}
"""The dtypes a checkpoint loads in, by name (transformers' names: ``torch.<name>``)."""
_SAFETENSORS_DTYPES = {"F32": "float32", "BF16": "bfloat16", "F16": "float16", "F64": "float64"}


def resolve_dtype(dtype: DtypeArg, config_dtype: str | None, stored: Stored,
                  source: str = "config.json") -> torch.dtype:
    """The parameter dtype of a load: ``dtype`` itself (a torch dtype or a name of
    :data:`DTYPES`), or for ``"auto"`` what transformers 5 picks (``modeling_utils._get_dtype``):
    the config's ``dtype`` (legacy ``torch_dtype``), else the dtype of the first floating-point
    tensor stored. Anything else is a ``ValueError`` naming the argument or the config key."""
    names = ", ".join(repr(n) for n in DTYPES)
    if isinstance(dtype, torch.dtype):
        if dtype not in DTYPES.values():
            raise ValueError(f"dtype must be 'auto' or one of {names} (or the torch dtype), got "
                             f"{dtype}")
        return dtype
    if not isinstance(dtype, str) or (dtype != "auto" and dtype not in DTYPES):
        raise ValueError(f"dtype must be 'auto' or one of {names} (or the torch dtype), got "
                         f"{dtype!r}"[:300])
    if dtype != "auto":
        return DTYPES[dtype]
    if config_dtype is not None:
        name = config_dtype.removeprefix("torch.")
        if name not in DTYPES:
            raise ValueError(f"dtype {config_dtype!r} in {source} is not one the project loads "
                             f"({names}); pass dtype= explicitly"[:300])
        return DTYPES[name]
    for tensor, floating in stored.floating.items():
        if floating:
            kind = stored.dtypes[tensor]
            name = _SAFETENSORS_DTYPES.get(kind, kind)
            if name not in DTYPES:
                raise ValueError(f"tensor {tensor!r} is stored as {kind}, which the project does "
                                 f"not load with dtype='auto'; pass dtype= explicitly")
            return DTYPES[name]
    return torch.float32


# ----------------------------------------------------------------------------- public entry points


def from_pretrained(path: str | Path, *, dtype: DtypeArg = "auto") -> PretrainedTransformer:
    """Load an HF-layout checkpoint directory of any ``ADAPTERS`` family with layout "hf".

    ``dtype``: ``"auto"`` (default) keeps the folder's dtype as transformers 5 does (the config's
    ``dtype``/``torch_dtype``, else the stored tensors'; :func:`resolve_dtype`), or a name
    (``"float32"``, ``"bfloat16"``, ...) or a ``torch.dtype`` to convert to.

    Nothing is trusted and the whole directory is checked before the first tensor is read:
    every file is confined to the directory (``checkpoints/files.py``: no ``..``, no absolute
    shard names, no symbolic links leaving it); every ``config.json`` value is type-checked
    (``adapters/keys.py``); the safetensors headers are checked against the file sizes; the
    config's layer count, tensor names, shapes and dtypes are compared with the headers (a
    one-layer meta-device model gives the shapes). Only then is the model allocated (on the
    CPU, directly: no meta-device ``load_state_dict``, so RoPE buffers are computed as usual)
    and filled. Every refusal is a ``ValueError`` (``FileNotFoundError`` for a missing file)
    naming the file, key or tensor.

    Returns a :class:`~transformer_math.checkpoints.pretrained.PretrainedTransformer` (a
    :class:`Transformer` whose forward returns ``.logits``/``.loss``) in eval mode with
    ``model.checkpoint_info`` and ``model.generation_config`` set.
    """
    source = str(Path(path) / "config.json")
    config, info = config_from_hf(read_config(path), source)  # before any tensor file
    gen = read_generation_settings(path)
    info = _with_token_ids(info, gen)
    stored = stored_tensors(path)
    model = _load(ADAPTERS.get(info.family), config, info, stored, source, dtype)
    model.generation_config = _with_info_ids(gen, info)
    return model


GENERATION_CONFIG = "generation_config.json"
_TOKEN_KEYS = ("bos_token_id", "eos_token_id", "pad_token_id")


def read_generation_settings(path: str | Path) -> GenerationConfig:
    """The parsed ``generation_config.json`` of a directory (a regular file inside it, a JSON
    object, every value checked: ``checkpoints/generation_config.py``); an empty
    :class:`GenerationConfig` when there is none."""
    file = optional_file(_root(path), GENERATION_CONFIG, "generation config")
    if file is None:
        return GenerationConfig()
    return GenerationConfig.from_dict(read_json(file, "generation config"), str(file))


def _with_token_ids(info: CheckpointInfo, gen: GenerationConfig) -> CheckpointInfo:
    """``info`` with the token ids of the generation config in place of ``config.json``'s;
    transformers' ``generate`` reads them from there (e.g. Llama 3 Instruct lists more eos
    ids there than in ``config.json``)."""
    ids = {k: getattr(gen, k) for k in _TOKEN_KEYS}
    return dataclasses.replace(info, **{k: v for k, v in ids.items() if v is not None})


def _with_info_ids(gen: GenerationConfig, info: CheckpointInfo) -> GenerationConfig:
    """``gen`` with the ids it leaves unset taken from ``config.json`` (transformers builds the
    generation config from the model config when the file lacks them)."""
    ids = {k: getattr(info, k) for k in _TOKEN_KEYS if getattr(gen, k) is None}
    return dataclasses.replace(gen, **{k: v for k, v in ids.items() if v is not None})


def read_generation_config(path: str | Path, info: CheckpointInfo) -> CheckpointInfo:
    """``info`` with the token ids of ``generation_config.json`` (if any) in place of
    ``config.json``'s."""
    return _with_token_ids(info, read_generation_settings(path))


def generation_config(info: CheckpointInfo, gen: GenerationConfig | None = None
                      ) -> dict[str, Any]:
    """The ``generation_config.json`` dict: ``gen``'s settings (when given) with ``info``'s
    token ids."""
    ids = info.to_config()
    out = {} if gen is None else gen.to_dict()
    out.update({k: ids[k] for k in _TOKEN_KEYS if ids[k] is not None})
    return out


_SHARD = re.compile(r"model-\d{5}-of-\d{5}\.safetensors")


def parameter_breakdown(path: str | Path) -> tuple[TransformerConfig, CheckpointInfo,
                                                   dict[str, int]]:
    """(config, info, ``Transformer.parameter_breakdown()``) of an HF directory, from its
    headers: checked exactly as :func:`from_pretrained` checks, no weight is read or
    allocated."""
    source = str(Path(path) / "config.json")
    config, info = config_from_hf(read_config(path), source)  # before any tensor file
    stored = stored_tensors(path)
    adapter = ADAPTERS.get(info.family)
    shapes = _canonical(adapter, stored.shapes)
    check_layers(adapter, config, shapes, source)
    validate(adapter, config, adapter.rules(config), shapes, source,
             _canonical(adapter, stored.floating))
    return config, info, skeleton(config).parameter_breakdown()


def export_state_dict(model: Transformer, info: CheckpointInfo | None = None
                      ) -> dict[str, Tensor]:
    """The model's tensors under its family's names (GPT-2: Conv1D (in, out), q|k|v packed)."""
    info = info or infer_info(model)
    rules = ADAPTERS.get(info.family).rules(model.config)
    return {k: v.detach().contiguous().clone() for k, v in export(model, rules).items()}


def save_pretrained(model: Transformer, path: str | Path, *, max_shard_bytes: int | None = None,
                    info: CheckpointInfo | None = None) -> Path:
    """Write ``config.json``, ``generation_config.json`` (the token ids, when any is set) and
    ``model.safetensors`` (or shards + index past ``max_shard_bytes``) in the HF layout of
    ``info.family`` (default ``model.checkpoint_info``, else the family whose preset the config
    is). Returns the directory.

    The folder is written into a temporary sibling and swapped in whole
    (:func:`transformer_math.safe_write.replacing_folder`): a save killed half-way leaves the
    earlier save intact, and a link at ``path`` or at a file in it is replaced, never followed.
    Weight files of an earlier save (``model.safetensors``, the index, its shards) are not
    carried over; any other plain file of the old folder (a tokenizer) is."""
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
    target = Path(path)
    with safe_write.replacing_folder(target, carry=_carried) as root:
        _write_hf(root, cfg, generation_config(info, getattr(model, "generation_config", None)),
                  tensors, max_shard_bytes, save_file)
    return target


def _carried(entry: Path) -> bool:
    """Files of an earlier save that a new save keeps: all but the ones it writes itself and
    the weight files of the earlier save (so the new weights are never mixed with old ones)."""
    ours = entry.name in ("config.json", GENERATION_CONFIG, "model.safetensors", INDEX)
    return not (ours or _SHARD.fullmatch(entry.name))


def _write_hf(root: Path, cfg: dict[str, Any], gen: dict[str, Any], tensors: dict[str, Tensor],
              max_shard_bytes: int | None, save_file: Any) -> None:
    (root / "config.json").write_text(json.dumps(cfg, indent=2, sort_keys=True) + "\n")
    if gen:
        (root / GENERATION_CONFIG).write_text(json.dumps(gen, indent=2, sort_keys=True) + "\n")
    meta = {"format": "pt"}
    total = sum(t.numel() * t.element_size() for t in tensors.values())
    if max_shard_bytes is None or total <= max_shard_bytes:
        save_file(tensors, str(root / "model.safetensors"), metadata=meta)
        return
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


# ------------------------------------------------------------------------------ Meta layout


_CONSOLIDATED = re.compile(r"consolidated\.\d+\.pth")


def _meta_file(root: Path) -> Path:
    single = optional_file(root, "consolidated.safetensors", "weights file")
    if single is not None:
        return single
    names = sorted(p.name for p in root.iterdir() if _CONSOLIDATED.fullmatch(p.name))
    if len(names) != 1:
        raise ValueError(f"expected exactly one consolidated.*.pth (model-parallel shards are "
                         f"not merged), found {len(names)} in {str(root)!r}")
    return regular_file(inside(root, names[0], "weights file"), "weights file")


def from_meta(path: str | Path, *, dtype: DtypeArg = "auto",
              permute_qk: bool = True) -> PretrainedTransformer:
    """Load a Meta-layout directory (``params.json`` + ``consolidated.00.pth`` or
    ``consolidated.safetensors``, single shard) into a half-layout Llama :class:`Transformer`,
    checked like :func:`from_pretrained` before any weight is read.

    ``permute_qk=False`` skips the q/k layout permutation (to demonstrate that it is needed).
    ``dtype`` as in :func:`from_pretrained` (``"auto"``: the stored tensors' dtype; Meta's
    ``params.json`` names none).
    """
    root = _root(path)
    source = str(root / "params.json")
    file = inside(root, "params.json", "params file")
    if not os.path.lexists(file):
        raise FileNotFoundError(f"{source!r} not found: Meta layout needs params.json")
    params = read_json(file, "params file")
    weights = _meta_file(root)  # a .pth is memory-mapped: shapes without reading the weights
    stored = (_from_safetensors([(weights.name, weights)], None)
              if weights.suffix == ".safetensors" else _from_torch(weights))
    adapter = ADAPTERS.get("meta")
    config, info = adapter.read_config(params, stored.shapes, source=source)
    model = _load(adapter, config, info, stored, source, dtype, permute_qk=permute_qk)
    model.generation_config = _with_info_ids(GenerationConfig(), info)
    return model


def meta_state_dict(model: Transformer) -> dict[str, Tensor]:
    """A Llama-preset model under Meta names with interleaved q/k rows."""
    rules = ADAPTERS.get("meta").rules(model.config)
    return {k: v.detach().contiguous().clone() for k, v in export(model, rules).items()}


def save_meta(model: Transformer, path: str | Path) -> Path:
    """Write ``params.json`` + ``consolidated.00.pth`` (Meta layout); returns the directory."""
    cfg = config_to_file(model.config, CheckpointInfo(family="meta"))
    target = Path(path)
    state = meta_state_dict(model)
    with safe_write.replacing_folder(
            target, carry=lambda e: e.name not in ("consolidated.00.pth", "params.json")) as root:
        torch.save(state, root / "consolidated.00.pth")
        (root / "params.json").write_text(json.dumps(cfg, indent=2, sort_keys=True) + "\n")
    return target
