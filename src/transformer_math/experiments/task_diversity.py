"""Task diversity transition: from dMMSE (task memorisation) to ridge (in-context regression).

Raventos et al. 2023 ("Pretraining task diversity and the emergence of non-Bayesian in-context
learning"): pretrain on prompts whose task w is one of M vectors drawn once from N(0, I); on
FRESH tasks the model behaves like dMMSE (posterior mean over the M pool tasks) for small M and
like ridge (lambda = sigma^2, Bayes optimal for the Gaussian prior) above a threshold M*.

Scaled down per FACTS.md (their M* = 2^11..2^14 needs 8 layers and 500k steps): D = 4, K = 8,
noise variance 0.25, a 2-layer pre-LN GPT (d_model 32, 2 heads, MLP 4x, learned positions), tokens
x -> (0, x), y -> (y, 0...) with y_i read at the x_i token under the causal mask, AdamW 3e-3 with
10 % warm-up then cosine decay to 0, gradient clipping 1, batch 64, 2000 steps. Baselines see only
the first i - 1 pairs when predicting y_i. Distances are mean squared differences between the
model's and a baseline's predictions over 1024 fresh-task prompts and all K positions. M* is the
log2-linear interpolation of the first sign change of (distance to dMMSE - distance to ridge).
Short training moves M* down (FACTS.md: 2^3.3..2^3.7 over seeds at this size).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass

import torch

from transformer_math.data.regression import make_task_pool, sample_regression
from transformer_math.nn.icl_gpt import ICLGPT, ICLGPTConfig
from transformer_math.nn.init import seeded
from transformer_math.theory.icl_baselines import dmmse_posterior, prefix_predictions, ridge_predict


@dataclass(frozen=True)
class TaskDiversityConfig:
    x_dim: int = 4
    num_points: int = 8
    noise_var: float = 0.25
    num_tasks: tuple[int, ...] = (2, 4, 8, 16, 32, 64, 256, 1024)
    d_model: int = 32
    num_layers: int = 2
    num_heads: int = 2
    batch_size: int = 64
    steps: int = 2000
    lr: float = 3e-3
    weight_decay: float = 0.0
    warmup_fraction: float = 0.1
    eval_prompts: int = 1024
    seeds: tuple[int, ...] = (0,)

    @staticmethod
    def tiny(seed: int = 0) -> TaskDiversityConfig:
        """D = 1, K = 6, M in {1, 128}, d_model 16, lr 1e-2, 1000 steps: ~16 s of CPU.

        At this size lr 1e-2 leaves the predict-zero plateau within 1000 steps (3e-3 does not).
        """
        return TaskDiversityConfig(
            x_dim=1,
            num_points=6,
            num_tasks=(1, 128),
            d_model=16,
            lr=1e-2,
            steps=1000,
            eval_prompts=256,
            seeds=(seed,),
        )

    @staticmethod
    def default(seed: int = 0) -> TaskDiversityConfig:
        return TaskDiversityConfig(seeds=(seed,))

    @staticmethod
    def large(seed: int = 0) -> TaskDiversityConfig:
        return TaskDiversityConfig(
            num_tasks=tuple(2**k for k in range(1, 13)), steps=4000, seeds=(seed, seed + 1)
        )


@dataclass(frozen=True)
class TaskDiversityResult:
    config: TaskDiversityConfig
    num_tasks: list[int]
    distance_to_dmmse: list[float]  # mean over seeds
    distance_to_ridge: list[float]
    model_mse: list[float]  # fresh tasks, against the noisy targets
    untrained_distance_to_dmmse: list[float]  # the same models at initialisation
    untrained_distance_to_ridge: list[float]
    untrained_mse: list[float]
    ridge_mse: float
    dmmse_mse: list[float]
    transition_log2_m: float | None  # estimated log2 M*, None when no crossover in the sweep
    seconds: float


def _predict_dmmse_prefix(x: torch.Tensor, y: torch.Tensor, pool: torch.Tensor, noise_var: float):
    """dMMSE prediction of y_i from the first i - 1 pairs, for all i: (B, K)."""
    out = []
    task_predictions = x @ pool.T  # (B, K, M)
    for i in range(x.shape[1]):
        post = dmmse_posterior(x[:, :i], y[:, :i], pool, noise_var)  # (B, M)
        out.append((post * task_predictions[:, i]).sum(-1))
    return torch.stack(out, dim=1)


def _lr_factor(step: int, total: int, warmup_fraction: float) -> float:
    warmup = max(1, int(total * warmup_fraction))
    if step < warmup:
        return (step + 1) / warmup
    return 0.5 * (1 + math.cos(math.pi * (step - warmup) / max(1, total - warmup)))


def _train_one(config: TaskDiversityConfig, m: int, seed: int, x_eval, y_eval):
    g = torch.Generator().manual_seed(seed * 1_000_003 + m)
    pool = make_task_pool(m, config.x_dim, generator=g)
    model_config = ICLGPTConfig(
        config.x_dim, config.num_points, config.d_model, config.num_layers, config.num_heads
    )
    model = seeded(lambda: ICLGPT(model_config), g)
    with torch.no_grad():
        untrained = model(x_eval, y_eval)
    opt = torch.optim.AdamW(
        model.parameters(), lr=config.lr, betas=(0.9, 0.98), weight_decay=config.weight_decay
    )
    for step in range(config.steps):
        for group in opt.param_groups:
            group["lr"] = config.lr * _lr_factor(step, config.steps, config.warmup_fraction)
        batch = sample_regression(
            config.batch_size,
            config.num_points,
            config.x_dim,
            generator=g,
            noise_var=config.noise_var,
            task_pool=pool,
        )
        loss = ((model(batch.x, batch.y) - batch.y) ** 2).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
    model.eval()
    with torch.no_grad():
        trained = model(x_eval, y_eval)
    return pool, trained, untrained


def crossover_log2(log2_m: list[float], gap: list[float]) -> float | None:
    """First sign change of gap = d_dmmse - d_ridge from negative to positive, log2-linear."""
    for i in range(1, len(gap)):
        if gap[i - 1] < 0 <= gap[i]:
            t = -gap[i - 1] / (gap[i] - gap[i - 1])
            return log2_m[i - 1] + t * (log2_m[i] - log2_m[i - 1])
    return None


def run(
    config: TaskDiversityConfig, progress: Callable[[float], None] | None = None
) -> TaskDiversityResult:
    start = time.perf_counter()
    ms = list(config.num_tasks)
    acc = {
        k: [[0.0] * len(ms) for _ in config.seeds]
        for k in ("dd", "dr", "mse", "udd", "udr", "umse", "dmse")
    }
    ridge_mse_all = []
    total = len(ms) * len(config.seeds)
    done = 0
    for s_index, seed in enumerate(config.seeds):
        g_eval = torch.Generator().manual_seed(10_000 + seed)
        fresh = sample_regression(
            config.eval_prompts,
            config.num_points,
            config.x_dim,
            generator=g_eval,
            noise_var=config.noise_var,
        )
        x, y = fresh.x, fresh.y
        ridge = prefix_predictions(lambda a, b, c: ridge_predict(a, b, c, config.noise_var), x, y)
        ridge_mse_all.append(float(((ridge - y) ** 2).mean()))
        for m_index, m in enumerate(ms):
            pool, trained, untrained = _train_one(config, m, seed, x, y)
            dmmse = _predict_dmmse_prefix(x, y, pool, config.noise_var)
            acc["dd"][s_index][m_index] = float(((trained - dmmse) ** 2).mean())
            acc["dr"][s_index][m_index] = float(((trained - ridge) ** 2).mean())
            acc["mse"][s_index][m_index] = float(((trained - y) ** 2).mean())
            acc["udd"][s_index][m_index] = float(((untrained - dmmse) ** 2).mean())
            acc["udr"][s_index][m_index] = float(((untrained - ridge) ** 2).mean())
            acc["umse"][s_index][m_index] = float(((untrained - y) ** 2).mean())
            acc["dmse"][s_index][m_index] = float(((dmmse - y) ** 2).mean())
            done += 1
            if progress is not None:
                progress(done / total)

    def mean(key: str) -> list[float]:
        return [sum(row[i] for row in acc[key]) / len(config.seeds) for i in range(len(ms))]

    dd, dr = mean("dd"), mean("dr")
    crossing = crossover_log2(
        [math.log2(m) for m in ms], [a - b for a, b in zip(dd, dr, strict=True)]
    )
    return TaskDiversityResult(
        config,
        ms,
        dd,
        dr,
        mean("mse"),
        mean("udd"),
        mean("udr"),
        mean("umse"),
        sum(ridge_mse_all) / len(ridge_mse_all),
        mean("dmse"),
        crossing,
        time.perf_counter() - start,
    )
