"""RoPE inverse frequencies in float32, in the order of operations of transformers 5.24.

A checkpoint was trained (and is served) with its library's angles, so a loaded checkpoint
computes them the same way (``precision="library"`` of
:func:`transformer_math.functional.rope_scaling.compute_rope_frequencies`); the float64 formulas
of that module stay the default of the plain ``Transformer`` (closer to the exact values).

What "the same way" means (read from transformers' ``modeling_rope_utils.py`` 5.24; the formulas
are those of ``rope_scaling.py``, only the arithmetic differs):

- exponents e_i = float32(2i) / d, i = 0 .. d/2 - 1, then b ** e (a float32 power, the base
  rounded to float32) and 1 / that, all float32;
- linear: the default frequencies divided by s;
- dynamic NTK, for L > L0: the grown base b (s L / L0 - (s - 1))^(d/(d-2)) is a float32 0-dim
  tensor (L is an int64 tensor, as transformers reads it from the position ids), then raised
  elementwise as above; L <= L0 gives the default frequencies;
- yarn: p = b ** e, extrapolated 1/p, interpolated 1/(s p), ramp (j - low)/(high - low) clamped
  to [0, 1] in float32, extrap = 1 - ramp, inv = interp (1 - extrap) + extrap_inv extrap;
- llama3: wavelength 2 pi / inv in float32, the two bands by ``torch.where``, the smooth band
  (1 - sm) inv / s + sm inv;
- longrope: 1 / (ext * b ** e) with ext the float32 short or long factors.

Scalars (factors, bounds, L0) enter as the Python numbers the config holds, as they do there.
Every function returns a float32 tensor of d/2 entries; the attention factor (a float64 Python
number in both libraries) is computed by ``rope_scaling.py``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from torch import Tensor


def library_exponents(rotary_dim: int) -> Tensor:
    """e_i = 2i / d in float32 (``arange(0, d, 2)`` as int64, cast, divided by d)."""
    return torch.arange(0, rotary_dim, 2, dtype=torch.int64).to(torch.float32) / rotary_dim


def library_default(rotary_dim: int, base: float) -> Tensor:
    """1 / b ** e in float32 (the base rounded to float32 by the power)."""
    return 1.0 / (base ** library_exponents(rotary_dim))


def library_linear(rotary_dim: int, base: float, factor: float) -> Tensor:
    """The default float32 frequencies divided by s."""
    inv_freq = library_default(rotary_dim, base)
    inv_freq /= factor
    return inv_freq


def library_dynamic(rotary_dim: int, base: float, factor: float, original: int,
                    seq_len: int | None) -> Tensor:
    """Dynamic NTK: for L = seq_len > L0 the base b (s L / L0 - (s - 1))^(d/(d-2)) formed as a
    float32 0-dim tensor (L an int64 tensor), then 1 / b' ** e; default frequencies otherwise
    (transformers keeps its initial frequencies until the length grows past L0)."""
    if seq_len is None or seq_len <= original:
        return library_default(rotary_dim, base)
    length = torch.maximum(torch.tensor(seq_len, dtype=torch.int64),
                           torch.tensor(original, dtype=torch.int64))
    grown = base * ((factor * length / original) - (factor - 1)) ** (
        rotary_dim / (rotary_dim - 2))
    return 1.0 / (grown ** library_exponents(rotary_dim))


def library_yarn(rotary_dim: int, base: float, factor: float, low: float, high: float) -> Tensor:
    """YaRN's blend in float32 for the ramp bounds (low, high) (already clamped, and with
    high = low + 0.001 where they coincided)."""
    pos_freqs = base ** library_exponents(rotary_dim)
    extrapolated = 1.0 / pos_freqs
    interpolated = 1.0 / (factor * pos_freqs)
    ramp = ((torch.arange(rotary_dim // 2, dtype=torch.float32) - low) / (high - low))
    extrapolation = 1 - ramp.clamp(0, 1)
    return interpolated * (1 - extrapolation) + extrapolated * extrapolation


def library_llama3(rotary_dim: int, base: float, factor: float, low_freq_factor: float,
                   high_freq_factor: float, original: float) -> Tensor:
    """Llama 3.1 bands in float32: wavelength > L0/lff divided by s, < L0/hff kept, smooth
    (1 - sm) inv / s + sm inv in between, sm = (L0 / wavelength - lff) / (hff - lff)."""
    inv_freq = library_default(rotary_dim, base)
    low_wavelen = original / low_freq_factor
    high_wavelen = original / high_freq_factor
    wavelen = 2 * math.pi / inv_freq
    banded = torch.where(wavelen > low_wavelen, inv_freq / factor, inv_freq)
    smooth = (original / wavelen - low_freq_factor) / (high_freq_factor - low_freq_factor)
    smoothed = (1 - smooth) * banded / factor + smooth * banded
    medium = ~(wavelen < high_wavelen) * ~(wavelen > low_wavelen)
    return torch.where(medium, smoothed, banded)


def library_longrope(rotary_dim: int, base: float, ext: Sequence[float]) -> Tensor:
    """1 / (ext * b ** e) in float32, ``ext`` the short or the long factors."""
    factors = torch.tensor(list(ext), dtype=torch.float32)
    return 1.0 / (factors * base ** library_exponents(rotary_dim))
