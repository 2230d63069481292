"""Position-wise feed-forward networks chosen by name from :data:`FEEDFORWARDS`.

Math:
- GELU MLP (Vaswani et al. 2017 eq. 2 with GELU of Hendrycks & Gimpel 2016; 004 EncoderLayer):
      FFN(x) = W_2 GELU(W_1 x + b_1) + b_2,   W_1: d -> d_ff, W_2: d_ff -> d.
  Parameters: 2 d d_ff + d_ff + d (with biases). ``gelu`` uses the exact erf GELU,
  ``gelu_tanh`` GPT-2's approximation x/2 (1 + tanh(sqrt(2/pi)(x + 0.044715 x^3))).
- ReLU MLP (``relu``: eq. 2 as Vaswani et al. wrote it; DETR's and LeRobot ACT's FFN): the same
  shapes with max(0, .) for GELU.
- GeGLU (``geglu_tanh``, Gemma): W_2 (gelu_tanh(W_g x) * (W_1 x)), the same shapes.
- SwiGLU (Shazeer 2020, "GLU Variants Improve Transformer", eq. 6; used by LLaMA and pi_0):
      FFN(x) = W_2 (SiLU(W_g x) * (W_1 x)),  no biases;  parameters: 3 d d_ff.
  To match a GELU MLP's parameter count use d_ff = 2/3 of the GELU width.

Hook points (``nn/hooks.py``; TransformerLens's MLP names and meanings): ``hook_pre`` (B, T, d_ff)
the pre-activation (W_1 x + b_1; for gated MLPs the gate W_g x), ``hook_pre_linear`` (gated
MLPs only) the linear branch W_1 x, ``hook_post`` (B, T, d_ff) the neuron activations that W_2
reads. They run only while something listens (``hooks_live``), with the same operations, so a
cached run gives the same numbers as a plain one.
"""

from __future__ import annotations

import torch.nn.functional as F
from torch import Tensor, nn

from transformer_math.nn.hooks import HookPoint, hooks_live
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
        self.hook_pre = HookPoint()  # (B, T, d_ff)
        self.hook_post = HookPoint()  # (B, T, d_ff)

    def forward(self, x: Tensor) -> Tensor:
        if hooks_live():
            pre = self.hook_pre(self.fc_in(x))
            return self.fc_out(self.hook_post(F.gelu(pre, approximate=self.approximate)))
        return self.fc_out(F.gelu(self.fc_in(x), approximate=self.approximate))


@FEEDFORWARDS.register("gelu_tanh", matrices=2, gated=False)
class TanhGeluMLP(GeluMLP):
    """W_2 gelu_tanh(W_1 x + b_1) + b_2 (GPT-2's ``gelu_new``)."""

    approximate = "tanh"


@FEEDFORWARDS.register("relu", matrices=2, gated=False)
class ReluMLP(GeluMLP):
    """W_2 ReLU(W_1 x + b_1) + b_2 (Vaswani et al. 2017 §3.3; DETR's and LeRobot ACT's FFN)."""

    def forward(self, x: Tensor) -> Tensor:
        if hooks_live():
            return self.fc_out(self.hook_post(F.relu(self.hook_pre(self.fc_in(x)))))
        return self.fc_out(F.relu(self.fc_in(x)))


@FEEDFORWARDS.register("swiglu", matrices=3, gated=True)
class SwiGLU(nn.Module):
    """W_2 (SiLU(W_g x) * W_1 x), without biases by default (Shazeer 2020)."""

    def __init__(self, dim: int, hidden_dim: int, *, bias: bool = False) -> None:
        super().__init__()
        _check_dims(dim, hidden_dim)
        self.gate = nn.Linear(dim, hidden_dim, bias=bias)
        self.up = nn.Linear(dim, hidden_dim, bias=bias)
        self.down = nn.Linear(hidden_dim, dim, bias=bias)
        self.hook_pre = HookPoint()  # (B, T, d_ff) the gate W_g x
        self.hook_pre_linear = HookPoint()  # (B, T, d_ff) the linear branch W_1 x
        self.hook_post = HookPoint()  # (B, T, d_ff) act(W_g x) * W_1 x

    @staticmethod
    def activation(gate: Tensor) -> Tensor:
        """The gate's nonlinearity: SiLU."""
        return F.silu(gate)

    def forward(self, x: Tensor) -> Tensor:
        if hooks_live():
            pre, linear = self.hook_pre(self.gate(x)), self.hook_pre_linear(self.up(x))
            return self.down(self.hook_post(self.activation(pre) * linear))
        return self.down(self.activation(self.gate(x)) * self.up(x))


@FEEDFORWARDS.register("geglu_tanh", matrices=3, gated=True)
class TanhGeGLU(SwiGLU):
    """W_2 (gelu_tanh(W_g x) * W_1 x) (Shazeer 2020's GEGLU with the tanh GELU; Gemma's MLP)."""

    @staticmethod
    def activation(gate: Tensor) -> Tensor:
        """The gate's nonlinearity: the tanh GELU."""
        return F.gelu(gate, approximate="tanh")


def _check_dims(dim: int, hidden_dim: int) -> None:
    if dim <= 0 or hidden_dim <= 0:
        raise ValueError(f"dim and hidden_dim must be positive, got {dim} and {hidden_dim}")


def build_feedforward(name: str, dim: int, hidden_dim: int, *, bias: bool = True
                      ) -> nn.Module:
    """A feed-forward module by registry name (``gelu`` | ``gelu_tanh`` | ``relu`` | ``swiglu``
    | ``geglu_tanh``)."""
    return FEEDFORWARDS.get(name)(dim, hidden_dim, bias=bias)
