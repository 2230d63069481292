"""expressivity.depth-separation: the sawtooth's pieces and the tent-slope bug."""

from __future__ import annotations

import torch

from transformer_math.bugs import plant
from transformer_math.theory.sawtooth import (
    count_linear_pieces,
    sawtooth_network,
    shallow_pieces,
)


def _pieces(k: int) -> int:
    grid = torch.linspace(0, 1, 2 ** (k + 3) + 1, dtype=torch.float64)[:, None]
    with torch.no_grad():
        return count_linear_pieces(sawtooth_network(k)(grid)[:, 0], grid[:, 0])


def test_depth_k_doubles_the_pieces() -> None:
    assert [_pieces(k) for k in range(1, 7)] == [2, 4, 8, 16, 32, 64]


def test_tent_with_the_wrong_second_slope_is_a_ramp() -> None:
    with plant("expressivity.tent-second-slope"):
        assert _pieces(5) == 2


def test_shallow_pieces_counts_distinct_breakpoints() -> None:
    w = torch.tensor([1.0, 2.0, -1.0, 1.0], dtype=torch.float64)
    b = torch.tensor([-0.25, -1.0, 0.75, -2.0], dtype=torch.float64)  # 0.25, 0.5, 0.75, 2.0
    c = torch.ones(4, dtype=torch.float64)
    assert shallow_pieces(w, b, c) == 4  # 2.0 lies outside [0, 1]
