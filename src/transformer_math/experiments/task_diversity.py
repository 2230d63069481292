"""Task diversity transition: from dMMSE (task memorisation) to ridge (in-context regression).

Raventos et al. 2023 ("Pretraining task diversity and the emergence of non-Bayesian in-context
learning"): pretrain on prompts whose task w is one of M vectors drawn once from N(0, I); on
FRESH tasks the model behaves like dMMSE (posterior mean over the M pool tasks) for small M and
like ridge (lambda = sigma^2, Bayes optimal for the Gaussian prior) above a threshold M*.

Scaled down per FACTS.md (their M* = 2^11..2^14 needs 8 layers and 500k steps): D = 4, K = 8,
noise variance 0.25, a 2-layer pre-LN GPT (d_model 32, 2 heads, MLP 4x, learned positions), tokens
x -> (0, x), y -> (y, 0...) with y_i read at the x_i token under the causal mask
(``model_config``: a ``TransformerConfig`` preset; ``regression_predictions``), AdamW 3e-3 with
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
from dataclasses import dataclass, field

import torch
from torch import Tensor

from transformer_math.data.regression import (
    interleave_regression_tokens,
    make_task_pool,
    sample_regression,
)
from transformer_math.nn.config import TransformerConfig
from transformer_math.nn.transformer import Transformer, build_transformer
from transformer_math.theory.icl_baselines import (
    bayes_ridge_lambda,
    dmmse_predict,
    prefix_predictions,
    ridge_predict,
)


@dataclass(frozen=True)
class TaskDiversityConfig:
    x_dim: int = 4
    num_points: int = 8
    noise_var: float = 0.25
    num_tasks: tuple[int, ...] = (2, 8, 32, 1024)
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

    def model_config(self) -> TransformerConfig:
        """The in-context regressor (Garg et al. 2022; Raventos et al. 2023) as a preset.

        Tokens of width 1 + D embedded linearly, a learned absolute position table of 2K entries
        starting at 0, causal pre-LN blocks (LayerNorm, MHA, GELU MLP 4x), a final LayerNorm and
        a scalar head with bias. ``init="torch"`` (every layer's PyTorch default, fan-in
        uniform) matters here: with N(0, 0.02^2) weights the D = 4 runs at M >= 32 stayed on
        the predict-zero plateau (fresh-task MSE ~ D + sigma^2) within 2000 steps, while this
        scheme reaches ~1.3x the ridge MSE at M = 64 (FACTS.md reports ~1.25x).
        """
        return TransformerConfig(
            hidden_size=self.d_model,
            num_layers=self.num_layers,
            num_heads=self.num_heads,
            input_size=1 + self.x_dim,
            output_size=1,
            head_bias=True,
            max_seq_len=2 * self.num_points,
            position="learned",
            position_init_std=0.0,
            norm="layernorm",
            norm_placement="pre",
            feedforward="gelu",
            causal=True,
            init="torch",
        )

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
        """D = 4, K = 8, M in {2, 8, 32, 1024}, 2000 steps per M.

        The claim decides on the smallest and the largest M only; the two inner points draw the
        curve and place M* (FACTS.md: 2^3.3..2^3.7 at this size, between 8 and 32). Each M is
        trained from its own generator (``seed * 1_000_003 + m``) on the same fresh evaluation
        prompts, so these four runs are exactly the M = 2, 8, 32, 1024 runs of the eight-point
        grid this preset had before issue 19 (2, 4, ..., 64, 256, 1024: ``tmath sweep
        task_diversity --grid num_tasks=...`` draws any grid).
        """
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
    #: mean squared difference of the dMMSE and ridge predictions per M (how far apart the two
    #: baselines are: the model's ordering between them means something only when they differ)
    baseline_distance: list[float] = field(default_factory=list)
    #: standard error of d_dmmse - d_ridge per M, paired per evaluation prompt (the prompt's mean
    #: over positions of (model - dmmse)^2 - (model - ridge)^2): the sampling error of the
    #: model's ordering between the two baselines
    distance_gap_stderr: list[float] = field(default_factory=list)


def regression_predictions(model: Transformer, x: Tensor, y: Tensor) -> Tensor:
    """Predictions of every y_i, (B, K), read at the x_i tokens (positions 2i, 0-based).

    Under the causal mask the x_i token sees x_1, y_1, ..., y_{i-1}, x_i but not y_i; reading at
    the y_i token would leak the target.
    """
    out = model(inputs_embeds=interleave_regression_tokens(x, y))  # (B, 2K, 1)
    return out[:, 0::2, 0]  # (B, K)


def _lr_factor(step: int, total: int, warmup_fraction: float) -> float:
    warmup = max(1, int(total * warmup_fraction))
    if step < warmup:
        return (step + 1) / warmup
    return 0.5 * (1 + math.cos(math.pi * (step - warmup) / max(1, total - warmup)))


def _train_one(config: TaskDiversityConfig, m: int, seed: int, x_eval: Tensor, y_eval: Tensor
               ) -> tuple[Tensor, Tensor, Tensor]:
    """Train on prompts from a pool of ``m`` tasks; (pool, trained and untrained predictions on
    the evaluation prompts)."""
    g = torch.Generator().manual_seed(seed * 1_000_003 + m)
    pool = make_task_pool(m, config.x_dim, generator=g)
    model = build_transformer(config.model_config(), g)
    with torch.no_grad():
        untrained = regression_predictions(model, x_eval, y_eval)
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
        loss = ((regression_predictions(model, batch.x, batch.y) - batch.y) ** 2).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
    model.eval()
    with torch.no_grad():
        trained = regression_predictions(model, x_eval, y_eval)
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
        for k in ("dd", "dr", "mse", "udd", "udr", "umse", "dmse", "dbr", "gse")
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
        lam = bayes_ridge_lambda(config.noise_var, 1.0)  # pool tasks w ~ N(0, I): tau^2 = 1
        ridge = prefix_predictions(lambda a, b, c, r=lam: ridge_predict(a, b, c, r), x, y)
        ridge_mse_all.append(float(((ridge - y) ** 2).mean()))
        for m_index, m in enumerate(ms):
            pool, trained, untrained = _train_one(config, m, seed, x, y)
            dmmse = prefix_predictions(
                lambda a, b, c, p=pool: dmmse_predict(a, b, c, p, config.noise_var), x, y)
            acc["dd"][s_index][m_index] = float(((trained - dmmse) ** 2).mean())
            acc["dr"][s_index][m_index] = float(((trained - ridge) ** 2).mean())
            acc["mse"][s_index][m_index] = float(((trained - y) ** 2).mean())
            acc["udd"][s_index][m_index] = float(((untrained - dmmse) ** 2).mean())
            acc["udr"][s_index][m_index] = float(((untrained - ridge) ** 2).mean())
            acc["umse"][s_index][m_index] = float(((untrained - y) ** 2).mean())
            acc["dmse"][s_index][m_index] = float(((dmmse - y) ** 2).mean())
            acc["dbr"][s_index][m_index] = float(((dmmse - ridge) ** 2).mean())
            gap = (((trained - dmmse) ** 2) - ((trained - ridge) ** 2)).mean(dim=1)  # per prompt
            acc["gse"][s_index][m_index] = float(gap.std() / math.sqrt(gap.numel()))
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
        mean("dbr"),
        mean("gse"),
    )
