"""PARITY data: bits, running parities and the scratchpad layouts."""

from __future__ import annotations

import pytest
import torch

from transformer_math.bugs import plant
from transformer_math.data.parity import (
    BIT0,
    BOS,
    PAR0,
    SEP,
    flip_bit,
    parity,
    parity_sequences,
    random_bits,
    running_parity,
)


def test_parity_and_running_parity_by_hand():
    bits = torch.tensor([[1, 0, 1, 1], [0, 0, 0, 0]])
    assert parity(bits).tolist() == [1, 0]
    assert running_parity(bits).tolist() == [[1, 1, 0, 1], [0, 0, 0, 0]]
    assert parity(flip_bit(bits, 2)).tolist() == [0, 1]


def test_parity_rejects_non_bits():
    with pytest.raises(ValueError, match="only 0 and 1"):
        parity(torch.tensor([[0, 2]]))
    with pytest.raises(ValueError, match="batch, length"):
        parity(torch.tensor([0, 1]))
    with pytest.raises(ValueError, match="position"):
        flip_bit(torch.tensor([[0, 1]]), 5)


def test_scratchpad_layouts():
    bits = [torch.tensor([1, 1, 0])]
    direct = parity_sequences(bits, "none")
    assert direct.tokens[0].tolist() == [BOS, BIT0 + 1, BIT0 + 1, BIT0, SEP, PAR0 + 0]
    assert direct.generated[0].tolist() == [False] * 5 + [True]
    pad = parity_sequences(bits, "running_parity")
    assert pad.tokens[0].tolist() == [BOS, BIT0 + 1, PAR0 + 1, BIT0 + 1, PAR0, BIT0, PAR0]
    assert int(pad.answer_index[0]) == 6 and int(pad.answer[0]) == 0
    copy = parity_sequences(bits, "copy")
    assert copy.tokens[0, 1:7].tolist() == [BIT0 + 1, PAR0 + 1, BIT0 + 1, PAR0 + 1, BIT0, PAR0]
    with pytest.raises(ValueError, match="scratchpad"):
        parity_sequences(bits, "cot")


def test_mixed_lengths_are_right_padded():
    g = torch.Generator().manual_seed(0)
    seqs = parity_sequences([random_bits(1, 2, g)[0], random_bits(1, 5, g)[0]], "running_parity")
    assert seqs.tokens.shape == (2, 11)
    assert not seqs.generated[0, 5:].any()


def test_planted_exclusive_running_parity_drops_the_last_bit():
    bits = torch.tensor([[1, 0, 1, 1], [0, 0, 0, 1]])
    assert running_parity(bits).tolist() == [[1, 1, 0, 1], [0, 0, 0, 1]]
    assert parity(bits).tolist() == [1, 1]
    with plant("data.parity-running-exclusive"):
        assert running_parity(bits).tolist() == [[0, 1, 1, 0], [0, 0, 0, 0]]
        assert parity(bits).tolist() == [0, 0]
