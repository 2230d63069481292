"""Training claims over seeds: per-seed values, spread, and margins on the worst seed."""

from __future__ import annotations

import math

import pytest

from transformer_math.claims.registry import Context
from transformer_math.claims.seeds import over_seeds


def test_over_seeds_runs_each_seed_and_decides_on_the_worst():
    seen: list[int] = []

    def run(ctx: Context) -> dict[str, float]:
        seen.append(ctx.seed)
        return {"acc": 0.9 + 0.01 * ctx.seed, "loss": 1.0 / (1 + ctx.seed)}

    sweep = over_seeds(Context(seed=2, seeds=3), run)
    assert seen == [2, 3, 4] and sweep.seeds == [2, 3, 4]
    assert sweep["acc"] == pytest.approx([0.92, 0.93, 0.94])
    assert sweep.mean("acc") == pytest.approx(0.93)
    assert sweep.spread("acc") == pytest.approx(0.01)
    assert sweep.at_least("acc", 0.925).holds is False  # seed 2 misses: the margin fails
    assert sweep.at_least("acc", 0.92).holds is True
    assert sweep.at_most("loss", 1 / 3 + 1e-9).holds is True
    doc = sweep.to_json()
    assert doc["values"]["acc"] == sweep["acc"] and doc["min"]["acc"] == pytest.approx(0.92)


def test_one_seed_has_zero_spread_and_nan_is_never_firm():
    one = over_seeds(Context(seeds=1), lambda ctx: {"x": 1.0})
    assert one.spread("x") == 0.0
    bad = over_seeds(Context(seeds=2), lambda ctx: {"x": math.nan if ctx.seed else 1.0})
    assert bad.spread("x") == math.inf and not bad.at_least("x", 0.0).holds


def test_seeds_must_report_the_same_names():
    def run(ctx: Context) -> dict[str, float]:
        return {"a": 1.0} if ctx.seed == 0 else {"b": 1.0}

    with pytest.raises(ValueError, match="reported"):
        over_seeds(Context(seeds=2), run)


def test_extra_items_are_kept_per_seed():
    sweep = over_seeds(Context(seeds=2), lambda ctx: ({"a": 1.0}, f"run {ctx.seed}"))
    assert sweep.runs == ["run 0", "run 1"]
