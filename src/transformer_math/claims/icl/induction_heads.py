"""Induction heads form in a 2-layer attention-only transformer, with a phase change, and not in
a 1-layer control (000 §8.3.6 第四个视角; Olsson et al. 2022). The run is
``experiments.induction_heads`` (memoised); attention weights are read at ``hook_pattern``."""

from __future__ import annotations

import math

import torch

from transformer_math.claims.icl._shared import SOURCE, preset, run_experiment
from transformer_math.claims.registry import (
    Context,
    Evidence,
    Figure,
    Series,
    Tier,
    at_least,
    claim,
    decide,
)
from transformer_math.claims.seeds import over_seeds
from transformer_math.diagnostics.icl_scores import induction_score, previous_token_score
from transformer_math.experiments import induction_heads
from transformer_math.experiments.induction_heads import (
    InductionHeadsResult,
    TrainingCurves,
    hand_built_induction_model,
    loss_and_patterns,
)
from transformer_math.i18n.message import msg


def induction_figure(c: TrainingCurves, r: InductionHeadsResult, cross: int | None) -> Figure:
    last = c.num_layers - 1
    xs = [float(s) for s in c.steps]
    return Figure(
        title=msg("Induction-head phase change (first seed)"),
        xlabel=msg("training step"),
        ylabel=msg("score / loss"),
        series=[
            Series(msg("induction score (best head, layer {last})",
                       last=last), xs, c.max_induction(last)),
            Series(msg("previous-token score (best head, layer 0)"), xs, c.max_previous_token(0)),
            Series(msg("in-context loss / ln(vocab)"), xs,
                   [v / math.log(r.config.vocab_size) for v in c.in_context_loss]),
            Series(msg("1-layer control induction score"), [float(s) for s in r.control.steps],
                   r.control.max_induction(), "line", "--"),
        ],
        vlines=[(float(cross), msg("induction 0.5"))] if cross is not None else [],
    )


NOTE_STEPS = (
    "version 3 (issue 19): the default trains 1200 steps (was 2000). The learning rate is "
    "constant after the warm-up, so the run is the first 1200 steps of the old one; the phase "
    "change is at steps 600-650 on seeds 0-4. Seeds 0-4 at 1200 steps: induction 0.764, 0.726, "
    "0.722, 0.755, 0.755; previous-token 0.497, 0.438, 0.469, 0.432, 0.456; timing gap / window "
    "0.42, 0.42, 0.42, 0, 0 (window 60 steps, was 100); control 0.029."
)

NOTE_LEAD = (
    "version 4 (issue 31): the previous-token criterion is the head's lead (diagnostics."
    "icl_scores.previous_token_lead): its mean weight on t - 1 minus its largest mean weight at "
    "any other offset, > 0 exactly when t - 1 is the head's most attended relative position, "
    "the definition of a previous-token head ('looks one step back', 000:1015; Olsson et al. "
    "2022). It replaces the score >= 0.4, a number that was never derived (the worst default "
    "seed sat at 0.432 after the run was shortened); the score is still reported. A uniform "
    "causal head has a negative lead (its largest mean weight is at offset 0). Measured: "
    "tiny seed 0 lead 0.246 (falsifier -0.153); default seeds 0-2 lead 0.261, 0.248, 0.269 "
    "(scores 0.497, 0.438, 0.469; induction 0.764, 0.726, 0.722; control 0.029)."
)


@claim(
    "icl.induction-heads",
    source=f"{SOURCE} (第四个视角: 归纳头); Olsson et al. 2022",
    statement="""A 2-layer attention-only transformer trained on repeated random segments forms a
    previous-token head in layer 0 (a head whose most attended relative position is t - 1) and
    an induction head in layer 1 (induction score >= 0.5); the induction score rises sharply
    when the in-context loss drops; a 1-layer model does not form one (every seed).""",
    tier=Tier.FULL,
    falsifier="icl.next-token-labels-unshifted",
    expected="verified",
    version=4,
    seed_refs=[("000", 1007, 1018)],
    kind="measurement",
    audit="""Issue 31 review (P; b, d3): the previous-token threshold 0.4 was not derived (worst
    default seed 0.432 after the run was shortened 2000 -> 1200 steps) and the falsifier
    attention.causal-blocks-previous made the previous-token weight exactly 0, caught by the
    margin that reads it (structural). Fixed (version 4): the previous-token margin is the
    head's lead > 0 (t - 1 is its most attended offset: the definition of a previous-token
    head, no tuned number); the induction threshold 0.5 (a majority of the head's attention on
    the induction target) and the timing window are unchanged. Falsifier
    icl.next-token-labels-unshifted in the training loop (experiments/induction_heads.py: the
    loss scores position t against token t, not t + 1): a real causal-LM slip that leaves
    every attention path intact, so the model simply has no reason to form the circuit (tiny,
    seed 0: induction 0.06, lead -0.15).""",
    statement_zh="""在重复随机片段上训练的 2 层纯注意力 Transformer 于第 0 层形成前一词元头（其最常
    关注的相对位置是 t - 1），于第 1 层形成归纳头（归纳分数 >= 0.5）；归纳分数在上下文损失下降时
    急剧上升；1 层模型不形成归纳头（每个种子）。""",
)
def check_induction_heads(ctx: Context) -> Evidence:
    def one(cx: Context) -> tuple[dict[str, float], InductionHeadsResult]:
        config = preset(induction_heads.InductionHeadsConfig, cx)
        r = run_experiment(induction_heads, config, cx)
        c = r.two_layer
        induction = c.max_induction(c.num_layers - 1)
        cross = c.first_crossing(induction, 0.5)
        window = max(2 * config.eval_every, int(0.05 * config.steps))
        timing = math.inf if cross is None else abs(c.steepest_loss_drop() - cross)
        return {"induction_final": induction[-1],
                "prev_token_lead_final": c.max_previous_token_lead(0)[-1],
                "prev_token_final": c.max_previous_token(0)[-1],
                "timing_gap_over_window": timing / window,
                "control_max_induction": max(r.control.max_induction()),
                "icl_score_final": c.icl_score[-1]}, r

    sweep = over_seeds(ctx, one)
    margins = [
        sweep.at_least("induction_final", 0.5, "final induction score (best head, layer 1)"),
        sweep.at_least("prev_token_lead_final", 0.0,
                      "final previous-token lead (best head, layer 0): weight on t - 1 minus "
                      "the largest weight at any other offset"),
        sweep.at_most("timing_gap_over_window", 1.0,
                      "|steepest in-context-loss drop - induction crossing 0.5| / window"),
        sweep.at_most("control_max_induction", 0.2, "max induction score of the 1-layer control"),
    ]
    r = sweep.runs[0]
    c = r.two_layer
    induction = c.max_induction(c.num_layers - 1)
    cross = c.first_crossing(induction, 0.5)
    return Evidence(
        predicted="induction >= 0.5 (layer 1), a layer-0 head whose most attended offset is "
        "t - 1 (lead > 0), loss drop at the crossing (within the window), 1-layer control < 0.2, "
        "on every seed",
        measured={k: [round(v, 3) for v in vals] for k, vals in sweep.values.items()},
        tolerance="thresholds: 0.5 = majority of a head's attention on the induction target "
        "(uniform attention gives ~1/t < 0.05); previous-token lead > 0 (the definition: t - 1 "
        "is the most attended offset); timing window max(2 eval intervals, 5 % of the steps); "
        "control 0.2 (unchanged since version 1, four times the uniform ~1/t)",
        verdict=decide(margins),
        margins=margins,
        per_seed=sweep.to_json(),
        notes=[
            msg("config {config} (seed {seeds_0}); seeds {seeds}", config=r.config,
                seeds_0=sweep.seeds[0], seeds=sweep.seeds),
            msg("run time of the first seed {seconds:.1f} s (2-layer + control)",
                seconds=r.seconds),
            "version 2 (issue 14): three seeds, worst seed decides; the structural margin "
            "'layers checked >= 2' is gone",
            NOTE_STEPS,
            NOTE_LEAD,
            "falsifier (version 4) = planted bug icl.next-token-labels-unshifted in "
            "experiments/induction_heads.py (the training loss pairs the logits at t with token "
            "t); it was attention.causal-blocks-previous, caught structurally",
        ],
        figures=[induction_figure(c, r, cross)],
        details={"steps": c.steps, "induction": induction,
                 "prev_token": c.max_previous_token(0),
                 "prev_token_lead": c.max_previous_token_lead(0),
                 "in_context_loss": c.in_context_loss, "icl_score": c.icl_score},
    )


@claim(
    "icl.induction-circuit",
    source=f"{SOURCE} (第四个视角: 归纳头, the two-layer relay); Olsson et al. 2022",
    statement="""The induction circuit written into the project's 2-layer attention-only
    Transformer by hand (no training: a previous-token head in layer 0 whose output is the key of
    an induction head in layer 1) attends from t to t - 1 in layer 0 and from t to t - L + 1 in
    layer 1 on a sequence of L distinct tokens repeated twice, and predicts every token of the
    second copy after its first.""",
    tier=Tier.QUICK,
    falsifier="attention.causal-blocks-previous",
    expected="verified",
    version=1,
    seed_refs=[("000", 1011, 1016)],
    kind="construction",
    audit="""Issue 31 review (m; a): a hand-written induction circuit is checked to do what it
    was written to do. Agreed: kind construction (it shows the project's Transformer can carry
    the two-layer relay, a forward-pass test of the engine, nothing about training); the
    falsifier attention.causal-blocks-previous sits in functional/masks.py, the engine's mask.
    Statement and margins unchanged.""",
)
def check_induction_circuit(ctx: Context) -> Evidence:
    vocab, half, batch = 16, 8, 64
    g = ctx.generator(511)
    first = torch.rand(batch, vocab, generator=g).argsort(-1)[:, :half]  # distinct tokens
    tokens = torch.cat([first, first], dim=1)
    model = hand_built_induction_model(vocab, 2 * half)
    with torch.no_grad():
        _, weights = loss_and_patterns(model, tokens)  # read at layers.*.attn.hook_pattern
        logits = model(tokens)
    prev = float(previous_token_score(weights[0]).max())
    ind = float(induction_score(weights[1], half).max())
    # logits at t = L .. 2L - 2 predict tokens L + 1 .. 2L - 1 (token L follows the first copy)
    accuracy = float((logits[:, half:2 * half - 1].argmax(-1) == tokens[:, half + 1:])
                     .double().mean())
    margins = [
        # hard attention: logit gaps >= ~40, off-target mass <= T e^-40; 0.99 leaves room for
        # the LayerNorm scale only, which the construction keeps equal at every position
        at_least("previous-token score of the layer-0 head", prev, 0.99),
        at_least("induction score of the layer-1 head", ind, 0.99),
        at_least("accuracy on the second copy (tokens L+1 .. 2L-1)", accuracy, 1.0),
    ]
    return Evidence(
        predicted="previous-token score 1, induction score 1, accuracy 1",
        measured={"previous_token": round(prev, 6), "induction": round(ind, 6),
                  "accuracy": accuracy},
        tolerance="scores >= 0.99 (hard attention; the rest is exponentially small)",
        verdict=decide(margins),
        margins=margins,
        notes=[msg("vocab {vocab}, L = {half}, {batch} sequences of L distinct tokens repeated "
                   "twice; experiments.induction_heads.hand_built_induction_model (reference "
                   "attention backend, causal mask from functional.masks)", vocab=vocab, half=half,
                   batch=batch),
               msg("the quick counterpart of icl.induction-heads: the circuit that training should "
               "find, checked on the project's Transformer without training")],
        details={"vocab": vocab, "half_len": half},
    )
