"""expressivity.no-position-*: the symmetry measurement, both directions."""

from __future__ import annotations

import torch

from transformer_math.claims.expressivity.equivariance import symmetry_gaps


def _inputs() -> tuple[torch.Tensor, torch.Tensor, torch.Generator]:
    gen = torch.Generator().manual_seed(0)
    x = torch.randint(0, 4, (4, 6), generator=gen)
    return x, torch.randperm(6, generator=gen), gen


def test_models_without_positions_are_exactly_equivariant():
    x, perm, gen = _inputs()
    gaps = symmetry_gaps("none", 4, 0, 1, x, perm, gen)
    assert gaps["count"] == 6  # three sublayer kinds x two depths
    assert gaps["equal_gap"] <= 1e-12 and gaps["perm_gap"] <= 1e-12 * max(1, gaps["scale"])


def test_positions_break_the_symmetry():
    for position in ("learned", "sinusoidal"):
        x, perm, gen = _inputs()
        gaps = symmetry_gaps(position, 4, 0, 1, x, perm, gen)
        assert gaps["equal_gap"] > 1e-3 and gaps["perm_gap"] > 1e-3, position
