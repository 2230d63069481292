"""Convex-hull certificates, power-law fits and the timing helpers."""

from __future__ import annotations

import pytest
import torch

from transformer_math.diagnostics import (
    convex_hull_test,
    fit_power_law,
    median_seconds,
    project_to_simplex,
    time_over_sizes,
    torch_threads,
)


def test_projection_onto_the_simplex():
    a = torch.tensor([[0.2, 0.3, 0.5], [2.0, 0.0, 0.0], [-1.0, 0.5, 0.7]], dtype=torch.float64)
    p = project_to_simplex(a)
    torch.testing.assert_close(p.sum(-1), torch.ones(3, dtype=torch.float64))
    assert (p >= 0).all()
    torch.testing.assert_close(p[0], a[0])  # already in the simplex
    torch.testing.assert_close(p[1], torch.tensor([1.0, 0.0, 0.0], dtype=torch.float64))
    torch.testing.assert_close(p[2], torch.tensor([0.0, 0.4, 0.6], dtype=torch.float64))


def test_hull_inside_and_outside_certificates():
    square = torch.tensor([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    ys = torch.tensor([[0.5, 0.5], [0.9, 0.1], [2.0, 0.5], [-0.5, -0.5]])
    res = convex_hull_test(square, ys)
    assert res.certified_outside.tolist() == [False, False, True, True]
    assert res.distance[0] < 1e-9 and res.distance[1] < 1e-9
    assert float(res.distance[2]) == pytest.approx(1.0, abs=1e-6)
    assert float(res.distance[3]) == pytest.approx(2**0.5 / 2, abs=1e-6)
    torch.testing.assert_close(res.weights.sum(-1), torch.ones(4, dtype=torch.float64))


def test_hull_batched_shapes_and_errors():
    pts = torch.randn(3, 5, 4)
    res = convex_hull_test(pts, torch.randn(3, 7, 4), iterations=10)
    assert res.distance.shape == (3, 7) and res.weights.shape == (3, 7, 5)
    with pytest.raises(ValueError, match="points"):
        convex_hull_test(pts, torch.randn(2, 7, 4))


def test_power_law_fit_recovers_exponent():
    xs = [1.0, 2.0, 4.0, 8.0]
    fit = fit_power_law(xs, [3.0 * x**2 for x in xs])
    assert fit.exponent == pytest.approx(2.0)
    assert fit.prefactor == pytest.approx(3.0)
    assert fit.r2 == pytest.approx(1.0)
    assert fit.predict(16.0) == pytest.approx(768.0)
    with pytest.raises(ValueError, match="positive"):
        fit_power_law([1.0, 2.0], [1.0, 0.0])


def test_timing_helpers():
    calls = []
    assert median_seconds(lambda: calls.append(1), repeats=3, warmup=2) >= 0.0
    assert len(calls) == 5
    times = time_over_sizes(lambda n: (lambda: sum(range(n))), [10, 1000], repeats=3)
    assert len(times) == 2 and all(t >= 0 for t in times)
    before = torch.get_num_threads()
    with torch_threads(1):
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == before
    with pytest.raises(ValueError):
        median_seconds(lambda: None, repeats=0)
