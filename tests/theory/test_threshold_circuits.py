"""PARITY's depth-2 threshold circuit (PARITY in TC^0) and the planted OR bug."""

from __future__ import annotations

import pytest
import torch

from transformer_math.bugs import plant
from transformer_math.data.parity import parity
from transformer_math.theory.parity_margin import exhaustive_bits
from transformer_math.theory.threshold_circuits import parity_threshold_circuit


@pytest.mark.parametrize("n", [1, 2, 5, 9])
def test_alternating_signs_compute_parity_on_every_input(n):
    bits = exhaustive_bits(n)
    assert torch.equal(parity_threshold_circuit(bits), parity(bits))


def test_planted_constant_signs_compute_or_instead():
    bits = exhaustive_bits(4)
    assert torch.equal(parity_threshold_circuit(bits), parity(bits))  # the correct circuit
    with plant("computation.threshold-constant-signs"):
        out = parity_threshold_circuit(bits)
    assert torch.equal(out, (bits.sum(-1) > 0).long())
    assert not torch.equal(out, parity(bits))
