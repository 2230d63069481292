"""The adapter contract: one name table per checkpoint family, read in both directions.

A :class:`Rule` pairs ONE checkpoint tensor (``theirs``) with the model tensor(s) it holds
(``ours``, names of :class:`transformer_math.nn.transformer.Transformer`) and the two tensor
transforms between them, ``load: theirs -> ours`` and ``save: ours -> theirs`` (``save`` inverts
``load``). An :class:`Adapter` returns the rule list for a config; ``checkpoints/io.py`` uses the
same list to load (HF name -> ours), to save (ours -> HF name) and to compute the shapes a
checkpoint must have (``save`` applied to a meta-device model) before anything is allocated.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from transformer_math.checkpoints.adapters.keys import (  # noqa: F401 (the typed readers)
    bool_key,
    float_key,
    int_key,
    mapping_key,
    str_key,
)
from transformer_math.checkpoints.info import CheckpointInfo
from transformer_math.nn.config import TransformerConfig

Transform = Callable[[Tensor], Tensor]


@dataclass(frozen=True)
class Rule:
    """``theirs`` <-> ``ours``: ``load(t) -> tuple`` of len(ours), ``save(tuple) -> t``."""

    theirs: str
    ours: tuple[str, ...]
    load: Callable[[Tensor], tuple[Tensor, ...]]
    save: Callable[[tuple[Tensor, ...]], Tensor]


def _identity(t: Tensor) -> Tensor:
    return t


def _transpose(t: Tensor) -> Tensor:
    return t.t()


def mapped(theirs: str, ours: str, load: Transform = _identity,
           save: Transform = _identity) -> Rule:
    """A one-to-one rule; ``save`` must invert ``load`` (identity by default)."""
    return Rule(theirs, (ours,), lambda t: (load(t),), lambda ts: save(ts[0]))


def transposed(theirs: str, ours: str) -> Rule:
    """A Conv1D (in, out) matrix stored as the transpose of ``nn.Linear``'s (out, in)."""
    return mapped(theirs, ours, _transpose, _transpose)


def packed(theirs: str, ours: tuple[str, ...], *, conv1d: bool) -> Rule:
    """Several equal-height tensors stacked along the output axis (GPT-2's ``c_attn`` = q|k|v);
    ``conv1d``: the stored matrix is (in, sum out), so it is transposed first."""
    n = len(ours)

    def load(t: Tensor) -> tuple[Tensor, ...]:
        rows = t.t() if conv1d else t
        return tuple(rows.chunk(n, dim=0))

    def save(ts: tuple[Tensor, ...]) -> Tensor:
        rows = torch.cat(ts, dim=0)
        return rows.t() if conv1d else rows

    return Rule(theirs, ours, load, save)


def split(theirs: str, ours: tuple[str, ...], sizes: tuple[int, ...]) -> Rule:
    """Tensors of heights ``sizes`` stacked along the output axis (Phi-3's ``qkv_proj`` = q|k|v
    with fewer key/value heads under GQA)."""
    def load(t: Tensor) -> tuple[Tensor, ...]:
        if t.shape[0] != sum(sizes):
            raise ValueError(f"tensor {theirs!r} has {t.shape[0]} rows, expected "
                             f"{' + '.join(map(str, sizes))}")
        return tuple(t.split(list(sizes), dim=0))

    def save(ts: tuple[Tensor, ...]) -> Tensor:
        return torch.cat(ts, dim=0)

    return Rule(theirs, ours, load, save)


@dataclass(frozen=True)
class Adapter:
    """One checkpoint family.

    ``read_config(cfg, shapes)``: the family's config file dict (and the stored tensor shapes,
    for formats whose config omits sizes) -> (TransformerConfig preset, CheckpointInfo);
    ``write_config(config, info)``: the inverse; ``rules(config, **options)``: the name table;
    ``ignored_suffixes``: stored tensors that are not parameters (mask buffers, cached
    frequencies); ``tied_head``: the head tensor a tied checkpoint may still store;
    ``canonical``: rewrites legacy tensor names to the table's names; ``layer_prefix``: the
    (canonical) name prefix of layer ``i``'s tensors before ``i`` (``"model.layers."``) and
    ``layers_key`` the config key of the layer count, so that the count is compared with the
    stored layer indices before anything is built. ``read_config(cfg, shapes, source=...)``
    type-checks every value (``adapters/keys.py``) and names the key in its errors.
    """

    family: str
    read_config: Callable[..., tuple[TransformerConfig, CheckpointInfo]]
    write_config: Callable[[TransformerConfig, CheckpointInfo], dict[str, Any]]
    rules: Callable[..., list[Rule]]
    ignored_suffixes: tuple[str, ...] = ()
    tied_head: str | None = None
    canonical: Callable[[str], str] = str
    layer_prefix: str = ""
    layers_key: str = ""
