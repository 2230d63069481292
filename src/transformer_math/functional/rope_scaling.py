"""RoPE frequencies and context-extension methods: one pure function per scaling type.

Every function has the same signature

    fn(rotary_dim: int, base: float, params: Mapping[str, Any], seq_len: int | None)
        -> tuple[Tensor, float]   # (inv_freq (rotary_dim // 2,), attention_factor)

and is looked up by name in :data:`ROPE_SCALING_FUNCTIONS` (the pattern of Hugging Face
``modeling_rope_utils.py``; adding a method never touches the others). Each function validates
its own parameters: a missing required key, an unknown key or a value out of range raises
``ValueError`` naming the key, the expected and the received value.

Notation (FACTS.md, "RoPE and context extension"): ``d`` rotary dim, ``b`` base (rope_theta),
``i = 0 .. d/2 - 1``, ``L0`` = original_max_position_embeddings, ``s`` = factor.

- default:  inv_freq_i = b^(-2i/d), attention_factor 1 (Su et al. 2021, RoFormer eq. 15).
- linear:   inv_freq / s (position interpolation, Chen et al. 2023).
- ntk:      static NTK-aware base b' = b * s^(d/(d-2)) (bloc97 2023).
- dynamic:  for L = seq_len > L0: b' = b * (s L / L0 - (s - 1))^(d/(d-2)); default for L <= L0.
            Pitfall: keys cached under an older base are rotated differently (recompute them).
- yarn:     corr_dim(r) = d ln(L0 / (2 pi r)) / (2 ln b); low = floor(corr_dim(beta_fast)),
            high = ceil(corr_dim(beta_slow)) (no rounding when truncate=False), clamped to
            [0, d-1], high += 0.001 if equal; ramp_j = clamp((j - low)/(high - low), 0, 1),
            extrap = 1 - ramp, inv_freq = (inv/s)(1 - extrap) + inv * extrap;
            attention_factor 0.1 ln s + 1 (Peng et al. 2023), applied to cos AND sin.
- llama3:   wavelen = 2 pi / inv; wavelen > L0/lff: inv/s; wavelen < L0/hff: inv; between:
            sm = (L0/wavelen - lff)/(hff - lff), inv' = (1 - sm) inv/s + sm inv.
- longrope: inv_freq_i = 1 / (ext_i b^(2i/d)) with ext = short_factor (seq_len <= L0) or
            long_factor (seq_len > L0); attention_factor sqrt(1 + ln s / ln L0) (s > 1).

Precision (issue 33 item 2): ``precision="float64"`` (the default; the plain ``Transformer``)
computes the frequencies in float64 and returns float64 (modules cast them to float32 before
forming angles, ``functional/rope.py``): the closest to the exact values. ``precision="library"``
returns float32 frequencies computed as transformers 5.24 computes them, same order of
operations (``functional/rope_library.py``): a loaded checkpoint uses it, since its weights were
trained with those angles; every type ``in_transformers`` has such a formula (``ntk`` has none:
its float64 values are cast to float32). Parameters are validated, and the attention factor
computed (a float64 Python number in both libraries), the same way for both precisions.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import torch
from torch import Tensor

from transformer_math.bugs import active, declare_bug, planted
from transformer_math.functional import rope_library
from transformer_math.registry import Registry

# Planted bugs (issue 14; off unless a caller plants them, see transformer_math/bugs.py). Each
# is killed by position.scaling-methods, which compares every type with the closed forms of
# theory/positions.py.
INV_FREQ_EXPONENT = declare_bug(
    "rope.inv-freq-exponent",
    "theta_i = b^(-i/d) instead of b^(-2i/d) (the pair index where the channel index belongs)",
    module=__name__, seen_in="arange(d/2) / d in place of arange(0, d, 2) / d")
YARN_FACTOR_DROPPED = declare_bug(
    "rope.yarn-attention-factor-dropped",
    "YaRN returns attention factor 1 instead of 0.1 ln s + 1 (the logit temperature is lost)",
    module=__name__, seen_in="YaRN ports that rescale the frequencies but forget mscale")
YARN_FACTOR_SQUARED = declare_bug(
    "rope.yarn-attention-factor-squared",
    "YaRN returns (0.1 ln s + 1)^2: the factor meant for the logits is put on cos and sin, "
    "which already scale the logits by its square",
    module=__name__, seen_in="applying mscale both to cos/sin and to the logits")
DYNAMIC_FIXED_FACTOR = declare_bug(
    "rope.dynamic-fixed-factor",
    "dynamic NTK uses the configured factor as a fixed base growth, not recomputed from the "
    "current length: b' = b s^(d/(d-2)) at every length > L0",
    module=__name__, seen_in="dynamic NTK implementations that cache the first scaled base")
LONGROPE_OFF_BY_ONE = declare_bug(
    "rope.longrope-switch-off-by-one",
    "LongRoPE switches to the long factors at seq_len >= L0 instead of seq_len > L0",
    module=__name__,
    seen_in="the short/long switch of Phi-3 LongRoPE ports (HF: seq_len > "
            "original_max_position_embeddings)")
LLAMA3_BANDS_SWAPPED = declare_bug(
    "rope.llama3-bands-swapped",
    "llama3 scaling with its bands swapped: long wavelengths kept, short ones divided by s",
    module=__name__, seen_in="confusing low_freq_factor / high_freq_factor wavelength bounds")

SCALING_BUGS = frozenset({INV_FREQ_EXPONENT, YARN_FACTOR_DROPPED, YARN_FACTOR_SQUARED,
                          DYNAMIC_FIXED_FACTOR, LONGROPE_OFF_BY_ONE, LLAMA3_BANDS_SWAPPED})
"""The planted bugs of this module (the library precision and the frequency memo of
``nn.position.RotaryEmbedding`` step aside while one is planted; read with ``bugs.active()``,
which records no site)."""

PRECISIONS = ("float64", "library")
"""``precision`` values of :func:`compute_rope_frequencies` (see the module docstring)."""

RopeScalingFn = Callable[[int, float, Mapping[str, Any], "int | None"], tuple[Tensor, float]]

ROPE_SCALING_FUNCTIONS: Registry[RopeScalingFn] = Registry("rope type")
"""RoPE scaling types by name. Metadata (read by the checkpoint reader, ``tmath rope`` and the
tests): ``required`` and ``optional`` parameter names, ``defaults`` of the optional ones that
have one, ``length_dependent`` (frequencies change with the sequence length),
``in_transformers`` (Hugging Face has a ``rope_type`` of the same name and parameters, so a
checkpoint may use it), ``description``."""


def register_rope_scaling(
    name: str,
    *,
    required: tuple[str, ...] = (),
    optional: tuple[str, ...] = (),
    defaults: Mapping[str, Any] | None = None,
    length_dependent: bool = False,
    in_transformers: bool = True,
    description: str = "",
) -> Callable[[RopeScalingFn], RopeScalingFn]:
    """Register ``fn`` as the RoPE scaling type ``name`` with its parameter metadata."""
    return ROPE_SCALING_FUNCTIONS.register(
        name, required=tuple(required), optional=tuple(optional), defaults=dict(defaults or {}),
        length_dependent=length_dependent, in_transformers=in_transformers,
        description=description,
    )


def rope_parameter_names(rope_type: str) -> tuple[str, ...]:
    """Every parameter name ``rope_type`` accepts (required first)."""
    meta = ROPE_SCALING_FUNCTIONS.metadata(rope_type)
    return tuple(meta["required"]) + tuple(meta["optional"])


# ----------------------------------------------------------------------------- validation helpers


def _check_common(rotary_dim: int, base: float) -> None:
    if isinstance(rotary_dim, bool) or not isinstance(rotary_dim, int):
        raise TypeError(f"rotary_dim must be an int, got {type(rotary_dim).__name__}")
    if rotary_dim < 2 or rotary_dim % 2 != 0:
        raise ValueError(f"rotary_dim must be a positive even integer, got {rotary_dim}")
    if not (isinstance(base, int | float) and math.isfinite(base) and base > 1.0):
        raise ValueError(f"base must be a finite number > 1, got {base!r}")


def _check_keys(
    rope_type: str, params: Mapping[str, Any], required: Sequence[str], optional: Sequence[str]
) -> None:
    if not isinstance(params, Mapping):
        raise TypeError(f"params must be a mapping, got {type(params).__name__}")
    missing = [k for k in required if k not in params]
    if missing:
        raise ValueError(
            f"rope type {rope_type!r} needs parameters {list(required)}; missing {missing}"
        )
    allowed = set(required) | set(optional)
    unknown = sorted(set(params) - allowed)
    if unknown:
        raise ValueError(
            f"rope type {rope_type!r} accepts parameters {sorted(allowed)}; got unknown {unknown}"
        )


def _number(rope_type: str, params: Mapping[str, Any], key: str, *, minimum: float,
            strict: bool = False, default: float | None = None) -> float:
    value = params.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValueError(f"{rope_type}: {key} must be a finite number, got {value!r}")
    if value < minimum or (strict and value == minimum):
        rel = ">" if strict else ">="
        raise ValueError(f"{rope_type}: {key} must be {rel} {minimum}, got {value}")
    return float(value)


def _seq_len(seq_len: int | None) -> int | None:
    if seq_len is None:
        return None
    if isinstance(seq_len, bool) or not isinstance(seq_len, int) or seq_len < 1:
        raise ValueError(f"seq_len must be a positive int or None, got {seq_len!r}")
    return seq_len


def default_inv_freq(rotary_dim: int, base: float) -> Tensor:
    """theta_i = b^(-2i/d), i = 0 .. d/2 - 1, float64 (RoFormer eq. 15; 000 §8.3.3 理论 A)."""
    _check_common(rotary_dim, base)
    exponents = torch.arange(0, rotary_dim, 2, dtype=torch.float64) / rotary_dim
    if planted(INV_FREQ_EXPONENT):  # planted bug (killed by position.scaling-methods)
        exponents = torch.arange(rotary_dim // 2, dtype=torch.float64) / rotary_dim
    return 1.0 / (float(base) ** exponents)


# ----------------------------------------------------------------------------- scaling types


@register_rope_scaling("default", description="unscaled b^(-2i/d)")
def _default(
    rotary_dim: int, base: float, params: Mapping[str, Any], seq_len: int | None
) -> tuple[Tensor, float]:
    """Unscaled RoPE: b^(-2i/d), attention factor 1."""
    _check_common(rotary_dim, base)
    _seq_len(seq_len)
    return default_inv_freq(rotary_dim, base), 1.0


@register_rope_scaling("linear", required=("factor",),
                       description="position interpolation: inv_freq / factor")
def _linear(
    rotary_dim: int, base: float, params: Mapping[str, Any], seq_len: int | None
) -> tuple[Tensor, float]:
    """Position interpolation (Chen et al. 2023): every frequency divided by s = factor."""
    _check_common(rotary_dim, base)
    _seq_len(seq_len)
    factor = _number("linear", params, "factor", minimum=1.0)
    return default_inv_freq(rotary_dim, base) / factor, 1.0


@register_rope_scaling("ntk", required=("factor",), in_transformers=False,
                       description="NTK-aware base b * s^(d/(d-2))")
def _ntk(
    rotary_dim: int, base: float, params: Mapping[str, Any], seq_len: int | None
) -> tuple[Tensor, float]:
    """Static NTK-aware scaling: base b' = b * s^(d/(d-2)), so the lowest pair is divided by s."""
    _check_common(rotary_dim, base)
    _seq_len(seq_len)
    if rotary_dim < 4:
        raise ValueError(f"ntk: rotary_dim must be >= 4 (d/(d-2) is undefined), got {rotary_dim}")
    factor = _number("ntk", params, "factor", minimum=1.0)
    new_base = float(base) * factor ** (rotary_dim / (rotary_dim - 2))
    return default_inv_freq(rotary_dim, new_base), 1.0


@register_rope_scaling("dynamic", required=("factor", "original_max_position_embeddings"),
                       length_dependent=True,
                       description="NTK base grown with the sequence length beyond L0")
def _dynamic(
    rotary_dim: int, base: float, params: Mapping[str, Any], seq_len: int | None
) -> tuple[Tensor, float]:
    """Dynamic NTK: b' = b (s L/L0 - (s-1))^(d/(d-2)) at L = seq_len > L0, default otherwise."""
    _check_common(rotary_dim, base)
    if rotary_dim < 4:
        raise ValueError(f"dynamic: rotary_dim must be >= 4, got {rotary_dim}")
    factor = _number("dynamic", params, "factor", minimum=1.0)
    original = _number("dynamic", params, "original_max_position_embeddings", minimum=1.0)
    length = _seq_len(seq_len)
    if length is None or length <= original:
        return default_inv_freq(rotary_dim, base), 1.0
    growth = factor * length / original - (factor - 1.0)
    if planted(DYNAMIC_FIXED_FACTOR):  # planted bug (killed by position.scaling-methods)
        growth = factor
    new_base = float(base) * growth ** (rotary_dim / (rotary_dim - 2))
    return default_inv_freq(rotary_dim, new_base), 1.0


def yarn_correction_dim(num_rotations: float, rotary_dim: int, base: float, original: float
                        ) -> float:
    """corr_dim(r) = d ln(L0 / (2 pi r)) / (2 ln b): the pair index whose wavelength is L0 / r."""
    return rotary_dim * math.log(original / (num_rotations * 2 * math.pi)) / (2 * math.log(base))


def yarn_ramp_bounds(rotary_dim: int, base: float, original: float, beta_fast: float,
                     beta_slow: float, truncate: bool = True) -> tuple[float, float]:
    """(low, high) of YaRN's ramp, clamped to [0, d-1]; high += 0.001 when they coincide."""
    low = yarn_correction_dim(beta_fast, rotary_dim, base, original)
    high = yarn_correction_dim(beta_slow, rotary_dim, base, original)
    if truncate:
        low, high = math.floor(low), math.ceil(high)
    low, high = max(low, 0), min(high, rotary_dim - 1)
    if low == high:
        high += 0.001
    return float(low), float(high)


@register_rope_scaling("yarn", required=("factor", "original_max_position_embeddings"),
                       optional=("beta_fast", "beta_slow", "truncate", "attention_factor"),
                       defaults={"beta_fast": 32.0, "beta_slow": 1.0, "truncate": True},
                       description="ramp between interpolated and kept pairs, tempered logits")
def _yarn(
    rotary_dim: int, base: float, params: Mapping[str, Any], seq_len: int | None
) -> tuple[Tensor, float]:
    """YaRN (Peng et al. 2023): keep high frequencies, interpolate low ones, temper the logits."""
    _check_common(rotary_dim, base)
    _seq_len(seq_len)
    factor = _number("yarn", params, "factor", minimum=1.0)
    original = _number("yarn", params, "original_max_position_embeddings", minimum=1.0)
    beta_fast = _number("yarn", params, "beta_fast", minimum=0.0, strict=True, default=32.0)
    beta_slow = _number("yarn", params, "beta_slow", minimum=0.0, strict=True, default=1.0)
    if beta_fast <= beta_slow:
        raise ValueError(f"yarn: beta_fast must exceed beta_slow, got {beta_fast} <= {beta_slow}")
    truncate = params.get("truncate", True)
    if not isinstance(truncate, bool):
        raise ValueError(f"yarn: truncate must be a bool, got {truncate!r}")
    if "attention_factor" in params:
        attention_factor = _number("yarn", params, "attention_factor", minimum=0.0, strict=True)
    else:
        attention_factor = 0.1 * math.log(factor) + 1.0 if factor > 1.0 else 1.0
    inv = default_inv_freq(rotary_dim, base)
    low, high = yarn_ramp_bounds(rotary_dim, float(base), original, beta_fast, beta_slow, truncate)
    j = torch.arange(rotary_dim // 2, dtype=torch.float64)
    ramp = ((j - low) / (high - low)).clamp(0.0, 1.0)
    extrapolation = 1.0 - ramp
    inv_freq = (inv / factor) * (1.0 - extrapolation) + inv * extrapolation
    if planted(YARN_FACTOR_DROPPED):  # planted bug: falsifier of position.scaling-methods
        attention_factor = 1.0
    if planted(YARN_FACTOR_SQUARED):  # planted bug (killed by position.scaling-methods)
        attention_factor = attention_factor ** 2
    return inv_freq, attention_factor


@register_rope_scaling("llama3", required=("factor", "low_freq_factor", "high_freq_factor",
                                 "original_max_position_embeddings"),
                       description="long wavelengths / factor, short kept, smooth band")
def _llama3(
    rotary_dim: int, base: float, params: Mapping[str, Any], seq_len: int | None
) -> tuple[Tensor, float]:
    """Llama 3.1: long wavelengths divided by s, short ones kept, a smooth band in between."""
    _check_common(rotary_dim, base)
    _seq_len(seq_len)
    factor = _number("llama3", params, "factor", minimum=1.0)
    low = _number("llama3", params, "low_freq_factor", minimum=0.0, strict=True)
    high = _number("llama3", params, "high_freq_factor", minimum=0.0, strict=True)
    original = _number("llama3", params, "original_max_position_embeddings", minimum=1.0)
    if high <= low:
        raise ValueError(
            f"llama3: high_freq_factor must exceed low_freq_factor, got {high} <= {low}"
        )
    inv = default_inv_freq(rotary_dim, base)
    wavelen = 2 * math.pi / inv
    smooth = ((original / wavelen - low) / (high - low)).clamp(0.0, 1.0)
    blended = (1.0 - smooth) * inv / factor + smooth * inv
    inv_freq = torch.where(wavelen > original / low, inv / factor, blended)
    inv_freq = torch.where(wavelen < original / high, inv, inv_freq)
    if planted(LLAMA3_BANDS_SWAPPED):  # planted bug (killed by position.scaling-methods)
        inv_freq = torch.where(wavelen > original / low, inv, blended)
        inv_freq = torch.where(wavelen < original / high, inv / factor, inv_freq)
    return inv_freq, 1.0


def _factor_list(rope_type: str, params: Mapping[str, Any], key: str, pairs: int) -> Tensor:
    value = params[key]
    if not isinstance(value, Sequence) or isinstance(value, str | bytes) or len(value) != pairs:
        got = (f"{len(value)} entries" if isinstance(value, Sequence)
               and not isinstance(value, str | bytes) else repr(value)[:100])
        raise ValueError(f"{rope_type}: {key} must be a list of {pairs} numbers, got {got}")
    if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in value):
        raise ValueError(f"{rope_type}: every entry of {key} must be a number, got "
                         f"{list(value)!r}"[:300])
    out = torch.tensor([float(v) for v in value], dtype=torch.float64)
    if not torch.isfinite(out).all() or (out <= 0).any():
        raise ValueError(f"{rope_type}: every entry of {key} must be a finite number > 0")
    return out


@register_rope_scaling("longrope", required=("short_factor", "long_factor",
                                   "original_max_position_embeddings"),
                       optional=("factor", "attention_factor"), defaults={"factor": 1.0},
                       length_dependent=True,
                       description="searched per-pair factors, short or long by length")
def _longrope(
    rotary_dim: int, base: float, params: Mapping[str, Any], seq_len: int | None
) -> tuple[Tensor, float]:
    """LongRoPE (Ding et al. 2024): searched per-pair factors, short or long by sequence length."""
    _check_common(rotary_dim, base)
    pairs = rotary_dim // 2
    short = _factor_list("longrope", params, "short_factor", pairs)
    long = _factor_list("longrope", params, "long_factor", pairs)
    original = _number("longrope", params, "original_max_position_embeddings", minimum=2.0)
    factor = _number("longrope", params, "factor", minimum=1.0, default=1.0)
    if "attention_factor" in params:
        attention_factor = _number("longrope", params, "attention_factor", minimum=0.0,
                                   strict=True)
    else:
        attention_factor = (
            math.sqrt(1.0 + math.log(factor) / math.log(original)) if factor > 1.0 else 1.0
        )
    length = _seq_len(seq_len)
    base_inv = default_inv_freq(rotary_dim, base)
    for factors in (short, long):  # both sets checked, whichever this length uses
        _check_finite("longrope", params, base_inv / factors, attention_factor)
    ext = long if length is not None and length > original else short
    if planted(LONGROPE_OFF_BY_ONE):  # planted bug (killed by position.scaling-methods)
        ext = long if length is not None and length >= original else short
    inv_freq = default_inv_freq(rotary_dim, base) / ext  # 1 / (ext_i b^(2i/d))
    return inv_freq, attention_factor


def rope_types() -> list[str]:
    """Names of the registered scaling types."""
    return sorted(ROPE_SCALING_FUNCTIONS.names())


def compute_rope_frequencies(
    rope_type: str,
    rotary_dim: int,
    base: float = 10000.0,
    params: Mapping[str, Any] | None = None,
    seq_len: int | None = None,
    *,
    precision: str = "float64",
) -> tuple[Tensor, float]:
    """Look up ``rope_type`` in the registry and return ``(inv_freq, attention_factor)``.

    ``params`` holds that type's own parameters (e.g. ``{"factor": 4.0}`` for ``linear``);
    ``seq_len`` matters only for the length-dependent types (``dynamic``, ``longrope``).
    ``precision``: ``"float64"`` (float64 frequencies) or ``"library"`` (float32, as
    transformers computes them; see the module docstring).
    """
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {PRECISIONS}, got {precision!r}")
    if not isinstance(rope_type, str) or rope_type not in ROPE_SCALING_FUNCTIONS:
        raise ValueError(f"rope_type must be one of {rope_types()}, got {rope_type!r}")
    if params is not None and not isinstance(params, Mapping):
        raise TypeError(f"params of rope type {rope_type!r} must be a mapping (name -> value), "
                        f"got {type(params).__name__}")
    meta = ROPE_SCALING_FUNCTIONS.metadata(rope_type)
    params = dict(params or {})
    _check_keys(rope_type, params, meta["required"], meta["optional"])
    try:
        inv_freq, attention_factor = ROPE_SCALING_FUNCTIONS.get(rope_type)(
            rotary_dim, base, params, seq_len)
    except (OverflowError, ZeroDivisionError) as exc:  # e.g. a yarn beta of 5e-324
        raise ValueError(f"{rope_type}: parameters {params} give no finite frequencies "
                         f"({exc})") from None
    inv_freq, attention_factor = _check_finite(rope_type, params, inv_freq, attention_factor)
    if precision == "float64" or inv_freq.device.type == "meta":
        return inv_freq, attention_factor
    library = _LIBRARY_FORMULAS.get(rope_type)
    if library is None or active() & SCALING_BUGS:
        # no transformers formula (ntk), or a planted bug of this module is on: it must act on
        # both precisions, so the (buggy) float64 values are used
        return inv_freq.to(torch.float32), attention_factor
    return library(rotary_dim, float(base), params, seq_len), attention_factor


# ------------------------------------------------------- transformers' float32 formulas (library)
# The parameters were validated by the float64 function of the same type; values enter as the
# config holds them (an int factor stays an int, as in transformers).


def _library_default(d: int, base: float, p: Mapping[str, Any], n: int | None) -> Tensor:
    return rope_library.library_default(d, base)


def _library_linear(d: int, base: float, p: Mapping[str, Any], n: int | None) -> Tensor:
    return rope_library.library_linear(d, base, p["factor"])


def _library_dynamic(d: int, base: float, p: Mapping[str, Any], n: int | None) -> Tensor:
    return rope_library.library_dynamic(d, base, p["factor"],
                                        p["original_max_position_embeddings"], n)


def _library_yarn(d: int, base: float, p: Mapping[str, Any], n: int | None) -> Tensor:
    low, high = yarn_ramp_bounds(d, base, float(p["original_max_position_embeddings"]),
                                 float(p.get("beta_fast", 32.0)), float(p.get("beta_slow", 1.0)),
                                 p.get("truncate", True))
    return rope_library.library_yarn(d, base, p["factor"], low, high)


def _library_llama3(d: int, base: float, p: Mapping[str, Any], n: int | None) -> Tensor:
    return rope_library.library_llama3(d, base, p["factor"], p["low_freq_factor"],
                                       p["high_freq_factor"],
                                       p["original_max_position_embeddings"])


def _library_longrope(d: int, base: float, p: Mapping[str, Any], n: int | None) -> Tensor:
    long = n is not None and n > p["original_max_position_embeddings"]
    return rope_library.library_longrope(d, base, p["long_factor" if long else "short_factor"])


_LIBRARY_FORMULAS: dict[str, Callable[[int, float, Mapping[str, Any], int | None], Tensor]] = {
    "default": _library_default, "linear": _library_linear, "dynamic": _library_dynamic,
    "yarn": _library_yarn, "llama3": _library_llama3, "longrope": _library_longrope,
}


INV_FREQ_RANGE = (1e-30, 1e30)
"""The inverse frequencies a checkpoint may give, in radians per position: well inside float32
(1.2e-38 .. 3.4e38), so that angles at 10^7 positions stay finite and no pair collapses to 0.
Published models use 1e-9 .. 1 (base up to 1e9, factors up to 1e3)."""
ATTENTION_FACTOR_RANGE = (1e-3, 1e3)
"""The attention (mscale) factors accepted: it multiplies cos and sin, so q.k by its square;
published values are 1 .. 1.4 (YaRN's 0.1 ln s + 1, LongRoPE's sqrt(1 + ln s / ln L))."""


def _check_finite(rope_type: str, params: Mapping[str, Any], inv_freq: Tensor,
                  attention_factor: Any) -> tuple[Tensor, float]:
    """Refuse scaling parameters whose frequencies or attention factor leave the ranges where
    the angles and the logits stay finite and non-zero in float32 (issue 39 item 4)."""
    lo, hi = INV_FREQ_RANGE
    if inv_freq.device.type == "meta":  # a shape-only skeleton: its real build checks values
        return inv_freq, attention_factor
    if not torch.isfinite(inv_freq).all() or (inv_freq < lo).any() or (inv_freq > hi).any():
        bad = inv_freq[~(torch.isfinite(inv_freq) & (inv_freq >= lo) & (inv_freq <= hi))]
        raise ValueError(f"{rope_type}: the parameters give inverse frequencies outside "
                         f"[{lo:g}, {hi:g}] (e.g. {float(bad[0]):.3g}), where float32 angles are "
                         "not finite or collapse to 0; check factor, short_factor/long_factor")
    af = float(attention_factor)
    a_lo, a_hi = ATTENTION_FACTOR_RANGE
    if not (math.isfinite(af) and a_lo <= af <= a_hi):
        raise ValueError(f"{rope_type}: attention_factor {af:g} is outside [{a_lo:g}, {a_hi:g}]"
                         " (it scales the logits by its square)")
    return inv_freq, attention_factor


LENGTH_DEPENDENT_TYPES = frozenset(ROPE_SCALING_FUNCTIONS.where(length_dependent=True))
