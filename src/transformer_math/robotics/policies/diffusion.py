"""Diffusion action head: DDPM training (epsilon prediction), DDIM sampling with K steps.

(000 §8.3.8 decoding table, 000:1305-1316: "Diffusion/DDPM, eps_theta(A^(k), k, o), K ~ 50";
Ho et al. 2020 (DDPM); Song et al. 2021 (DDIM); Nichol & Dhariwal 2021 (cosine schedule);
Chi et al. 2023 (Diffusion Policy: 100 training steps, squaredcos_cap_v2, epsilon target).)

Schedule over T training steps (Nichol & Dhariwal eq. 17, with beta capped at 0.999):
    alpha_bar(u) = cos^2(((u + 0.008) / 1.008) pi / 2),
    beta_t = min(1 - alpha_bar((t + 1) / T) / alpha_bar(t / T), 0.999),
    alpha_t = 1 - beta_t,   abar_t = prod_{i <= t} alpha_i,   t = 0, ..., T - 1.
Training (DDPM's simplified loss, Ho et al. eq. 14): t ~ U{0..T-1}, eps ~ N(0, I),
    x_t = sqrt(abar_t) A + sqrt(1 - abar_t) eps,    L = mean |eps_theta(x_t, t, s) - eps|^2
on the normalised chunk A (steps marked ``action_is_pad`` left out).
``prediction="sample"`` trains the network to output A itself (L = mean |f - A|^2, Diffusion
Policy's ``prediction_type="sample"``); DDIM then reads A0_hat = f directly.
Sampling (DDIM, eta = 0, Song et al. eq. 12) on K timesteps tau_1 > ... > tau_K, evenly spaced
from T - 1 to 0 (rounded), tau_{K+1} = -1 with abar_{-1} = 1:
    A0_hat = (x - sqrt(1 - abar_tau) eps_hat) / sqrt(abar_tau)    (clipped to +-clip_sample),
    eps_hat <- (x - sqrt(abar_tau) A0_hat) / sqrt(1 - abar_tau)   (consistent with the clip),
    x <- sqrt(abar_prev) A0_hat + sqrt(1 - abar_prev) eps_hat,
starting from x ~ N(0, I) (the policy's generator). K denoiser forwards per chunk: the latency
is O(K T_head) (the table's column). The denoiser is :class:`.denoising.ChunkDenoiser`, which
reads t as 1000 t / T.

Planted bug ``robotics.ddim-timesteps-truncated``: the K timesteps are T-1, ..., T-K instead of
spanning the range. (Reading the per-step alpha_t for abar_t was tried as a bug in issue 20 and
dropped: the last DDIM step, t = 0, has alpha_0 = abar_0, and a network that predicts A0 well at
t = 0 snaps any trajectory onto a mode; neither an exact two-mode oracle nor the trained tiny
policy, collision 0.00 with the slip, showed it.)
"""

from __future__ import annotations

import math
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

DDIM_TIMESTEPS_TRUNCATED = declare_bug(
    "robotics.ddim-timesteps-truncated",
    "the K DDIM timesteps are the first K of the training range (T-1, T-2, ..., T-K) instead "
    "of K steps spread from T-1 to 0: for K < T the sampler stops while the sample is mostly "
    "noise (its last step returns the high-noise estimate of A0)",
    module=__name__,
    test="tests/robotics/test_mechanics_checks.py::"
    "test_ddim_with_the_exact_two_mode_a0_lands_on_the_modes",
    seen_in="arange(T - 1, T - 1 - K, -1) for a strided schedule; schedulers differ in "
    "'leading', 'trailing' and 'linspace' spacing (diffusers' timestep_spacing)")

MAX_TRAIN_STEPS = 10_000
PREDICTIONS = ("epsilon", "sample")


def cosine_alpha_bar(train_steps: int) -> tuple[Tensor, Tensor]:
    """(alpha_t, abar_t), each (T,) float64, of the capped cosine schedule (module docstring)."""
    check_steps("train_steps", train_steps, MAX_TRAIN_STEPS)

    def f(u: float) -> float:
        return math.cos((u + 0.008) / 1.008 * math.pi / 2) ** 2

    betas = torch.tensor([min(1.0 - f((t + 1) / train_steps) / f(t / train_steps), 0.999)
                          for t in range(train_steps)], dtype=torch.float64)
    alphas = 1.0 - betas
    return alphas, torch.cumprod(alphas, 0)


def ddim_timesteps(train_steps: int, steps: int) -> list[int]:
    """K distinct timesteps from T - 1 down to 0, evenly spaced and rounded (K <= T)."""
    check_steps("steps", steps, train_steps)
    if planted(DDIM_TIMESTEPS_TRUNCATED):  # planted bug: falsifier of robotics.decoder-steps
        return list(range(train_steps - 1, train_steps - 1 - steps, -1))
    if steps == 1:
        return [train_steps - 1]
    return [round((train_steps - 1) * (1 - i / (steps - 1))) for i in range(steps)]


@dataclass(frozen=True)
class DiffusionConfig:
    state_dim: int
    action_dim: int
    chunk_size: int = 10
    dim: int = 64
    num_heads: int = 4
    num_layers: int = 2
    train_steps: int = 100
    inference_steps: int = 10
    clip_sample: float = 5.0
    prediction: str = "epsilon"
    seed: int = 0

    def __post_init__(self) -> None:
        if self.prediction not in PREDICTIONS:
            raise ValueError(f"prediction must be one of {PREDICTIONS}, got {self.prediction!r}")
        check_steps("train_steps", self.train_steps, MAX_TRAIN_STEPS)
        check_steps("inference_steps", self.inference_steps, self.train_steps)
        if not (math.isfinite(self.clip_sample) and self.clip_sample > 0):
            raise ValueError(f"clip_sample must be a finite number > 0 (normalised units), got "
                             f"{self.clip_sample!r}")


@register_policy("diffusion")
class DiffusionPolicy(ChunkPolicy):
    """Diffusion Policy-style chunk decoder on the project's Transformer (adaLN-Zero)."""

    config_class: ClassVar[type] = DiffusionConfig
    config_limits: ClassVar[dict[str, tuple[int, int]]] = {
        "seed": (0, 2**63 - 1), "train_steps": (1, MAX_TRAIN_STEPS),
        "inference_steps": (1, MAX_TRAIN_STEPS)}

    def __init__(self, config: DiffusionConfig) -> None:
        super().__init__(config.state_dim, config.action_dim, config.chunk_size)
        self.config = config
        self.denoiser = ChunkDenoiser(config.state_dim, config.action_dim, config.chunk_size,
                                      config.dim, config.num_heads, config.num_layers)
        _, abar = cosine_alpha_bar(config.train_steps)
        self.register_buffer("alphas_cumprod", abar.float(), persistent=False)
        self.generator = torch.Generator().manual_seed(config.seed)

    @staticmethod
    def config_from_dict(d: dict[str, Any]) -> DiffusionConfig:
        return DiffusionConfig(**d)

    def _noise(self, shape: tuple[int, ...], like: Tensor) -> Tensor:
        return torch.randn(shape, generator=self.generator).to(like)

    def _time(self, t: Tensor) -> Tensor:
        """t in {0..T-1} on phi's [0, 1000) scale: 1000 t / T (DiT's T = 1000 unchanged)."""
        return t * (TIME_SCALE / self.config.train_steps)

    def forward(self, batch: dict[str, Tensor]) -> tuple[Tensor, dict[str, float]]:
        """DDPM's epsilon loss (module docstring) on a batch of chunks."""
        s = self._state(batch)
        target, pad = self._target(batch)
        b = s.shape[0]
        t = torch.randint(0, self.config.train_steps, (b,), generator=self.generator)
        eps = self._noise(tuple(target.shape), target)
        abar = self.alphas_cumprod[t.to(self.alphas_cumprod.device)].to(target)[:, None, None]
        x_t = abar.sqrt() * target + (1.0 - abar).sqrt() * eps
        pred = self.denoiser(x_t, self._time(t.to(s)), s)
        goal = eps if self.config.prediction == "epsilon" else target
        loss = masked_mean((pred - goal).pow(2), pad)
        return loss, {f"mse_{self.config.prediction}": logged(loss)}

    @torch.no_grad()
    def sample(self, s: Tensor, steps: int | None = None) -> Tensor:
        """Normalised chunk (B, k, A) by DDIM with ``steps`` (default ``inference_steps``)."""
        k = self.config.inference_steps if steps is None else steps
        times = ddim_timesteps(self.config.train_steps, k)
        table = self.alphas_cumprod
        x = self._noise((s.shape[0], self.chunk_size, self.action_dim), s)
        clip = self.config.clip_sample
        for i, t in enumerate(times):
            a_t = table[t].to(s)
            a_prev = table[times[i + 1]].to(s) if i + 1 < len(times) else s.new_tensor(1.0)
            out = self.denoiser(x, self._time(s.new_full((s.shape[0],), float(t))), s)
            if self.config.prediction == "epsilon":
                x0 = ((x - (1.0 - a_t).sqrt() * out) / a_t.sqrt()).clamp(-clip, clip)
            else:
                x0 = out.clamp(-clip, clip)
            eps = (x - a_t.sqrt() * x0) / (1.0 - a_t).sqrt()
            x = a_prev.sqrt() * x0 + (1.0 - a_prev).sqrt() * eps
        return x

    def predict_action_chunk(self, batch: dict[str, Tensor], steps: int | None = None
                             ) -> Tensor:
        """(B, k, A) actions: one DDIM sample per observation (K = ``steps`` or the config's)."""
        if steps is not None:
            check_steps("steps", steps, self.config.train_steps)
        return self._unnormalize(self.sample(self._state(batch), steps))
