"""Position-wise feed-forward networks: GELU MLP and SwiGLU, chosen by name.

Math:
- GELU MLP (Vaswani et al. 2017 eq. 2 with GELU of Hendrycks & Gimpel 2016; 004 EncoderLayer):
      FFN(x) = W_2 GELU(W_1 x + b_1) + b_2,   W_1: d -> d_ff, W_2: d_ff -> d.
  Parameters: 2 d d_ff + d_ff + d (with biases).
- SwiGLU (Shazeer 2020, "GLU Variants Improve Transformer", eq. 6; used by LLaMA and pi_0):
      FFN(x) = W_2 (SiLU(W_g x) * (W_1 x)),  no biases;  parameters: 3 d d_ff.
  To match a GELU MLP's parameter count use d_ff = 2/3 of the GELU width.
"""

from __future__ import annotations

from collections.abc import Callable

import torch.nn.functional as F
from torch import Tensor, nn


class GeluMLP(nn.Module):
    """W_2 GELU(W_1 x + b_1) + b_2 (exact erf GELU)."""

    def __init__(self, dim: int, hidden_dim: int, *, bias: bool = True) -> None:
        super().__init__()
        _check_dims(dim, hidden_dim)
        self.fc_in = nn.Linear(dim, hidden_dim, bias=bias)
        self.fc_out = nn.Linear(hidden_dim, dim, bias=bias)

    def forward(self, x: Tensor) -> Tensor:
        return self.fc_out(F.gelu(self.fc_in(x)))


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


def _check_dims(dim: int, hidden_dim: int) -> None:
    if dim <= 0 or hidden_dim <= 0:
        raise ValueError(f"dim and hidden_dim must be positive, got {dim} and {hidden_dim}")


FEEDFORWARDS: dict[str, Callable[[int, int], nn.Module]] = {
    "gelu": GeluMLP,
    "swiglu": SwiGLU,
}


def build_feedforward(name: str, dim: int, hidden_dim: int) -> nn.Module:
    """A feed-forward module by registry name (``gelu`` | ``swiglu``)."""
    if name not in FEEDFORWARDS:
        raise ValueError(f"ffn_type must be one of {sorted(FEEDFORWARDS)}, got {name!r}")
    return FEEDFORWARDS[name](dim, hidden_dim)
