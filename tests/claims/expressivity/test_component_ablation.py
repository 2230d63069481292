"""expressivity.component-ablation: the margins decide both directions."""

from __future__ import annotations

import math

from transformer_math.claims.expressivity.component_ablation import ablation_margins

CEILING = 0.4609


def test_the_expected_pattern_holds():
    acc = {"ffn_only/1L": CEILING, "attention_only/1L": 0.68, "attention_only/2L": 0.997,
           "full/1L": 1.0}
    margins = ablation_margins(acc, CEILING, 1e-9)
    assert len(margins) == 5 and all(m.holds for m in margins)


def test_each_deviation_is_caught():
    base = {"ffn_only/1L": CEILING, "attention_only/1L": 0.68, "attention_only/2L": 0.997,
            "full/1L": 1.0}
    for change, failing in [
        ({"ffn_only/1L": CEILING + 0.01}, "FFN-only accuracy - token-wise ceiling"),
        ({"full/1L": 0.85}, "full block, 1 layer, accuracy"),
        ({"attention_only/1L": 0.95}, "full/1L - attention_only/1L accuracy"),
        ({"attention_only/2L": 0.7}, "attention-only, 2 layers, accuracy (seed refuted)"),
    ]:
        margins = {m.name: m.holds for m in ablation_margins({**base, **change}, CEILING, 1e-9)}
        assert margins[failing] is False, change
        assert sum(not ok for ok in margins.values()) == 1, change


def test_context_free_task_is_caught_by_ffn_only_succeeding():
    acc = {"ffn_only/1L": 1.0, "attention_only/1L": 1.0, "full/1L": 1.0}
    margins = {m.name: m.holds for m in ablation_margins(acc, 1.0, 1e-9)}
    assert margins["FFN-only accuracy (fails: <= 0.9)"] is False
    assert "attention-only, 2 layers, accuracy (seed refuted)" not in margins
    assert math.isnan(ablation_margins({"ffn_only/1L": 0.4}, 0.4, 1e-9)[2].value)
