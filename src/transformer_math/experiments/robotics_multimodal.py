"""Multimodal actions: an MSE policy averages "left" and "right" and hits the obstacle.

(000 §8.3.8; CLAIMS.md ``robotics.multimodal-actions``.) Demonstrations of the bimodal obstacle
task (``envs/bimodal.py``) train (a) a single-step MLP with MSE loss (the conditional mean) and
(b) ACT (CVAE, latent 32, L1 + 10 KL, chunk k) whose latent is SAMPLED once per episode at test
time (the policy commits to a mode), evaluated twice on the same starts with independent latent
draws (``act_sampled``, ``act_resampled``: does z choose the side?), and the same ACT with z = 0
for reference (``act_zero``). ``use_latent=False`` (optionally with an MSE reconstruction loss)
trains ACT's architecture as a deterministic chunk regressor (an option of the study; the claim's
falsifier is the planted bug ``robotics.act-latent-dropped`` in ``policies/act.py``).
Measured: collision rate, success rate, the side each rollout passes on (per start, ``sides``),
and trajectories.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import torch

from transformer_math.i18n.message import msg
from transformer_math.robotics.envs.bimodal import (
    OBSTACLE,
    BimodalConfig,
    bimodal_step,
    collided,
    generate_bimodal_dataset,
    reached,
    start_positions,
)
from transformer_math.robotics.policies.act import ACTConfig, ACTPolicy
from transformer_math.robotics.policies.base import ChunkPolicy
from transformer_math.robotics.policies.bc import BCConfig, BCPolicy
from transformer_math.robotics.policies.ensembling import ChunkQueue
from transformer_math.robotics.training import build_seeded, chunk_sampler, train_policy

Progress = Callable[[float], None] | None


@dataclass(frozen=True)
class MultimodalConfig:
    seed: int = 0
    num_demos: int = 200
    num_test: int = 100
    chunk_size: int = 10
    mse_steps: int = 2000
    act_steps: int = 2000
    batch_size: int = 64
    lr: float = 1e-3
    act_dim: int = 32
    act_layers: int = 1
    kl_weight: float = 10.0
    use_latent: bool = True  # False: a deterministic chunk regressor (no encoder, no KL)
    reconstruction_loss: str = "l1"
    num_plot_paths: int = 10

    @classmethod
    def tiny(cls, seed: int = 0) -> MultimodalConfig:
        # Issue 12: 20 ACT steps and 8 test starts (rates in steps of 1/8) could not show the
        # claim (CVAE collision 0.875 at seed 0). 100 test starts (binomial standard error
        # <= 0.05), 400 MSE steps; the CVAE needs the default's 200 demos: with 100 demos it
        # collides 0.26 at 600 and at 1500 ACT steps; with 200 demos and 1000 steps 0.09-0.19
        # over seeds 0-4, but at seeds 1 and 2 it goes to one side in over 90 % of the rollouts
        # (left fraction outside [0.15, 0.85]): not firm at this size.
        return cls(seed=seed, num_demos=200, num_test=100, mse_steps=400, act_steps=1000,
                   batch_size=64, num_plot_paths=2)

    @classmethod
    def default(cls, seed: int = 0) -> MultimodalConfig:
        return cls(seed=seed)

    @classmethod
    def large(cls, seed: int = 0) -> MultimodalConfig:
        return cls(seed=seed, num_demos=500, num_test=300, act_steps=3000, act_dim=64,
                   act_layers=2)


@dataclass
class PolicyOutcome:
    name: str
    collision_rate: float
    success_rate: float
    left_fraction: float  # among rollouts that got past the obstacle's height
    paths: list[list[list[float]]] = field(default_factory=list)  # a few (T+1, 2) paths
    sides: list[float] = field(default_factory=list)  # per start: -1 left, +1 right, 0 neither


@dataclass
class MultimodalResult:
    config: MultimodalConfig
    outcomes: dict[str, PolicyOutcome]
    demo_left_fraction: float
    seconds: float


def evaluate(policy: ChunkPolicy, task: BimodalConfig, starts: np.ndarray, name: str,
             num_plot: int) -> PolicyOutcome:
    executor = ChunkQueue(policy.chunk_size)
    policy.reset()  # one episode for the whole batch (ACT draws its per-episode latent here)
    p = starts.copy()
    n = p.shape[0]
    hit, done = np.zeros(n, bool), np.zeros(n, bool)
    side = np.zeros(n)
    paths = [p.copy()]
    for _ in range(task.horizon):
        with torch.no_grad():
            a = executor(lambda o: policy.predict_action_chunk({"observation.state": o}),
                         torch.from_numpy(p.astype(np.float32))).double().numpy()
        active = ~(hit | done)
        p = np.where(active[:, None], bimodal_step(task, p, a), p)
        crossing = active & (side == 0) & (p[:, 1] >= OBSTACLE[1])
        side[crossing] = np.sign(p[crossing, 0])
        hit |= active & collided(task, p)
        done |= active & reached(task, p) & ~hit
        paths.append(p.copy())
    traj = np.stack(paths, 1)  # (n, T+1, 2)
    passed = side != 0
    return PolicyOutcome(
        name=name,
        collision_rate=float(hit.mean()),
        success_rate=float((done & ~hit).mean()),
        left_fraction=float((side[passed] < 0).mean()) if passed.any() else float("nan"),
        paths=traj[:num_plot].round(4).tolist(),
        sides=side.tolist(),
    )


def run(config: MultimodalConfig, progress: Progress = None) -> MultimodalResult:
    start = time.perf_counter()
    task = BimodalConfig()
    data = generate_bimodal_dataset(task, config.num_demos, config.seed)
    obs, act = torch.from_numpy(data.observations), torch.from_numpy(data.actions)
    starts = start_positions(task, np.random.default_rng(config.seed + 10_000), config.num_test)
    total = config.mse_steps + 2 * config.act_steps

    def stage(offset: int, steps: int):
        if progress is None:
            return None
        return lambda f: progress((offset + f * steps) / total)

    mse = build_seeded(lambda: BCPolicy(BCConfig(2, 2, 1, 64, 3, "mse")), config.seed)
    mse.fit_normalization(obs, act)
    train_policy(mse, chunk_sampler(obs, act, 1, config.batch_size), steps=config.mse_steps,
                 lr=config.lr, generator=torch.Generator().manual_seed(config.seed),
                 progress=stage(0, config.mse_steps))
    outcomes = {"mse": evaluate(mse, task, starts, "MSE MLP", config.num_plot_paths)}

    act_cfg = ACTConfig(2, 2, config.chunk_size, dim=config.act_dim, num_heads=4,
                        encoder_layers=config.act_layers, decoder_layers=config.act_layers,
                        kl_weight=config.kl_weight, use_latent=config.use_latent,
                        latent_sampling="sample_per_episode",
                        reconstruction_loss=config.reconstruction_loss, seed=config.seed)
    act_policy = build_seeded(lambda: ACTPolicy(act_cfg), config.seed)
    act_policy.fit_normalization(obs, act)
    train_policy(act_policy, chunk_sampler(obs, act, config.chunk_size, config.batch_size),
                 steps=config.act_steps, lr=config.lr,
                 generator=torch.Generator().manual_seed(config.seed + 1),
                 progress=stage(config.mse_steps, 2 * config.act_steps))
    act_policy.generator.manual_seed(config.seed + 2)
    label = (msg("ACT (CVAE, z sampled per episode)") if config.use_latent
             else f"ACT architecture, no latent, {config.reconstruction_loss} (falsifier)")
    outcomes["act_sampled"] = evaluate(act_policy, task, starts, label, config.num_plot_paths)
    # a second, independent latent per start (same starts): does z choose the side?
    act_policy.generator.manual_seed(config.seed + 3)
    outcomes["act_resampled"] = evaluate(act_policy, task, starts, label + ", second z draw",
                                         config.num_plot_paths)
    zero_cfg = ACTConfig(**{**act_cfg.__dict__, "latent_sampling": "zero"})
    zero = build_seeded(lambda: ACTPolicy(zero_cfg), config.seed)
    zero.load_state_dict(act_policy.state_dict())
    zero.eval()
    outcomes["act_zero"] = evaluate(zero, task, starts, "ACT, z = 0", config.num_plot_paths)
    if progress is not None:
        progress(1.0)
    return MultimodalResult(config, outcomes, float((data.side < 0).mean()),
                            time.perf_counter() - start)
