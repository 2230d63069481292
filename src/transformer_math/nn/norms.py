"""Normalisation modules chosen by name from :data:`NORMS`: LayerNorm, RMSNorm, HF's RMSNorms.

Math: see ``functional.norms`` (000 §8.3.7 "理论 B"; Ba et al. 2016; Zhang & Sennrich 2019).
LayerNorm has d scale (gamma) and d shift (beta) parameters; RMSNorm only d scales.
``none`` is the identity (an ablation arm without normalisation).

Hook points (``nn/hooks.py``; TransformerLens's ``LayerNorm``/``RMSNorm`` names and meanings):
``hook_scale`` (B, T, 1) the divisor sqrt(var + eps) (LayerNorm, of the centred x) or
sqrt(mean(x^2) + eps) (RMSNorm); ``hook_normalized`` (B, T, d) the LayerNorm output gamma x_hat
+ beta, or for RMSNorm x / scale before the gain. They run only while something listens, and the
output is then computed by the same operations as without hooks (the scale is formed beside it),
unless a hook replaced the scale: then x (centred for LayerNorm) is divided by the new one.
``rmsnorm_hf`` is RMSNorm as Hugging Face's Llama evaluates it: x / sqrt(mean(x^2) + eps) in
float32, cast back to the input dtype BEFORE the weight multiply (``LlamaRMSNorm``), which is
what makes bf16/fp16 logits match theirs bit for bit in the order of operations.
``rmsnorm_gemma`` is Gemma's RMSNorm: the parameter is the offset w of the gain 1 + w (zero at
init), and the whole norm, gain included, is evaluated in float32 before the cast back
(``GemmaRMSNorm`` in transformers' ``models/gemma/modeling_gemma.py``; Gemma Team 2024).
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from transformer_math.bugs import declare_bug, planted
from transformer_math.functional.norms import layer_norm, rms_norm
from transformer_math.nn.hooks import HookPoint, hooks_live
from transformer_math.registry import Registry

GEMMA_OFFSET_DROPPED = declare_bug(
    "norm.gemma-offset-dropped", "Gemma's RMSNorm multiplies by the stored w instead of the "
    "gain 1 + w (the checkpoint's offset read as Llama's gain)",
    module=__name__, seen_in="ports of Gemma that reuse Llama's RMSNorm (the stored weights "
    "are near 0, so every norm output nearly vanishes)",
    test="tests/checkpoints/test_plumbing_bugs.py::test_gemma_embedding_scale_and_norm_offset")

LLAMA_GAIN_IN_FLOAT32 = declare_bug(
    "norm.llama-gain-in-float32", "Llama's RMSNorm multiplies by the gain in float32 and casts "
    "once at the end, instead of casting x_hat to the input dtype first and multiplying there "
    "(LlamaRMSNorm): bfloat16 outputs round differently from transformers'",
    module=__name__, seen_in="one RMSNorm written for every family (Gemma's order is the "
    "float32 one, Llama's is not)",
    test="tests/checkpoints/test_plumbing_bugs.py::test_llama_rmsnorm_casts_before_the_gain")

NORMS: Registry[type[nn.Module]] = Registry("norm")
"""Norm classes ``cls(dim, *, eps)``. Metadata: ``params_per_dim`` (parameters per channel),
``default_eps``."""


@NORMS.register("layernorm", params_per_dim=2, default_eps=1e-5)
class LayerNorm(nn.Module):
    """gamma * (x - mean) / sqrt(var + eps) + beta over the last dimension (width ``dim``)."""

    def __init__(self, dim: int, *, eps: float = 1e-5, affine: bool = True) -> None:
        super().__init__()
        if dim <= 0:
            raise ValueError(f"dim must be positive, got {dim}")
        self.dim, self.eps = dim, eps
        self.weight = nn.Parameter(torch.ones(dim)) if affine else None
        self.bias = nn.Parameter(torch.zeros(dim)) if affine else None
        self.hook_scale = HookPoint()  # (B, T, 1)
        self.hook_normalized = HookPoint()  # (B, T, d), after gamma and beta

    @torch.no_grad()
    def reset_parameters(self, generator: torch.Generator | None = None) -> None:
        """gamma = 1, beta = 0 (deterministic; ``generator`` is accepted for the convention)."""
        if self.weight is not None and self.bias is not None:
            self.weight.fill_(1.0)
            self.bias.zero_()

    def forward(self, x: Tensor) -> Tensor:
        if hooks_live():
            return self._hooked(x)
        return layer_norm(x, self.weight, self.bias, self.eps)

    def _hooked(self, x: Tensor) -> Tensor:
        centred = x - x.mean(dim=-1, keepdim=True)
        scale = (centred.pow(2).mean(dim=-1, keepdim=True) + self.eps).sqrt()
        seen = self.hook_scale(scale)
        if seen is scale:
            out = layer_norm(x, self.weight, self.bias, self.eps)
        else:  # the scale was patched: divide by the new one
            out = centred / seen
            out = out if self.weight is None else out * self.weight
            out = out if self.bias is None else out + self.bias
        return self.hook_normalized(out)


@NORMS.register("rmsnorm", params_per_dim=1, default_eps=1e-6)
class RMSNorm(nn.Module):
    """gamma * x / sqrt(mean(x^2) + eps) over the last dimension (no centring, no shift)."""

    def __init__(self, dim: int, *, eps: float = 1e-6, affine: bool = True) -> None:
        super().__init__()
        if dim <= 0:
            raise ValueError(f"dim must be positive, got {dim}")
        self.dim, self.eps = dim, eps
        self.weight = nn.Parameter(torch.ones(dim)) if affine else None
        self.hook_scale = HookPoint()  # (B, T, 1)
        self.hook_normalized = HookPoint()  # (B, T, d), before the gain

    @torch.no_grad()
    def reset_parameters(self, generator: torch.Generator | None = None) -> None:
        """gamma = 1 (deterministic; ``generator`` is accepted for the convention)."""
        if self.weight is not None:
            self.weight.fill_(1.0)

    def forward(self, x: Tensor) -> Tensor:
        if hooks_live():
            return self._hooked(x)
        return rms_norm(x, self.weight, self.eps)

    def _normalized(self, x: Tensor) -> Tensor:
        """x / sqrt(mean(x^2) + eps) as the forward computes it, through ``hook_scale`` and
        ``hook_normalized`` (in the precision the class normalises in)."""
        mean_square = x.pow(2).mean(dim=-1, keepdim=True) + self.eps
        scale = mean_square.sqrt()
        seen = self.hook_scale(scale)
        normed = x * torch.rsqrt(mean_square) if seen is scale else x / seen
        return self.hook_normalized(normed)

    def _hooked(self, x: Tensor) -> Tensor:
        normed = self._normalized(x)
        return normed if self.weight is None else normed * self.weight


@NORMS.register("rmsnorm_hf", params_per_dim=1, default_eps=1e-6)
class HFRMSNorm(RMSNorm):
    """RMSNorm evaluated in float32 and cast back before the weight (HF Llama's order)."""

    def forward(self, x: Tensor) -> Tensor:
        if hooks_live():
            return self._hooked(x)
        x32 = x.to(torch.float32)
        normed = x32 * torch.rsqrt(x32.pow(2).mean(dim=-1, keepdim=True) + self.eps)
        if self.weight is not None and planted(LLAMA_GAIN_IN_FLOAT32):  # planted bug
            return (self.weight.to(torch.float32) * normed).to(x.dtype)
        out = normed.to(x.dtype)
        return out if self.weight is None else self.weight * out

    def _hooked(self, x: Tensor) -> Tensor:
        out = self._normalized(x.to(torch.float32)).to(x.dtype)
        return out if self.weight is None else self.weight * out


@NORMS.register("rmsnorm_gemma", params_per_dim=1, default_eps=1e-6)
class GemmaRMSNorm(RMSNorm):
    """Gemma's RMSNorm: ``(x / sqrt(mean(x^2) + eps) * (1 + w))`` formed in float32, then cast
    to the input dtype; ``weight`` holds w (the checkpoint's tensor as stored).

    Forming ``1 + w`` in float32 matters for half-precision weights: a bf16 ``1 + w`` would be
    rounded to 8 mantissa bits (up to 2^-8 relative), which is what storing the gain itself would
    do. Llama's norm (``rmsnorm_hf``) instead casts before the gain multiply.
    """

    def __init__(self, dim: int, *, eps: float = 1e-6, affine: bool = True) -> None:
        super().__init__(dim, eps=eps, affine=affine)
        if self.weight is not None:
            with torch.no_grad():
                self.weight.zero_()

    @torch.no_grad()
    def reset_parameters(self, generator: torch.Generator | None = None) -> None:
        """w = 0, i.e. gain 1 (deterministic; ``generator`` is accepted for the convention)."""
        if self.weight is not None:
            self.weight.zero_()

    def forward(self, x: Tensor) -> Tensor:
        if hooks_live():
            return self._hooked(x)
        x32 = x.to(torch.float32)
        normed = x32 * torch.rsqrt(x32.pow(2).mean(dim=-1, keepdim=True) + self.eps)
        if self.weight is not None:
            offset = 0.0 if planted(GEMMA_OFFSET_DROPPED) else 1.0  # planted bug: gain w
            normed = normed * (offset + self.weight.to(torch.float32))
        return normed.to(x.dtype)

    def _hooked(self, x: Tensor) -> Tensor:
        normed = self._normalized(x.to(torch.float32))
        if self.weight is not None:
            offset = 0.0 if planted(GEMMA_OFFSET_DROPPED) else 1.0  # planted bug: gain w
            normed = normed * (offset + self.weight.to(torch.float32))
        return normed.to(x.dtype)


@NORMS.register("none", params_per_dim=0, default_eps=0.0)
class IdentityNorm(nn.Module):
    """No normalisation: N(x) = x (an ablation arm, e.g. attention-only blocks whose only
    nonlinearity is the softmax, 000 §8.3.4 "反面"; ``eps`` is accepted for the convention)."""

    def __init__(self, dim: int, *, eps: float = 0.0) -> None:
        super().__init__()
        if dim <= 0:
            raise ValueError(f"dim must be positive, got {dim}")
        self.dim = dim

    def reset_parameters(self, generator: torch.Generator | None = None) -> None:
        """Nothing to initialise."""

    def forward(self, x: Tensor) -> Tensor:
        return x


def build_norm(name: str, dim: int, *, eps: float | None = None) -> nn.Module:
    """A normalisation module by registry name; ``eps`` defaults to the entry's ``default_eps``."""
    cls = NORMS.get(name)
    return cls(dim, eps=NORMS.metadata(name)["default_eps"] if eps is None else eps)
