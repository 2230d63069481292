"""The falsifier of a training claim decided on its first seed when that already decides it
(registry.run_claim, issue 19): a worst-of-seeds margin failing on one seed fails on all."""

from __future__ import annotations

import pytest

from transformer_math import bugs
from transformer_math.claims.registry import (
    Claim,
    Context,
    Evidence,
    Falsifier,
    Tier,
    Verdict,
    at_least,
    decide,
    run_claim,
)
from transformer_math.claims.seeds import over_seeds

BROKEN = bugs.declare_bug("demo.lead-seed-broken", "the demo score drops on the seeds in "
                          "CAUGHT_ON", module=__name__)
CAUGHT_ON: set[int] = set()
COMPUTED: list[tuple[int, bool]] = []


def _score(seed: int) -> float:  # stands in for a training run with a planted bug
    COMPUTED.append((seed, bugs.planted(BROKEN)))
    return 0.2 if bugs.planted(BROKEN) and seed in CAUGHT_ON else 0.9


def _worst_seed_check(ctx: Context) -> Evidence:
    sweep = over_seeds(ctx, lambda c: {"score": _score(c.seed)})
    margins = [sweep.at_least("score", 0.5)]
    return Evidence(">= 0.5", sweep["score"], 0.0, decide(margins), margins=margins,
                    per_seed=sweep.to_json())


def _mean_check(ctx: Context) -> Evidence:
    sweep = over_seeds(ctx, lambda c: {"score": _score(c.seed)})
    margins = [at_least("mean score", sweep.mean("score"), 0.7)]  # not a worst-of-seeds margin
    return Evidence(">= 0.7", sweep["score"], 0.0, decide(margins), margins=margins,
                    per_seed=sweep.to_json())


def _claim(check) -> Claim:  # type: ignore[no-untyped-def]
    return Claim("demo.lead-seed", "demo", "test", "a statement", Tier.FULL, check,
                 Falsifier(BROKEN), expected=Verdict.VERIFIED)


@pytest.mark.parametrize(("caught_on", "bugged_seeds", "decided_alone"), [
    ({0, 1, 2}, [0], True),  # the first seed fails: nothing else trained with the bug
    ({2}, [0, 1, 2], False),  # only the last seed catches it: every seed runs, seed 0 reused
    (set(), [0, 1, 2], False),  # not caught at all
])
def test_worst_seed_falsifier(caught_on, bugged_seeds, decided_alone) -> None:
    CAUGHT_ON.clear()
    CAUGHT_ON.update(caught_on)
    COMPUTED.clear()
    res = run_claim(_claim(_worst_seed_check), Context(seeds=3))
    assert res.evidence.verdict is Verdict.VERIFIED
    assert [s for s, bug in COMPUTED if bug] == bugged_seeds
    assert res.falsifier_caught is bool(caught_on)
    note = any("decided on seed 0 alone" in n for n in res.falsifier_evidence.notes)
    assert note is decided_alone
    if not decided_alone:
        assert res.falsifier_evidence.per_seed["seeds"] == [0, 1, 2]


def test_the_shortcut_agrees_with_the_full_falsifier() -> None:
    """Where the first seed decides, the falsifier over every seed is failed as well."""
    CAUGHT_ON.clear()
    CAUGHT_ON.update({0})
    lead = run_claim(_claim(_worst_seed_check), Context(seeds=3))
    with bugs.plant(BROKEN):
        full = _worst_seed_check(Context(seeds=3))
    assert lead.falsifier_evidence.verdict is full.verdict is Verdict.FAILED


def test_an_aggregate_margin_never_decides_on_one_seed() -> None:
    """A mean over seeds is not monotone in the set of seeds: seed 0 alone (0.2 < 0.7) would
    fail, the three seeds (mean 0.67) fail too here, but only the full run may say so."""
    CAUGHT_ON.clear()
    CAUGHT_ON.update({0})
    COMPUTED.clear()
    res = run_claim(_claim(_mean_check), Context(seeds=3))
    assert [s for s, bug in COMPUTED if bug] == [0, 1, 2]
    assert res.falsifier_caught
    assert not any("alone" in n for n in res.falsifier_evidence.notes)
