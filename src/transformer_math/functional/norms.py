"""Normalisation of token vectors: LayerNorm and RMSNorm as pure functions.

Math (000 §8.3.7 "理论 B"; Ba, Kiros & Hinton 2016; Zhang & Sennrich 2019):
    LayerNorm(x) = gamma * (x - mu) / sqrt(sigma^2 + eps) + beta,
        mu = (1/d) sum_i x_i,  sigma^2 = (1/d) sum_i (x_i - mu)^2   (biased variance),
    RMSNorm(x)   = gamma * x / sqrt(RMS(x)^2 + eps),  RMS(x)^2 = (1/d) sum_i x_i^2.

Geometry (eps -> 0, gamma = 1, beta = 0): LayerNorm first projects x onto the hyperplane
sum_i x_i = 0 (removes the component along the all-ones vector) and then rescales onto the sphere
of radius sqrt(d) inside it, so the output is invariant to x -> a x + b 1 for a > 0. RMSNorm skips
the projection: its output lies on the sphere of radius sqrt(d) (not in the hyperplane), invariant
to x -> a x (a > 0) but not to a shift x -> x + b 1. Both normalise over the last dimension.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

from transformer_math.bugs import declare_bug, planted

LAYERNORM_NO_CENTERING = declare_bug(
    "norm.layernorm-no-centering",
    "LayerNorm divides by the standard deviation but never subtracts the mean (x / sqrt(var + "
    "eps) with var still the centred variance): outputs keep a mean and are not shift-invariant",
    module=__name__,
    seen_in="a slip when porting LayerNorm from RMSNorm code (or the reverse); 000 §8.3.7 "
    "理论 B contrasts the two exactly on this step",
)


def _check_norm_inputs(x: Tensor, weight: Tensor | None, bias: Tensor | None, eps: float) -> None:
    if not isinstance(x, Tensor):
        raise TypeError(f"x must be a torch.Tensor, got {type(x).__name__}")
    if not x.is_floating_point():
        raise TypeError(f"x must be floating point, got dtype {x.dtype}")
    if x.dim() < 1 or x.shape[-1] < 1:
        raise ValueError(f"x must have a non-empty last dimension, got shape {tuple(x.shape)}")
    if not eps >= 0.0:
        raise ValueError(f"eps must be >= 0, got {eps}")
    d = x.shape[-1]
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and tuple(t.shape) != (d,):
            raise ValueError(f"{name} must have shape ({d},), got {tuple(t.shape)}")


def layer_norm(
    x: Tensor, weight: Tensor | None = None, bias: Tensor | None = None, eps: float = 1e-5
) -> Tensor:
    """LayerNorm over the last dimension: gamma * (x - mean) / sqrt(var + eps) + beta.

    ``var`` is the biased (1/d) variance, as in Ba et al. (2016) and ``torch.nn.LayerNorm``.

    For float32 inputs (and parameters of the same dtype), the same formula is evaluated by
    torch's fused kernel ``F.layer_norm`` (what transformers' GPT-2 runs), with or without
    autograd (its backward is the analytic one), so a forward gives the same bits whether or
    not gradients are recorded: one kernel call instead of nine, 2 instead of 15 us for one
    token of width 256 on one CPU thread, and equal to the written-out formula up to rounding
    (1.4e-6 at most on (4, 512, 256) standard normal inputs; issue 36 item 3). In float64 (the
    claims' exact checks: the autograd Jacobian of this formula, whose two zero singular
    values the fused backward leaves at ~1e-12 of the largest instead of ~1e-16), in low
    precision, and with the planted bug, the formula below runs as written, in every grad mode.
    """
    _check_norm_inputs(x, weight, bias, eps)
    if not planted(LAYERNORM_NO_CENTERING) and _fused_ok(x, weight, bias):
        return F.layer_norm(x, (x.shape[-1],), weight, bias, eps)
    centred = x - x.mean(dim=-1, keepdim=True)  # projection onto {sum_i x_i = 0}
    var = centred.pow(2).mean(dim=-1, keepdim=True)
    if planted(LAYERNORM_NO_CENTERING):  # planted bug: falsifier of architecture.layernorm-geometry
        centred = x
    out = centred * torch.rsqrt(var + eps)  # onto the sphere of radius sqrt(d)
    if weight is not None:
        out = out * weight
    if bias is not None:
        out = out + bias
    return out


def _fused_ok(x: Tensor, weight: Tensor | None, bias: Tensor | None) -> bool:
    """float32 x with parameters of its dtype (grad mode does not matter)."""
    if x.dtype != torch.float32:
        return False
    params = [t for t in (weight, bias) if t is not None]
    return all(t.dtype == x.dtype for t in params)


def rms_norm(x: Tensor, weight: Tensor | None = None, eps: float = 1e-6) -> Tensor:
    """RMSNorm over the last dimension: gamma * x / sqrt(mean(x^2) + eps) (no centring)."""
    _check_norm_inputs(x, weight, None, eps)
    out = x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps)
    if weight is not None:
        out = out * weight
    return out
