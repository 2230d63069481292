"""Deep Sets vs Set Transformer on a pairwise set task: "is any pair closer than r?".

Task (000 §8.3.2, "Deep Sets 与 Set Transformer 的关键差异": pairwise relations need elements to
see each other before pooling). A set is ``set_size`` points uniform in the unit square; its
label is 1 when the smallest pairwise distance D is below r. Sets whose D falls in the band
[r / band, r * band] are not drawn (rejection sampling; ``band = 1`` keeps every set): the label
is still exactly the rule "D < r", but no set sits on the decision boundary, so what separates
the models is whether they can compute D, not how finely they resolve its threshold. r is chosen
on a calibration sample so that P(D < r / band) = P(D > r * band): the two classes are balanced
and chance accuracy is 1/2 (``band = 1``: r is the median of D).

Why the Set Transformer should win at equal size. D = min_{i<j} |x_i - x_j| is a function of
pairs. A Set Transformer's self-attention scores q(x_i) . k(x_j) are functions of pairs, so one
SAB can compare every element with every other before pooling (Lee et al. 2019, §3.1). Deep Sets
rho(sum_j phi(x_j)) must encode the pairwise test through per-element features alone: for sum
pooling, detecting a pair closer than r amounts to a fine partition of the square by phi (cells of
side ~r), which a small phi learns slowly (Zaheer et al. 2017; Wagstaff et al. 2019 on the latent
width sum-decompositions need).

Models (``nn/sets.py``): sum-pooled Deep Sets (phi and rho MLPs) and a Set Transformer (SAB
encoder, PMA pooling, SAB decoder, linear head); ``deepsets_hidden`` is chosen so that Deep Sets
has about as many parameters as the Set Transformer (counts are reported). The ablation
``set_transformer_num_sab = 0`` keeps PMA but removes every interaction before pooling. The
falsifier of ``kernel.deepsets-vs-set-transformer`` is the planted bug
``sets.sab-attends-over-batch`` (``nn/sets.py``): the SABs attend along the batch axis, so the
elements of a set never see each other and the pairwise advantage must vanish.

Both models see the same training batches (one data generator per model, same seed), Adam with
the one-cycle schedule (linear warm-up to ``lr`` over ``warmup_fraction`` of the steps, then
cosine annealing; Smith & Topin 2019, ``torch.optim.lr_scheduler.OneCycleLR``) and the global
gradient norm clipped at ``grad_clip`` (without it the post-norm Set Transformer diverged to
chance at peak lr 6e-3 on one seed of five), binary cross-entropy; accuracy on a fixed held-out
set. Deterministic given ``seed``: parameters are
drawn by ``nn.init.seeded`` from a generator seeded from the config (the global RNG is never
used); data come from explicit generators.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from transformer_math.experiments.memo import memoized
from transformer_math.nn.attention import count_parameters
from transformer_math.nn.init import seeded
from transformer_math.nn.sets import DeepSets, SetTransformer


@dataclass(frozen=True)
class DeepSetsVsSetTransformerConfig:
    seed: int = 0
    set_size: int = 4
    point_dim: int = 2  # points uniform in [0, 1]^point_dim
    band: float = 1.5  # sets with D in [r / band, r * band] are not drawn; 1 keeps every set
    train_steps: int = 500
    batch_size: int = 256
    lr: float = 6e-3  # peak of the one-cycle schedule
    warmup_fraction: float = 0.2
    grad_clip: float = 1.0  # max global gradient norm (0: no clipping)
    eval_sets: int = 16384
    calibration_sets: int = 32768
    eval_every: int = 50
    deepsets_hidden: int = 128
    set_transformer_dim: int = 32
    set_transformer_heads: int = 4
    set_transformer_num_sab: int = 2

    # The comparison is one of sample efficiency at equal size: with a training budget of a few
    # hundred steps the Set Transformer converges (~0.99) and Deep Sets plateaus near 0.82-0.84.
    # With 1500 steps of batch 256 (measured, seed 0) Deep Sets reaches 0.945 against 0.998: the
    # gap shrinks to 0.05 in this two-dimensional task, so the larger sizes buy precision (held-out
    # and calibration sets) and data per step, not a longer run. With 8 points per set, 1000
    # steps left the Set Transformer at chance (seed 0): the tiny budget does not carry over.

    @staticmethod
    def tiny() -> DeepSetsVsSetTransformerConfig:
        return DeepSetsVsSetTransformerConfig(
            eval_sets=4096, calibration_sets=8192, eval_every=100,
        )

    @staticmethod
    def default() -> DeepSetsVsSetTransformerConfig:
        return DeepSetsVsSetTransformerConfig()

    @staticmethod
    def large() -> DeepSetsVsSetTransformerConfig:
        return DeepSetsVsSetTransformerConfig(batch_size=512, eval_sets=65536)


@dataclass(frozen=True)
class DeepSetsVsSetTransformerResult:
    config: DeepSetsVsSetTransformerConfig
    radius: float
    accuracy: dict[str, float]
    parameters: dict[str, int]
    curves: dict[str, list[tuple[int, float]]] = field(default_factory=dict)
    seconds: float = 0.0
    positive_fraction: float = 0.5  # of the held-out labels


def uniform_sets(
    num_sets: int, set_size: int, generator: torch.Generator, point_dim: int = 2
) -> Tensor:
    """(num_sets, set_size, point_dim) points uniform in the unit cube [0, 1]^point_dim."""
    return torch.rand(num_sets, set_size, point_dim, generator=generator)


def min_pairwise_distance(x: Tensor) -> Tensor:
    """Smallest distance between two distinct points of each set: (B, n, dim) -> (B,)."""
    dist = torch.cdist(x, x)
    n = x.shape[1]
    eye = torch.eye(n, dtype=torch.bool, device=x.device)
    return dist.masked_fill(eye, float("inf")).amin(dim=(-2, -1))


def balanced_radius(d_min: Tensor, band: float) -> float:
    """The r among the sample values of D with #{D < r / band} closest to #{D > r * band}.

    After the band [r / band, r * band] is removed, both classes then have (about) the same
    probability; ``band = 1`` gives the median of D.
    """
    if band < 1.0:
        raise ValueError(f"band must be >= 1, got {band}")
    d = torch.sort(d_min.flatten()).values
    below = torch.searchsorted(d, d / band)  # #{D < r / band} for r = each sample value
    above = d.numel() - torch.searchsorted(d, d * band, right=True)  # #{D > r * band}
    return float(d[torch.argmin((below - above).abs())])


def sample_sets(
    num_sets: int, set_size: int, radius: float, band: float, generator: torch.Generator,
    point_dim: int = 2,
) -> tuple[Tensor, Tensor]:
    """``num_sets`` sets outside the band (rejection sampling) and their labels 1[D < r]."""
    kept: list[Tensor] = []
    have = 0
    while have < num_sets:
        x = uniform_sets(2 * num_sets + 16, set_size, generator, point_dim)
        d = min_pairwise_distance(x)
        if band > 1.0:
            x = x[(d < radius / band) | (d > radius * band)]
        x = x[: num_sets - have]
        kept.append(x)
        have += x.shape[0]
    sets = torch.cat(kept)
    return sets, (min_pairwise_distance(sets) < radius).float()


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
    schedule = torch.optim.lr_scheduler.OneCycleLR(
        opt, max_lr=cfg.lr, total_steps=cfg.train_steps, pct_start=cfg.warmup_fraction
    )
    curve: list[tuple[int, float]] = []
    for step in range(1, cfg.train_steps + 1):
        x, y = sample_sets(cfg.batch_size, cfg.set_size, radius, cfg.band, gen, cfg.point_dim)
        loss = F.binary_cross_entropy_with_logits(model(x).squeeze(-1), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        if cfg.grad_clip > 0:
            nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
        opt.step()
        schedule.step()
        if step % cfg.eval_every == 0 or step == cfg.train_steps:
            curve.append((step, _accuracy(model, test_x, test_y)))
        tick()
    return curve[-1][1], curve


EVAL_CHUNK = 256
"""Held-out sets per forward pass: bounded memory whatever ``eval_sets`` is. A model that mixes
sets (the planted ``sets.sab-attends-over-batch``) attends over the chunk, at a cost quadratic in
it: 1024 made its evaluations 25x slower than the correct model's (issue 19, --profile)."""


@torch.no_grad()
def _accuracy(model: nn.Module, x: Tensor, y: Tensor) -> float:
    """Held-out accuracy, evaluated in chunks of ``EVAL_CHUNK`` sets (each set is independent
    of the others in a correct model; the chunks bound the memory of a model that is not)."""
    correct = sum(float(((model(x[i:i + EVAL_CHUNK]).squeeze(-1) > 0).float()
                         == y[i:i + EVAL_CHUNK]).float().sum())
                  for i in range(0, x.shape[0], EVAL_CHUNK))
    return correct / x.shape[0]


def _build(name: str, cfg: DeepSetsVsSetTransformerConfig, num_sab: int) -> nn.Module:
    if name == "deepsets":
        return seeded(lambda: DeepSets(cfg.point_dim, cfg.deepsets_hidden, 1, pooling="sum"),
                      cfg.seed + 7)
    return seeded(lambda: SetTransformer(cfg.point_dim, cfg.set_transformer_dim, 1,
                                         num_heads=cfg.set_transformer_heads, num_sab=num_sab),
                  cfg.seed + 7)


def _data(config: DeepSetsVsSetTransformerConfig) -> tuple[float, Tensor, Tensor]:
    """(radius, held-out sets, labels): a function of the config alone (its own generator)."""
    gen = torch.Generator().manual_seed(config.seed)
    calibration = uniform_sets(config.calibration_sets, config.set_size, gen, config.point_dim)
    radius = balanced_radius(min_pairwise_distance(calibration), config.band)
    test_x, test_y = sample_sets(
        config.eval_sets, config.set_size, radius, config.band, gen, config.point_dim
    )
    return radius, test_x, test_y


MODELS = ("deepsets", "set_transformer")


def _trained(key: tuple[DeepSetsVsSetTransformerConfig, str],
             tick: Callable[[], None] | None = None
             ) -> tuple[float, list[tuple[int, float]], int]:
    """(final held-out accuracy, curve, parameter count) of one model, memoised on its own
    (``experiments.memo``): Deep Sets never passes the Set Transformer's attention, so a run
    with ``sets.sab-attends-over-batch`` planted retrains only the Set Transformer."""
    config, name = key
    radius, test_x, test_y = _data(config)
    num_sab = config.set_transformer_num_sab if name == "set_transformer" else 0
    model = _build(name, config, num_sab)
    accuracy, curve = _train(model, config, radius, test_x, test_y, tick or (lambda: None))
    return accuracy, curve, count_parameters(model)


def run(
    config: DeepSetsVsSetTransformerConfig,
    progress: Callable[[float], None] | None = None,
) -> DeepSetsVsSetTransformerResult:
    """Train both models on the same stream and report held-out accuracy (chance 1/2)."""
    if config.set_size < 2:
        raise ValueError(f"set_size must be >= 2, got {config.set_size}")
    start = time.perf_counter()
    radius, _, test_y = _data(config)
    total = config.train_steps * len(MODELS)
    done = 0

    def tick() -> None:
        nonlocal done
        done += 1
        if progress is not None and done % 25 == 0:
            progress(done / total)

    accuracy, curves, parameters = {}, {}, {}
    for name in MODELS:
        accuracy[name], curves[name], parameters[name] = memoized(_trained, (config, name), tick)
    return DeepSetsVsSetTransformerResult(
        config=config,
        radius=radius,
        accuracy=accuracy,
        parameters=parameters,
        curves=curves,
        seconds=time.perf_counter() - start,
        positive_fraction=float(test_y.mean()),
    )
