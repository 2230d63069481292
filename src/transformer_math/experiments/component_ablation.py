"""Component ablation: which parts of a Transformer block a context + nonlinearity task needs.

000 §8.3.4 ("反面" and the three-step proof of Yun et al., ICLR 2020): attention mixes context
(step 2, contextual mapping), the FFN is the token-wise nonlinearity (step 3, table lookup).
Task ``context_lookup`` (data/sequence_tasks.py): y_i = T[x_i, k(x)], k = number of "high" tokens
in the whole sequence, T a fixed random table. An FFN-only model cannot see k, so it cannot beat
the exact token-wise Bayes accuracy; the full block can (attention computes k / n, the FFN looks
T up); attention-only must realise the table through softmax mixing and a linear readout alone.
Variants (block kind, number of layers) are trained with the same budget and evaluated on fresh
sequences. Positions are off: the task is permutation equivariant.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F

from transformer_math.data.sequence_tasks import TaskSpec, make_task, tokenwise_accuracy_ceiling
from transformer_math.nn.tiny_transformer import TinyTransformerConfig, build_tiny_transformer

Progress = Callable[[float], None] | None


@dataclass(frozen=True)
class TrainSettings:
    """Optimisation of one tiny model: AdamW, linear warm-up then cosine decay to 0."""

    steps: int = 1500
    batch_size: int = 64
    lr: float = 3e-3
    weight_decay: float = 0.01
    warmup_steps: int = 50
    eval_size: int = 2048
    log_every: int = 50

    def __post_init__(self) -> None:
        for name in ("steps", "batch_size", "eval_size", "log_every"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be positive, got {getattr(self, name)}")
        if not self.lr > 0:
            raise ValueError(f"lr must be positive, got {self.lr}")


@dataclass(frozen=True)
class TrainedModelResult:
    """Outcome of training one model on a token-classification task."""

    eval_loss: float
    eval_accuracy: float
    curve_steps: list[int]
    curve_losses: list[float]
    seconds: float


def _lr_at(step: int, s: TrainSettings) -> float:
    import math

    if step < s.warmup_steps:
        return s.lr * (step + 1) / s.warmup_steps
    frac = (step - s.warmup_steps) / max(1, s.steps - s.warmup_steps)
    return s.lr * 0.5 * (1.0 + math.cos(math.pi * frac))


def train_token_classifier(
    model_cfg: TinyTransformerConfig,
    task: str,
    spec: TaskSpec,
    settings: TrainSettings,
    seed: int,
    progress: Progress = None,
) -> TrainedModelResult:
    """Train a TinyTransformer on ``task`` (fresh samples each step); evaluate on fresh data."""
    start = time.perf_counter()
    model = build_tiny_transformer(model_cfg, seed)
    opt = torch.optim.AdamW(model.parameters(), lr=settings.lr,
                            weight_decay=settings.weight_decay, betas=(0.9, 0.98))
    data_gen = torch.Generator().manual_seed(seed + 1)
    steps, losses = [], []
    running = 0.0
    for step in range(settings.steps):
        for group in opt.param_groups:
            group["lr"] = _lr_at(step, settings)
        x, y = make_task(task, spec, settings.batch_size, data_gen)
        logits = model(x)  # (B, n, C)
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        running += loss.item()
        if (step + 1) % settings.log_every == 0:
            steps.append(step + 1)
            losses.append(running / settings.log_every)
            running = 0.0
            if progress is not None:
                progress((step + 1) / settings.steps)
    eval_gen = torch.Generator().manual_seed(seed + 10_007)
    x, y = make_task(task, spec, settings.eval_size, eval_gen)
    model.eval()
    with torch.no_grad():
        logits = model(x)
        eval_loss = float(F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1)))
        accuracy = float((logits.argmax(-1) == y).double().mean())
    return TrainedModelResult(eval_loss, accuracy, steps, losses, time.perf_counter() - start)


@dataclass(frozen=True)
class ComponentAblationConfig:
    task: str = "context_lookup"
    spec: TaskSpec = field(default_factory=TaskSpec)
    variants: tuple[tuple[str, int], ...] = (
        ("ffn_only", 2), ("attention_only", 1), ("attention_only", 2), ("full", 1), ("full", 2),
    )
    embed_dim: int = 32
    num_heads: int = 2
    train: TrainSettings = field(default_factory=TrainSettings)
    seed: int = 0

    @classmethod
    def tiny(cls, seed: int = 0, task: str = "context_lookup") -> ComponentAblationConfig:
        return cls(task=task, spec=TaskSpec(vocab_size=4, seq_len=4, num_classes=3),
                   variants=(("ffn_only", 1), ("attention_only", 1), ("full", 1)),
                   embed_dim=16, train=TrainSettings(steps=20, batch_size=16, eval_size=64,
                                                     log_every=10, warmup_steps=5), seed=seed)

    @classmethod
    def default(cls, seed: int = 0, task: str = "context_lookup") -> ComponentAblationConfig:
        return cls(task=task, seed=seed)

    @classmethod
    def large(cls, seed: int = 0, task: str = "context_lookup") -> ComponentAblationConfig:
        return cls(task=task, seed=seed, embed_dim=64,
                   train=TrainSettings(steps=5000, batch_size=128, eval_size=8192))


@dataclass(frozen=True)
class ComponentAblationResult:
    config: ComponentAblationConfig
    tokenwise_ceiling: float  # exact best accuracy of any model that sees only its own token
    results: dict[str, TrainedModelResult]  # key "block/L layers"
    seconds: float


def variant_name(block: str, num_layers: int) -> str:
    return f"{block}/{num_layers}L"


def run(config: ComponentAblationConfig, progress: Progress = None) -> ComponentAblationResult:
    """Train every variant with the same budget and data stream; deterministic given the seed."""
    start = time.perf_counter()
    results: dict[str, TrainedModelResult] = {}
    total = len(config.variants)
    for index, (block, layers) in enumerate(config.variants):
        model_cfg = TinyTransformerConfig(
            vocab_size=config.spec.vocab_size, num_outputs=config.spec.num_classes,
            embed_dim=config.embed_dim, num_heads=config.num_heads, num_layers=layers,
            block=block, positions="none", max_len=config.spec.seq_len,
        )

        def sub(f: float, i: int = index) -> None:
            if progress is not None:
                progress((i + f) / total)

        results[variant_name(block, layers)] = train_token_classifier(
            model_cfg, config.task, config.spec, config.train, config.seed, sub
        )
    return ComponentAblationResult(
        config=config,
        tokenwise_ceiling=tokenwise_accuracy_ceiling(config.task, config.spec),
        results=results,
        seconds=time.perf_counter() - start,
    )
