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


def induction_figure(c: TrainingCurves, r: InductionHeadsResult, cross: int | None) -> Figure:
    last = c.num_layers - 1
    xs = [float(s) for s in c.steps]
    return Figure(
        title="Induction-head phase change (first seed)",
        xlabel="training step",
        ylabel="score / loss",
        series=[
            Series(f"induction score (best head, layer {last})", xs, c.max_induction(last)),
            Series("previous-token score (best head, layer 0)", xs, c.max_previous_token(0)),
            Series("in-context loss / ln(vocab)", xs,
                   [v / math.log(r.config.vocab_size) for v in c.in_context_loss]),
            Series("1-layer control induction score", [float(s) for s in r.control.steps],
                   r.control.max_induction(), "line", "--"),
        ],
        vlines=[(float(cross), "induction 0.5")] if cross is not None else [],
    )


NOTE_STEPS = (
    "version 3 (issue 19): the default trains 1200 steps (was 2000). The learning rate is "
    "constant after the warm-up, so the run is the first 1200 steps of the old one; the phase "
    "change is at steps 600-650 on seeds 0-4. Seeds 0-4 at 1200 steps: induction 0.764, 0.726, "
    "0.722, 0.755, 0.755; previous-token 0.497, 0.438, 0.469, 0.432, 0.456; timing gap / window "
    "0.42, 0.42, 0.42, 0, 0 (window 60 steps, was 100); control 0.029. Thresholds unchanged; "
    "the previous-token slack is smaller than at 2000 steps (worst 0.432 of 5 seeds against "
    "0.450 of 3)."
)


@claim(
    "icl.induction-heads",
    source=f"{SOURCE} (第四个视角: 归纳头); Olsson et al. 2022",
    statement="""A 2-layer attention-only transformer trained on repeated random segments forms a
    previous-token head in layer 0 and an induction head in layer 1; the induction score rises
    sharply when the in-context loss drops; a 1-layer model does not form one (every seed).""",
    tier=Tier.FULL,
    falsifier="attention.causal-blocks-previous",
    expected="verified",
    version=3,
    seed_refs=[("000", 1007, 1018)],
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
                "prev_token_final": c.max_previous_token(0)[-1],
                "timing_gap_over_window": timing / window,
                "control_max_induction": max(r.control.max_induction()),
                "icl_score_final": c.icl_score[-1]}, r

    sweep = over_seeds(ctx, one)
    margins = [
        sweep.at_least("induction_final", 0.5, "final induction score (best head, layer 1)"),
        sweep.at_least("prev_token_final", 0.4, "final previous-token score (best head, layer 0)"),
        sweep.at_most("timing_gap_over_window", 1.0,
                      "|steepest in-context-loss drop - induction crossing 0.5| / window"),
        sweep.at_most("control_max_induction", 0.2, "max induction score of the 1-layer control"),
    ]
    r = sweep.runs[0]
    c = r.two_layer
    induction = c.max_induction(c.num_layers - 1)
    cross = c.first_crossing(induction, 0.5)
    return Evidence(
        predicted="induction >= 0.5 (layer 1), previous-token >= 0.4 (layer 0), loss drop at the "
        "crossing (within the window), 1-layer control < 0.2, on every seed",
        measured={k: [round(v, 3) for v in vals] for k, vals in sweep.values.items()},
        tolerance="thresholds: 0.5 = majority of a head's attention on the induction target "
        "(uniform attention gives ~1/t < 0.05); timing window max(2 eval intervals, 5 % of "
        "the steps)",
        verdict=decide(margins),
        margins=margins,
        per_seed=sweep.to_json(),
        notes=[
            f"config {r.config} (seed {sweep.seeds[0]}); seeds {sweep.seeds}",
            f"run time of the first seed {r.seconds:.1f} s (2-layer + control)",
            "version 2 (issue 14): three seeds, worst seed decides; the structural margin "
            "'layers checked >= 2' is gone; falsifier = planted bug "
            "attention.causal-blocks-previous in functional/masks.py (no layer can attend to "
            "the previous token): it used to be the 1-layer control read as the 2-layer model",
            NOTE_STEPS,
        ],
        figures=[induction_figure(c, r, cross)],
        details={"steps": c.steps, "induction": induction,
                 "prev_token": c.max_previous_token(0),
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
        notes=[f"vocab {vocab}, L = {half}, {batch} sequences of L distinct tokens repeated "
               "twice; experiments.induction_heads.hand_built_induction_model (reference "
               "attention backend, causal mask from functional.masks)",
               "the quick counterpart of icl.induction-heads: the circuit that training should "
               "find, checked on the project's Transformer without training"],
        details={"vocab": vocab, "half_len": half},
    )
