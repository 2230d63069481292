"""Induction heads form in a 2-layer attention-only transformer, with a phase change, and not in
a 1-layer control (000 §8.3.6 第四个视角; Olsson et al. 2022). The run is
``experiments.induction_heads`` (memoised); attention weights are read at ``hook_pattern``."""

from __future__ import annotations

import math

from transformer_math.claims.icl._shared import SOURCE, preset, run_experiment
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
from transformer_math.experiments import induction_heads
from transformer_math.experiments.induction_heads import InductionHeadsResult, TrainingCurves


def induction_figure(c: TrainingCurves, r: InductionHeadsResult, cross: int | None) -> Figure:
    last = c.num_layers - 1
    xs = [float(s) for s in c.steps]
    return Figure(
        title="Induction-head phase change",
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


@claim(
    "icl.induction-heads",
    source=f"{SOURCE} (第四个视角: 归纳头); Olsson et al. 2022",
    statement="""A 2-layer attention-only transformer trained on repeated random segments forms a
    previous-token head in layer 0 and an induction head in layer 1; the induction score rises
    sharply when the in-context loss drops; a 1-layer model does not form one.""",
    tier=Tier.FULL,
    falsifier=Falsifier(
        "one layer",
        {"model": "control"},
        "the 1-layer control checked as if it were the 2-layer model",
    ),
)
def check_induction_heads(ctx: Context, model: str = "two_layer") -> Evidence:
    config = preset(induction_heads.InductionHeadsConfig, ctx)
    r = run_experiment(induction_heads, config, ctx)
    c = r.two_layer if model == "two_layer" else r.control
    induction = c.max_induction(c.num_layers - 1)
    prev0 = c.max_previous_token(0)
    control_max = max(r.control.max_induction())
    cross = c.first_crossing(induction, 0.5)
    drop = c.steepest_loss_drop()
    window = max(2 * config.eval_every, int(0.05 * config.steps))
    margins = [
        at_least("layers of the model checked", c.num_layers, 2),
        at_least("final induction score (best head, last layer)", induction[-1], 0.5),
        at_least("final previous-token score (best head, layer 0)", prev0[-1], 0.4),
        at_most("|steepest in-context-loss drop - induction crossing 0.5| (steps)",
                math.inf if cross is None else abs(drop - cross), window),
        at_most("max induction score of the 1-layer control", control_max, 0.2),
    ]
    return Evidence(
        predicted="induction >= 0.5 (layer 1), previous-token >= 0.4 (layer 0), loss drop at the "
        "crossing, 1-layer control < 0.2",
        measured={
            "induction_final": round(induction[-1], 3),
            "prev_token_final": round(prev0[-1], 3),
            "crossing_step": cross,
            "steepest_drop_step": drop,
            "control_max_induction": round(control_max, 3),
            "icl_score_final": round(c.icl_score[-1], 3),
        },
        tolerance=f"thresholds: 0.5 = majority of a head's attention on the induction target "
        f"(uniform attention gives ~1/t < 0.05); timing window {window} steps",
        verdict=agreement(all_hold(margins)),
        margins=margins,
        notes=[
            f"config {config}",
            f"run time {r.seconds:.1f} s (2-layer + control)",
            f"crossing 0.1 at {c.first_crossing(induction, 0.1)}",
        ],
        figures=[induction_figure(c, r, cross)],
        details={
            "model": model,
            "steps": c.steps,
            "induction": induction,
            "prev_token": prev0,
            "in_context_loss": c.in_context_loss,
            "icl_score": c.icl_score,
        },
    )
