"""Numbers behind position.rope-extrapolation-mechanism and position.scaling-methods."""

from __future__ import annotations

from transformer_math.claims.position.scaling import (
    check_rope_extrapolation_mechanism,
    check_scaling_methods,
)
from transformer_math.claims.registry import Context, Size, Verdict, all_hold


def test_mechanism_numbers() -> None:
    ev = check_rope_extrapolation_mechanism(Context(seed=0, size=Size.TINY))
    unseen = ev.details["unseen_fraction"]
    wavelength = ev.details["wavelength"]
    # L_train = 256 at tiny size: unseen phases exactly in the pairs with wavelength > 256
    assert all((u > 0) == (w > 256) for u, w in zip(unseen, wavelength, strict=True))
    assert ev.measured["PI loss share on high pairs"] > 0.9
    assert ev.figures and ev.figures[0].series[0].kind == "bar"
    # the seed's prediction (high frequencies are the culprit) contradicts the measurement
    bad = check_rope_extrapolation_mechanism(Context(seed=0, size=Size.TINY), culprit="high")
    assert bad.verdict is Verdict.FAILED and len(bad.measured["mismatched pairs"]) > 0


def test_scaling_methods_margins_per_method_and_inverted_yarn() -> None:
    ev = check_scaling_methods(Context(seed=0, size=Size.TINY))
    assert all_hold(ev.margins)
    names = [m.name for m in ev.margins]
    for method in ("linear", "ntk", "dynamic", "yarn", "llama3", "longrope"):
        assert f"{method} attention factor" in names
        assert f"{method} max unseen phase fraction on the pairs it keeps in range" in names
    assert "linear highest-frequency θ'/θ" not in names  # PI divides every pair
    bad = check_scaling_methods(Context(seed=0, size=Size.TINY), invert_yarn=True)
    broken = {m.name for m in bad.margins if not m.holds}
    assert "yarn max unseen phase fraction on the pairs it keeps in range" in broken
    assert all(name.startswith("yarn") for name in broken)
