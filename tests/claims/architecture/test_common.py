"""architecture._common: the log-log slope and the Xavier initialisation."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from transformer_math.claims.architecture._common import loglog_slope, xavier_init_


def test_loglog_slope_of_power_laws() -> None:
    xs = [1.0, 2.0, 4.0, 8.0]
    assert loglog_slope(xs, [3 * x**-1 for x in xs]) == pytest.approx(-1.0)
    assert loglog_slope(xs, [x**0.5 for x in xs]) == pytest.approx(0.5)


def test_xavier_init_zeroes_biases_and_bounds_weights() -> None:
    m = nn.Sequential(nn.Linear(8, 32), nn.GELU(), nn.Linear(32, 8))
    xavier_init_(m, torch.Generator().manual_seed(0))
    bound = (6 / (8 + 32)) ** 0.5
    for layer in (m[0], m[2]):
        assert torch.equal(layer.bias, torch.zeros_like(layer.bias))
        assert float(layer.weight.detach().abs().max()) <= bound
