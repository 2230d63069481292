"""Numbers behind position.rope-extrapolation-mechanism and position.scaling-methods, and their
falsifiers as planted library bugs (issue 14)."""

from __future__ import annotations

import pytest

from transformer_math.bugs import plant
from transformer_math.claims.position.scaling import (
    check_rope_extrapolation_mechanism,
    check_scaling_methods,
)
from transformer_math.claims.registry import Context, Size, Verdict, all_hold

CTX = Context(seed=0, size=Size.TINY)


def test_mechanism_numbers() -> None:
    ev = check_rope_extrapolation_mechanism(CTX)
    unseen = ev.details["unseen_fraction"]
    wavelength = ev.details["wavelength"]
    # L_train = 256 at tiny size: unseen phases exactly in the pairs with wavelength > 256
    assert all((u > 0) == (w > 256) for u, w in zip(unseen, wavelength, strict=True))
    assert ev.measured["PI loss share on high pairs"] > 0.9
    assert ev.figures and ev.figures[0].series[0].kind == "bar"
    # the seed's version (high frequencies are the culprit) is measured and fails
    assert ev.verdict is Verdict.REFUTED and all_hold(ev.margins)
    assert ev.measured["high-frequency pairs OOD"] == 0
    assert ev.measured["low-frequency pairs OOD"] > 0


def test_mechanism_falsifier_is_a_wrong_frequency_in_the_library() -> None:
    with plant("rope.inv-freq-exponent"):
        bad = check_rope_extrapolation_mechanism(CTX)
    assert bad.verdict is Verdict.FAILED and len(bad.measured["mismatched pairs"]) > 0


def test_scaling_methods_margins_per_method() -> None:
    ev = check_scaling_methods(CTX)
    assert all_hold(ev.margins) and ev.verdict is Verdict.REFUTED
    names = [m.name for m in ev.margins]
    for method in ("linear", "ntk", "dynamic", "yarn", "llama3", "longrope"):
        assert f"{method} attention factor" in names
        assert f"{method} max rel. error of θ' vs closed form" in names
        assert f"{method} max unseen phase fraction on the pairs it keeps in range" in names
    assert "dynamic@2L0 max rel. error of θ' vs closed form" in names
    assert "longrope@L0 max rel. error of θ' vs closed form" in names
    assert "linear highest-frequency θ'/θ" not in names  # PI divides every pair
    # YaRN's low pairs are divided by s (000:664); the third seed's NTK and YaRN rows (004:497,
    # 004:498) fail on the same measured ratios (issue 18)
    assert [m.holds for m in ev.seed_margins] == [False, False, False, False]


@pytest.mark.parametrize(("bug", "broken"), [
    ("rope.yarn-attention-factor-dropped", "yarn attention factor"),
    ("rope.yarn-attention-factor-squared", "yarn attention factor"),
    ("rope.dynamic-fixed-factor", "dynamic max rel. error of θ' vs closed form"),
    ("rope.longrope-switch-off-by-one", "longrope@L0 max rel. error of θ' vs closed form"),
    ("rope.llama3-bands-swapped", "llama3 max rel. error of θ' vs closed form"),
    ("rope.inv-freq-exponent", "default max rel. error of θ' vs closed form"),
])
def test_scaling_bugs_fail_the_check(bug: str, broken: str) -> None:
    with plant(bug):
        bad = check_scaling_methods(CTX)
    assert bad.verdict is Verdict.FAILED
    assert broken in {m.name for m in bad.margins if not m.holds}
