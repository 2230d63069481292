"""Rotary position embedding (RoPE): angle tables, application, channel layouts, N-D (axial) RoPE.

Math (000 §8.3.3 理论 B; Su et al. 2021, RoFormer eq. 13-15). Split a head vector of rotary dim
``d`` into d/2 planes; plane ``i`` at position ``m`` is rotated by the angle m * theta_i,

    R_{m,i} = [[cos m theta_i, -sin m theta_i], [sin m theta_i, cos m theta_i]] in SO(2),
    R_m = diag(R_{m,0}, ..., R_{m,d/2-1}),   <R_m q, R_n k> = q^T R_{n-m} k,

so attention logits depend on positions only through n - m. In complex form a plane is
z_i = x_a + i x_b and the rotation is z_i -> e^{i m theta_i} z_i.

Two channel layouts pair the channels differently (FACTS.md, "Layouts"):
- ``"half"`` (GPT-NeoX / Hugging Face): plane i = channels (i, i + d/2);
  x' = x * cos + rotate_half(x) * sin with rotate_half(x) = cat(-x2, x1), cos = cat(c, c).
- ``"interleaved"`` (RoFormer / Meta Llama): plane i = channels (2i, 2i + 1);
  x' = x * cos + rotate_interleaved(x) * sin, (x0, x1) -> (-x1, x0), cos = repeat_interleave(c, 2).
Both are the same rotation up to the channel permutation
:func:`interleaved_to_half_permutation`; loading Meta weights into a half-layout model needs that
permutation of the q/k projection rows (:func:`interleaved_to_half_qk_weight`).

Precision (FACTS.md): angles ``position * inv_freq`` and cos/sin are ALWAYS formed in float32,
whatever the dtype of q/k; the rotation itself is evaluated in float32 (float64 for float64
inputs) and cast back.

Transforms: :func:`apply_rotary` works under ``torch.func`` (vmap, grad), ``torch.compile``
(fullgraph) and ``torch.export``; its preallocated ``out=`` fast path is taken only for plain
eager tensors (see :func:`can_read_values`); every other case builds the same values from new
tensors.

Partial rotary (GPT-NeoX, Phi): only the first ``rotary_dim`` channels of a head are rotated; the
rest pass through unchanged.

N-D / axial RoPE (Qwen2-VL M-RoPE; Liu & Zhou 2025, arXiv 2504.06308): the d/2 planes are split
into per-axis sections; plane j in section a is rotated by coordinate p_a: angle_j = p_{a(j)}
theta_j. Then <R_p q, R_r k> depends only on r - p, and equal coordinates reduce to 1-D RoPE.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from torch import Tensor

from transformer_math.bugs import declare_bug, planted

LAYOUTS = ("half", "interleaved")

# Planted bugs (issue 14; off unless a caller plants them, see transformer_math/bugs.py).
ANGLES_IN_BF16 = declare_bug(
    "rope.angles-in-bf16",
    "form the angles position * inv_freq in bfloat16 (the model's dtype) instead of float32",
    module=__name__,
    seen_in="rotary angles formed in the model's bf16 dtype (FACTS.md: phase error ~2.5 rad at "
            "position 2048); HF forms them in float32 with autocast disabled")
COS_SIN_SWAPPED = declare_bug(
    "rope.cos-sin-swapped",
    "angles_to_cos_sin returns (sin, cos) instead of (cos, sin): every plane is rotated by "
    "m theta - pi/2",
    module=__name__, seen_in="unpacking a (cos, sin) cache tuple in the wrong order")
ROTATION_SIGN = declare_bug(
    "rope.rotation-sign",
    "the second member of every plane gets b cos - a sin instead of b cos + a sin (a sign slip "
    "in the hand-fused rotation): no longer a rotation, logits depend on m + n",
    module=__name__, seen_in="sign errors in hand-written rotate_half / fused RoPE kernels")
LAYOUT_NO_PERMUTATION = declare_bug(
    "rope.layout-no-permutation",
    "interleaved_to_half_permutation returns the identity: interleaved (Meta) channels are used "
    "in the half (Hugging Face) layout without the (0, 2, 4, ..., 1, 3, ...) permutation",
    module=__name__,
    seen_in="loading Meta Llama weights into a rotate-half model without permuting q/k "
            "(the HF convert_llama_weights_to_hf permute step)")
AXIAL_SECTIONS_INTERLEAVED = declare_bug(
    "rope.axial-sections-interleaved",
    "axial RoPE assigns plane j to axis j mod n_axes (interleaved) instead of contiguous "
    "sections (Qwen2-VL M-RoPE mrope_section)",
    module=__name__,
    seen_in="the contiguous vs interleaved M-RoPE section layouts of Qwen2-VL and Qwen3-VL")


def is_tracing() -> bool:
    """True while ``torch.compile`` / ``torch.export``, ``torch.jit.trace`` or ``torch.fx``
    traces the code: data-dependent Python (``int(tensor)``, in-place ``out=`` kernels on views,
    growing a cache) is then avoided, so a traced graph has no break."""
    return bool(torch.compiler.is_compiling() or torch.jit.is_tracing()
                or torch.fx._symbolic_trace.is_fx_symbolic_tracing())


def can_read_values(*tensors: Tensor) -> bool:
    """True when Python may read these tensors' values (``int(t.max())``) and use ``out=``
    kernels: eager mode, not traced (:func:`is_tracing`) and not wrapped by ``torch.func``
    (vmap has no ``.item()`` and no batching rule for ``out=`` kernels), and not on the meta
    device (no values: a shape-only dry run). Data-dependent checks and caches run only then;
    otherwise the same values come from pure tensor ops."""
    if is_tracing() or any(t.device.type == "meta" for t in tensors):
        return False
    return not any(torch._C._functorch.is_functorch_wrapped_tensor(t) for t in tensors)


def _check_layout(layout: str) -> None:
    if layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {LAYOUTS}, got {layout!r}")


def _check_inv_freq(inv_freq: Tensor) -> None:
    if not isinstance(inv_freq, Tensor) or inv_freq.dim() != 1 or inv_freq.numel() == 0:
        shape = tuple(inv_freq.shape) if isinstance(inv_freq, Tensor) else type(inv_freq).__name__
        raise ValueError(f"inv_freq must be a non-empty 1-D tensor (rotary_dim // 2,), got {shape}")


def rope_angles(positions: Tensor, inv_freq: Tensor) -> Tensor:
    """Angles m * theta_i in float32: positions (...,) and inv_freq (d/2,) -> (..., d/2).

    Positions are cast to float32 (exact for |m| < 2^24) and multiplied in float32, never in the
    dtype of the model (in bf16 the phase error at m = 2048 is about 2.5 rad; FACTS.md).
    """
    _check_inv_freq(inv_freq)
    if not isinstance(positions, Tensor):
        raise TypeError(f"positions must be a tensor, got {type(positions).__name__}")
    if positions.is_complex():
        raise TypeError("positions must be real (integer or float)")
    pos = positions.to(torch.float32)
    if planted(ANGLES_IN_BF16):  # planted bug: falsifier of position.rope-precision
        low = pos.to(torch.bfloat16).unsqueeze(-1) * inv_freq.to(pos.device, torch.bfloat16)
        return low.to(torch.float32)
    return pos.unsqueeze(-1) * inv_freq.to(device=pos.device, dtype=torch.float32)


def angles_to_cos_sin(angles: Tensor, *, layout: str = "half", attention_factor: float = 1.0
                      ) -> tuple[Tensor, Tensor]:
    """(..., d/2) float32 angles -> (cos, sin) of shape (..., d) in the given channel layout.

    ``attention_factor`` multiplies both cos and sin (YaRN's temperature: logits scale by its
    square).
    """
    _check_layout(layout)
    angles = angles.to(torch.float32)
    if layout == "half":
        full = torch.cat([angles, angles], dim=-1)  # (..., d): plane i at channels i, i + d/2
    else:
        full = angles.repeat_interleave(2, dim=-1)  # (..., d): plane i at channels 2i, 2i + 1
    if planted(COS_SIN_SWAPPED):  # planted bug: falsifier of position.rope-group-property
        return full.sin() * attention_factor, full.cos() * attention_factor
    return full.cos() * attention_factor, full.sin() * attention_factor


def rope_cos_sin(positions: Tensor, inv_freq: Tensor, *, layout: str = "half",
                 attention_factor: float = 1.0) -> tuple[Tensor, Tensor]:
    """cos/sin tables (..., d) in float32 for integer or float ``positions`` (...,)."""
    return angles_to_cos_sin(rope_angles(positions, inv_freq), layout=layout,
                             attention_factor=attention_factor)


def rotate_half(x: Tensor) -> Tensor:
    """(x1, x2) -> (-x2, x1) on the two halves of the last axis (GPT-NeoX layout)."""
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat([-x2, x1], dim=-1)


def rotate_interleaved(x: Tensor) -> Tensor:
    """(x_{2i}, x_{2i+1}) -> (-x_{2i+1}, x_{2i}) on every adjacent pair (RoFormer layout)."""
    pairs = x.unflatten(-1, (-1, 2))  # (..., d/2, 2)
    return torch.stack([-pairs[..., 1], pairs[..., 0]], dim=-1).flatten(-2)


def _broadcast(a: torch.Size, b: torch.Size) -> torch.Size | tuple[int, ...]:
    """``torch.broadcast_shapes(a, b)`` with a fast path for ``b`` broadcasting into ``a`` (the
    usual cos/sin against q/k; ``torch.broadcast_shapes`` is a Python reference costing tens of
    microseconds, a visible share of a decoding step)."""
    tail = a[len(a) - len(b):]
    if len(b) <= len(a) and all(m in (1, n) for m, n in zip(b, tail, strict=True)):
        return a
    return torch.broadcast_shapes(a, b)


def apply_rotary(x: Tensor, cos: Tensor, sin: Tensor, *, layout: str = "half") -> Tensor:
    """Rotate the first ``cos.shape[-1]`` channels of ``x``: x' = x cos + rot(x) sin.

    ``x`` is (..., seq, head_dim), e.g. (B, H, T, D); ``cos``/``sin`` are (seq, d) or broadcast
    to x's leading axes, e.g. (B, 1, T, d). Channels past ``d`` (partial rotary) pass unchanged.
    The rotation is evaluated in float32 (float64 for float64 inputs) and the result has x's
    dtype, so bf16/fp16 models keep full-precision angles (FACTS.md, RoPE precision).
    """
    _check_layout(layout)
    if not isinstance(x, Tensor) or not x.is_floating_point():
        raise TypeError(f"x must be a floating tensor, got {getattr(x, 'dtype', type(x))}")
    if cos.shape != sin.shape:
        raise ValueError(f"cos and sin must share a shape, got {tuple(cos.shape)}, "
                         f"{tuple(sin.shape)}")
    rotary_dim = cos.shape[-1]
    if rotary_dim % 2 != 0 or rotary_dim > x.shape[-1] or rotary_dim == 0:
        raise ValueError(
            f"cos/sin last dim (rotary_dim) must be even and in [2, head_dim={x.shape[-1]}], "
            f"got {rotary_dim}"
        )
    if cos.dim() >= 2 and x.dim() >= 2 and cos.shape[-2] != x.shape[-2]:
        raise ValueError(
            f"cos/sin cover {cos.shape[-2]} positions but x has seq length {x.shape[-2]}"
        )
    work = torch.promote_types(x.dtype, torch.float32)  # float32, or float64 for float64 x
    if (x.numel() <= SMALL_ROTATION and layout == "half" and rotary_dim == x.shape[-1]
            and x.dtype == work and cos.dtype == work and sin.dtype == work):
        return _rotate_half_small(x, cos, sin)
    r32 = x[..., :rotary_dim].to(work)
    cos32, sin32 = cos.to(work), sin.to(work)
    # x cos + rot(x) sin evaluated plane by plane: first members a' = a cos - b sin, second
    # members b' = b cos + a sin. Differentiable, and it avoids materialising rot(x) and a
    # full-size product (several times faster than the cat-based rotate-half form).
    if layout == "half":
        first, second = slice(0, rotary_dim // 2), slice(rotary_dim // 2, rotary_dim)
    else:
        first, second = slice(0, rotary_dim, 2), slice(1, rotary_dim, 2)
    a, b = r32[..., first], r32[..., second]
    # b' = b cos + a sin; the planted bug flips that sign (falsifier of position.rope-relative)
    sign = -1.0 if planted(ROTATION_SIGN) else 1.0
    needs_grad = torch.is_grad_enabled() and (
        x.requires_grad or cos.requires_grad or sin.requires_grad
    )
    if needs_grad or not can_read_values(x, cos, sin):
        # out= kernels record no autograd and have no vmap batching rule, and traced graphs
        # prefer pure ops: build the result from new tensors (same values)
        new_a = torch.addcmul(a * cos32[..., first], b, sin32[..., first], value=-1.0)
        new_b = torch.addcmul(b * cos32[..., second], a, sin32[..., second], value=sign)
        if layout == "half":
            out = torch.cat([new_a, new_b], dim=-1)
        else:
            out = torch.stack([new_a, new_b], dim=-1).flatten(-2)
    else:  # eager inference: write both halves straight into one preallocated output
        out = torch.empty(_broadcast(r32.shape, cos32.shape), dtype=work, device=x.device)
        torch.mul(a, cos32[..., first], out=out[..., first])
        out[..., first].addcmul_(b, sin32[..., first], value=-1.0)
        torch.mul(b, cos32[..., second], out=out[..., second])
        out[..., second].addcmul_(a, sin32[..., second], value=sign)
    out = out.to(x.dtype)
    if rotary_dim == x.shape[-1]:
        return out
    return torch.cat([out, x[..., rotary_dim:]], dim=-1)


SMALL_ROTATION = 1 << 15
"""Up to this many elements of x (a decoding step: batch x heads x 1 x head_dim) the rotation
is computed as transformers writes it, ``x cos + rotate_half(x) sin`` (:func:`_rotate_half_small`,
differentiable, chosen by size alone so that grad mode never changes a forward's bits):
7 kernel calls instead of about 15, 8 instead of 27 us for (1, 8, 1, 64) on one CPU thread,
a third of a 4-layer decoding step's gap to transformers (issue 36 item 3). Above it the
plane-by-plane form is faster (at (1, 8, 1024, 64): 0.47 instead of 2.1 ms)."""


def _rotate_half_small(x: Tensor, cos: Tensor, sin: Tensor) -> Tensor:
    """x cos + rotate_half(x) sin, the whole head rotated (half layout, x in its work dtype).
    The same numbers as the plane-by-plane form up to the rounding of one product and one sum
    per channel (a' = a cos + (-b) sin, b' = b cos + a sin in both; the order of the rounding
    steps may differ by an FMA)."""
    half = x.shape[-1] // 2
    first, second = x[..., :half], x[..., half:]
    # b' = b cos + a sin; the planted bug flips that sign (falsifier of position.rope-relative)
    rotated = torch.cat((-second, -first if planted(ROTATION_SIGN) else first), dim=-1)
    return x * cos + rotated * sin


def apply_rotary_complex(x: Tensor, positions: Tensor, inv_freq: Tensor) -> Tensor:
    """Reference RoPE as complex multiplication, interleaved pairing: z_i -> e^{i m theta_i} z_i.

    ``x`` (..., T, d) with d = 2 * len(inv_freq); ``positions`` (T,) or broadcastable (..., T).
    Computed in float32 complex (complex128 when x is float64).
    """
    _check_inv_freq(inv_freq)
    d = 2 * inv_freq.numel()
    if x.shape[-1] != d:
        raise ValueError(f"x last dim must equal 2 * len(inv_freq) = {d}, got {x.shape[-1]}")
    real = torch.float64 if x.dtype == torch.float64 else torch.float32
    angles = positions.to(real).unsqueeze(-1) * inv_freq.to(real)
    z = torch.view_as_complex(x.to(real).unflatten(-1, (-1, 2)).contiguous())  # (..., T, d/2)
    rotated = z * torch.polar(torch.ones_like(angles), angles)
    return torch.view_as_real(rotated).flatten(-2).to(x.dtype)


def rotary_matrix(position: float, inv_freq: Tensor, *, layout: str = "interleaved",
                  dtype: torch.dtype = torch.float64) -> Tensor:
    """The explicit (d, d) orthogonal matrix R_m (block-diagonal for the interleaved layout)."""
    _check_layout(layout)
    _check_inv_freq(inv_freq)
    half = inv_freq.numel()
    angles = float(position) * inv_freq.to(dtype)
    c, s = angles.cos(), angles.sin()
    R = torch.zeros(2 * half, 2 * half, dtype=dtype)
    idx = torch.arange(half)
    a, b = (2 * idx, 2 * idx + 1) if layout == "interleaved" else (idx, idx + half)
    R[a, a], R[a, b], R[b, a], R[b, b] = c, -s, s, c
    return R


def interleaved_to_half_permutation(rotary_dim: int) -> Tensor:
    """Index ``perm`` with ``x_half = x_interleaved[..., perm]``: (0, 2, 4, ..., 1, 3, 5, ...).

    Plane i is channels (2i, 2i+1) in the interleaved layout and (i, i + d/2) in the half layout.
    """
    if rotary_dim < 2 or rotary_dim % 2 != 0:
        raise ValueError(f"rotary_dim must be a positive even integer, got {rotary_dim}")
    if planted(LAYOUT_NO_PERMUTATION):  # planted bug: falsifier of position.rope-orthogonal
        return torch.arange(rotary_dim)
    return torch.cat([torch.arange(0, rotary_dim, 2), torch.arange(1, rotary_dim, 2)])


def _permute_heads(weight: Tensor, num_heads: int, head_dim: int, rotary_dim: int | None,
                   inverse: bool) -> Tensor:
    rotary_dim = head_dim if rotary_dim is None else rotary_dim
    if rotary_dim > head_dim or rotary_dim % 2 != 0 or rotary_dim < 2:
        raise ValueError(f"rotary_dim must be even and in [2, head_dim={head_dim}], "
                         f"got {rotary_dim}")
    if weight.dim() not in (1, 2) or weight.shape[0] != num_heads * head_dim:
        raise ValueError(
            f"weight must have shape (num_heads * head_dim = {num_heads * head_dim}[, in]), "
            f"got {tuple(weight.shape)}"
        )
    perm = interleaved_to_half_permutation(rotary_dim)
    if inverse:
        perm = torch.argsort(perm)
    head_perm = torch.cat([perm, torch.arange(rotary_dim, head_dim)])
    rows = (torch.arange(num_heads).unsqueeze(1) * head_dim + head_perm).flatten()
    return weight[rows].clone()


def interleaved_to_half_qk_weight(weight: Tensor, num_heads: int, head_dim: int,
                                  rotary_dim: int | None = None) -> Tensor:
    """Reorder the output rows of a q or k projection (or its bias) from the interleaved
    (Meta) layout to the half (Hugging Face) layout, head by head.

    With W' = this(W), ``apply_rotary(x W'^T, layout="half")`` equals the interleaved rotation
    of ``x W^T`` with its channels permuted, so every attention logit is unchanged.
    """
    return _permute_heads(weight, num_heads, head_dim, rotary_dim, inverse=False)


def half_to_interleaved_qk_weight(weight: Tensor, num_heads: int, head_dim: int,
                                  rotary_dim: int | None = None) -> Tensor:
    """Inverse of :func:`interleaved_to_half_qk_weight`."""
    return _permute_heads(weight, num_heads, head_dim, rotary_dim, inverse=True)


# ----------------------------------------------------------------------------- N-D (axial) RoPE


def axial_sections(num_pairs: int, num_axes: int) -> list[int]:
    """Split ``num_pairs`` rotary planes into ``num_axes`` near-equal contiguous sections."""
    if num_axes < 1 or num_pairs < num_axes:
        raise ValueError(f"need 1 <= num_axes <= num_pairs, got num_axes={num_axes}, "
                         f"num_pairs={num_pairs}")
    base, extra = divmod(num_pairs, num_axes)
    return [base + (1 if a < extra else 0) for a in range(num_axes)]


def axial_rope_angles(positions: Tensor, inv_freq: Tensor, sections: Sequence[int]) -> Tensor:
    """Angles for N-D positions: positions (..., n_axes) -> (..., d/2) in float32.

    Plane j of section a (sections are contiguous runs of planes, summing to d/2) is rotated by
    ``positions[..., a] * inv_freq[j]`` (Qwen2-VL M-RoPE, sections e.g. [16, 24, 24] for
    (t, h, w)). With equal coordinates this equals :func:`rope_angles` of that coordinate.
    """
    _check_inv_freq(inv_freq)
    sections = [int(s) for s in sections]
    if any(s < 1 for s in sections) or sum(sections) != inv_freq.numel():
        raise ValueError(
            f"sections must be positive and sum to len(inv_freq) = {inv_freq.numel()}, "
            f"got {sections}"
        )
    if positions.dim() < 1 or positions.shape[-1] != len(sections):
        raise ValueError(
            f"positions must have last dim n_axes = {len(sections)}, got {tuple(positions.shape)}"
        )
    axis_of_plane = torch.repeat_interleave(
        torch.arange(len(sections), device=positions.device),
        torch.tensor(sections, device=positions.device),
    )  # (d/2,)
    if planted(AXIAL_SECTIONS_INTERLEAVED):  # planted bug: falsifier of position.axial-rope
        axis_of_plane = torch.arange(inv_freq.numel(), device=positions.device) % len(sections)
    coords = positions.to(torch.float32)[..., axis_of_plane]  # (..., d/2)
    return coords * inv_freq.to(device=coords.device, dtype=torch.float32)


# ----------------------------------------------------------------------------- phase coverage

_TWO_PI = 2 * math.pi


def unseen_phase_fraction(inv_freq: Tensor, train_len: int, test_len: int,
                          test_inv_freq: Tensor | None = None,
                          min_tolerance: float = 1e-3) -> Tensor:
    """Per pair: fraction of positions m in [train_len, test_len) whose phase (mod 2π) was never
    swept in training.

    Training phases are m θ_i for m < train_len; test phases m θ'_i use ``test_inv_freq``
    (scaled frequencies; default the training ones). Consecutive training positions sweep the
    arc between their phases, so a test phase counts as seen when it lies within one position
    step max(θ_i, ``min_tolerance``) rad of a trained phase: every point of a swept arc does
    (PI's positions in (L0 - 1, L0) too), and a point farther outside it (a pair that never
    completed a rotation) does not. Phases come from ``rope_angles`` (float32) and are wrapped
    in float64.
    """
    _check_inv_freq(inv_freq)
    if not 1 <= train_len < test_len:
        raise ValueError(f"need 1 <= train_len < test_len, got {train_len} and {test_len}")
    test_inv_freq = inv_freq if test_inv_freq is None else test_inv_freq
    if test_inv_freq.shape != inv_freq.shape:
        raise ValueError(f"test_inv_freq must have shape {tuple(inv_freq.shape)}, got "
                         f"{tuple(test_inv_freq.shape)}")
    train = rope_angles(torch.arange(train_len), inv_freq).double().remainder(_TWO_PI)  # (L, P)
    test = rope_angles(torch.arange(train_len, test_len), test_inv_freq).double().remainder(_TWO_PI)
    seen = train.T.sort(dim=-1).values.contiguous()  # (P, L)
    probe = test.T.contiguous()  # (P, N)
    tolerance = inv_freq.double().clamp_min(min_tolerance).unsqueeze(-1)  # (P, 1)
    L = seen.shape[-1]
    idx = torch.searchsorted(seen, probe)  # (P, N): first trained phase >= test phase
    above = seen.gather(-1, idx.clamp(max=L - 1))
    below = seen.gather(-1, (idx - 1).clamp(min=0))
    dist_above = torch.where(idx < L, above - probe, seen[:, :1] + _TWO_PI - probe)
    dist_below = torch.where(idx > 0, probe - below, probe - (seen[:, -1:] - _TWO_PI))
    nearest = torch.minimum(dist_above, dist_below)  # circular distance to the nearest sample
    return (nearest > tolerance).double().mean(-1)
