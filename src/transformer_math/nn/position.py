"""Position modules: sinusoidal code, learned embedding, ALiBi and rotary embedding.

Thin wrappers around ``functional/positional.py`` and ``functional/rope.py`` (000 §8.3.3; Vaswani
et al. 2017 §3.5; Press et al. 2022; Su et al. 2021; context-extension methods as in FACTS.md).

- :class:`SinusoidalPositionalEncoding` adds PE[pos] (no parameters, any length).
- :class:`LearnedPositionalEmbedding` adds a trained row per position; the table has a fixed size
  and a position past it raises ``IndexError`` (it cannot extrapolate: 000 §8.3.3 "朴素方案三").
- :class:`ALiBi` returns the additive bias -m_h |i - j| for given query/key positions.
- :class:`RelativePositionBias` is a learned per-head bias of the clipped offset i - j.
- :data:`POSITIONS` names the schemes the decoder can be built with (one function each).
- :class:`RotaryEmbedding` rotates q and k. Angles and cos/sin are always float32; positions
  lie in [0, :data:`MAX_ROPE_POSITIONS`); for static scaling types a cos/sin table is cached and
  grows (doubling) on demand up to :data:`ROPE_CACHE_POSITIONS`; for the
  length-dependent types (``dynamic``, ``longrope``) the frequencies are recomputed for the
  current sequence length at each call (so keys cached under an older base are NOT consistent
  with later queries: recompute them, as FACTS.md warns). ``frequency_switch`` says where they
  change; generation rebuilds the KV cache there for LongRoPE (``rebuilds_cache_at_switch``),
  as transformers does, and keeps it for dynamic NTK, as transformers does too.

Non-persistent buffers (RoPE's ``inv_freq`` and cos/sin cache, ALiBi's slopes) are recomputed
when a module leaves the meta device (``to_empty``) or is first called with them still on it
(``load_state_dict(..., assign=True)``), so a model built under ``torch.device("meta")`` and then
loaded gives the outputs of a normally built one. Data-dependent checks (position ranges) run in
eager mode only; traced code (``torch.compile(fullgraph=True)``, ``torch.export``) skips them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor, nn

from transformer_math.bugs import active, declare_bug, note_reached, planted, recording
from transformer_math.functional.positional import alibi_bias, alibi_slopes, sinusoidal_encoding
from transformer_math.functional.rope import (
    LAYOUTS,
    angles_to_cos_sin,
    apply_rotary,
    can_read_values,
    rope_angles,
)
from transformer_math.functional.rope_scaling import (
    LENGTH_DEPENDENT_TYPES,
    PRECISIONS,
    SCALING_BUGS,
    compute_rope_frequencies,
)
from transformer_math.registry import Registry

# Planted bug (issue 14; off unless a caller plants it, see transformer_math/bugs.py).
LEARNED_SILENT_CLAMP = declare_bug(
    "position.learned-silent-clamp",
    "a learned position table silently clamps positions past its last row (reuses row "
    "num_positions - 1) instead of raising",
    module=__name__, seen_in="position_ids.clamp(max=max_position_embeddings - 1) guards",
    # issue 31: the claim position.learned-embedding-limit (an API check) became this test
    test="tests/nn/test_learned_position_limit.py::test_learned_silent_clamp_fails_the_check")


def _positions_for(x: Tensor, position_ids: Tensor | None, offset: int) -> Tensor:
    t = x.shape[1]
    if position_ids is None:
        return torch.arange(offset, offset + t, device=x.device)
    if position_ids.shape[-1] != t:
        raise ValueError(f"position_ids must end with seq length {t}, got "
                         f"{tuple(position_ids.shape)}")
    return position_ids


def _check_bsd(x: Tensor, dim: int) -> None:
    if x.dim() != 3 or x.shape[-1] != dim:
        raise ValueError(f"x must have shape (batch, seq, {dim}), got {tuple(x.shape)}")


def _is_to_empty(fn: Any) -> bool:
    """Whether ``Module._apply`` was called by ``Module.to_empty`` (its tensors are then
    uninitialised memory). A module shared by several parents (one RoPE for every layer) is
    visited once per parent, so "it was on the meta device" alone does not catch every visit."""
    return str(getattr(fn, "__qualname__", "")).startswith("Module.to_empty.")


class SinusoidalPositionalEncoding(nn.Module):
    """x + PE[pos] with PE the fixed sinusoidal code of width ``dim`` (even)."""

    def __init__(self, dim: int, base: float = 10000.0) -> None:
        super().__init__()
        sinusoidal_encoding(torch.zeros(1), dim, base)  # validates dim and base
        self.dim, self.base = dim, base

    def encoding(self, positions: Tensor) -> Tensor:
        """PE at ``positions`` (...,) -> (..., dim), float32."""
        return sinusoidal_encoding(positions, self.dim, self.base)

    def forward(self, x: Tensor, position_ids: Tensor | None = None, offset: int = 0) -> Tensor:
        """x (B, T, dim) + PE; positions default to offset .. offset + T - 1."""
        _check_bsd(x, self.dim)
        pe = self.encoding(_positions_for(x, position_ids, offset))
        return x + pe.to(x.dtype)


class LearnedPositionalEmbedding(nn.Module):
    """x + E[pos] with a learned (num_positions, dim) table; no position past the table."""

    def __init__(self, num_positions: int, dim: int, *, init_std: float = 0.02,
                 generator: torch.Generator | None = None) -> None:
        super().__init__()
        if num_positions < 1 or dim < 1:
            raise ValueError(f"num_positions and dim must be >= 1, got {num_positions}, {dim}")
        self.num_positions, self.dim, self.init_std = num_positions, dim, init_std
        self.weight = nn.Parameter(torch.empty(num_positions, dim))
        self.reset_parameters(generator)

    @torch.no_grad()
    def reset_parameters(self, generator: torch.Generator | None = None) -> None:
        """E ~ N(0, init_std^2) from ``generator`` (the global RNG when None, as torch does)."""
        nn.init.normal_(self.weight, 0.0, self.init_std, generator=generator)

    def embedding(self, positions: Tensor) -> Tensor:
        if planted(LEARNED_SILENT_CLAMP):  # planted bug (see LEARNED_SILENT_CLAMP)
            return self.weight[positions.long().clamp(0, self.num_positions - 1)]
        if positions.numel() and can_read_values(positions) and (
                int(positions.max()) >= self.num_positions
                                  or int(positions.min()) < 0):
            raise IndexError(
                f"position {int(positions.max())} is outside the learned table of "
                f"{self.num_positions} positions (valid 0..{self.num_positions - 1}); a learned "
                "absolute embedding cannot extrapolate: use a longer table, RoPE or ALiBi"
            )
        return self.weight[positions.long()]

    def forward(self, x: Tensor, position_ids: Tensor | None = None, offset: int = 0) -> Tensor:
        _check_bsd(x, self.dim)
        return x + self.embedding(_positions_for(x, position_ids, offset)).to(x.dtype)


class ALiBi(nn.Module):
    """Additive attention bias -m_h |i - j| (Press et al. 2022); slopes for any head count.

    ``slopes`` is a non-persistent buffer: recomputed after ``to_empty`` and, lazily, when a
    forward finds it still on the meta device (``load_state_dict(..., assign=True)``).
    """

    slopes: Tensor

    def __init__(self, num_heads: int) -> None:
        super().__init__()
        self.num_heads = num_heads
        self.register_buffer("slopes", alibi_slopes(num_heads), persistent=False)

    def reset_buffers(self, device: torch.device | str | None = None) -> None:
        """Recompute the slopes on ``device`` (default: where they are)."""
        device = self.slopes.device if device is None else torch.device(device)
        with torch.device("cpu"):  # escape an enclosing torch.device("meta") context
            slopes = alibi_slopes(self.num_heads)
        self.slopes = slopes.to(device=device, dtype=self.slopes.dtype)

    def _apply(self, fn: Any, recurse: bool = True) -> ALiBi:
        was_meta = self.slopes.is_meta
        super()._apply(fn, recurse)
        if not self.slopes.is_meta and (was_meta or _is_to_empty(fn)):
            self.reset_buffers()
        return self

    def forward(self, query_positions: Tensor, key_positions: Tensor) -> Tensor:
        """Bias of shape (1, H, T, S) for 1-D query positions (T,) and key positions (S,)."""
        if self.slopes.is_meta and not query_positions.is_meta:
            self.reset_buffers(query_positions.device)
        return alibi_bias(self.slopes, query_positions, key_positions).unsqueeze(0)


MAX_ROPE_POSITIONS = 2**24
"""Positions a :class:`RotaryEmbedding` accepts: 0 <= position < 2^24 (= 16,777,216).

Angles are formed as float32(position) * inv_freq (FACTS.md), and float32 holds every integer
exactly only below 2^24: past it neighbouring positions share an angle, so RoPE can no longer
tell them apart. A position id at or past this bound is refused with a ValueError before
anything is allocated (one id of 1e8 used to grow the cos/sin cache to 34 GB)."""

ROPE_CACHE_POSITIONS = 2**16
"""The most positions the cos/sin cache of a :class:`RotaryEmbedding` ever holds (65,536:
2 * 65,536 * rotary_dim float32 values, 64 MB at rotary_dim 128). The cache covers 0 .. n-1,
grows by doubling to the largest position used, never past this bound; a call with a larger
position computes its cos/sin directly (memory proportional to the positions it asks for)."""


def _check_max_positions(max_position_embeddings: int) -> None:
    if (isinstance(max_position_embeddings, bool) or not isinstance(max_position_embeddings, int)
            or not 1 <= max_position_embeddings <= MAX_ROPE_POSITIONS):
        raise ValueError(f"max_position_embeddings must be an int in [1, MAX_ROPE_POSITIONS="
                         f"{MAX_ROPE_POSITIONS}], got {max_position_embeddings!r}")


class RotaryEmbedding(nn.Module):
    """RoPE for heads of width ``head_dim``; rotates the first ``rotary_dim`` channels.

    Args:
        head_dim: per-head width d_k.
        base: rope_theta b (10000).
        rotary_dim: rotated channels (even, <= head_dim); default ``head_dim * partial_rotary``.
        partial_rotary_factor: fraction of channels rotated (GPT-NeoX 0.25, Phi 0.5).
        scaling: ``{"rope_type": name, **params}`` for a context-extension method (see
            ``functional/rope_scaling.py``), or None for plain RoPE.
        layout: ``"half"`` or ``"interleaved"`` channel pairing.
        max_position_embeddings: initial size of the cos/sin cache, at most
            :data:`MAX_ROPE_POSITIONS` (the cache itself holds at most
            :data:`ROPE_CACHE_POSITIONS`; it grows on demand).
        precision: how ``inv_freq`` is computed (``functional.rope_scaling.PRECISIONS``):
            ``"float64"`` (default, closest to the exact frequencies) or ``"library"``
            (float32 in transformers' order of operations: a loaded checkpoint's angles, bit
            for bit; :meth:`set_precision` switches). Angles and cos/sin are formed the same
            way in both: float32 ``position * inv_freq``, cos/sin times the attention factor.

    Positions must lie in [0, :data:`MAX_ROPE_POSITIONS`) (integer ids; float positions must be
    finite and below it); others raise ValueError naming ``position_ids``.

    torch conventions: ``inv_freq`` and the cos/sin cache are non-persistent buffers (not in the
    state dict), so they are recomputed when the module leaves the meta device
    (``to_empty``) and, lazily, when a forward finds them still on the meta device (a model
    built under ``torch.device("meta")`` and loaded with ``load_state_dict(..., assign=True)``).
    While traced (``torch.compile(fullgraph=True)``, ``torch.export``) or under
    ``torch.func.vmap`` (see ``functional.rope.can_read_values``), cos/sin of static types are
    computed from the positions without reading them on the host: no cache growth, no range
    checks (those run in eager only); values are the cached ones up to float rounding. The
    length-dependent types (``dynamic``, ``longrope``) pick their frequencies from the largest
    position, a data-dependent read: they still break a full graph.
    """

    inv_freq: Tensor
    cos_cached: Tensor
    sin_cached: Tensor

    def __init__(
        self,
        head_dim: int,
        *,
        base: float = 10000.0,
        rotary_dim: int | None = None,
        partial_rotary_factor: float = 1.0,
        scaling: Mapping[str, Any] | None = None,
        layout: str = "half",
        max_position_embeddings: int = 2048,
        precision: str = "float64",
    ) -> None:
        super().__init__()
        if precision not in PRECISIONS:
            raise ValueError(f"precision must be one of {PRECISIONS}, got {precision!r}")
        if head_dim < 2:
            raise ValueError(f"head_dim must be >= 2, got {head_dim}")
        if rotary_dim is None:
            if not 0.0 < partial_rotary_factor <= 1.0:
                raise ValueError(
                    f"partial_rotary_factor must be in (0, 1], got {partial_rotary_factor}"
                )
            rotary_dim = int(head_dim * partial_rotary_factor)
        if rotary_dim < 2 or rotary_dim % 2 != 0 or rotary_dim > head_dim:
            raise ValueError(
                f"rotary_dim must be even and in [2, head_dim={head_dim}], got {rotary_dim}"
            )
        if layout not in LAYOUTS:
            raise ValueError(f"layout must be one of {LAYOUTS}, got {layout!r}")
        _check_max_positions(max_position_embeddings)
        scaling = dict(scaling or {"rope_type": "default"})
        self.rope_type = str(scaling.pop("rope_type", "default"))
        self.scaling_params = scaling
        self.head_dim, self.rotary_dim, self.base, self.layout = head_dim, rotary_dim, base, layout
        self.precision = precision
        self.initial_positions = min(max_position_embeddings, ROPE_CACHE_POSITIONS)
        self._custom_inv_freq: Tensor | None = None  # CPU copy of from_inv_freq's frequencies
        # frequencies of the length-dependent types by regime (see frequencies()); a decoding
        # step would otherwise recompute and re-validate them in every layer
        self._frequency_memo: dict[Any, tuple[Tensor, float, frozenset[str]]] = {}
        inv_freq, self.attention_factor = compute_rope_frequencies(
            self.rope_type, rotary_dim, base, scaling, None, precision=precision
        )
        self.register_buffer("inv_freq", inv_freq.to(torch.float32), persistent=False)
        self.register_buffer("cos_cached", torch.empty(0, rotary_dim), persistent=False)
        self.register_buffer("sin_cached", torch.empty(0, rotary_dim), persistent=False)
        self._grow_cache(self.initial_positions)

    @classmethod
    def from_inv_freq(cls, head_dim: int, inv_freq: Tensor, *, attention_factor: float = 1.0,
                      layout: str = "half", max_position_embeddings: int = 2048
                      ) -> RotaryEmbedding:
        """A rotary embedding with custom frequencies (d/2,), e.g. for an ablation."""
        if inv_freq.dim() != 1 or 2 * inv_freq.numel() > head_dim:
            raise ValueError(f"inv_freq must be 1-D with 2 * len <= head_dim={head_dim}, got "
                             f"{tuple(inv_freq.shape)}")
        _check_max_positions(max_position_embeddings)
        module = cls(head_dim, rotary_dim=2 * inv_freq.numel(), layout=layout,
                     max_position_embeddings=1)
        module.rope_type = "custom"
        if not inv_freq.is_meta:
            module._custom_inv_freq = inv_freq.detach().to("cpu", torch.float32).clone()
        module.inv_freq = inv_freq.detach().to(torch.float32).clone()
        module.attention_factor = float(attention_factor)
        module.initial_positions = min(max_position_embeddings, ROPE_CACHE_POSITIONS)
        module.cos_cached = torch.empty(0, module.rotary_dim, device=module.inv_freq.device)
        module.sin_cached = torch.empty(0, module.rotary_dim, device=module.inv_freq.device)
        module._grow_cache(module.initial_positions)
        return module

    @property
    def cached_positions(self) -> int:
        """Number of positions (0 .. n-1) the cos/sin cache currently covers."""
        return self.cos_cached.shape[0]

    def _grow_cache(self, needed: int) -> None:
        """Cover positions 0 .. needed-1 (doubling, at most ``ROPE_CACHE_POSITIONS``)."""
        size = max(self.cached_positions, 1)
        while size < needed:
            size *= 2
        size = min(size, ROPE_CACHE_POSITIONS)
        if size <= self.cached_positions:
            return
        positions = torch.arange(size, device=self.inv_freq.device, dtype=torch.float32)
        angles = rope_angles(positions, self.inv_freq)  # (size, d/2) float32
        cos, sin = angles_to_cos_sin(angles, layout=self.layout,
                                     attention_factor=self.attention_factor)
        self.cos_cached, self.sin_cached = cos, sin

    # ---------------------------------------------------------------- meta device / to_empty
    def reset_buffers(self, device: torch.device | str | None = None) -> None:
        """Recompute ``inv_freq`` and the cos/sin cache (non-persistent buffers) on ``device``
        (default: where ``inv_freq`` is), e.g. after ``to_empty`` left them uninitialised."""
        device = self.inv_freq.device if device is None else torch.device(device)
        with torch.device("cpu"):  # escape an enclosing torch.device("meta") context
            if self.rope_type == "custom":
                if self._custom_inv_freq is None:
                    raise ValueError("this RotaryEmbedding was built from meta-device inv_freq; "
                                     "its frequencies cannot be recomputed: rebuild it with "
                                     "RotaryEmbedding.from_inv_freq on a real device")
                inv_freq = self._custom_inv_freq
            else:
                inv_freq, _ = compute_rope_frequencies(
                    self.rope_type, self.rotary_dim, self.base, self.scaling_params, None,
                    precision=self.precision)
        self.inv_freq = inv_freq.to(device=device, dtype=torch.float32)
        self._frequency_memo = {}
        self.cos_cached = torch.empty(0, self.rotary_dim, device=device)
        self.sin_cached = torch.empty(0, self.rotary_dim, device=device)
        if not self.inv_freq.is_meta:
            self._grow_cache(self.initial_positions)

    def _apply(self, fn: Any, recurse: bool = True) -> RotaryEmbedding:
        was_meta = self.inv_freq.is_meta
        super()._apply(fn, recurse)
        if not self.inv_freq.is_meta and (was_meta or _is_to_empty(fn)):  # values are junk
            dtype = self.cos_cached.dtype
            self.reset_buffers(self.inv_freq.device)
            if dtype != torch.float32:  # keep a dtype cast that came with the move
                self.inv_freq = self.inv_freq.to(dtype)
                self.cos_cached, self.sin_cached = (self.cos_cached.to(dtype),
                                                    self.sin_cached.to(dtype))
        return self

    def _materialise(self, device: torch.device) -> None:
        """Buffers still on the meta device (``load_state_dict(assign=True)``): build them."""
        if self.inv_freq.is_meta and device.type != "meta":
            self.reset_buffers(device)

    def frequencies(self, seq_len: int | None = None) -> tuple[Tensor, float]:
        """(inv_freq float32, attention_factor) in effect for a sequence of ``seq_len``."""
        if self.rope_type not in LENGTH_DEPENDENT_TYPES:
            return self.inv_freq, self.attention_factor
        # the lengths that share frequencies share one memo entry: LongRoPE's two factor sets,
        # dynamic NTK's default below L0 (each longer length has its own base); no memo while a
        # planted bug of rope_scaling.py may move the switch
        switch = self.frequency_switch
        assert switch is not None
        if self.rope_type == "longrope":
            regime: Any = seq_len is not None and seq_len > switch
        else:
            regime = None if seq_len is None or seq_len <= switch else seq_len
        key = (regime, self.precision, self.inv_freq.device)
        memo = not active() & SCALING_BUGS
        if memo and key in self._frequency_memo:
            inv, factor, sites = self._frequency_memo[key]
            note_reached(sites)  # the bug sites the computation queried, as if queried again
            return inv, factor
        with recording() as sites:
            inv, factor = compute_rope_frequencies(
                self.rope_type, self.rotary_dim, self.base, self.scaling_params, seq_len,
                precision=self.precision)
        inv = inv.to(device=self.inv_freq.device, dtype=torch.float32)
        if memo:
            if len(self._frequency_memo) >= 4:
                self._frequency_memo.clear()
            self._frequency_memo[key] = (inv, factor, frozenset(sites))
        return inv, factor

    @property
    def frequency_switch(self) -> int | None:
        """The length L0 past which a length-dependent type changes its frequencies (LongRoPE:
        short factors for seq_len <= L0, long ones beyond; dynamic NTK: the base grows with
        seq_len > L0), None for the static types. Keys cached before the switch were rotated
        with the old frequencies: see :attr:`rebuilds_cache_at_switch`."""
        if self.rope_type not in LENGTH_DEPENDENT_TYPES:
            return None
        return int(self.scaling_params["original_max_position_embeddings"])

    @property
    def rebuilds_cache_at_switch(self) -> bool:
        """Whether generation drops the KV cache once, when the sequence first exceeds
        :attr:`frequency_switch`, and recomputes every key with the new frequencies (LongRoPE,
        as transformers' Phi-3 ``prepare_inputs_for_generation`` does). Dynamic NTK keeps its
        cached keys under their older bases, as transformers does."""
        return self.rope_type == "longrope"

    def set_precision(self, precision: str) -> RotaryEmbedding:
        """Compute ``inv_freq`` (and the cos/sin cache) in ``precision`` from now on:
        ``"library"`` gives transformers' float32 frequencies bit for bit (what a checkpoint
        was trained with), ``"float64"`` the float64 ones cast to float32. Returns self."""
        if precision not in PRECISIONS:
            raise ValueError(f"precision must be one of {PRECISIONS}, got {precision!r}")
        if precision != self.precision:
            self.precision = precision
            if self.rope_type != "custom":  # from_inv_freq's frequencies are given, not computed
                dtype = self.cos_cached.dtype
                self.reset_buffers(self.inv_freq.device)
                if dtype != torch.float32:  # keep a dtype cast the module already had
                    self.inv_freq = self.inv_freq.to(dtype)
                    self.cos_cached = self.cos_cached.to(dtype)
                    self.sin_cached = self.sin_cached.to(dtype)
        return self

    def _check_positions(self, position_ids: Tensor) -> None:
        """Eager only: every position in [0, MAX_ROPE_POSITIONS) (float: finite, < max)."""
        if position_ids.is_floating_point():
            if not bool(torch.isfinite(position_ids).all()):
                raise ValueError("position_ids must be finite")
            if float(position_ids.max()) >= MAX_ROPE_POSITIONS:
                raise ValueError(f"position_ids must be < MAX_ROPE_POSITIONS="
                                 f"{MAX_ROPE_POSITIONS}, got max {float(position_ids.max())}")
            return
        if int(position_ids.min()) < 0:
            raise ValueError(f"position_ids must be >= 0, got min {int(position_ids.min())}")
        if int(position_ids.max()) >= MAX_ROPE_POSITIONS:
            raise ValueError(
                f"position_ids must be < MAX_ROPE_POSITIONS={MAX_ROPE_POSITIONS} (float32 holds "
                f"integer positions exactly only below 2^24), got max {int(position_ids.max())}")

    def forward(self, position_ids: Tensor, seq_len: int | None = None) -> tuple[Tensor, Tensor]:
        """cos, sin (float32) of shape (*position_ids.shape, rotary_dim).

        ``seq_len`` (default max position + 1) selects the frequencies of length-dependent types.
        Integer positions of static types are read from the cache, which grows when needed (up
        to ``ROPE_CACHE_POSITIONS``; larger positions are computed for this call only).
        """
        if not isinstance(position_ids, Tensor) or position_ids.is_complex():
            raise TypeError(f"position_ids must be a real tensor, got "
                            f"{getattr(position_ids, 'dtype', type(position_ids).__name__)}")
        self._materialise(position_ids.device)
        if position_ids.numel() == 0:
            empty = torch.empty(*position_ids.shape, self.rotary_dim, device=self.inv_freq.device)
            return empty, empty.clone()
        static = self.rope_type not in LENGTH_DEPENDENT_TYPES
        if static and not can_read_values(position_ids):  # traced/vmapped: no reads, no growth
            return angles_to_cos_sin(rope_angles(position_ids, self.inv_freq),
                                     layout=self.layout, attention_factor=self.attention_factor)
        self._check_positions(position_ids)
        if not static or position_ids.is_floating_point():
            length = int(position_ids.max()) + 1 if seq_len is None else seq_len
            inv, factor = self.frequencies(length)
            angles = rope_angles(position_ids, inv)
            return angles_to_cos_sin(angles, layout=self.layout, attention_factor=factor)
        needed = int(position_ids.max()) + 1
        if needed > ROPE_CACHE_POSITIONS:  # past the cache bound: only what this call asks for
            return angles_to_cos_sin(rope_angles(position_ids, self.inv_freq),
                                     layout=self.layout, attention_factor=self.attention_factor)
        self._grow_cache(needed)
        idx = position_ids.long()
        return self.cos_cached[idx], self.sin_cached[idx]

    def rotate(self, x: Tensor, position_ids: Tensor, seq_len: int | None = None) -> Tensor:
        """Rotate x (B, H, T, head_dim) at positions (T,) or (B, T); returns x's dtype."""
        if x.dim() != 4 or x.shape[-1] != self.head_dim:
            raise ValueError(
                f"x must have shape (batch, heads, seq, {self.head_dim}), got {tuple(x.shape)}"
            )
        cos, sin = self(position_ids, seq_len)
        if cos.dim() == 3:  # (B, T, d) -> (B, 1, T, d)
            cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)
        return apply_rotary(x, cos, sin, layout=self.layout)

    def rotate_pair(self, q: Tensor, k: Tensor, position_ids: Tensor,
                    seq_len: int | None = None) -> tuple[Tensor, Tensor]:
        """``(rotate(q, ...), rotate(k, ...))`` with one cos/sin lookup for both (the same
        numbers; a decoding step then looks the angles up once per layer, not twice)."""
        for name, x in (("q", q), ("k", k)):
            if x.dim() != 4 or x.shape[-1] != self.head_dim:
                raise ValueError(f"{name} must have shape (batch, heads, seq, {self.head_dim}), "
                                 f"got {tuple(x.shape)}")
        cos, sin = self(position_ids, seq_len)
        if cos.dim() == 3:  # (B, T, d) -> (B, 1, T, d)
            cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)
        return (apply_rotary(q, cos, sin, layout=self.layout),
                apply_rotary(k, cos, sin, layout=self.layout))

    def extra_repr(self) -> str:
        return (f"head_dim={self.head_dim}, rotary_dim={self.rotary_dim}, base={self.base}, "
                f"rope_type={self.rope_type!r}, layout={self.layout!r}, "
                f"precision={self.precision!r}")


class RelativePositionBias(nn.Module):
    """A learned logit bias b_h(clip(i - j, -(W-1), W-1)) per head (a simplified T5 bias,
    Raffel et al. 2020): it depends on the offset i - j only, so it is defined at any length.

    ``local=True`` also masks keys with |i - j| >= W (sliding-window attention: every query sees
    at most 2W - 1 keys whatever the length, so softmax weights are not diluted by far keys).
    Queries are the last T of the S key positions (bottom-right alignment, as with a KV cache).
    """

    def __init__(self, num_heads: int, window: int, *, local: bool = False) -> None:
        super().__init__()
        if num_heads < 1 or window < 1:
            raise ValueError(f"num_heads and window must be >= 1, got {num_heads}, {window}")
        self.window, self.local = window, local
        self.bias = nn.Parameter(torch.zeros(num_heads, 2 * window - 1))

    @torch.no_grad()
    def reset_parameters(self, generator: torch.Generator | None = None) -> None:
        """Biases start at 0 (no offset preferred)."""
        self.bias.zero_()

    def forward(self, t: int, s: int) -> Tensor:
        """Additive bias (1, H, T, S)."""
        q_pos = torch.arange(t, device=self.bias.device)[:, None] + (s - t)
        offset = q_pos - torch.arange(s, device=self.bias.device)[None, :]  # (T, S)
        clipped = offset.clamp(-(self.window - 1), self.window - 1)
        bias = self.bias[:, clipped + self.window - 1][None]  # (1, H, T, S)
        if self.local:
            bias = bias.masked_fill(offset.abs() >= self.window, float("-inf"))
        return bias


# ------------------------------------------------------------------------ the position registry
@dataclass
class PositionParts:
    """How one position scheme enters the decoder (``nn/transformer.py``).

    ``embed``: a module ``embed(h, position_ids)`` adding a code to the input (learned,
    sinusoidal); ``rotary``: one RoPE module shared by every attention layer; ``bias``: a module
    ``bias(t, s) -> (1, H, T, S)`` added to every layer's logits; ``alibi``: every attention
    adds the ALiBi bias.
    """

    embed: nn.Module | None = None
    rotary: RotaryEmbedding | None = None
    bias: nn.Module | None = None
    alibi: bool = False


POSITIONS: Registry[Callable[[Any], PositionParts]] = Registry("position")
"""Position schemes ``fn(config: TransformerConfig) -> PositionParts``. Metadata: ``learned``
(has parameters), ``extrapolates`` (defined past ``max_seq_len``), ``description``."""


@POSITIONS.register("none", learned=False, extrapolates=True,
                    description="no position signal (NoPE; causal attention alone)")
def _no_positions(config: Any) -> PositionParts:
    return PositionParts()


@POSITIONS.register("learned", learned=True, extrapolates=False,
                    description="absolute table of max_seq_len rows (GPT-2)")
def _learned_positions(config: Any) -> PositionParts:
    return PositionParts(embed=LearnedPositionalEmbedding(
        config.max_seq_len, config.hidden_size, init_std=config.position_init_std))


@POSITIONS.register("sinusoidal", learned=False, extrapolates=True,
                    description="fixed sin/cos code (Vaswani et al. 2017 §3.5)")
def _sinusoidal_positions(config: Any) -> PositionParts:
    return PositionParts(embed=SinusoidalPositionalEncoding(config.hidden_size))


@POSITIONS.register("rope", learned=False, extrapolates=True,
                    description="rotary q/k (Su et al. 2021), any rope_scaling type")
def _rotary_positions(config: Any) -> PositionParts:
    return PositionParts(rotary=RotaryEmbedding(
        config.dim_per_head, base=config.rope_theta,
        partial_rotary_factor=config.partial_rotary_factor, scaling=config.rope_scaling,
        layout="half", max_position_embeddings=min(config.max_seq_len, 4096)))


@POSITIONS.register("alibi", learned=False, extrapolates=True,
                    description="linear distance bias -m_h |i - j| (Press et al. 2022)")
def _alibi_positions(config: Any) -> PositionParts:
    return PositionParts(alibi=True)


@POSITIONS.register("relative", learned=True, extrapolates=True,
                    description="learned per-head bias of the clipped offset (T5-like)")
def _relative_positions(config: Any) -> PositionParts:
    return PositionParts(bias=RelativePositionBias(config.num_heads, config.relative_window))


@POSITIONS.register("local_relative", learned=True, extrapolates=True,
                    description="the relative bias inside a sliding window, -inf outside")
def _local_relative_positions(config: Any) -> PositionParts:
    return PositionParts(bias=RelativePositionBias(config.num_heads, config.relative_window,
                                                   local=True))
