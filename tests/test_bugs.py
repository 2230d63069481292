"""The bug registry: switches that are off unless planted, recorded when queried."""

from __future__ import annotations

import pytest

from transformer_math import bugs
from transformer_math.experiments import memo

ONE = bugs.declare_bug("demo.bugs-one", "the first demo bug", module=__name__)
TWO = bugs.declare_bug("demo.bugs-two", "the second demo bug", module=__name__)


def test_bugs_are_off_unless_planted_and_nest():
    assert not bugs.planted(ONE) and bugs.active() == frozenset()
    with bugs.plant(ONE):
        assert bugs.planted(ONE) and not bugs.planted(TWO)
        with bugs.plant(TWO):
            assert bugs.planted(ONE) and bugs.planted(TWO)
        assert not bugs.planted(TWO)
    assert not bugs.planted(ONE)


def test_plant_restores_the_switches_after_an_exception():
    with pytest.raises(RuntimeError), bugs.plant(ONE):
        raise RuntimeError("inside")
    assert bugs.active() == frozenset()


def test_unknown_and_malformed_names_are_refused():
    with pytest.raises(ValueError, match="unknown bug"), bugs.plant("demo.no-such-bug"):
        pass
    with pytest.raises(ValueError, match=r"area\.slug"):
        bugs.declare_bug("nodot", "x", module=__name__)
    with pytest.raises(ValueError, match="declared in"):
        bugs.declare_bug(ONE, "again", module="elsewhere")
    assert bugs.declare_bug(ONE, "again", module=__name__) == ONE  # a reload is a no-op


def test_recording_sees_queried_sites_and_merges_up():
    with bugs.recording() as outer:
        bugs.planted(ONE)
        with bugs.recording() as inner:
            bugs.planted(TWO)
        assert inner == {TWO}
    assert outer == {ONE, TWO}


def _run(config: int) -> int:
    return config * 10 + (1 if bugs.planted(ONE) else 0)


def test_memo_keys_on_planted_bugs_and_replays_the_sites():
    memo.clear()
    assert memo.memoized(_run, 3) == 30
    with bugs.plant(ONE):
        assert memo.memoized(_run, 3) == 31  # never the clean result
    with bugs.recording() as record:
        assert memo.memoized(_run, 3) == 30  # a hit ...
    assert record == {ONE}  # ... still reports the site its computation passed
    memo.clear()


def test_every_library_bug_is_declared_in_its_module():
    registry = bugs.load_all()
    library = [b for b in registry.values() if b.module.startswith("transformer_math.")]
    assert len(library) >= 25  # issue 14: at least 25 bugs in the zoo
    for b in library:
        assert ".claims." not in b.module, f"{b.name}: bugs live in library code, not claims"
        assert b.description, b.name
