"""Set functions (000 §8.3.2 theory B): permutation symmetry and pairwise relations.

- ``kernel.set-invariance``: Deep Sets (Zaheer et al. 2017) and the Set Transformer (Lee et al.
  2019, SAB + PMA) are permutation invariant, SAB is equivariant; a position code breaks both.
- ``kernel.deepsets-vs-set-transformer`` (full tier): on "is any pair closer than r?" a Set
  Transformer beats sum-pooled Deep Sets of about the same size
  (``experiments.deepsets_vs_set_transformer``).
"""

from __future__ import annotations

import math
from dataclasses import replace

import torch

from transformer_math.claims.registry import (
    Context,
    Evidence,
    Falsifier,
    Figure,
    Series,
    Tier,
    agreement,
    all_hold,
    at_least,
    at_most,
    claim,
)
from transformer_math.experiments.deepsets_vs_set_transformer import (
    DeepSetsVsSetTransformerConfig,
    DeepSetsVsSetTransformerResult,
    run,
)
from transformer_math.experiments.memo import memoized
from transformer_math.functional.positional import sinusoidal_encoding
from transformer_math.nn.init import seeded
from transformer_math.nn.sets import DeepSets, SetAttentionBlock, SetTransformer

F64 = torch.float64


def _set_models(g_init: torch.Generator) -> tuple[dict[str, torch.nn.Module], torch.nn.Module]:
    """The invariant models (Deep Sets with each pooling, a Set Transformer) and one SAB."""
    models = {
        "deepsets-sum": seeded(lambda: DeepSets(4, 32, 3, pooling="sum"), g_init),
        "deepsets-mean": seeded(lambda: DeepSets(4, 32, 3, pooling="mean"), g_init),
        "deepsets-max": seeded(lambda: DeepSets(4, 32, 3, pooling="max"), g_init),
        "set-transformer": seeded(
            lambda: SetTransformer(4, 16, 3, num_heads=2, num_sab=2, num_seeds=2), g_init
        ),
    }
    sab = seeded(lambda: SetAttentionBlock(4, 2), g_init)
    for mod in [*models.values(), sab]:
        mod.to(F64).eval()
    return models, sab


@claim(
    "kernel.set-invariance",
    source="000 §8.3.2 theory B (Deep Sets theorem, Set Transformer PMA), troubleshooting #3",
    statement="""Deep Sets (sum, mean, max pooling) and the Set Transformer (SAB + PMA) are
    permutation invariant and SAB is permutation equivariant; adding a position code to the
    elements breaks both.""",
    falsifier=Falsifier(
        "position code added",
        {"position_code": True},
        "a sinusoidal position code added to each element according to its slot",
    ),
)
def check_set_invariance(ctx: Context, position_code: bool = False) -> Evidence:
    batch, n, dim = 4, 10, 4
    models, sab = _set_models(ctx.generator(0))
    g = ctx.generator(6)
    x = torch.randn(batch, n, dim, generator=g, dtype=F64)
    # PE[pos, 2i] = sin(pos / 10000^(2i/dim)), PE[pos, 2i+1] = cos(...) (Vaswani et al.)
    pe = (sinusoidal_encoding(torch.arange(n, dtype=F64), dim) if position_code
          else torch.zeros(n, dim, dtype=F64))
    errors: dict[str, float] = {name: 0.0 for name in models}
    errors["sab-equivariance"] = 0.0
    with torch.no_grad():
        for _ in range(5):
            perm = torch.randperm(n, generator=g)
            xp = x[:, perm]
            for name, mod in models.items():
                e = float((mod(xp + pe) - mod(x + pe)).abs().max())
                errors[name] = max(errors[name], e)
            e = float((sab(xp + pe) - sab(x + pe)[:, perm]).abs().max())
            errors["sab-equivariance"] = max(errors["sab-equivariance"], e)
    worst = max(errors.values())
    tol = 1e-10
    margins = [at_most("max invariance or equivariance error", worst, tol)]
    return Evidence(
        predicted=0.0,
        measured=worst,
        tolerance=tol,
        verdict=agreement(all_hold(margins)),
        margins=margins,
        notes=[
            "max |f(P x) - f(x)| (invariance) and |SAB(P x) - P SAB(x)| (equivariance) over 5 "
            "random permutations of a batch of 4 sets of 10 elements, float64.",
            "Tolerance 1e-10: sums in another order differ by float64 round-off only.",
            f"position_code = {position_code}.",
        ],
        details={"errors": errors},
    )


def _accuracy_figure(result: DeepSetsVsSetTransformerResult) -> Figure:
    return Figure(
        title="Pairwise set task: held-out accuracy during training",
        xlabel="training step",
        ylabel="accuracy (chance 0.5)",
        series=[
            Series(name, [float(s) for s, _ in curve], [a for _, a in curve], style="o-")
            for name, curve in result.curves.items()
        ],
        hlines=[(0.5, "chance")],
    )


def _pairwise_notes(
    cfg: DeepSetsVsSetTransformerConfig, result: DeepSetsVsSetTransformerResult, required: float
) -> list[str]:
    se = 0.5 / math.sqrt(cfg.eval_sets)
    return [
        f"{cfg.set_size} points per set uniform in [0, 1]^{cfg.point_dim}, "
        f"r = {result.radius:.4f} "
        f"(balanced: positive fraction {result.positive_fraction:.3f}), sets with D in "
        f"[r/{cfg.band}, {cfg.band} r] not drawn; {cfg.train_steps} Adam steps of batch "
        f"{cfg.batch_size} (one-cycle, peak lr {cfg.lr}), {cfg.eval_sets} held-out sets; "
        f"parameters {result.parameters}; {result.seconds:.1f} s.",
        f"Required gap {required}: the held-out accuracy has standard error <= "
        f"0.5/sqrt({cfg.eval_sets}) = {se:.3f}; a gap of {required} is "
        f"{required / se:.0f} standard errors.",
        "Tiny configuration redesigned (issue 12): band around r, one-cycle Adam, 500 steps "
        "of batch 256, width 32 vs hidden 128, 4096 held-out sets (was: no band, constant "
        "lr, 400 steps of batch 64, width 16 vs hidden 64, 512 sets; gap 0.016-0.05, "
        "thinner than the spread between seeds). Why the Set Transformer wins: attention "
        "scores are functions of pairs, so one SAB compares every point with every other "
        "before pooling; Deep Sets must detect a close pair through per-point features phi "
        "alone (a partition of the square into cells of side ~r).",
        f"shuffle_labels = {cfg.shuffle_labels}.",
    ]


@claim(
    "kernel.deepsets-vs-set-transformer",
    source="000 §8.3.2 theory B (Deep Sets vs Set Transformer table); Lee et al. 2019",
    statement="""On a pairwise set task (is any pair of points closer than r?) a Set
    Transformer beats sum-pooled Deep Sets of similar size (held-out accuracy).""",
    tier=Tier.FULL,
    falsifier=Falsifier(
        "labels independent of the sets",
        {"shuffle_labels": True},
        "training labels drawn at random: no model can learn the relation, the gap must vanish",
    ),
)
def check_deepsets_vs_set_transformer(ctx: Context, shuffle_labels: bool = False) -> Evidence:
    """Margin: accuracy(Set Transformer) - accuracy(Deep Sets) >= 0.05 on held-out sets.

    Tiny configuration redesigned (issue 12, item 2). Before: every set drawn (many on the
    boundary D ~ r), 400 Adam steps of batch 64 at a constant 3e-3, ST width 16 / 2 heads vs
    Deep Sets hidden 64, 512 held-out sets; the Set Transformer stopped half-trained (0.60-0.62)
    and the gap (0.016-0.05) was below the spread between seeds. Now: sets whose smallest
    distance D lies within a factor 1.5 of r are not drawn (the label is still exactly
    1[D < r]; r balances the classes), 500 one-cycle Adam steps (peak 6e-3, gradient norm
    clipped at 1) of batch 256, ST width 32 / 4 heads vs Deep Sets hidden 128 (36k vs 34k
    parameters), 4096 held-out sets (standard error <= 0.5/sqrt(4096) = 0.008). The Set
    Transformer converges (~0.99) within the budget on every seed while Deep Sets plateaus near
    0.82, so the gap (~0.17) is several times its spread.
    """
    cfg = replace(ctx.preset(DeepSetsVsSetTransformerConfig)(), seed=ctx.seed)
    cfg = replace(cfg, shuffle_labels=shuffle_labels)
    result = memoized(run, cfg, progress=ctx.report_progress)
    acc_ds = result.accuracy["deepsets"]
    acc_st = result.accuracy["set_transformer"]
    required = 0.05
    margins = [at_least("set transformer - deep sets accuracy", acc_st - acc_ds, required)]
    return Evidence(
        predicted=f"set_transformer - deepsets >= {required}",
        measured={"deepsets": acc_ds, "set_transformer": acc_st, "gap": acc_st - acc_ds},
        tolerance=required,
        verdict=agreement(all_hold(margins)),
        margins=margins,
        notes=_pairwise_notes(cfg, result, required),
        figures=[_accuracy_figure(result)],
        details={"parameters": result.parameters, "radius": result.radius,
                 "positive_fraction": result.positive_fraction},
    )
