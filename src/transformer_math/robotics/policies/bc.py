"""Behaviour-cloning MLP that predicts a chunk of k actions (k = 1: the single-step baseline).

pi(s) = (a_t, ..., a_{t+k-1}) from an MLP (``layers`` hidden GELU layers of width ``hidden``),
trained by L1 (ACT's reconstruction loss, 000 §8.3.8) or MSE (the mean-regressing baseline of
``robotics.multimodal-actions``) on normalised actions. FACTS.md sizing: 3 x 64 hidden.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import torch.nn.functional as F
from torch import Tensor, nn

from transformer_math.robotics.policies.base import (
    ChunkPolicy,
    logged,
    masked_mean,
    register_policy,
)

BC_LOSSES = ("l1", "mse")


def mlp(in_dim: int, hidden: int, layers: int, out_dim: int) -> nn.Sequential:
    """``layers`` hidden Linear+GELU layers of width ``hidden`` then a Linear to ``out_dim``."""
    if layers < 1 or hidden < 1:
        raise ValueError(f"layers and hidden must be >= 1, got {layers}, {hidden}")
    mods: list[nn.Module] = []
    width = in_dim
    for _ in range(layers):
        mods += [nn.Linear(width, hidden), nn.GELU()]
        width = hidden
    mods.append(nn.Linear(width, out_dim))
    return nn.Sequential(*mods)


@dataclass(frozen=True)
class BCConfig:
    state_dim: int
    action_dim: int
    chunk_size: int = 1
    hidden: int = 64
    layers: int = 3
    loss: str = "l1"

    def __post_init__(self) -> None:
        if self.loss not in BC_LOSSES:
            raise ValueError(f"loss must be one of {BC_LOSSES}, got {self.loss!r}")


@register_policy("bc_mlp")
class BCPolicy(ChunkPolicy):
    config_class: ClassVar[type] = BCConfig

    def __init__(self, config: BCConfig) -> None:
        super().__init__(config.state_dim, config.action_dim, config.chunk_size)
        self.config = config
        self.net = mlp(config.state_dim, config.hidden, config.layers,
                       config.chunk_size * config.action_dim)

    @staticmethod
    def config_from_dict(d: dict[str, Any]) -> BCConfig:
        return BCConfig(**d)

    def _predict_normalized(self, s: Tensor) -> Tensor:
        return self.net(s).view(s.shape[0], self.chunk_size, self.action_dim)  # (B, k, A)

    def predict_action_chunk(self, batch: dict[str, Tensor]) -> Tensor:
        return self._unnormalize(self._predict_normalized(self._state(batch)))

    def forward(self, batch: dict[str, Tensor]) -> tuple[Tensor, dict[str, float]]:
        """L1 / MSE over the action entries; steps marked by ``action_is_pad`` are left out
        (the loss is then the mean over the valid steps only)."""
        pred = self._predict_normalized(self._state(batch))
        target, pad = self._target(batch)
        if pad is None:
            loss = (F.l1_loss(pred, target) if self.config.loss == "l1"
                    else F.mse_loss(pred, target))
        else:
            diff = pred - target
            loss = masked_mean(diff.abs() if self.config.loss == "l1" else diff.pow(2), pad)
        return loss, {self.config.loss: logged(loss)}
