"""diagnostics.icl_scores on ideal and uniform attention patterns."""

from __future__ import annotations

import pytest
import torch

from transformer_math.diagnostics.icl_scores import (
    in_context_learning_score,
    induction_score,
    previous_token_score,
)


def test_induction_and_previous_token_scores() -> None:
    half = 6
    t = 2 * half
    ideal = torch.zeros(2, t, t)
    ideal[0, 0, 0] = 1.0
    ideal[0, torch.arange(1, t), torch.arange(0, t - 1)] = 1.0  # head 0: previous token
    for s in range(t):  # head 1: induction (attend to s - L + 1 in the second copy)
        ideal[1, s, s - half + 1 if s >= half else 0] = 1.0
    prev, ind = previous_token_score(ideal), induction_score(ideal, half)
    assert prev[0] == 1.0 and ind[1] == 1.0
    assert ind[0] < 0.01 and prev[1] < 0.2
    uniform = torch.tril(torch.ones(t, t)) / torch.arange(1, t + 1).unsqueeze(1)
    u = induction_score(uniform.expand(3, t, t), half)
    expected = torch.tensor([1.0 / (s + 1) for s in range(half, t)]).mean()
    assert torch.allclose(u, expected.expand(3))
    assert float(u.max()) < 0.15
    assert in_context_learning_score(torch.tensor([3.0, 2.0, 1.0]), 0, 2) == -2.0
    with pytest.raises(ValueError, match="half_len"):
        induction_score(ideal, 7)
