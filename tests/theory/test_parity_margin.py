"""The PARITY margin construction (Chiang & Cholak 2022): exact, with margin 1/(n + 1)."""

from __future__ import annotations

import pytest
import torch

from transformer_math.bugs import plant
from transformer_math.data.parity import parity
from transformer_math.theory.parity_margin import ParityMarginConstruction, exhaustive_bits


def test_parity_margin_by_hand_for_n3():
    net = ParityMarginConstruction(3)
    scores = net.score(torch.tensor([[1, 0, 1], [1, 0, 0], [0, 0, 0], [1, 1, 1]]))
    torch.testing.assert_close(scores, torch.tensor([0.25, -0.25, 0.25, -0.25],
                                                    dtype=torch.float64))


@pytest.mark.parametrize("n", [1, 2, 5, 8])
def test_parity_margin_exact_for_all_inputs(n):
    bits = exhaustive_bits(n)
    net = ParityMarginConstruction(n)
    assert torch.equal(net.predict(bits), parity(bits))
    torch.testing.assert_close(net.score(bits).abs(),
                               torch.full((2**n,), 1 / (n + 1), dtype=torch.float64))


def test_fixed_gain_loses_the_margin():
    net = ParityMarginConstruction(16, gain=5.0)
    bits = torch.randint(0, 2, (16, 16), generator=torch.Generator().manual_seed(0))
    assert float(net.score(bits).abs().min()) < 0.5 / 17


def test_parity_margin_validation():
    with pytest.raises(ValueError, match="n must be a positive int"):
        ParityMarginConstruction(0)
    with pytest.raises(ValueError, match="gain"):
        ParityMarginConstruction(3, gain=-1.0)
    with pytest.raises(ValueError, match=r"shape \(batch, 3\)"):
        ParityMarginConstruction(3).score(torch.zeros(2, 4, dtype=torch.long))
    assert exhaustive_bits(3).shape == (8, 3)


def test_planted_position_off_by_one_loses_the_margin():
    bits = exhaustive_bits(6)
    net = ParityMarginConstruction(6)
    assert torch.allclose(net.score(bits).abs(), torch.full((64,), 1 / 7, dtype=torch.float64))
    assert torch.equal(net.predict(bits), parity(bits))
    with plant("computation.parity-position-off-by-one"):
        scores = net.score(bits)
        assert not torch.allclose(scores.abs(), torch.full((64,), 1 / 7, dtype=torch.float64))
        assert not torch.equal(net.predict(bits), parity(bits))
