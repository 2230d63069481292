"""Flow-matching action head: conditional flow matching on straight paths, K Euler steps.

(000 §8.3.8 decoding table, 000:1305-1316: "Flow Matching, v_theta(A^tau, tau, o), K ~ 10";
Lipman et al. 2023 (flow matching, sigma_min = 0); Liu et al. 2023 (rectified flow); Black et
al. 2024 (pi0: an action expert trained by flow matching, 10 Euler steps).)

Path from noise (tau = 0) to data (tau = 1), with eps ~ N(0, I) and the normalised chunk A:
    A^tau = (1 - tau) eps + tau A,        u(A^tau | A) = d A^tau / d tau = A - eps,
    L = mean |v_theta(A^tau, tau, s) - (A - eps)|^2,    tau ~ U(0, 1)
(steps marked ``action_is_pad`` left out). Sampling integrates dA/dtau = v_theta from
A^0 ~ N(0, I) by K forward-Euler steps of size 1/K:
    A <- A + (1/K) v_theta(A, i/K, s),   i = 0, ..., K - 1
(000 §8.3.7: the velocity field is an ODE's right-hand side, as a residual block is one Euler
step). pi0's paper writes time the other way (tau = 1 at noise, target eps - A, integration from
1 to 0); the two conventions are the same flow with tau -> 1 - tau, and mixing them is the
planted bug ``robotics.flow-target-reversed``: trained on eps - A, sampled from noise towards
tau = 1. The velocity network is :class:`.denoising.ChunkDenoiser` (tau read as 1000 tau).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import torch
from torch import Tensor

from transformer_math.bugs import declare_bug, planted
from transformer_math.robotics.policies.base import (
    ChunkPolicy,
    logged,
    masked_mean,
    register_policy,
)
from transformer_math.robotics.policies.denoising import TIME_SCALE, ChunkDenoiser, check_steps

FLOW_TARGET_REVERSED = declare_bug(
    "robotics.flow-target-reversed",
    "flow matching trained on the velocity eps - A (pi0's reversed-time convention) but sampled "
    "from noise at tau = 0 towards tau = 1 (the rectified-flow convention): Euler steps push "
    "the sample away from the data",
    module=__name__,
    test="tests/robotics/test_mechanics_checks.py::"
    "test_euler_with_the_exact_velocity_returns_the_data_and_its_loss_is_zero",
    seen_in="two published time conventions for the same flow (Lipman et al. 2023 / Liu et al. "
    "2023 vs pi0, Black et al. 2024); code ported from one into a sampler written for the other")

MAX_FLOW_STEPS = 10_000


@dataclass(frozen=True)
class FlowMatchingConfig:
    state_dim: int
    action_dim: int
    chunk_size: int = 10
    dim: int = 64
    num_heads: int = 4
    num_layers: int = 2
    inference_steps: int = 10
    seed: int = 0

    def __post_init__(self) -> None:
        check_steps("inference_steps", self.inference_steps, MAX_FLOW_STEPS)


@register_policy("flow_matching")
class FlowMatchingPolicy(ChunkPolicy):
    """pi0-style flow-matching chunk decoder on the project's Transformer (adaLN-Zero)."""

    config_class: ClassVar[type] = FlowMatchingConfig
    config_limits: ClassVar[dict[str, tuple[int, int]]] = {
        "seed": (0, 2**63 - 1), "inference_steps": (1, MAX_FLOW_STEPS)}

    def __init__(self, config: FlowMatchingConfig) -> None:
        super().__init__(config.state_dim, config.action_dim, config.chunk_size)
        self.config = config
        self.velocity = ChunkDenoiser(config.state_dim, config.action_dim, config.chunk_size,
                                      config.dim, config.num_heads, config.num_layers)
        self.generator = torch.Generator().manual_seed(config.seed)

    @staticmethod
    def config_from_dict(d: dict[str, Any]) -> FlowMatchingConfig:
        return FlowMatchingConfig(**d)

    def _noise(self, shape: tuple[int, ...], like: Tensor) -> Tensor:
        return torch.randn(shape, generator=self.generator).to(like)

    def forward(self, batch: dict[str, Tensor]) -> tuple[Tensor, dict[str, float]]:
        """The conditional flow-matching loss (module docstring)."""
        s = self._state(batch)
        target, pad = self._target(batch)
        tau = torch.rand((s.shape[0],), generator=self.generator).to(s)
        eps = self._noise(tuple(target.shape), target)
        x_tau = (1.0 - tau)[:, None, None] * eps + tau[:, None, None] * target
        # planted bug: pi0's reversed-time target with a sampler written for tau: 0 -> 1
        u = eps - target if planted(FLOW_TARGET_REVERSED) else target - eps
        pred = self.velocity(x_tau, tau * TIME_SCALE, s)
        loss = masked_mean((pred - u).pow(2), pad)
        return loss, {"mse_velocity": logged(loss)}

    @torch.no_grad()
    def sample(self, s: Tensor, steps: int | None = None) -> Tensor:
        """Normalised chunk (B, k, A): K Euler steps of dA/dtau = v from A^0 ~ N(0, I)."""
        k = self.config.inference_steps if steps is None else steps
        x = self._noise((s.shape[0], self.chunk_size, self.action_dim), s)
        for i in range(k):
            tau = s.new_full((s.shape[0],), i / k * TIME_SCALE)
            x = x + self.velocity(x, tau, s) / k
        return x

    def predict_action_chunk(self, batch: dict[str, Tensor], steps: int | None = None
                             ) -> Tensor:
        """(B, k, A) actions: one flow sample per observation (K = ``steps`` or the config's)."""
        if steps is not None:
            check_steps("steps", steps, MAX_FLOW_STEPS)
        return self._unnormalize(self.sample(self._state(batch), steps))
