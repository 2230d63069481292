"""The trained length study: a small RoPE / ALiBi / learned-table LM trained at length L and
evaluated to 8L without fine-tuning (000 §8.3.3 理论 C, 故障表 #2;
``experiments/rope_extrapolation.py``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from transformer_math.claims.position._common import SEED_000
from transformer_math.claims.registry import (
    Context,
    Evidence,
    Figure,
    Series,
    Tier,
    claim,
    decide,
)
from transformer_math.claims.seeds import over_seeds
from transformer_math.experiments.memo import memoized
from transformer_math.experiments.rope_extrapolation import (
    RopeExtrapolationConfig,
    RopeExtrapolationResult,
)
from transformer_math.experiments.rope_extrapolation import run as run_extrapolation
from transformer_math.i18n.message import msg


def _experiment(ctx: Context) -> RopeExtrapolationResult:
    """The run of this context's size and seed (memoised: keyed on the config and on the
    planted bugs the run passes). The falsifier's window-mask bug lies in the evaluation only, so
    its run re-evaluates the clean run's trained models (each memoised on its own in
    ``experiments.rope_extrapolation``) and trains nothing."""
    preset: Callable[[int], RopeExtrapolationConfig] = ctx.preset(RopeExtrapolationConfig)
    return memoized(run_extrapolation, preset(ctx.seed), progress=ctx.progress)


def seed_numbers(result: RopeExtrapolationResult) -> dict[str, float]:
    """The quantities the pass condition reads from one seed's run (fractions of ln V)."""
    cfg = result.config
    L, E, chance = cfg.train_len, cfg.eval_len, result.chance_loss

    def way_to_chance(variant: str) -> float:
        c = result.curve("rope", variant)
        near, far = c.mean_loss(0, L), c.mean_loss(2 * L, E)
        return (far - near) / (chance - near)

    out = {"rope_near": result.curve("rope", "none").mean_loss(0, L) / chance,
           "rope_far_way_to_chance": way_to_chance("none")}
    if "window" in cfg.rope_variants:
        out["window_far_way_to_chance"] = way_to_chance("window")
    if "learned" in cfg.schemes:
        learned = result.curve("learned", "none")
        out["learned_near"] = learned.mean_loss(0, L) / chance
        out["learned_beyond_L"] = learned.mean_loss(L, E) / chance
    return out


@claim(
    "position.extrapolation-experiment",
    source=f"{SEED_000} 理论 C, 故障表 #2; Chen et al. 2023; Peng et al. 2023; Press et al. 2022",
    tier=Tier.FULL,
    statement="""A small RoPE LM trained at length L on a copy task (segment then its copy)
    learns the copy inside L (its copy loss in [0, L) is at most half of chance, 0.5 ln V) and
    degrades beyond 2L without fine-tuning (its loss there covers at least half the way from
    the in-range loss to chance ln V); a learned absolute embedding whose rows past L were
    never trained fails beyond L (loss >= 0.75 ln V) although it learned the copy inside L
    (the same 0.5 ln V in [0, L): the in-range control that separates 'fails beyond L' from
    'never learned'). The same RoPE model with attention restricted to the last L keys (the
    library's sliding window) does not degrade (it covers less than half that way), so the
    failure is attention to far keys. Each condition holds on every one of the seeds run.
    ALiBi, the scaled variants (PI, NTK, dynamic NTK, YaRN, the seed's high-frequency
    interpolation) and two phase interventions (only the low-frequency pairs, or only the
    high-frequency pairs, brought into their trained phase range) are evaluated and shown by
    position only: no condition or ordering is claimed for them (no fine-tuning).""",
    statement_zh="""在复制任务（一段随机序列后接其副本）上以长度 L 训练的小型 RoPE 语言模型在 L
    以内学会了复制（[0, L) 内的复制损失不超过随机水平的一半 0.5 ln V），不经微调在 2L
    之外退化（其损失至少走完从范围内损失到随机水平 ln V 的一半）；L 之后的行从未训练过的可学习
    绝对位置嵌入在 L 之外失效（损失 >= 0.75 ln V），尽管它在 L 以内学会了复制（[0, L) 内同样
    不超过 0.5 ln V：这一范围内对照把'L 之外失效'与'根本没学会'区分开）。同一 RoPE
    模型若把注意力限制在最近的 L 个键（库中的滑动窗口）则不退化（走完不到一半），
    所以失效来自对远处键的注意。每个条件在所运行的每个种子上都成立。ALiBi 与各缩放变体（PI、
    NTK、动态 NTK、YaRN、主文的高频内插）以及两种相位干预（只把低频维度对、或只把高频维度对
    拉回训练相位范围）只按位置展示，不对它们声称任何条件或排序（未微调）。""",
    falsifier="position.window-mask-sign",
    expected="verified",
    version=3,
    seed_refs=[("000", 645, 658), ("000", 556, 556), ("000", 1666, 1666)],
    kind="measurement",
    audit="""Issue 31 review (P; e, b, d1). (e) 'accurate inside L' for a loss of 0.35-0.39 ln V:
    reworded: the condition is 'learns the copy' (loss at most half of chance), which is what
    the 0.5 ln V margin tests; it is a stated criterion, not a derived one (fixed at issue 12,
    when the tiny preset's steps were raised because the in-range loss sat at 0.40-0.48, close
    to it: said here plainly). (b/e) the learned arm trained 150 steps at tiny against 800 for
    RoPE, with no in-range control: fixed twice: the tiny preset now trains the learned table as
    long as RoPE (800 steps; default and large were already equal), and its in-range loss
    ([0, L) <= 0.5 ln V, the same criterion as RoPE's) is a decisive margin: where it does not
    hold, this size cannot separate 'fails beyond L' from under-training and the verdict is
    inconclusive, not verified. The learned arm measures the main seed's 000:556 (positions
    past the trained length never trained -> the model fails there), now in seed_refs; that is
    why position.learned-embedding-limit (an API check) was retired to a test. (d1) the
    falsifier's site was the experiment's private window_mask: fixed, the window variant is the
    library's sliding window (TransformerConfig.sliding_window, functional.masks via
    nn/transformer.py) and position.window-mask-sign is planted there.""",
)
def check_extrapolation_experiment(ctx: Context) -> Evidence:
    """Margins, each on the worst of ``ctx.seeds`` seeds (``over_seeds``): rope loss in [0, L)
    <= 0.5 ln V; beyond 2L the rope loss covers >= 1/2 of the way from its in-range value to
    chance, ``(far - near) / (ln V - near) >= 1/2``; the window variant covers < 1/2 of it; the
    learned table's loss in [L, end) >= 0.75 ln V.

    Issue 14 (version 2): three seeds (was one), decided on the worst; the window condition is
    new (the statement claimed it; the old pass condition did not check it), with the same 1/2
    as the degradation condition, so that 'degrades' and 'does not degrade' split at one
    point; ALiBi and the scaled variants are no longer claimed. First sweep (5 seeds, tiny,
    before freezing): rope in-range 0.348-0.393 ln V, rope way to chance 1.58-1.85, window
    0.055-0.100, learned 1.11-1.17 ln V in [L,2L) and 1.16-1.20 in [2L,end): thresholds
    unchanged (0.5, 0.5, 0.75) and 0.5 for the window. The falsifier is the
    sliding-window mask with its offset compared the wrong way round (issue 31: planted in the
    library's sliding window in ``nn/transformer.py``, which the window variant now uses): the
    window then keeps every past key and degrades like plain RoPE (killed in the quick tier by
    ``position.window-relative``).

    Issue 31 (version 3): the learned arm's in-range loss is a decisive margin (its control:
    inconclusive where it fails), and the tiny preset trains the learned table 800 steps like
    RoPE (was 150).

    Issue 12 (tiny size): the tiny preset trains at batch 32 for 800 steps and evaluates 64
    sequences (see ``RopeExtrapolationConfig.tiny``).
    """
    sweep = over_seeds(ctx, lambda c: (seed_numbers(r := _experiment(c)), r))
    result: RopeExtrapolationResult = sweep.runs[0]
    cfg = result.config
    margins = [
        sweep.at_most("rope_near", 0.5, "rope loss [0,L) / ln V"),
        sweep.at_least("rope_far_way_to_chance", 0.5,
                       "rope [2L,end): fraction of the way from [0,L) loss to chance"),
    ]
    if "window_far_way_to_chance" in sweep.values:
        margins.append(sweep.at_most("window_far_way_to_chance", 0.5,
                                     "rope/window [2L,end): fraction of the way to chance"))
    decisive = []
    if "learned_beyond_L" in sweep.values:
        margins.append(sweep.at_least("learned_beyond_L", 0.75, "learned loss [L,end) / ln V"))
        # the in-range control: a learned table that never learned the copy inside L says
        # nothing about positions past L (issue 31): then this size cannot decide
        decisive.append(sweep.at_most("learned_near", 0.5,
                                      "learned loss [0,L) / ln V (in-range control)"))
    verdict = decide(margins, decisive=decisive)
    return Evidence(
        predicted={m.name: f"{m.sense} {m.threshold:g}" for m in margins},
        measured={"per seed": {k: [round(v, 4) for v in vals]
                               for k, vals in sweep.values.items()},
                  "loss (first seed)": loss_table(result)},
        tolerance="margins as stated in each check (fractions of chance loss ln V), on the "
                  "worst seed",
        verdict=verdict,
        margins=margins,
        decisive=decisive,
        per_seed=sweep.to_json(),
        figures=[loss_figure(result)],
        notes=[*(["inconclusive: the learned table did not learn the copy inside L at this "
                  "size (in-range control), so its loss past L does not decide 000:556; the "
                  "default preset (1500 steps, L = 32) is the one to run"]
                 if verdict.value == "inconclusive" else []),
               msg("size {value}, seeds {seeds}: vocab {vocab_size}, d {d_model}, heads "
                   "{num_heads}, train_len {train_len}, eval to {eval_len}, segments U[{seg_min}, "
                   "{seg_max}], steps rope/alibi/learned {steps}/{alibi_steps}/{learned_steps}; "
                   "seconds (first seed) {value_2}", value=ctx.size.value, seeds=sweep.seeds,
                   vocab_size=cfg.vocab_size, d_model=cfg.d_model, num_heads=cfg.num_heads,
                   train_len=cfg.train_len, eval_len=cfg.eval_len, seg_min=cfg.seg_min,
                   seg_max=cfg.seg_max, steps=cfg.steps, alibi_steps=cfg.alibi_steps,
                   learned_steps=cfg.learned_steps,
                   value_2={k: round(v, 1) for k, v in result.seconds.items()}),
               *result.notes],
        details={"final_train_loss": result.final_train_loss,
                 "accuracy": {f"{c.scheme}/{c.variant}": [round(a, 3) for a in c.accuracy]
                              for c in result.curves}},
    )


def loss_table(result: RopeExtrapolationResult) -> dict[str, dict[str, Any]]:
    """Mean copy loss of every (scheme, variant) in [0, L), [L, 2L) and [2L, end)."""
    cfg = result.config
    L, E = cfg.train_len, cfg.eval_len
    far = "[2L,8L)" if cfg.eval_factor == 8 else "[2L,end)"
    return {f"{c.scheme}/{c.variant}": {"[0,L)": round(c.mean_loss(0, L), 3),
                                       "[L,2L)": round(c.mean_loss(L, 2 * L), 3),
                                       far: round(c.mean_loss(2 * L, E), 3)}
            for c in result.curves}


def loss_figure(result: RopeExtrapolationResult) -> Figure:
    """Copy loss by position bin, one series per (scheme, variant), chance and L marked."""
    cfg = result.config
    return Figure(
        msg("Copy loss by position (trained at L = {train_len}, no fine-tuning)",
            train_len=cfg.train_len), msg("position"),
        msg("copy loss (nats)"),
        [Series(f"{c.scheme}/{c.variant}", [b + cfg.bin_width / 2 for b in c.bin_starts],
                c.loss) for c in result.curves],
        hlines=[(result.chance_loss, msg("chance ln V"))],
        vlines=[(float(cfg.train_len), "L_train")],
    )
