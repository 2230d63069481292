"""diagnostics.icl_scores.previous_token_lead: > 0 exactly when t - 1 is a head's most attended
relative position (the criterion of icl.induction-heads since issue 31)."""

from __future__ import annotations

import torch

from transformer_math.diagnostics.icl_scores import (
    previous_token_lead,
    previous_token_score,
    relative_position_profile,
)


def _heads(t: int) -> torch.Tensor:
    """(3, T, T): a pure previous-token head, a uniform causal head, a current-token head."""
    prev = torch.zeros(t, t)
    prev[0, 0] = 1.0
    prev[torch.arange(1, t), torch.arange(t - 1)] = 1.0
    uniform = torch.tril(torch.ones(t, t))
    uniform = uniform / uniform.sum(-1, keepdim=True)
    return torch.stack([prev, uniform, torch.eye(t)])


def test_lead_sign_follows_the_most_attended_offset() -> None:
    w = _heads(8)
    lead = previous_token_lead(w)
    assert torch.isclose(lead[0], torch.tensor(1 - 1 / 8))  # t - 1, less row 0 (offset 0)
    assert lead[1] < 0 and lead[2] < 0  # uniform: offset 0 carries the most; identity: only 0
    profile = relative_position_profile(w)
    assert torch.allclose(profile[:, 1], previous_token_score(w))
    assert profile.shape == (3, 8)


def test_lead_accepts_a_batch() -> None:
    w = _heads(6).unsqueeze(0).expand(4, -1, -1, -1)
    assert torch.allclose(previous_token_lead(w), previous_token_lead(_heads(6)))
