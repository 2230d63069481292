"""expressivity.ffn-lookup: exact interpolation of distinct codes, and its planted bug."""

from __future__ import annotations

import torch

from transformer_math.bugs import plant
from transformer_math.theory.relu_lookup import relu_lookup


def _points() -> tuple[torch.Tensor, torch.Tensor, torch.Generator]:
    gen = torch.Generator().manual_seed(3)
    x = torch.randn(40, 5, generator=gen, dtype=torch.float64)
    y = torch.randn(40, 3, generator=gen, dtype=torch.float64)
    return x, y, gen


def test_two_layer_relu_net_interpolates_exactly() -> None:
    x, y, gen = _points()
    net = relu_lookup(x, y, gen)
    assert net[0].out_features == 40
    with torch.no_grad():
        assert float((net(x) - y).abs().max()) < 1e-9


def test_biases_on_the_points_break_the_lookup() -> None:
    x, y, gen = _points()
    with plant("expressivity.relu-lookup-bias-on-point"):
        net = relu_lookup(x, y, gen)
    with torch.no_grad():
        out = net(x)
    assert not bool(torch.isfinite(out).all()) or float((out - y).abs().max()) > 1e-3
