"""expressivity.component-ablation: the margins decide both directions over seeds."""

from __future__ import annotations

from transformer_math.claims.expressivity.component_ablation import SOFTMAX_ONLY, ablation_margins
from transformer_math.claims.registry import Verdict, decide
from transformer_math.claims.seeds import PerSeed

CEILING = 0.4609
BASE = {"ffn_only/2L": CEILING, "attention_only/1L": 0.68, "attention_only/2L": 0.997,
        SOFTMAX_ONLY: 0.95, "full/1L": 1.0}


def _sweep(*runs: dict[str, float]) -> PerSeed:
    sweep = PerSeed(seeds=list(range(len(runs))))
    for run in runs:
        values = {**run, "ceiling": CEILING, "ffn_minus_ceiling": run["ffn_only/2L"] - CEILING,
                  "full_minus_attention_1L": run["full/1L"] - run["attention_only/1L"]}
        for k, v in values.items():
            sweep.values.setdefault(k, []).append(v)
    return sweep


def test_the_expected_pattern_is_verified() -> None:
    """Issue 31: no seed margin any more (the seed qualifies '缺一不可' itself)."""
    margins, seed_margins = ablation_margins(_sweep(BASE, BASE, BASE), 1e-9)
    assert len(margins) == 5 and all(m.holds for m in margins) and not seed_margins
    assert decide(margins, seed_margins) is Verdict.VERIFIED


def test_each_deviation_on_one_seed_is_caught() -> None:
    for change, failing in [
        ({"ffn_only/2L": CEILING + 0.01}, "FFN-only accuracy - token-wise ceiling"),
        ({"full/1L": 0.85}, "full block, 1 layer, accuracy"),
        ({"attention_only/1L": 0.95}, "full/1L - attention_only/1L accuracy"),
        ({SOFTMAX_ONLY: 0.7}, "attention-only, 2 layers, no norms (softmax the only "
                              "nonlinearity)"),
    ]:
        margins, seed_margins = ablation_margins(_sweep(BASE, {**BASE, **change}, BASE), 1e-9)
        held = {m.name.split(" (worst")[0]: m.holds for m in margins}
        assert held[failing] is False, change
        assert sum(not ok for ok in held.values()) == 1, change
        assert decide(margins, seed_margins) is Verdict.FAILED


def test_ffn_only_seeing_context_fails() -> None:
    """What the falsifier (every arm a full block) produces: FFN-only beats the ceiling."""
    margins, seed_margins = ablation_margins(_sweep({**BASE, "ffn_only/2L": 1.0}), 1e-9)
    assert decide(margins, seed_margins) is Verdict.FAILED
