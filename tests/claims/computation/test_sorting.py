"""computation.sorting-counting-tc0: the threshold circuits, both directions."""

from __future__ import annotations

import torch

from transformer_math.bugs import plant
from transformer_math.claims.registry import Context, Size, Verdict, get_claim, run_claim
from transformer_math.theory.sorting_circuits import all_inputs, counting_circuit, sorting_circuit


def test_counting_circuit_bit_zero_is_parity() -> None:
    bits = torch.tensor([[1, 0, 1, 1, 0, 1, 1]])
    out = counting_circuit(bits)
    assert out.tolist() == [[1, 0, 1]]  # 5 ones, least significant bit first


def test_sorting_circuit_handles_ties_and_the_bug_breaks_them() -> None:
    x = torch.tensor([[[1, 1], [0, 1], [1, 1]]])  # values 3, 2, 3
    assert sorting_circuit(x).tolist() == [[[0, 1], [1, 1], [1, 1]]]
    with plant("computation.sorting-no-tie-break"):
        assert sorting_circuit(x).tolist() != [[[0, 1], [1, 1], [1, 1]]]
    assert all_inputs(2, 2).shape == (16, 2, 2)


def test_claim_is_refuted_and_catches_its_falsifier() -> None:
    res = run_claim(get_claim("computation.sorting-counting-tc0"), Context(size=Size.TINY))
    assert res.evidence.verdict is Verdict.REFUTED and res.expected_met
    assert res.falsifier_caught is True
