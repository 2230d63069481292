"""Position-wise feed-forward networks chosen by name from :data:`FEEDFORWARDS`.

Math:
- GELU MLP (Vaswani et al. 2017 eq. 2 with GELU of Hendrycks & Gimpel 2016; 004 EncoderLayer):
      FFN(x) = W_2 GELU(W_1 x + b_1) + b_2,   W_1: d -> d_ff, W_2: d_ff -> d.
  Parameters: 2 d d_ff + d_ff + d (with biases). ``gelu`` uses the exact erf GELU,
  ``gelu_tanh`` GPT-2's approximation x/2 (1 + tanh(sqrt(2/pi)(x + 0.044715 x^3))).
- GeGLU (``geglu_tanh``, Gemma): W_2 (gelu_tanh(W_g x) * (W_1 x)), the same shapes.
- SwiGLU (Shazeer 2020, "GLU Variants Improve Transformer", eq. 6; used by LLaMA and pi_0):
      FFN(x) = W_2 (SiLU(W_g x) * (W_1 x)),  no biases;  parameters: 3 d d_ff.
  To match a GELU MLP's parameter count use d_ff = 2/3 of the GELU width.
"""

from __future__ import annotations

import torch.nn.functional as F
from torch import Tensor, nn

from transformer_math.registry import Registry

FEEDFORWARDS: Registry[type[nn.Module]] = Registry("feedforward")
"""Feed-forward classes ``cls(dim, hidden_dim, *, bias)``. Metadata: ``matrices`` (weight
matrices of shape d x d_ff), ``gated``."""


@FEEDFORWARDS.register("gelu", matrices=2, gated=False)
class GeluMLP(nn.Module):
    """W_2 GELU(W_1 x + b_1) + b_2 (exact erf GELU)."""

    approximate = "none"

    def __init__(self, dim: int, hidden_dim: int, *, bias: bool = True) -> None:
        super().__init__()
        _check_dims(dim, hidden_dim)
        self.fc_in = nn.Linear(dim, hidden_dim, bias=bias)
        self.fc_out = nn.Linear(hidden_dim, dim, bias=bias)

    def forward(self, x: Tensor) -> Tensor:
        return self.fc_out(F.gelu(self.fc_in(x), approximate=self.approximate))


@FEEDFORWARDS.register("gelu_tanh", matrices=2, gated=False)
class TanhGeluMLP(GeluMLP):
    """W_2 gelu_tanh(W_1 x + b_1) + b_2 (GPT-2's ``gelu_new``)."""

    approximate = "tanh"


@FEEDFORWARDS.register("swiglu", matrices=3, gated=True)
class SwiGLU(nn.Module):
    """W_2 (SiLU(W_g x) * W_1 x), without biases by default (Shazeer 2020)."""

    def __init__(self, dim: int, hidden_dim: int, *, bias: bool = False) -> None:
        super().__init__()
        _check_dims(dim, hidden_dim)
        self.gate = nn.Linear(dim, hidden_dim, bias=bias)
        self.up = nn.Linear(dim, hidden_dim, bias=bias)
        self.down = nn.Linear(hidden_dim, dim, bias=bias)

    def forward(self, x: Tensor) -> Tensor:
        return self.down(F.silu(self.gate(x)) * self.up(x))


@FEEDFORWARDS.register("geglu_tanh", matrices=3, gated=True)
class TanhGeGLU(SwiGLU):
    """W_2 (gelu_tanh(W_g x) * W_1 x) (Shazeer 2020's GEGLU with the tanh GELU; Gemma's MLP)."""

    def forward(self, x: Tensor) -> Tensor:
        return self.down(F.gelu(self.gate(x), approximate="tanh") * self.up(x))


def _check_dims(dim: int, hidden_dim: int) -> None:
    if dim <= 0 or hidden_dim <= 0:
        raise ValueError(f"dim and hidden_dim must be positive, got {dim} and {hidden_dim}")


def build_feedforward(name: str, dim: int, hidden_dim: int, *, bias: bool = True
                      ) -> nn.Module:
    """A feed-forward module by registry name (``gelu`` | ``gelu_tanh`` | ``swiglu``)."""
    return FEEDFORWARDS.get(name)(dim, hidden_dim, bias=bias)
