"""TransformerLens's hook names and layouts, as data and pure functions on names and tensors.

TransformerLens (``HookedTransformer``, 2.x; files ``components/abstract_attention.py``,
``components/mlps/mlp.py``, ``components/layer_norm.py``) names its hook points
``blocks.{i}.attn.hook_pattern``, ``blocks.{i}.hook_mlp_out``, ``ln_final.hook_scale``, ...; the
project names the same tensors ``layers.{i}.attn.hook_pattern``, ``layers.{i}.hook_ffn_out``,
``final_norm.hook_scale`` (``nn/transformer.py``). The table below is the whole correspondence
for the families the project loads (GPT-2, Llama-style RMSNorm/RoPE/gated-MLP models):

=====================================  ======================================  =============
TransformerLens                        project                                 layout change
=====================================  ======================================  =============
``hook_embed``                         ``hook_tok_embed``
``hook_pos_embed``                     ``hook_pos_embed``
``blocks.i.hook_resid_pre``            ``layers.i.hook_resid_pre``
``blocks.i.ln1.hook_scale``            ``layers.i.attn_norm.hook_scale``
``blocks.i.ln1.hook_normalized``       ``layers.i.attn_norm.hook_normalized``
``blocks.i.attn.hook_q`` / ``hook_k``  ``layers.i.attn.hook_q`` / ``hook_k``   heads <-> pos
  (with RoPE: before the rotation)       (RoPE: ``hook_q_pre_rope`` / ``hook_k_pre_rope``)
``blocks.i.attn.hook_rot_q`` / ``_k``  ``layers.i.attn.hook_q`` / ``hook_k``   heads <-> pos
``blocks.i.attn.hook_v``               ``layers.i.attn.hook_v``                heads <-> pos
``blocks.i.attn.hook_attn_scores``     ``layers.i.attn.hook_scores``
``blocks.i.attn.hook_pattern``         ``layers.i.attn.hook_pattern``
``blocks.i.attn.hook_z``               ``layers.i.attn.hook_z``                heads <-> pos
``blocks.i.hook_attn_out``             ``layers.i.hook_attn_out``
``blocks.i.hook_resid_mid``            ``layers.i.hook_resid_mid``
``blocks.i.ln2.hook_scale`` / ...      ``layers.i.ffn_norm.hook_scale`` / ...
``blocks.i.mlp.hook_pre``              ``layers.i.ffn.hook_pre``
``blocks.i.mlp.hook_pre_linear``       ``layers.i.ffn.hook_pre_linear``
``blocks.i.mlp.hook_post``             ``layers.i.ffn.hook_post``
``blocks.i.hook_mlp_out``              ``layers.i.hook_ffn_out``
``blocks.i.hook_resid_post``           ``layers.i.hook_resid_post``
``ln_final.hook_scale`` / ...          ``final_norm.hook_scale`` / ...
=====================================  ======================================  =============

Layouts: the project keeps heads before positions, q/k/v/z (B, H, T, d_head); TransformerLens puts
positions first, (B, T, H, d_head) (k and v with H_kv heads in both). Scores and patterns are
(B, H, T, S) in both, masked scores -inf in both (TransformerLens's ``IGNORE`` buffer). The
project's own names and layouts stay the default; :func:`to_transformer_lens` converts a cache.

This module imports nothing from the rest of ``nn`` (it is data), so ``nn.hooks`` may use it
without an import cycle.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Mapping

from torch import Tensor

MODEL_NAMES: dict[str, str] = {
    "hook_embed": "hook_tok_embed",
    "hook_pos_embed": "hook_pos_embed",
    "ln_final.hook_scale": "final_norm.hook_scale",
    "ln_final.hook_normalized": "final_norm.hook_normalized",
}
"""TransformerLens model-level hook name -> the project's."""

BLOCK_NAMES: dict[str, str] = {
    "hook_resid_pre": "hook_resid_pre",
    "ln1.hook_scale": "attn_norm.hook_scale",
    "ln1.hook_normalized": "attn_norm.hook_normalized",
    "attn.hook_q": "attn.hook_q",
    "attn.hook_k": "attn.hook_k",
    "attn.hook_v": "attn.hook_v",
    "attn.hook_attn_scores": "attn.hook_scores",
    "attn.hook_pattern": "attn.hook_pattern",
    "attn.hook_z": "attn.hook_z",
    "hook_attn_out": "hook_attn_out",
    "hook_resid_mid": "hook_resid_mid",
    "ln2.hook_scale": "ffn_norm.hook_scale",
    "ln2.hook_normalized": "ffn_norm.hook_normalized",
    "mlp.hook_pre": "ffn.hook_pre",
    "mlp.hook_pre_linear": "ffn.hook_pre_linear",
    "mlp.hook_post": "ffn.hook_post",
    "hook_mlp_out": "hook_ffn_out",
    "hook_resid_post": "hook_resid_post",
}
"""TransformerLens name inside ``blocks.{i}.`` -> the project's inside ``layers.{i}.`` (no RoPE)."""

ROTARY_BLOCK_NAMES: dict[str, str] = {
    **BLOCK_NAMES,
    "attn.hook_q": "attn.hook_q_pre_rope",
    "attn.hook_k": "attn.hook_k_pre_rope",
    "attn.hook_rot_q": "attn.hook_q",
    "attn.hook_rot_k": "attn.hook_k",
}
"""The block table of a RoPE model: TransformerLens's q/k are taken before the rotation."""

HEADS_SECOND = frozenset({"attn.hook_q", "attn.hook_k", "attn.hook_v", "attn.hook_z",
                          "attn.hook_rot_q", "attn.hook_rot_k"})
"""TransformerLens block names whose tensor is (B, T, H, d_head), the project's
(B, H, T, d_head)."""

MISSING: dict[str, str] = {
    "attn.hook_result": "per-head outputs z_h W_O^h (B, T, H, d): TransformerLens computes them "
    "only with cfg.use_attn_result (memory H times the residual); the project's W_O is one "
    "matmul. Form them from hook_z and attn.out_proj.weight when needed",
    "hook_q_input": "per-head copies of the residual (cfg.use_split_qkv_input), every head "
    "equal to ln1's input until patched; the project has one input per sublayer",
    "hook_k_input": "as hook_q_input",
    "hook_v_input": "as hook_q_input",
    "hook_attn_in": "the attention input (cfg.use_attn_in) = hook_resid_pre; no separate point",
    "hook_mlp_in": "the MLP input (cfg.use_hook_mlp_in) = hook_resid_mid; no separate point",
}
"""TransformerLens block hook points that exist only under optional flags (they never fire in a
default ``run_with_cache``), with why the project has no counterpart."""

_BLOCK = re.compile(r"^blocks\.([^.]+)\.(.+)$")
_LAYER = re.compile(r"^layers\.([^.]+)\.(.+)$")


def _table(rotary: bool) -> dict[str, str]:
    return ROTARY_BLOCK_NAMES if rotary else BLOCK_NAMES


def is_transformer_lens_name(name: str) -> bool:
    """True for a name only TransformerLens uses (``blocks.*``, ``ln_final.*``).

    ``hook_embed`` is in both vocabularies (TransformerLens: the token embedding; the project:
    token + position, h_0) and counts as the project's; ask for TransformerLens's with
    ``layout="transformer_lens"`` (``nn.hooks.run_with_cache``) or ``hook_tok_embed``.
    """
    return name.startswith(("blocks.", "ln_final."))


def to_project_names(name: str, *, rotary: bool) -> list[str]:
    """The project hook names (or glob patterns) a TransformerLens name or pattern means.

    ``blocks.{i}.<rest>`` becomes ``layers.{i}.<project rest>``; the layer may be a glob
    (``blocks.*.attn.hook_pattern``) and ``<rest>`` too (``blocks.0.ln*.hook_scale``: every
    match in the table). ValueError naming ``names`` when nothing in the table matches.
    """
    table = _table(rotary)
    found: list[str] = []
    block = _BLOCK.match(name)
    if block:
        layer, rest = block.groups()
        found = [f"layers.{layer}.{table[r]}" for r in table if fnmatch.fnmatchcase(r, rest)]
    else:
        found = [MODEL_NAMES[n] for n in MODEL_NAMES if fnmatch.fnmatchcase(n, name)]
    if not found:
        missing = MISSING.get(block.group(2) if block else name)
        raise ValueError(f"names: {name!r} is not a TransformerLens hook point the project "
                         "has" + (f" ({missing})" if missing else
                                  f"; known: {sorted(MODEL_NAMES)} and blocks.<i>.<one of "
                                  f"{sorted(table)}>"))
    return found


def to_transformer_lens_name(name: str, *, rotary: bool) -> str | None:
    """The TransformerLens name of a project hook name, None when TransformerLens has none
    (``hook_final``, ``hook_cross_out``, the project's ``hook_embed`` sum, ...)."""
    layer = _LAYER.match(name)
    if layer:
        index, rest = layer.groups()
        for tl, ours in _table(rotary).items():
            if ours == rest:
                return f"blocks.{index}.{tl}"
        return None
    for tl, ours in MODEL_NAMES.items():
        if ours == name:
            return tl
    return None


def to_transformer_lens_layout(tl_name: str, tensor: Tensor) -> Tensor:
    """``tensor`` (project layout) in TransformerLens's layout for ``tl_name``: q/k/v/z and the
    rotated q/k (B, H, T, d) -> (B, T, H, d); every other tensor unchanged."""
    block = _BLOCK.match(tl_name)
    if block and block.group(2) in HEADS_SECOND:
        return tensor.transpose(1, 2)
    return tensor


def to_transformer_lens(cache: Mapping[str, Tensor], *, rotary: bool) -> dict[str, Tensor]:
    """A project cache ({project name: tensor}) keyed by TransformerLens names in its layouts;
    entries TransformerLens has no name for are left out. ``rotary``: the model uses RoPE."""
    out: dict[str, Tensor] = {}
    for name, tensor in cache.items():
        tl = to_transformer_lens_name(name, rotary=rotary)
        if tl is not None:
            out[tl] = to_transformer_lens_layout(tl, tensor)
    return out
