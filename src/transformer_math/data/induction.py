"""Token sequences with repeated random segments, for training and probing induction heads.

Olsson et al. 2022 ("In-context learning and induction heads"); FACTS.md sizing: each training
sequence is a random prefix of 0..``max_prefix`` tokens followed by a random segment of length
U[min_segment, max_segment] repeated until the sequence is full. Varying the segment length
matters: with one fixed period a model can memorise the period instead of learning to copy.
The probe for the induction score is a uniformly random sequence of length L repeated twice.
"""

from __future__ import annotations

import torch
from torch import Tensor


def repeated_segment_batch(
    batch_size: int,
    seq_len: int,
    vocab_size: int,
    *,
    generator: torch.Generator,
    max_prefix: int = 8,
    min_segment: int = 8,
    max_segment: int = 24,
) -> Tensor:
    """(batch_size, seq_len) int64 tokens: prefix of U{0..max_prefix} tokens, then a segment of
    length U{min_segment..max_segment} repeated to the end (the last repeat is truncated)."""
    for name, value in (
        ("batch_size", batch_size),
        ("seq_len", seq_len),
        ("vocab_size", vocab_size),
    ):
        if not isinstance(value, int) or value <= 0:
            raise ValueError(f"{name} must be a positive int, got {value!r}")
    if not 1 <= min_segment <= max_segment:
        raise ValueError(f"need 1 <= min_segment <= max_segment, got {min_segment}, {max_segment}")
    if max_prefix < 0:
        raise ValueError(f"max_prefix must be >= 0, got {max_prefix}")
    tokens = torch.randint(vocab_size, (batch_size, seq_len), generator=generator)
    prefix = torch.randint(max_prefix + 1, (batch_size,), generator=generator)
    period = torch.randint(min_segment, max_segment + 1, (batch_size,), generator=generator)
    positions = torch.arange(seq_len).unsqueeze(0)  # (1, T)
    offset = positions - prefix.unsqueeze(1)  # position inside the repeated part
    source = prefix.unsqueeze(1) + offset.remainder(period.unsqueeze(1))  # copy from first segment
    source = torch.where(offset >= 0, source, positions)
    return tokens.gather(1, source)


def repeated_random_sequence(
    batch_size: int, half_len: int, vocab_size: int, *, generator: torch.Generator
) -> Tensor:
    """A uniformly random sequence of ``half_len`` tokens repeated twice: (batch, 2 * half_len)."""
    if half_len <= 0 or vocab_size <= 0 or batch_size <= 0:
        raise ValueError(
            f"batch_size, half_len, vocab_size must be positive, "
            f"got {batch_size}, {half_len}, {vocab_size}"
        )
    first = torch.randint(vocab_size, (batch_size, half_len), generator=generator)
    return torch.cat([first, first], dim=1)
