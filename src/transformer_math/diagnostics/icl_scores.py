"""Scores for in-context learning circuits: previous-token, induction and ICL scores.

Sources: Olsson et al. 2022 ("In-context learning and induction heads"); the TransformerLens
convention (FACTS.md). Attention weights are (batch, heads, T, T) or (heads, T, T) with rows =
queries (row-stochastic).

- previous-token score of a head: mean over t >= 1 of A[t, t-1]; its lead: that score minus
  the largest mean weight at any other offset t - k (positive: t - 1 is the head's most
  attended relative position).
- induction score on a random sequence of length L repeated twice: mean over t in [L, 2L) of
  A[t, t - L + 1], the attention from a token of the second copy to the token that FOLLOWED its
  earlier occurrence (the one an induction head copies).
- in-context learning score: loss at a late token minus loss at an early token (Olsson et al. use
  token 500 minus token 50); negative when later tokens are predicted better thanks to context.
"""

from __future__ import annotations

import torch
from torch import Tensor


def _as_batched(weights: Tensor) -> Tensor:
    if weights.dim() == 3:
        weights = weights.unsqueeze(0)
    if weights.dim() != 4 or weights.shape[-1] != weights.shape[-2]:
        raise ValueError(
            f"weights must have shape (batch, heads, T, T) or (heads, T, T), "
            f"got {tuple(weights.shape)}"
        )
    return weights


def previous_token_score(weights: Tensor) -> Tensor:
    """Per-head mean attention from t to t - 1 (t >= 1): shape (heads,)."""
    w = _as_batched(weights)
    t = w.shape[-1]
    if t < 2:
        raise ValueError(f"need at least 2 positions, got {t}")
    diag = w.diagonal(offset=-1, dim1=-2, dim2=-1)  # (B, H, T-1): A[t, t-1]
    return diag.mean(dim=(0, 2))


def relative_position_profile(weights: Tensor) -> Tensor:
    """Per-head mean attention from t to t - k for every offset k = 0 .. T-1 (the mean over the
    queries t >= k): shape (heads, T). Column 1 is the previous-token score."""
    w = _as_batched(weights)
    t = w.shape[-1]
    return torch.stack([w.diagonal(offset=-k, dim1=-2, dim2=-1).mean(dim=(0, 2))
                        for k in range(t)], dim=-1)


def previous_token_lead(weights: Tensor) -> Tensor:
    """Per-head margin by which the previous token is the most attended relative position:
    profile[1] - max_{k != 1} profile[k] (``relative_position_profile``), shape (heads,).

    Positive exactly when the head attends to t - 1 more, on average, than to any other offset,
    the current token included: the definition of a previous-token head ("looks one step
    back", Olsson et al. 2022; 000:1015). A uniform causal head (A[t, s] = 1/(t+1)) has its
    largest mean weight at offset 0 and a negative lead.
    """
    profile = relative_position_profile(weights)
    others = torch.cat([profile[:, :1], profile[:, 2:]], dim=-1)
    return profile[:, 1] - others.max(dim=-1).values


def induction_score(weights: Tensor, half_len: int) -> Tensor:
    """Per-head mean attention from t in [L, 2L) to t - L + 1 on a sequence repeated twice."""
    w = _as_batched(weights)
    t = w.shape[-1]
    if half_len <= 0 or 2 * half_len > t:
        raise ValueError(f"half_len must be in [1, T/2] = [1, {t // 2}], got {half_len}")
    diag = w.diagonal(offset=-(half_len - 1), dim1=-2, dim2=-1)  # A[t, t-L+1] for t >= L-1
    return diag[..., 1 : half_len + 1].mean(dim=(0, 2))  # t = L .. 2L-1


def in_context_learning_score(loss_per_position: Tensor, early: int, late: int) -> float:
    """loss[late] - loss[early] (Olsson et al. 2022); ``loss_per_position`` is (T,) or (B, T)."""
    loss = loss_per_position if loss_per_position.dim() == 1 else loss_per_position.mean(0)
    t = loss.shape[0]
    if not 0 <= early < late < t:
        raise ValueError(f"need 0 <= early < late < T = {t}, got early={early}, late={late}")
    return float(loss[late] - loss[early])
