"""Planted bugs of functional/positional.py (issue 14): the planted behaviour differs from the
correct one, and the correct one agrees with the paper's closed form (theory/positions.py)."""

from __future__ import annotations

import math

import torch

from transformer_math.bugs import plant
from transformer_math.functional.positional import (
    alibi_slopes,
    sinusoid_frequencies,
    sinusoidal_table,
)
from transformer_math.theory.positions import alibi_closed_form_slopes, vaswani_sinusoid


def test_sinusoid_frequency_bug() -> None:
    reference = vaswani_sinusoid(50, 16)
    assert float((sinusoidal_table(50, 16).double() - reference).abs().max()) < 1e-5
    assert float(sinusoid_frequencies(16)[1]) == 10000 ** (-2 / 16)
    with plant("sinusoid.frequency-exponent"):
        bad = sinusoidal_table(50, 16).double()
        assert float(sinusoid_frequencies(16)[1]) == 10000 ** (-1 / 16)
    assert float((bad - reference).abs().max()) > 0.1


def test_alibi_odd_head_bug() -> None:
    for h in (3, 6, 12):
        expect = torch.tensor(alibi_closed_form_slopes(h))
        assert torch.allclose(alibi_slopes(h), expect)
        with plant("alibi.odd-head-slopes"):
            bad = alibi_slopes(h)
        assert not torch.allclose(bad, expect)
        # the truncated table: the first h slopes of the next power of two
        n = 2 ** math.ceil(math.log2(h))
        assert torch.allclose(bad, torch.tensor([2 ** (-8 * k / n) for k in range(1, h + 1)]))
    with plant("alibi.odd-head-slopes"):  # powers of two are unaffected
        assert torch.allclose(alibi_slopes(8), torch.tensor(alibi_closed_form_slopes(8)))
