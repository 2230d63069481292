"""Which sublayers a context + nonlinearity task needs (000 §8.3.4 "反面"; Yun et al. 2020).

Attention mixes context (proof step 2, contextual mapping), the FFN is the token-wise
nonlinearity (step 3, table lookup). The variants are presets of the one Transformer that differ
only in ``sublayers`` and ``norm`` (``experiments/component_ablation.py``), trained with the same
budget over several seeds. The structural fact behind the FFN-only ceiling (an FFN-only model is
token-wise) is a test of the preset plumbing (``tests/experiments/test_presets_tokenwise.py``;
it was the claim ``expressivity.ffn-only-tokenwise`` before issue 31).
"""

from __future__ import annotations

import math

from transformer_math.claims.registry import (
    Context,
    Correction,
    Evidence,
    Figure,
    Margin,
    Series,
    claim,
    decide,
)
from transformer_math.claims.seeds import PerSeed, over_seeds
from transformer_math.experiments import component_ablation
from transformer_math.i18n.message import msg

SEED_000_84 = "000 §8.3.4"
SUCCESS, GAP = 0.9, 0.1  # "fits" = accuracy >= 0.9; "falls short" = 0.1 below the full block
SOFTMAX_ONLY = "attention_only/2L/no-norm"  # the arm whose only nonlinearity is the softmax


def ablation_margins(sweep: PerSeed, tol: float) -> tuple[list[Margin], list[Margin]]:
    """(margins, seed_margins) on the worst seed: FFN-only <= the token-wise ceiling and <= 0.9;
    full/1L >= 0.9; full/1L - attention_only/1L >= 0.1; attention-only with 2 layers and no
    norms >= 0.9. No seed margin (issue 31): the seed's '缺一不可' (000:706, 745) names the roles
    of Yun et al.'s proof and is qualified by the seed itself (000:703 stacking mitigates,
    000:751 and exercise 8.3.4-3 attention-only universality), so it is not refuted here."""
    margins = [
        sweep.at_most("ffn_minus_ceiling", tol, "FFN-only accuracy - token-wise ceiling"),
        sweep.at_most("ffn_only/2L", SUCCESS, "FFN-only accuracy (fails: <= 0.9)"),
        sweep.at_least("full/1L", SUCCESS, "full block, 1 layer, accuracy"),
        sweep.at_least("full_minus_attention_1L", GAP, "full/1L - attention_only/1L accuracy"),
        sweep.at_least(SOFTMAX_ONLY, SUCCESS,
                       "attention-only, 2 layers, no norms (softmax the only nonlinearity)"),
    ]
    return margins, []


def _run_seed(ctx: Context) -> tuple[dict[str, float], component_ablation.ComponentAblationResult]:
    cfg = ctx.preset(component_ablation.ComponentAblationConfig)(seed=ctx.seed)
    res = component_ablation.run(cfg)
    acc = {k: v.eval_accuracy for k, v in res.results.items()}
    ffn = max(v for k, v in acc.items() if k.startswith("ffn_only"))
    return ({**acc, "ceiling": res.tokenwise_ceiling, "ffn_minus_ceiling": ffn -
             res.tokenwise_ceiling,
             "full_minus_attention_1L": acc["full/1L"] - acc["attention_only/1L"]}, res)


def _figures(res: component_ablation.ComponentAblationResult) -> list[Figure]:
    task = res.config.task
    losses = Figure(
        title=msg("Component ablation on {task}: final evaluation loss (seed {seed})", task=task,
                  seed=res.config.seed),
        xlabel=msg("variant (index)"), ylabel=msg("cross-entropy (nats)"),
        series=[Series(name, [float(i)], [res.results[name].eval_loss], kind="bar")
                for i, name in enumerate(res.results)],
    )
    curves = Figure(
        title=msg("Component ablation on {task}: training loss (seed {seed})", task=task,
                  seed=res.config.seed),
        xlabel=msg("step"), ylabel=msg("cross-entropy (nats)"),
        series=[Series(k, [float(s) for s in v.curve_steps], v.curve_losses)
                for k, v in res.results.items()],
    )
    return [losses, curves]


_NOTES_SEED = (
    "What the seed gets right: without attention no context (FFN-only sits exactly at "
    "the ceiling); one attention layer without an FFN falls short (a likely reason, "
    "not proven here: for a fixed own token, one head's output moves along a segment "
    "between value means as k varies, so a linear readout of it is monotone in k, and "
    "two heads add little). Its own qualification holds too (000:703 '多层堆叠虽能缓解', 000:751, "
    "exercise 8.3.4-3): two attention-only layers without any norm, whose only nonlinearity "
    "is the softmax, fit the task, in line with Hu, Liu, Chen, Wu & Liu 2025 (arXiv "
    "2504.15956: two attention-only layers with linear maps are universal approximators), "
    "the result the seed attributes to an 'Arqand et al. 2025' that could not be found."
)


@claim(
    "expressivity.component-ablation",
    source=f"{SEED_000_84} ('反面': FFN-only, attention-only, one layer; '核心洞察: 两者缺一不可'; "
    "Yun et al. 2020 proof steps 2-3); exercises 8.3.4-1 and 8.3.4-3; Hu, Liu, Chen, Wu & Liu "
    "2025 (arXiv 2504.15956; the seed's 'Arqand et al. 2025')",
    statement="""On a task that needs both context and a nonlinearity (y_i = T[x_i, k], k = number
    of high tokens): an FFN-only model stays at the token-wise Bayes ceiling, the full block
    succeeds with one layer, and a one-layer attention-only model falls short of it, on every
    seed; with two layers, attention alone without FFN or norms (the softmax the only
    nonlinearity) also fits the task on every seed, as the seed's own qualifications say
    (stacking mitigates, 000:703; attention-only universality, 000:751).""",
    statement_zh="""在一个同时需要上下文与非线性的任务上（y_i = T[x_i, k]，k 为高位 token 的个数）：
    仅 FFN 的模型停在逐 token 的贝叶斯上限，完整块一层即可成功，而一层仅注意力的模型在每个种子上
    都不及它；两层时，不带 FFN 与归一化的仅注意力模型（softmax 是唯一的非线性）在每个种子上也能
    拟合该任务，正如种子自己的限定所说（多层堆叠可缓解，000:703；仅注意力的万能逼近，000:751）。""",
    tier="full",
    falsifier="presets.sublayers-dropped",
    expected="verified",
    version=3,
    kind="measurement",
    audit="""Issue 31 review (c: 000:706 '缺一不可' refuted with one toy task and the thinnest
    slack of the catalogue): agreed, the refutation is dropped. The seed qualifies the
    sentence itself (000:703 '多层堆叠虽能缓解', 000:751 and exercise 8.3.4-3 on
    attention-only universality) and '缺一不可' (706, restated at 745) names the roles of Yun
    et al.'s proof, not a claim that no attention-only network can fit; the measurements stay
    as a verified statement (FFN-only at the ceiling, one attention-only layer short, two
    attention-only layers without norms fit). Threshold 0.9 ('fits') and gap 0.1 were fixed in
    version 2 before the softmax-only runs; they are round task-level criteria, not derived
    from a null model (the token-wise ceiling is 0.461 at tiny, 0.578 at default, so 0.9 is
    far from it). Version 3 at default, 3 seeds (386 s): worst seed full/1L 0.948 (the
    thinnest slack, 0.048), softmax-only 0.980, full/1L - attention_only/1L 0.159, FFN-only
    0.0018 above the ceiling (tolerance 0.033); falsifier caught.""",
    seed_refs=[("000", 698, 706), ("000", 745, 745), ("000", 751, 751), ("000", 795, 795)],
    corrections=[
        Correction(
            seed="000", line=751,
            says="Arqand et al. (2025) prove that softmax attention alone, without FFN, is a "
            "universal approximator",
            correct="no paper by 'Arqand et al. 2025' could be found; the attention-only "
            "universality result is Hu, Liu, Chen, Wu & Liu, 'Universal Approximation with "
            "Softmax Attention' (2025): two-layer self-attention, or one layer followed by a "
            "softmax, with linear maps only",
            source="Hu, Liu, Chen, Wu & Liu, arXiv 2504.15956 (2025), abstract"),
        Correction(
            seed="000", line=795,
            says="exercise 8.3.4-3: Arqand et al. (2025) prove softmax attention (no FFN) is a "
            "universal approximator",
            correct="the result is Hu, Liu, Chen, Wu & Liu (2025); the measured counterpart is "
            "this claim's softmax-only arm (two attention-only layers, no FFN, no norms)",
            source="Hu, Liu, Chen, Wu & Liu, arXiv 2504.15956 (2025), abstract"),
    ],
)
def check_component_ablation(ctx: Context) -> Evidence:
    sweep = over_seeds(ctx, _run_seed)
    res: component_ablation.ComponentAblationResult = sweep.runs[0]
    cfg = res.config
    if res.exact_eval:  # all V^n inputs evaluated: exact accuracies, tolerance = float rounding
        tol = 1e-9
        tol_text = msg("float rounding (exact evaluation on all {vocab_size}^{seq_len} inputs)",
                       vocab_size=cfg.spec.vocab_size, seq_len=cfg.spec.seq_len)
    else:
        tol = 3 * math.sqrt(0.25 / cfg.train.eval_size)
        tol_text = msg("3 binomial standard errors over {eval_size} evaluation sequences",
                       eval_size=cfg.train.eval_size)
    margins, seed_margins = ablation_margins(sweep, tol)
    arms = list(res.results)
    return Evidence(
        predicted={"ffn_only_at_most": round(min(res.tokenwise_ceiling + tol, SUCCESS), 4),
                   "full/1L_at_least": SUCCESS, "attention_only/1L_at_most": "full/1L - 0.1",
                   f"{SOFTMAX_ONLY}_at_least": SUCCESS},
        measured={k: {"min": round(sweep.lo(k), 4), "mean": round(sweep.mean(k), 4),
                      "max": round(sweep.hi(k), 4)} for k in arms},
        tolerance=tol,
        verdict=decide(margins, seed_margins),
        margins=margins,
        seed_margins=seed_margins,
        per_seed=sweep.to_json(),
        notes=[
            msg("task {task}: V = {vocab_size}, n = {seq_len}, C = {num_classes}; d = "
                "{embed_dim}, {num_heads} heads, {steps} steps x batch {batch_size}, no positions "
                "(the task is permutation equivariant); arms {arms}; {len_seeds} seeds, every "
                "pass condition on the worst seed.", task=cfg.task, vocab_size=cfg.spec.vocab_size,
                seq_len=cfg.spec.seq_len, num_classes=cfg.spec.num_classes,
                embed_dim=cfg.embed_dim, num_heads=cfg.num_heads, steps=cfg.train.steps,
                batch_size=cfg.train.batch_size, arms=arms, len_seeds=len(sweep.seeds)),
            msg("token-wise Bayes ceiling (exact) {ceiling:.4f}; tolerance: {tolerance}.",
                ceiling=res.tokenwise_ceiling, tolerance=tol_text),
            _NOTES_SEED,
            "Version 3 (issue 31): no longer refuted: the seed margin 'attention alone falls "
            "short' is dropped (the seed qualifies '缺一不可' itself, 000:703, 751, 795), so "
            "the same measurements verify the correct statement.",
            msg("Version 2 (issue 14): 'refuted' was hard-coded, the attention-only arm kept its "
            "LayerNorms (a second nonlinearity), one seed. Now every size trains every arm "
            "(experiments.component_ablation.VARIANTS), the softmax-only arm has no norm at "
            "all (norm 'none'), 3 seeds, and the refutation is the seed margin 'attention "
            "alone falls short on some seed' failing. Falsifier: a bug in experiments.presets "
            "that builds every arm as a full block (the FFN-only arm then sees context)."),
            msg("issue 12: tiny is V = 4, n = 6, C = 4 (token-wise ceiling 0.461), d = 32, 800 "
                "steps x batch 64, exact evaluation on all 4^6 inputs."),
        ],
        figures=_figures(res),
        details={"tokenwise_ceiling": res.tokenwise_ceiling,
                 "loss_seed0": {k: v.eval_loss for k, v in res.results.items()}},
    )
