"""No positions, no order: training on non-equivariant targets with and without a position code.

000 §8.3.4 (Yun et al., ICLR 2020, Theorem part 1; 000 §8.3.1 property (3)): without positions a
Transformer is permutation equivariant, so equal tokens get equal outputs wherever they stand and
a target such as ``reverse`` (y_i = x_{n-1-i}) or ``copy_first`` (y_i = x_0) can only be met up to
the exact equivariant Bayes ceiling (data/sequence_tasks.py); with a position code it can be fitted.
Both arms use the same model, task, data stream and budget; only the position scheme differs.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import torch

from transformer_math.data.sequence_tasks import TaskSpec, equivariant_accuracy_ceiling
from transformer_math.experiments.component_ablation import (
    EXACT_EVAL_LIMIT,
    TrainedModelResult,
    TrainSettings,
    all_sequences,
    best_constant_accuracy,
    multiset_keys,
    task_targets,
    train_token_classifier,
)
from transformer_math.experiments.presets import tiny_transformer_config

Progress = Callable[[float], None] | None


@dataclass(frozen=True)
class PositionEquivarianceConfig:
    task: str = "reverse"
    spec: TaskSpec = field(default_factory=lambda: TaskSpec(vocab_size=8, seq_len=8))
    arms: tuple[str, ...] = ("none", "learned")  # position schemes compared
    embed_dim: int = 32
    num_heads: int = 2
    num_layers: int = 2
    train: TrainSettings = field(default_factory=lambda: TrainSettings(steps=600))
    ceiling_samples: int = 20_000
    seed: int = 0

    def __post_init__(self) -> None:
        if self.task not in ("reverse", "copy_first"):
            raise ValueError(f"task must be 'reverse' or 'copy_first', got {self.task!r}")

    @classmethod
    def tiny(cls, seed: int = 0, arms: tuple[str, ...] = ("none", "learned")):
        """V = 4, n = 4 (all 256 inputs evaluated: exact accuracies and ceiling), 1 layer,
        d = 16, 500 steps x batch 64 at lr 5e-3.

        issue 12: the former tiny trained 20 steps x batch 16 (0.36 with positions at seed 0,
        failed) and evaluated 64 sampled sequences (tolerance 0.19).
        """
        return cls(spec=TaskSpec(vocab_size=4, seq_len=4), arms=arms, embed_dim=16,
                   num_layers=1, ceiling_samples=2000, seed=seed,
                   train=TrainSettings(steps=500, batch_size=64, lr=5e-3, log_every=50,
                                       warmup_steps=50))

    @classmethod
    def default(cls, seed: int = 0, arms: tuple[str, ...] = ("none", "learned")):
        return cls(arms=arms, seed=seed)

    @classmethod
    def large(cls, seed: int = 0, arms: tuple[str, ...] = ("none", "learned")):
        return cls(spec=TaskSpec(vocab_size=16, seq_len=16), arms=arms, embed_dim=64,
                   seed=seed, train=TrainSettings(steps=3000, batch_size=128, eval_size=8192))


@dataclass(frozen=True)
class PositionEquivarianceResult:
    config: PositionEquivarianceConfig
    equivariant_ceiling: float  # best accuracy of any model without positions
    results: dict[str, TrainedModelResult]  # keyed by position scheme
    seconds: float
    #: True when models were evaluated on all V^n inputs and the ceiling is exact on them
    exact_eval: bool = False


def run(config: PositionEquivarianceConfig, progress: Progress = None):
    """Train one model per position scheme in ``config.arms``; deterministic given the seed."""
    start = time.perf_counter()
    exact = config.spec.vocab_size**config.spec.seq_len <= EXACT_EVAL_LIMIT
    evaluation = None
    if exact:  # every input once: exact accuracies; the ceiling by brute force on the same inputs
        x_all = all_sequences(config.spec)
        evaluation = (x_all, task_targets(config.task, config.spec, x_all))
        ceiling = best_constant_accuracy(multiset_keys(x_all, config.spec.vocab_size),
                                         evaluation[1].reshape(-1))
    else:
        ceiling = equivariant_accuracy_ceiling(
            config.task, config.spec, config.ceiling_samples,
            torch.Generator().manual_seed(config.seed + 77),
        )
    results: dict[str, TrainedModelResult] = {}
    for index, positions in enumerate(config.arms):
        model_cfg = tiny_transformer_config(
            config.spec.vocab_size, config.spec.vocab_size, hidden_size=config.embed_dim,
            num_heads=config.num_heads, num_layers=config.num_layers, sublayers="full",
            position=positions, max_seq_len=config.spec.seq_len,
        )

        def sub(f: float, i: int = index) -> None:
            if progress is not None:
                progress((i + f) / len(config.arms))

        results[positions] = train_token_classifier(
            model_cfg, config.task, config.spec, config.train, config.seed, sub, evaluation
        )
    return PositionEquivarianceResult(config, ceiling, results, time.perf_counter() - start,
                                      exact)
