"""PARITY trained at short lengths, with and without a scratchpad (000 §8.3.5 "结果三", "结果五").

Hahn (TACL 2020): a fixed-depth soft-attention model answering PARITY in one pass is at chance
beyond its training lengths; a scratchpad of running parities p_i = p_{i-1} xor b_i turns the
task into one local step repeated n times (``experiments/parity_scratchpad.py``).
"""

from __future__ import annotations

import math

from transformer_math.claims.registry import (
    Context,
    Evidence,
    Figure,
    Series,
    claim,
    decide,
)
from transformer_math.claims.seeds import over_seeds
from transformer_math.experiments import parity_scratchpad

SEED_000_85 = "000 §8.3.5"


def _accuracy_figure(res: parity_scratchpad.ParityScratchpadResult, big_l: int) -> Figure:
    return Figure(
        title=f"PARITY accuracy by length (trained on lengths 1..{big_l})",
        xlabel="length n", ylabel="accuracy of the final answer",
        series=[Series(f"scratchpad={arm}", [float(n) for n in r.accuracy_by_length],
                       list(r.accuracy_by_length.values()), style="o-")
                for arm, r in res.arms.items()],
        hlines=[(0.5, "chance")], vlines=[(float(big_l), "longest training length")],
    )


@claim(
    "computation.parity",
    source=f"{SEED_000_85} ('结果三' chain of thought, '结果五'); Hahn, TACL 2020",
    statement="""A small causal transformer trained on PARITY at lengths <= L answers at about
    chance at lengths >= 2L, while the same model with a scratchpad of running parities
    answers correctly (>= 0.9) up to 4L (every seed).""",
    tier="full",
    falsifier="attention.causal-blocks-previous",
    expected="verified",
    version=2,
    seed_refs=[("000", 837, 852), ("000", 858, 868)],
)
def check_parity(ctx: Context) -> Evidence:
    def one(c: Context) -> tuple[dict[str, float], tuple]:
        cfg = c.preset(parity_scratchpad.ParityScratchpadConfig)(seed=c.seed)
        res = parity_scratchpad.run(cfg)
        big_l = cfg.train_max_len
        direct = res.arms["none"].accuracy_by_length
        pad = res.arms["running_parity"].accuracy_by_length
        long_lengths = [n for n in cfg.test_lengths if n >= 2 * big_l]
        pad_lengths = [n for n in cfg.test_lengths if n <= 4 * big_l]
        return {"long_lengths": float(len(long_lengths)),
                "direct_max_dev": max((abs(direct[n] - 0.5) for n in long_lengths),
                                      default=math.inf),
                "pad_min": min((pad[n] for n in pad_lengths), default=-math.inf),
                "direct_at_L": direct.get(big_l, math.nan)}, (cfg, res)

    sweep = over_seeds(ctx, one)
    cfg, res = sweep.runs[0]
    big_l = cfg.train_max_len
    tol = 3 * math.sqrt(0.25 / cfg.eval_size)  # 3 binomial standard errors at p = 1/2
    margins = [
        sweep.at_least("long_lengths", 1.0, "test lengths >= 2L"),
        sweep.at_most("direct_max_dev", tol, "max over n >= 2L of |direct accuracy - 1/2|"),
        sweep.at_least("pad_min", 0.9, "min over n <= 4L of scratchpad accuracy"),
    ]
    direct = res.arms["none"].accuracy_by_length
    pad = res.arms["running_parity"].accuracy_by_length
    figure = _accuracy_figure(res, big_l)
    return Evidence(
        predicted={"direct_at_2L_and_beyond": f"0.5 +- {tol:.3f}",
                   "scratchpad_up_to_4L_at_least": 0.9},
        measured={k: [round(v, 3) for v in vals] for k, vals in sweep.values.items()},
        tolerance=round(tol, 4),
        verdict=decide(margins),
        margins=margins,
        per_seed=sweep.to_json(),
        notes=[
            f"causal Transformer (experiments.presets), {cfg.num_layers} layers, "
            f"d = {cfg.embed_dim}, {cfg.num_heads} heads, learned relative position bias; "
            "direct arm: unrestricted attention, scratchpad arm: sliding window of "
            f"{cfg.window} tokens; "
            f"{cfg.steps} steps x batch {cfg.batch_size}, lengths uniform in 1..{big_l}; "
            f"{cfg.eval_size} fresh strings per test length"
            + (" (antithetic pairs: x and x with one random bit flipped)" if cfg.paired_eval
               else "")
            + ", greedy autoregressive decoding (every scratchpad token is the model's own).",
            f"seeds {sweep.seeds}; first seed: direct "
            f"{ {k: round(v, 3) for k, v in direct.items()} }, scratchpad "
            f"{ {k: round(v, 3) for k, v in pad.items()} }",
            "Tolerance: 3 binomial standard errors at p = 1/2 over the evaluation strings.",
            "version 2 (issue 14): three seeds, worst seed decides; falsifier = planted bug "
            "attention.causal-blocks-previous in functional/masks.py (no query can attend to "
            "the previous token, so p_i = p_{i-1} xor b_i cannot be computed); it was a copy "
            "scratchpad chosen by the check. Thresholds unchanged.",
            "Issue 12 (tiny size): L = 3 with 15 steps x batch 8 and 16 test strings never learnt "
            "the scratchpad (min accuracy 0.25-0.63 over seeds 0-4, all failed); now L = 4, 120 "
            "steps x batch 32 at lr 1e-2, 256 test strings in antithetic pairs, tested at L, 4L "
            "and 8L. At this size the direct arm is not yet at chance at 2L for every seed "
            "(seeds 4-6: 0.65, 0.59, 0.40), so 2L is not among the tiny test lengths.",
            "Earlier default runs (seed 0) with the running-parity arm on unrestricted relative "
            "attention: 0.97 at 24, 0.80 at 32, chance from 48 (attention to the previous token "
            "diluted by far keys); with a window covering the training sequences: 0.66 at 24 "
            "(probably BOS, a likely attention sink, leaving the window; not verified). See "
            "experiments/parity_scratchpad.py.",
        ],
        figures=[figure],
        details={"train_loss": {k: v.final_train_loss for k, v in res.arms.items()},
                 "seconds": res.seconds},
    )
