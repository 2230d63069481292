"""PARITY trained at short lengths, with and without a scratchpad (000 §8.3.5 "结果三", "结果五").

Hahn (TACL 2020): a fixed-depth soft-attention model answering PARITY in one pass is at chance
beyond its training lengths; a scratchpad of running parities p_i = p_{i-1} xor b_i turns the
task into one local step repeated n times (``experiments/parity_scratchpad.py``). Both arms
are the same model (the same sliding-window attention); where the direct arm does not learn
PARITY even at the training lengths, the comparison decides nothing (``inconclusive``).
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
from transformer_math.i18n.message import msg

SEED_000_85 = "000 §8.3.5"


def _accuracy_figure(res: parity_scratchpad.ParityScratchpadResult, big_l: int) -> Figure:
    return Figure(
        title=msg("PARITY accuracy by length (trained on lengths 1..{big_l})", big_l=big_l),
        xlabel=msg("length n"), ylabel=msg("accuracy of the final answer"),
        series=[Series(f"scratchpad={arm}", [float(n) for n in r.accuracy_by_length],
                       list(r.accuracy_by_length.values()), style="o-")
                for arm, r in res.arms.items()],
        hlines=[(0.5, msg("chance"))], vlines=[(float(big_l), msg("longest training length"))],
    )


@claim(
    "computation.parity",
    source=f"{SEED_000_85} ('结果三' chain of thought, '结果五'); Hahn, TACL 2020",
    statement="""A small causal transformer trained on PARITY at lengths <= L answers at about
    chance at lengths >= 2L, while the same model (the same sliding-window attention, size and
    budget) with a scratchpad of running parities answers correctly (>= 0.9) up to 4L, on every
    seed. Decided only where the direct arm learns PARITY at the training lengths (>= 0.9 at
    L); otherwise inconclusive.""",
    statement_zh="""一个在长度 <= L 的 PARITY 上训练的小型因果 Transformer 在长度 >= 2L 时
    约为随机水平，而同一个模型（相同的滑动窗口注意力、规模与训练预算）加上逐位奇偶的草稿纸，
    在每个种子上直到 4L 都答对（>= 0.9）。仅当直接作答的一支在训练长度上学会 PARITY
    （在 L 处 >= 0.9）时才能判定；否则为无定论。""",
    tier="full",
    falsifier="experiments.parity-loss-mask-shifted",
    expected="inconclusive",
    version=3,
    kind="measurement",
    seed_refs=[("000", 837, 852), ("000", 858, 868)],
    audit="""Issue 31 review (b, f: 2L dropped at tiny after the direct arm was seen above
    chance there; only the scratchpad arm had a sliding window): fixed. Both arms are now the
    same model (experiments.parity_scratchpad.model_config ignores the arm: local_relative
    attention with the same window), 2L is among the test lengths at every size (tiny: L, 2L,
    4L = 4, 8, 16), and the direct arm's conditions are decisive margins: where they fail the
    verdict is inconclusive, not narrowed. Pass conditions (failed if false): the test lengths
    hold L, 2L and 4L, and the scratchpad arm reaches >= 0.9 at L and at every n <= 4L on
    every seed (the claim's own assertion about the library's trained model). Decisive: the
    direct arm >= 0.9 at L (else its chance level beyond L says nothing about length) and
    |direct - 1/2| <= 3 binomial SE (p = 1/2, fixed before any run) at every n >= 2L. A first
    default run of version 3 with the scratchpad's long lengths decisive was inconclusive and
    did not catch the falsifier of version 2 (attention.causal-blocks-previous: with a window
    of 9 the model routes around offset 1 and still scored 1.0 at every length, 627 s, 3
    seeds); the scratchpad condition was moved back into the pass conditions (where it was
    in version 2) and the falsifier replaced by a training-loop bug,
    experiments.parity-loss-mask-shifted (the loss on the token after each generated one), a
    model-side bug caught in range at every size. At tiny the window (2, one layer) does not
    let the direct answer see a whole training string; at default (window 9, 2 layers:
    receptive field 16 = L) it can, but the direct arm does not learn 16-bit PARITY in 600
    steps (0.48-0.54 at L over 3 seeds, scratchpad 1.0 at every length 8..64): inconclusive at
    both. What would decide it: a direct arm that learns PARITY at L (the large preset, 3000
    steps, or a longer default budget), 3 seeds. Review R9 (outcome problem, kept as a limit
    of this version): both arms share the sliding window, and beyond 2L its reach no longer
    covers the first bits, so a direct arm at chance there would measure the window, not
    Hahn's bound; a decisive run needs the direct arm with full causal attention (the
    scratchpad arm may keep the window) and a length budget where it learns PARITY at L.
    Until then the verdict stays inconclusive.""",
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
        needed = {big_l, 2 * big_l, 4 * big_l}
        return {"lengths_missing": float(len(needed - set(cfg.test_lengths))),
                "direct_max_dev": max((abs(direct[n] - 0.5) for n in long_lengths),
                                      default=math.inf),
                "pad_min": min((pad[n] for n in pad_lengths), default=-math.inf),
                "pad_at_L": pad.get(big_l, -math.inf),
                "direct_at_L": direct.get(big_l, -math.inf)}, (cfg, res)

    sweep = over_seeds(ctx, one)
    cfg, res = sweep.runs[0]
    big_l = cfg.train_max_len
    tol = 3 * math.sqrt(0.25 / cfg.eval_size)  # 3 binomial standard errors at p = 1/2
    margins = [
        sweep.at_most("lengths_missing", 0.0, "test lengths missing among L, 2L, 4L"),
        sweep.at_least("pad_at_L", 0.9, "scratchpad accuracy at L (in-range control)"),
        sweep.at_least("pad_min", 0.9, "min over n <= 4L of scratchpad accuracy"),
    ]
    decisive = [
        sweep.at_least("direct_at_L", 0.9, "direct accuracy at L (the direct arm learnt PARITY "
                       "in range)"),
        sweep.at_most("direct_max_dev", tol, "max over n >= 2L of |direct accuracy - 1/2|"),
    ]
    direct = res.arms["none"].accuracy_by_length
    pad = res.arms["running_parity"].accuracy_by_length
    figure = _accuracy_figure(res, big_l)
    return Evidence(
        predicted={"direct_at_2L_and_beyond": f"0.5 +- {tol:.3f}",
                   "scratchpad_up_to_4L_at_least": 0.9, "both_at_L_at_least": 0.9},
        measured={k: [round(v, 3) for v in vals] for k, vals in sweep.values.items()},
        tolerance=round(tol, 4),
        verdict=decide(margins, (), decisive),
        margins=margins,
        decisive=decisive,
        per_seed=sweep.to_json(),
        notes=[
            f"causal Transformer (experiments.presets), {cfg.num_layers} layers, "
            f"d = {cfg.embed_dim}, {cfg.num_heads} heads; both arms the same sliding-window "
            f"relative attention (window {cfg.window}: a query reaches "
            f"{cfg.receptive_field()} tokens back, L = {big_l}); "
            f"{cfg.steps} steps x batch {cfg.batch_size}, lengths uniform in 1..{big_l}; "
            f"{cfg.eval_size} fresh strings per test length"
            + (" (antithetic pairs: x and x with one random bit flipped)" if cfg.paired_eval
               else "")
            + ", greedy autoregressive decoding (every scratchpad token is the model's own).",
            msg("seeds {seeds}; first seed: direct {value}, scratchpad {value_2}",
                seeds=sweep.seeds, value={k: round(v, 3) for k, v in direct.items()},
                value_2={k: round(v, 3) for k, v in pad.items()}),
            msg("Tolerance: 3 binomial standard errors at p = 1/2 over the evaluation strings."),
            "Inconclusive when the direct arm has not learnt PARITY at L (its chance level "
            "beyond L then says nothing about length generalisation) or when it is not at "
            "chance at some n >= 2L; failed when the scratchpad arm falls below 0.9 before 4L "
            "or the test lengths miss L, 2L or 4L. What "
            "decides it: a size whose receptive field covers L and whose direct arm learns "
            "in range (default: window 9, 2 layers; large), with 3 seeds.",
            "version 3 (issue 31): the same attention in both arms (before, only the scratchpad "
            "arm had a sliding window and the direct arm unrestricted attention); 2L tested at "
            "every size (tiny had dropped it after the direct arm was seen above chance there "
            "for seeds 4-6: 0.65, 0.59, 0.40); the direct arm's conditions decisive.",
            "Falsifier (version 3): experiments.parity-loss-mask-shifted, the training loop's "
            "loss mask shifted by one (targets = the token after each generated one), so the "
            "scratchpad is never trained. A second default run (3 seeds, 583 s) measured: "
            "scratchpad 1.0 at every length 8..64 on every seed, direct arm 0.48-0.54 at L "
            "(it does not learn 16-bit PARITY in range at this size) -> inconclusive; with "
            "attention.causal-blocks-previous the scratchpad arm still scored 1.0 (window 9 "
            "routes around offset 1), so that falsifier was replaced.",
            "version 2 (issue 14): three seeds, worst seed decides; falsifier = planted bug "
            "attention.causal-blocks-previous in functional/masks.py (no query can attend to "
            "the previous token, so p_i = p_{i-1} xor b_i cannot be computed).",
            "Earlier default runs (seed 0, other attention): running-parity arm on "
            "unrestricted relative attention 0.97 at 24, 0.80 at 32, chance from 48; with a "
            "window covering the training sequences 0.66 at 24. Tiny probes for issue 31 "
            "(seeds 0-2, both arms on one attention): unrestricted relative or windows of 6, "
            "neither arm learnt at L (0.49-0.82), hence the window 2 at tiny.",
        ],
        figures=[figure],
        details={"train_loss": {k: v.final_train_loss for k, v in res.arms.items()},
                 "seconds": res.seconds, "receptive_field": cfg.receptive_field()},
    )
