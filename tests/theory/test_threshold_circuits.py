"""PARITY's depth-2 threshold circuit (PARITY in TC^0) and the OR falsifier."""

from __future__ import annotations

import pytest
import torch

from transformer_math.data.parity import parity
from transformer_math.theory.parity_margin import exhaustive_bits
from transformer_math.theory.threshold_circuits import parity_threshold_circuit


@pytest.mark.parametrize("n", [1, 2, 5, 9])
def test_alternating_signs_compute_parity_on_every_input(n):
    bits = exhaustive_bits(n)
    assert torch.equal(parity_threshold_circuit(bits), parity(bits))


def test_constant_signs_compute_or_instead():
    bits = exhaustive_bits(4)
    out = parity_threshold_circuit(bits, "constant")
    assert torch.equal(out, (bits.sum(-1) > 0).long())
    assert not torch.equal(out, parity(bits))
    with pytest.raises(ValueError, match="sign_pattern"):
        parity_threshold_circuit(bits, "random")
