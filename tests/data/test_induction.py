"""data.induction: repeated-segment training sequences and the repeated probe."""

from __future__ import annotations

import torch

from transformer_math.data.induction import repeated_random_sequence, repeated_segment_batch


def _gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def test_repeated_segments_repeat_with_their_period() -> None:
    tok = repeated_segment_batch(
        64, 50, 30, generator=_gen(0), max_prefix=2, min_segment=3, max_segment=5
    )
    assert tok.shape == (64, 50) and tok.dtype == torch.long
    for row in tok:  # some prefix p <= 2 and period q in [3, 5] explain the row
        assert any(torch.equal(row[p + q:], row[p:50 - q]) for p in range(3) for q in range(3, 6))


def test_repeated_random_sequence() -> None:
    seq = repeated_random_sequence(3, 5, 10, generator=_gen(0))
    assert seq.shape == (3, 10)
    assert torch.equal(seq[:, :5], seq[:, 5:])
