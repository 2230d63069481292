"""diagnostics/latency_probe.py: the project's Transformer timed against the roofline model."""

from __future__ import annotations

import math

import pytest

from transformer_math.diagnostics.latency_probe import MAX_TOKENS, measure_against_model
from transformer_math.theory.latency import ModelShape


def test_probe_reports_measured_and_predicted_seconds() -> None:
    out = measure_against_model(ModelShape(hidden=32, layers=1, heads=2, mlp="swiglu"), 16,
                                repeats=1)
    assert out["model"]["vocab"] == 256 and out["tokens"] == 16
    for part in ("prefill", "decode"):
        r = out[part]
        assert r["measured_s"] > 0 and r["predicted_s"] > 0
        assert math.isfinite(r["ratio"]) and r["ratio"] == r["measured_s"] / r["predicted_s"]
    assert out["hardware"]["name"] == "cpu-here"


@pytest.mark.parametrize(("shape", "tokens", "match"), [
    (ModelShape(hidden=4096, layers=32, heads=32), 16, "weights"),
    (ModelShape(hidden=32, layers=1, heads=2), MAX_TOKENS + 1, "tokens"),
    (ModelShape(hidden=32, layers=1, heads=2), 0, "tokens"),
])
def test_probe_refuses_what_it_should_not_build(shape, tokens, match) -> None:
    with pytest.raises(ValueError, match=match):
        measure_against_model(shape, tokens, repeats=1)
