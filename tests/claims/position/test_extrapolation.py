"""position.extrapolation-experiment: its checking logic on made-up curves (both directions,
no training, over several seeds) and the tiny trained run with one seed (slow)."""

from __future__ import annotations

import math

import pytest

from transformer_math.claims.position import extrapolation
from transformer_math.claims.registry import Context, Size, Verdict, all_hold
from transformer_math.experiments.rope_extrapolation import (
    RopeExtrapolationConfig,
    RopeExtrapolationResult,
    SchemeCurve,
)


def _result(rope_far: float, learned_far: float, window_far: float = 0.6,
            seed: int = 0, learned_near: float = 0.5) -> RopeExtrapolationResult:
    """Curves with loss 0.5 in [0, L) (the learned table: ``learned_near``) and the given values
    beyond L (chance ln 16 = 2.77)."""
    cfg = RopeExtrapolationConfig.tiny(seed)
    starts = list(range(0, cfg.eval_len, cfg.bin_width))

    def curve(scheme: str, variant: str, far: float, near: float = 0.5) -> SchemeCurve:
        loss = [near if b < cfg.train_len else far for b in starts]
        return SchemeCurve(scheme, variant, starts, loss, [1.0 - v / 3 for v in loss])

    curves = [curve("rope", "none", rope_far), curve("rope", "window", window_far),
              curve("learned", "none", learned_far, learned_near)]
    return RopeExtrapolationResult(cfg, curves, {"rope": 0.5}, {"rope": 1.0},
                                   math.log(cfg.vocab_size))


@pytest.mark.parametrize(("rope_far", "learned_far", "window_far", "holds"), [
    (2.7, 2.7, 0.6, True),  # rope degrades to chance, the learned table fails, window holds
    (0.6, 2.7, 0.6, False),  # rope does not degrade
    (2.7, 0.6, 0.6, False),  # the learned table does not fail
    (2.7, 2.7, 2.5, False),  # the window does not remove the degradation
])
def test_check_on_made_up_curves(monkeypatch: pytest.MonkeyPatch, rope_far: float,
                                 learned_far: float, window_far: float, holds: bool) -> None:
    monkeypatch.setattr(extrapolation, "_experiment",
                        lambda ctx: _result(rope_far, learned_far, window_far, ctx.seed))
    ev = extrapolation.check_extrapolation_experiment(Context(seed=0, size=Size.TINY))
    assert all_hold(ev.margins) is holds
    assert (ev.verdict is Verdict.VERIFIED) is holds
    assert ev.measured["loss (first seed)"]["rope/none"]["[0,L)"] == 0.5
    assert len(ev.figures[0].series) == 3
    assert ev.per_seed is not None and ev.per_seed["seeds"] == [0, 1, 2]
    assert len(ev.margins) == 4 and all("worst of 3 seeds" in m.name for m in ev.margins)


def test_learned_arm_without_its_in_range_control_is_inconclusive(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 31: a learned table that did not learn the copy inside L (loss 2.0 > 0.5 ln 16 =
    1.39 there) cannot show that it fails beyond L: inconclusive, not verified."""
    monkeypatch.setattr(extrapolation, "_experiment",
                        lambda ctx: _result(2.7, 2.7, 0.6, ctx.seed, learned_near=2.0))
    ev = extrapolation.check_extrapolation_experiment(Context(seed=0, size=Size.TINY))
    assert all_hold(ev.margins)
    assert ev.verdict is Verdict.INCONCLUSIVE
    assert len(ev.decisive) == 1 and not ev.decisive[0].holds
    assert "in-range control" in ev.decisive[0].name


def test_worst_seed_decides(monkeypatch: pytest.MonkeyPatch) -> None:
    """One seed whose rope model does not degrade fails the claim."""
    monkeypatch.setattr(extrapolation, "_experiment",
                        lambda ctx: _result(0.6 if ctx.seed == 2 else 2.7, 2.7, 0.6, ctx.seed))
    ev = extrapolation.check_extrapolation_experiment(Context(seed=0, size=Size.TINY))
    assert ev.verdict is Verdict.FAILED
    assert ev.per_seed["values"]["rope_far_way_to_chance"][2] < 0.5


def test_loss_table_and_figure() -> None:
    result = _result(2.0, 2.0)
    table = extrapolation.loss_table(result)
    assert set(table) == {"rope/none", "rope/window", "learned/none"}
    assert table["rope/none"] == {"[0,L)": 0.5, "[L,2L)": 2.0, "[2L,end)": 2.0}
    fig = extrapolation.loss_figure(result)
    assert fig.hlines == [(result.chance_loss, "chance ln V")]
    assert fig.series[0].x[0] == result.config.bin_width / 2


@pytest.mark.slow
def test_extrapolation_experiment_tiny(full_runs) -> None:
    result = full_runs("position.extrapolation-experiment")
    assert result.error is None, result.evidence.notes
    assert result.evidence.verdict is Verdict.VERIFIED, result.evidence.measured
    assert result.falsifier_caught is True
    assert result.evidence.figures and len(result.evidence.figures[0].series) == 11
    margins = {m.name: m for m in result.evidence.margins}
    assert len(margins) == 4 and all(m.holds for m in margins.values())
    assert result.evidence.decisive and all(m.holds for m in result.evidence.decisive)
    assert result.falsifier_evidence is not None
    assert not all_hold(result.falsifier_evidence.margins)
