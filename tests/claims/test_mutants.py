"""The bug zoo machinery on demo claims and bugs: reach, kill, survive, crash."""

from __future__ import annotations

from transformer_math import bugs
from transformer_math.claims.mutants import run_zoo
from transformer_math.claims.registry import (
    Claim,
    Context,
    Evidence,
    Falsifier,
    Tier,
    Verdict,
    at_most,
    close_to,
    decide,
)

DOUBLES = bugs.declare_bug("demo.zoo-doubles", "the demo sum doubles", module=__name__)
HIDDEN = bugs.declare_bug("demo.zoo-hidden", "a change no check sees", module=__name__)
CRASH = bugs.declare_bug("demo.zoo-crash", "the demo code raises", module=__name__)
NOWHERE = bugs.declare_bug("demo.zoo-nowhere", "a site no claim passes", module=__name__)


def _library_sum() -> float:
    if bugs.planted(CRASH):
        raise RuntimeError("planted crash")
    value = 2.0 if bugs.planted(DOUBLES) else 1.0
    if bugs.planted(HIDDEN):
        value += 1e-12
    return value


def _sharp(ctx: Context) -> Evidence:
    m = _library_sum()
    margins = [close_to("sum = 1", m, 1.0, abs_=1e-6)]
    return Evidence(1.0, m, 1e-6, decide(margins), margins=margins)


def _blunt(ctx: Context) -> Evidence:
    m = _library_sum()
    margins = [at_most("sum <= 10", m, 10.0)]
    return Evidence(1.0, m, 10.0, decide(margins), margins=margins)


def _claims() -> list[Claim]:
    return [
        Claim("demo.sharp", "demo", "t", "s", Tier.QUICK, _sharp, Falsifier(DOUBLES),
              expected=Verdict.VERIFIED),
        Claim("demo.blunt", "demo", "t", "s", Tier.QUICK, _blunt, None,
              expected=Verdict.VERIFIED),
    ]


def test_kill_matrix_of_the_demo_zoo():
    zoo = [bugs.BUGS[n] for n in (DOUBLES, HIDDEN, CRASH, NOWHERE)]
    report = run_zoo(_claims(), zoo, Context(seeds=1))
    rows = {r.bug.name: r for r in report.rows}
    assert rows[DOUBLES].ids("killed") == ["demo.sharp"]
    assert rows[DOUBLES].ids("survived") == ["demo.blunt"]
    assert rows[HIDDEN].ids("survived") == ["demo.sharp", "demo.blunt"] or \
        set(rows[HIDDEN].ids("survived")) == {"demo.sharp", "demo.blunt"}
    assert set(rows[CRASH].ids("crashed")) == {"demo.sharp", "demo.blunt"}
    assert not rows[CRASH].killed  # a crash is not a kill
    assert rows[NOWHERE].reached_by == [] and rows[NOWHERE].outcomes == {}
    s = report.summary()
    assert s["killed"] == 1 and set(s["survivors"]) == {HIDDEN, CRASH, NOWHERE}
    assert s["unreached"] == [NOWHERE]
    assert bugs.active() == frozenset()


def test_first_kill_stops_at_the_falsifier_claim():
    report = run_zoo(list(reversed(_claims())), [bugs.BUGS[DOUBLES]], Context(seeds=1),
                     first_kill=True)
    (row,) = report.rows
    assert list(row.outcomes) == ["demo.sharp"]  # the claim whose falsifier it is goes first
