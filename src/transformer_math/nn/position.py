"""Position modules: sinusoidal code, learned embedding, ALiBi and rotary embedding.

Thin wrappers around ``functional/positional.py`` and ``functional/rope.py`` (000 §8.3.3; Vaswani
et al. 2017 §3.5; Press et al. 2022; Su et al. 2021; context-extension methods as in FACTS.md).

- :class:`SinusoidalPositionalEncoding` adds PE[pos] (no parameters, any length).
- :class:`LearnedPositionalEmbedding` adds a trained row per position; the table has a fixed size
  and a position past it raises ``IndexError`` (it cannot extrapolate: 000 §8.3.3 "朴素方案三").
- :class:`ALiBi` returns the additive bias -m_h |i - j| for given query/key positions.
- :class:`RelativePositionBias` is a learned per-head bias of the clipped offset i - j.
- :data:`POSITIONS` names the schemes the decoder can be built with (one function each).
- :class:`RotaryEmbedding` rotates q and k. Angles and cos/sin are always float32; for static
  scaling types a cos/sin table is cached and grows (doubling) on demand; for the
  length-dependent types (``dynamic``, ``longrope``) the frequencies are recomputed for the
  current sequence length at each call (so keys cached under an older base are NOT consistent
  with later queries: recompute them, as FACTS.md warns).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor, nn

from transformer_math.bugs import declare_bug, planted
from transformer_math.functional.positional import alibi_bias, alibi_slopes, sinusoidal_encoding
from transformer_math.functional.rope import LAYOUTS, angles_to_cos_sin, apply_rotary, rope_angles
from transformer_math.functional.rope_scaling import (
    LENGTH_DEPENDENT_TYPES,
    compute_rope_frequencies,
)
from transformer_math.registry import Registry

# Planted bug (issue 14; off unless a caller plants it, see transformer_math/bugs.py).
LEARNED_SILENT_CLAMP = declare_bug(
    "position.learned-silent-clamp",
    "a learned position table silently clamps positions past its last row (reuses row "
    "num_positions - 1) instead of raising",
    module=__name__, seen_in="position_ids.clamp(max=max_position_embeddings - 1) guards")


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
        if planted(LEARNED_SILENT_CLAMP):  # planted bug: falsifier of learned-embedding-limit
            return self.weight[positions.long().clamp(0, self.num_positions - 1)]
        if positions.numel() and (int(positions.max()) >= self.num_positions
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
    """Additive attention bias -m_h |i - j| (Press et al. 2022); slopes for any head count."""

    slopes: Tensor

    def __init__(self, num_heads: int) -> None:
        super().__init__()
        self.num_heads = num_heads
        self.register_buffer("slopes", alibi_slopes(num_heads), persistent=False)

    def forward(self, query_positions: Tensor, key_positions: Tensor) -> Tensor:
        """Bias of shape (1, H, T, S) for 1-D query positions (T,) and key positions (S,)."""
        return alibi_bias(self.slopes, query_positions, key_positions).unsqueeze(0)


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
        max_position_embeddings: initial size of the cos/sin cache (grows on demand).
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
    ) -> None:
        super().__init__()
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
        scaling = dict(scaling or {"rope_type": "default"})
        self.rope_type = str(scaling.pop("rope_type", "default"))
        self.scaling_params = scaling
        self.head_dim, self.rotary_dim, self.base, self.layout = head_dim, rotary_dim, base, layout
        inv_freq, self.attention_factor = compute_rope_frequencies(
            self.rope_type, rotary_dim, base, scaling, None
        )
        self.register_buffer("inv_freq", inv_freq.to(torch.float32), persistent=False)
        self.register_buffer("cos_cached", torch.empty(0, rotary_dim), persistent=False)
        self.register_buffer("sin_cached", torch.empty(0, rotary_dim), persistent=False)
        self._grow_cache(max(1, max_position_embeddings))

    @classmethod
    def from_inv_freq(cls, head_dim: int, inv_freq: Tensor, *, attention_factor: float = 1.0,
                      layout: str = "half", max_position_embeddings: int = 2048
                      ) -> RotaryEmbedding:
        """A rotary embedding with custom frequencies (d/2,), e.g. for an ablation."""
        if inv_freq.dim() != 1 or 2 * inv_freq.numel() > head_dim:
            raise ValueError(f"inv_freq must be 1-D with 2 * len <= head_dim={head_dim}, got "
                             f"{tuple(inv_freq.shape)}")
        module = cls(head_dim, rotary_dim=2 * inv_freq.numel(), layout=layout,
                     max_position_embeddings=1)
        module.rope_type = "custom"
        module.inv_freq = inv_freq.detach().to(torch.float32).clone()
        module.attention_factor = float(attention_factor)
        module.cos_cached = torch.empty(0, module.rotary_dim)
        module.sin_cached = torch.empty(0, module.rotary_dim)
        module._grow_cache(max(1, max_position_embeddings))
        return module

    @property
    def cached_positions(self) -> int:
        """Number of positions (0 .. n-1) the cos/sin cache currently covers."""
        return self.cos_cached.shape[0]

    def _grow_cache(self, needed: int) -> None:
        size = max(self.cached_positions, 1)
        while size < needed:
            size *= 2
        if size == self.cached_positions:
            return
        positions = torch.arange(size, device=self.inv_freq.device, dtype=torch.float32)
        angles = rope_angles(positions, self.inv_freq)  # (size, d/2) float32
        cos, sin = angles_to_cos_sin(angles, layout=self.layout,
                                     attention_factor=self.attention_factor)
        self.cos_cached, self.sin_cached = cos, sin

    def frequencies(self, seq_len: int | None = None) -> tuple[Tensor, float]:
        """(inv_freq float32, attention_factor) in effect for a sequence of ``seq_len``."""
        if self.rope_type not in LENGTH_DEPENDENT_TYPES:
            return self.inv_freq, self.attention_factor
        inv, factor = compute_rope_frequencies(
            self.rope_type, self.rotary_dim, self.base, self.scaling_params, seq_len
        )
        return inv.to(device=self.inv_freq.device, dtype=torch.float32), factor

    def forward(self, position_ids: Tensor, seq_len: int | None = None) -> tuple[Tensor, Tensor]:
        """cos, sin (float32) of shape (*position_ids.shape, rotary_dim).

        ``seq_len`` (default max position + 1) selects the frequencies of length-dependent types.
        Integer positions of static types are read from the cache, which grows when needed.
        """
        if position_ids.numel() == 0:
            empty = torch.empty(*position_ids.shape, self.rotary_dim, device=self.inv_freq.device)
            return empty, empty.clone()
        if not position_ids.is_floating_point() and int(position_ids.min()) < 0:
            raise ValueError(f"position_ids must be >= 0, got min {int(position_ids.min())}")
        length = int(position_ids.max()) + 1 if seq_len is None else seq_len
        if self.rope_type in LENGTH_DEPENDENT_TYPES or position_ids.is_floating_point():
            inv, factor = self.frequencies(length)
            angles = rope_angles(position_ids, inv)
            return angles_to_cos_sin(angles, layout=self.layout, attention_factor=factor)
        self._grow_cache(int(position_ids.max()) + 1)
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

    def extra_repr(self) -> str:
        return (f"head_dim={self.head_dim}, rotary_dim={self.rotary_dim}, base={self.base}, "
                f"rope_type={self.rope_type!r}, layout={self.layout!r}")


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
