"""A pass condition names its quantity's predicted and measured values and the inequality it
tests (issue 38.3): ``Var(q.k), d_k = 16`` is 15.98 against 16, and 0.02 is its deviation."""

from __future__ import annotations

import math

from transformer_math.claims.registry import (
    Context,
    Falsifier,
    Margin,
    at_least,
    close_to,
    exceeds,
    run_claim,
)

from .test_registry import WRONG, _check, _claim


def test_close_to_keeps_the_quantity_and_says_what_it_tests() -> None:
    m = close_to("Var(q.k), d_k = 16", 15.98, 16.0, rel=0.05)
    assert math.isclose(m.value, 0.02) and m.threshold == 0.8 and m.holds
    data = m.to_json()
    assert data["predicted"] == 16.0 and data["measured"] == 15.98
    assert data["test"] == "|measured - predicted| <= 0.05 |predicted|"
    assert close_to("x", 1.0, 0.0, abs_=0.1).test == "|measured - predicted| <= 0.1"


def test_plain_and_logged_conditions() -> None:
    plain = at_least("accuracy", 0.9, 0.5).to_json()
    assert plain["measured"] == 0.9 and plain["predicted"] is None
    assert plain["test"] == "measured >= 0.5"
    logged = exceeds("change", 1e-3, 1e-6).to_json()
    assert logged["measured"] == 1e-3 and math.isclose(logged["value"], -3.0)
    assert logged["test"] == "log10 measured >= log10 1e-06"


def test_the_constructor_is_backward_compatible() -> None:
    m = Margin("m", 1.0, 0.5, "<=", 3)
    assert m.worst_of_seeds == 3 and m.predicted is None and not m.holds
    assert m.to_json()["measured"] == 1.0 and m.test == "measured <= 0.5"


def test_the_falsifier_records_the_condition_that_failed_under_the_bug() -> None:
    data = run_claim(_claim(_check, Falsifier(WRONG)), Context()).to_json()["falsifier"]
    assert data["caught"] is True
    [failed] = data["failed_conditions"]
    assert failed["name"] == "measured = 1" and failed["measured"] == 2.0
    assert failed["predicted"] == 1.0 and failed["slack"] < 0
