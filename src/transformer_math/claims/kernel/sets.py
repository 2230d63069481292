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
    Figure,
    Series,
    Tier,
    at_least,
    at_most,
    claim,
    decide,
)
from transformer_math.claims.seeds import PerSeed, over_seeds
from transformer_math.experiments.deepsets_vs_set_transformer import (
    DeepSetsVsSetTransformerConfig,
    DeepSetsVsSetTransformerResult,
    run,
)
from transformer_math.experiments.memo import memoized
from transformer_math.functional.positional import sinusoidal_encoding
from transformer_math.i18n.message import msg
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
    permutation invariant and SAB is permutation equivariant, each set permuted on its own;
    adding a position code to the elements breaks both.""",
    falsifier="sets.sab-attends-over-batch",
    expected="verified",
    version=2,
    kind="measurement",
    audit="""Issue 31 review: sound; no change. Invariance/equivariance of the library's Deep
    Sets, Set Transformer and SAB under per-set permutations (float64, tolerance 1e-10
    round-off), and the seed's troubleshooting point that a position code breaks them; the
    falsifier sits in nn.sets.""",
    seed_refs=[("000", 490, 506), ("000", 263, 279), ("000", 1348, 1348)],
)
def check_set_invariance(ctx: Context) -> Evidence:
    """Invariance and equivariance errors <= 1e-10; with a position code >= 1e-3 (float64).

    Every set of the batch gets its own random permutation (a permutation shared by the whole
    batch cannot tell the set axis from the batch axis). The second margin measures the
    seed's troubleshooting point (000:1348, fault #3: positions added to a set break its
    symmetry) on the same models: a sinusoidal code added by slot must change the outputs.

    Version 2 (issue 14): the falsifier is the planted bug sets.sab-attends-over-batch in
    ``nn.sets`` (was a position code added by the claim, now the claim's second margin); the
    permutations are drawn per set (were shared by the batch); 16 sets, 10 draws (were 4, 5).
    """
    batch, n, dim, draws = 16, 10, 4, 10
    models, sab = _set_models(ctx.generator(0))
    g = ctx.generator(6)
    x = torch.randn(batch, n, dim, generator=g, dtype=F64)
    # PE[pos, 2i] = sin(pos / 10000^(2i/dim)), PE[pos, 2i+1] = cos(...) (Vaswani et al.)
    pe = sinusoidal_encoding(torch.arange(n, dtype=F64), dim)
    errors: dict[str, float] = {name: 0.0 for name in models}
    errors["sab-equivariance"] = 0.0
    broken: dict[str, float] = {name: 0.0 for name in errors}  # max over the permutations
    rows = torch.arange(batch)[:, None]
    with torch.no_grad():
        for _ in range(draws):
            perm = torch.stack([torch.randperm(n, generator=g) for _ in range(batch)])
            xp = x[rows, perm]  # set b permuted by perm[b]
            for name, mod in models.items():
                errors[name] = max(errors[name], float((mod(xp) - mod(x)).abs().max()))
                broken[name] = max(broken[name],
                                   float((mod(xp + pe) - mod(x + pe)).abs().max()))
            e = float((sab(xp) - sab(x)[rows, perm]).abs().max())
            errors["sab-equivariance"] = max(errors["sab-equivariance"], e)
            e_pe = float((sab(xp + pe) - sab(x + pe)[rows, perm]).abs().max())
            broken["sab-equivariance"] = max(broken["sab-equivariance"], e_pe)
    worst = max(errors.values())
    least_broken = min(broken.values())
    tol = 1e-10
    margins = [
        at_most("max invariance or equivariance error", worst, tol),
        # a position code (entries in [-1, 1], inputs N(0, 1)) moves the outputs of every
        # model: the largest change over the 5 permutations, smallest over the models, must be
        # far above round-off; 1e-4 is 1e6 times the invariance tolerance (mean pooling
        # dilutes the code by 1/n, the smallest effect)
        at_least("min over models of the max error with a position code added",
                 least_broken, 1e-4),
    ]
    return Evidence(
        predicted=0.0,
        measured=worst,
        tolerance=tol,
        verdict=decide(margins),
        margins=margins,
        notes=[
            msg("max |f(P x) - f(x)| (invariance) and |SAB(P x) - P SAB(x)| (equivariance) over "
                "{draws} draws of an independent random permutation per set, a batch of {batch} "
                "sets of {n} elements, float64.", draws=draws, batch=batch, n=n),
            msg("Position code: the same measurement with a sinusoidal code added by slot; the "
            "margin is the smallest (over models) of the largest change. Batch 16 and 10 draws "
            "(was 4 and 5): with 4 sets the smallest change (mean pooling) varied by 30% "
            "between seeds, a margin only ~2 spreads from its threshold."),
            msg("Tolerance 1e-10: sums in another order differ by float64 round-off only."),
        ],
        details={"errors": errors, "errors_with_position_code": broken},
    )


def _accuracy_figure(result: DeepSetsVsSetTransformerResult) -> Figure:
    return Figure(
        title=msg("Pairwise set task: held-out accuracy during training (seed {seed})",
                  seed=result.config.seed),
        xlabel=msg("training step"),
        ylabel=msg("accuracy (chance 0.5)"),
        series=[
            Series(name, [float(s) for s, _ in curve], [a for _, a in curve], style="o-")
            for name, curve in result.curves.items()
        ],
        hlines=[(0.5, msg("chance"))],
    )


# Threshold on the worst seed's gap, CHOSEN (not derived) from a first sweep that included the
# falsifier's runs (issue 14, frozen with version 2; issue 31 says so plainly, see audit=):
# size tiny, seeds 0-4 (as `tmath verify` runs them, MKL_CBWR=AUTO,STRICT): gaps 0.161,
# 0.159, 0.151, 0.141, 0.166 (mean 0.156, spread 0.010) with the correct library; 0.032,
# 0.055, -0.340, -0.029, 0.101 with the planted bug sets.sab-attends-over-batch (SABs without
# pairwise interaction: attention pooling alone, plus noise from attending across the batch).
# 0.08 leaves the correct library ~6 spreads of slack on its worst seed, is 10 standard
# errors of one accuracy (SE <= 0.5/sqrt(4096) = 0.008), and is failed by the bug on 4 of 5
# seeds (the falsifier is caught when its worst seed fails).
REQUIRED_GAP = 0.08


def _pairwise_notes(cfg: DeepSetsVsSetTransformerConfig, sweep: PerSeed,
                    result: DeepSetsVsSetTransformerResult) -> list[str]:
    se = 0.5 / math.sqrt(cfg.eval_sets)
    gap = sweep["gap"]
    return [
        msg("{set_size} points per set uniform in [0, 1]^{point_dim}, r = {radius:.4f} (seed "
            "{seed}; balanced: positive fraction {positive_fraction:.3f}), sets with D in "
            "[r/{band}, {band} r] not drawn; {train_steps} Adam steps of batch {batch_size} "
            "(one-cycle, peak lr {lr}), {eval_sets} held-out sets; parameters {parameters}.",
            set_size=cfg.set_size, point_dim=cfg.point_dim, radius=result.radius, seed=cfg.seed,
            positive_fraction=result.positive_fraction, band=cfg.band,
            train_steps=cfg.train_steps, batch_size=cfg.batch_size, lr=cfg.lr,
            eval_sets=cfg.eval_sets, parameters=result.parameters),
        msg("Seeds {seeds}: gap mean {mean_value:.4f}, spread {spread_value:.4f}, min "
            "{min_gap:.4f}; the margin is the worst seed's gap.", seeds=sweep.seeds,
            mean_value=sweep.mean('gap'), spread_value=sweep.spread('gap'), min_gap=min(gap)),
        f"Required gap {REQUIRED_GAP}: chosen from a 5-seed sweep at size tiny of the clean "
        "library AND the planted bug (version 2; issue 31: a threshold set with the falsifier "
        "in view, not derived); the held-out accuracy has standard error <= "
        f"0.5/sqrt({cfg.eval_sets}) = {se:.3f}, so a gap derived from sampling error alone "
        f"(3 standard errors of a difference) would be {3 * math.sqrt(2) * se:.3f}.",
        msg("Why the Set Transformer wins: attention scores are functions of pairs, so one SAB "
            "compares every point with every other before pooling; Deep Sets must detect a close "
            "pair through per-point features phi alone (a partition of the square into cells of "
            "side ~r). The falsifier (SABs attending over the batch axis) keeps PMA and every "
            "parameter but removes the pairwise interaction: its gap was 0.032, 0.055, -0.340, "
            "-0.029, 0.101 on seeds 0-4 (caught on the worst of three seeds)."),
    ]


@claim(
    "kernel.deepsets-vs-set-transformer",
    source="000 §8.3.2 theory B (Deep Sets vs Set Transformer table); Lee et al. 2019",
    statement="""Sample efficiency at a fixed budget, not expressivity: on a pairwise set task
    (is any pair of 4 points uniform in [0, 1]^2 closer than r? classes balanced, sets within a
    factor 1.5 of r not drawn), after 500 one-cycle Adam steps of batch 256 a Set Transformer
    (2 SABs + PMA, ~36k parameters) has at least 0.08 higher held-out accuracy than sum-pooled
    Deep Sets of similar size (~34k) on every seed. The threshold 0.08 was chosen with the
    planted bug's results in view (a derived 3-standard-error threshold would be 0.033); with a
    longer budget (1500 steps, seed 0) the gap was ~0.05. This does not support 000:502's
    "无法建模" (kernel.set-function-audit: sum pooling represents pairwise relations
    exactly, e.g. the smallest gap between n numbers).""",
    tier=Tier.FULL,
    falsifier="sets.sab-attends-over-batch",
    expected="verified",
    version=3,
    kind="measurement",
    audit="""Issue 31 review: problem (b), the threshold 0.08 was chosen from a 5-seed sweep of
    BOTH the clean library (gaps 0.141-0.166) and the planted bug (0.032, 0.055, -0.340,
    -0.029, 0.101), so that the bug fails on 4 of 5 seeds. Agreed, and said so plainly here and
    in the notes: 0.08 is a threshold chosen with the falsifier in view, not derived. What a
    threshold derived before looking at the falsifier would be: the sampling error of the gap
    of two held-out accuracies on 4096 sets is <= sqrt(2) 0.5 / sqrt(4096) = 0.011, so '3
    standard errors above no advantage' gives 0.033; the clean gaps clear both (worst 0.141).
    With 0.033 the bug's seed-0 gap (0.032) would sit on the threshold, i.e. the falsifier
    would be caught only through the worst of 3 seeds (-0.340 on seed 2).
    Review R4 (version 2, problem): the gap is a training-budget effect (the experiment's own
    config comment: 1500 steps give 0.945 vs 0.998, a gap ~0.05 below 0.08; 8 points per set
    left the Set Transformer at chance), so the unqualified statement and the seed_refs read as
    support for 000:502's "无法建模", which kernel.set-function-audit shows false. Agreed;
    fixed (version 3): the statement now names the budget (500 steps, batch 256), the set size
    and dimension (4 points in 2-D, band 1.5), says it is sample efficiency at that budget, not
    expressivity, reports the 1500-step gap and that 0.08 was chosen (not derived), and says it
    does not support "无法建模". The check, the threshold and the data are unchanged (no
    re-tuning after the review); the threshold is kept rather than replaced by the derived
    0.033 because the replacement would also be a choice made after seeing the bug's gaps
    (0.032 on seed 0 would sit on it); both numbers are reported.""",
    seed_refs=[("000", 502, 502), ("000", 508, 520)],
    statement_zh="""这是固定训练预算下的样本效率，而非表达力：在成对集合任务上（4 个 [0, 1]^2 中
    均匀分布的点里是否有一对距离小于 r？两类平衡，最小距离在 r 的 1.5 倍因子以内的集合不采样），
    经 500 步 batch 256 的 one-cycle Adam 训练后，Set Transformer（2 个 SAB + PMA，约 36k 参数）
    在每个种子上的留出准确率都比规模相近的求和池化 Deep Sets（约 34k）高至少 0.08。阈值 0.08
    是在看到植入 bug 的结果后选定的（按 3 个标准误推导的阈值为 0.033）；更长的预算（1500 步，
    种子 0）下差距约为 0.05。这并不支持 000:502 的"无法建模"（kernel.set-function-audit：
    求和池化能精确表示成对关系，例如 n 个数之间的最小间距）。""",
)
def check_deepsets_vs_set_transformer(ctx: Context) -> Evidence:
    """Margin: on every seed, accuracy(Set Transformer) - accuracy(Deep Sets) >= 0.08.

    The training of ``experiments.deepsets_vs_set_transformer`` runs once per seed of
    ``ctx.seed_values()`` (``claims.seeds.over_seeds``); the verdict rests on the worst seed.

    Version 2 (issue 14): three seeds (was one); threshold 0.08 (was 0.05) set from a 5-seed
    sweep at size tiny (clean gaps 0.141-0.166; with the planted bug -0.340..0.101); the
    falsifier is the planted bug ``sets.sab-attends-over-batch`` in ``nn.sets`` (was labels
    shuffled by the experiment, a change of the data). Tiny configuration (issue 12): sets
    whose smallest distance D lies within a factor 1.5 of r are not drawn, 500 one-cycle Adam
    steps of batch 256, ST width 32 / 4 heads vs Deep Sets hidden 128 (36k vs 34k parameters),
    4096 held-out sets.
    """

    def one_seed(c: Context) -> tuple[dict[str, float], DeepSetsVsSetTransformerResult]:
        cfg = replace(c.preset(DeepSetsVsSetTransformerConfig)(), seed=c.seed)
        result = memoized(run, cfg)
        acc_ds = result.accuracy["deepsets"]
        acc_st = result.accuracy["set_transformer"]
        return {"deepsets": acc_ds, "set_transformer": acc_st, "gap": acc_st - acc_ds}, result

    sweep = over_seeds(ctx, one_seed)
    first: DeepSetsVsSetTransformerResult = sweep.runs[0]
    margins = [sweep.at_least("gap", REQUIRED_GAP, "set transformer - deep sets accuracy")]
    return Evidence(
        predicted=f"set_transformer - deepsets >= {REQUIRED_GAP} on every seed",
        measured={"gap_min": sweep.lo("gap"), "gap_mean": sweep.mean("gap"),
                  "gap_spread": sweep.spread("gap"),
                  "deepsets_mean": sweep.mean("deepsets"),
                  "set_transformer_mean": sweep.mean("set_transformer")},
        tolerance=REQUIRED_GAP,
        verdict=decide(margins),
        margins=margins,
        per_seed=sweep.to_json(),
        notes=_pairwise_notes(first.config, sweep, first),
        figures=[_accuracy_figure(first)],
        details={"parameters": first.parameters, "radius": first.radius,
                 "positive_fraction": first.positive_fraction},
    )
