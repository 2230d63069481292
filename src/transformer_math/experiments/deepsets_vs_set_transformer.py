"""Deep Sets vs Set Transformer on a pairwise set task: "is any pair closer than r?".

Task (000 §8.3.2, "Deep Sets 与 Set Transformer 的关键差异": pairwise relations need elements to
see each other before pooling). A set is ``set_size`` points uniform in [0, 1]^2; its label is 1
when the smallest pairwise distance is below r. r is the median of that smallest distance over a
calibration sample, so the classes are balanced and chance accuracy is 0.5.

Models (``nn/sets.py``): sum-pooled Deep Sets (phi and rho MLPs) and a Set Transformer (SAB
encoder, PMA pooling, SAB decoder, linear head); ``deepsets_hidden`` is chosen so that Deep Sets
has about as many parameters as the Set Transformer (counts are reported). The ablation
``set_transformer_num_sab = 0`` keeps PMA but removes every interaction before pooling; the control
``shuffle_labels`` trains on labels drawn independently of the sets (nothing can be learnt).

Both models see the same training batches (one data generator per model, same seed), Adam,
binary cross-entropy; accuracy on a fixed held-out set. Deterministic given ``seed``: parameters
are drawn by ``nn.init.seeded`` from a generator seeded from the config (the global RNG is never
used); data come from explicit generators.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from transformer_math.nn.attention import count_parameters
from transformer_math.nn.init import seeded
from transformer_math.nn.sets import DeepSets, SetTransformer


@dataclass(frozen=True)
class DeepSetsVsSetTransformerConfig:
    seed: int = 0
    set_size: int = 4
    train_steps: int = 1000
    batch_size: int = 64
    lr: float = 1e-3
    eval_sets: int = 2048
    calibration_sets: int = 8192
    eval_every: int = 100
    deepsets_hidden: int = 128
    set_transformer_dim: int = 32
    set_transformer_heads: int = 4
    set_transformer_num_sab: int = 2
    shuffle_labels: bool = False  # control: training labels independent of the sets

    @staticmethod
    def tiny() -> DeepSetsVsSetTransformerConfig:
        return DeepSetsVsSetTransformerConfig(
            train_steps=400, batch_size=64, eval_sets=512, calibration_sets=2048,
            eval_every=50, deepsets_hidden=64, set_transformer_dim=16, set_transformer_heads=2,
            lr=3e-3,
        )

    @staticmethod
    def default() -> DeepSetsVsSetTransformerConfig:
        return DeepSetsVsSetTransformerConfig()

    @staticmethod
    def large() -> DeepSetsVsSetTransformerConfig:
        return DeepSetsVsSetTransformerConfig(
            set_size=8, train_steps=5000, batch_size=128, eval_sets=8192, deepsets_hidden=256,
            set_transformer_dim=64,
        )


@dataclass(frozen=True)
class DeepSetsVsSetTransformerResult:
    config: DeepSetsVsSetTransformerConfig
    radius: float
    accuracy: dict[str, float]
    parameters: dict[str, int]
    curves: dict[str, list[tuple[int, float]]] = field(default_factory=dict)
    seconds: float = 0.0


def sample_sets(num_sets: int, set_size: int, generator: torch.Generator) -> Tensor:
    """(num_sets, set_size, 2) points uniform in the unit square."""
    return torch.rand(num_sets, set_size, 2, generator=generator)


def min_pairwise_distance(x: Tensor) -> Tensor:
    """Smallest distance between two distinct points of each set: (B, n, 2) -> (B,)."""
    dist = torch.cdist(x, x)
    n = x.shape[1]
    eye = torch.eye(n, dtype=torch.bool, device=x.device)
    return dist.masked_fill(eye, float("inf")).amin(dim=(-2, -1))


def _train(
    model: nn.Module,
    cfg: DeepSetsVsSetTransformerConfig,
    radius: float,
    test_x: Tensor,
    test_y: Tensor,
    tick: Callable[[], None],
) -> tuple[float, list[tuple[int, float]]]:
    gen = torch.Generator().manual_seed(cfg.seed + 101)  # same batches for every model
    opt = torch.optim.Adam(model.parameters(), lr=cfg.lr)
    curve: list[tuple[int, float]] = []
    for step in range(1, cfg.train_steps + 1):
        x = sample_sets(cfg.batch_size, cfg.set_size, gen)
        y = (min_pairwise_distance(x) < radius).float()
        if cfg.shuffle_labels:
            y = (torch.rand(cfg.batch_size, generator=gen) < 0.5).float()
        loss = F.binary_cross_entropy_with_logits(model(x).squeeze(-1), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if step % cfg.eval_every == 0 or step == cfg.train_steps:
            curve.append((step, _accuracy(model, test_x, test_y)))
        tick()
    return curve[-1][1], curve


@torch.no_grad()
def _accuracy(model: nn.Module, x: Tensor, y: Tensor) -> float:
    return float(((model(x).squeeze(-1) > 0).float() == y).float().mean())


def _build(name: str, cfg: DeepSetsVsSetTransformerConfig, num_sab: int) -> nn.Module:
    if name == "deepsets":
        return seeded(lambda: DeepSets(2, cfg.deepsets_hidden, 1, pooling="sum"), cfg.seed + 7)
    return seeded(lambda: SetTransformer(2, cfg.set_transformer_dim, 1,
                                         num_heads=cfg.set_transformer_heads, num_sab=num_sab),
                  cfg.seed + 7)


def run(
    config: DeepSetsVsSetTransformerConfig,
    progress: Callable[[float], None] | None = None,
) -> DeepSetsVsSetTransformerResult:
    """Train both models on the same stream and report held-out accuracy (chance 0.5)."""
    if config.set_size < 2:
        raise ValueError(f"set_size must be >= 2, got {config.set_size}")
    start = time.perf_counter()
    gen = torch.Generator().manual_seed(config.seed)
    calibration = sample_sets(config.calibration_sets, config.set_size, gen)
    radius = float(min_pairwise_distance(calibration).median())
    test_x = sample_sets(config.eval_sets, config.set_size, gen)
    test_y = (min_pairwise_distance(test_x) < radius).float()
    models = {
        "deepsets": _build("deepsets", config, 0),
        "set_transformer": _build("set_transformer", config, config.set_transformer_num_sab),
    }
    total = config.train_steps * len(models)
    done = 0

    def tick() -> None:
        nonlocal done
        done += 1
        if progress is not None and done % 25 == 0:
            progress(done / total)

    accuracy, curves = {}, {}
    for name, model in models.items():
        accuracy[name], curves[name] = _train(model, config, radius, test_x, test_y, tick)
    return DeepSetsVsSetTransformerResult(
        config=config,
        radius=radius,
        accuracy=accuracy,
        parameters={name: count_parameters(m) for name, m in models.items()},
        curves=curves,
        seconds=time.perf_counter() - start,
    )
