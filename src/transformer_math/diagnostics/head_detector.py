"""Head scores on TransformerLens's head-detector scale, beside the project's.

TransformerLens (``transformer_lens/head_detector.py``, ``detect_head``) scores a head by a 0/1
detection pattern D (T, T) built from the tokens, against the head's attention A (T, T):

* ``"mul"`` (its default): score = sum(A * D) / sum(A), the share of all attention, over EVERY
  query row, that lands where D is 1;
* ``"abs"``: score = 1 - round(T * mean|A - D|, 3).

``exclude_bos`` zeroes column 0 of A first, ``exclude_current_token`` its diagonal. Patterns:
previous token D[t, t-1] = 1 (t >= 1); duplicate token D[t, s] = 1 for s < t with x_s = x_t;
induction D[t, s] = 1 for 1 <= s < t with x_{s-1} = x_t (the duplicate pattern shifted one key to
the right). A batch of sequences scores the mean of the per-sequence scores.

The project's scores (``diagnostics.icl_scores``) average over the rows where the pattern can
apply: previous-token over t >= 1, induction over the second copy of [x, x]. So on [x, x] (length
2L, x without repeated tokens) a perfect induction head scores 1 here and L / 2L = 0.5 on
TransformerLens's scale, a perfect previous-token head 1 and (2L - 1) / 2L (0.958 at 2L = 24).
Thresholds from the literature and TransformerLens's tutorials are on its scale.
"""

from __future__ import annotations

from typing import Literal

import torch
from torch import Tensor

ErrorMeasure = Literal["mul", "abs"]
HEAD_PATTERNS = ("previous_token_head", "duplicate_token_head", "induction_head")


def _tokens_1d(tokens: Tensor) -> Tensor:
    if not isinstance(tokens, Tensor) or tokens.dim() != 1 or tokens.numel() < 2:
        raise ValueError(f"tokens must be a 1-D tensor of length >= 2, got "
                         f"{tuple(getattr(tokens, 'shape', ()))}")
    return tokens


def previous_token_pattern(seq_len: int) -> Tensor:
    """D[t, t-1] = 1 for t >= 1: (seq_len, seq_len) float32."""
    if seq_len < 2:
        raise ValueError(f"seq_len must be >= 2, got {seq_len}")
    return torch.diag(torch.ones(seq_len - 1), diagonal=-1)


def duplicate_token_pattern(tokens: Tensor) -> Tensor:
    """D[t, s] = 1 for s < t with tokens[s] == tokens[t]."""
    x = _tokens_1d(tokens)
    return torch.tril((x[:, None] == x[None, :]).float(), diagonal=-1)


def induction_pattern(tokens: Tensor) -> Tensor:
    """D[t, s] = 1 for 1 <= s < t with tokens[s - 1] == tokens[t]: the token after an earlier
    copy of the current one (TransformerLens: the duplicate pattern shifted right, column 0
    zero)."""
    dup = duplicate_token_pattern(tokens)
    out = torch.zeros_like(dup)
    out[:, 1:] = dup[:, :-1]
    return torch.tril(out)


def detection_pattern(name: str, tokens: Tensor) -> Tensor:
    """The pattern of one of :data:`HEAD_PATTERNS` for the sequence ``tokens`` (T,)."""
    x = _tokens_1d(tokens)
    if name == "previous_token_head":
        return previous_token_pattern(x.numel())
    if name == "duplicate_token_head":
        return duplicate_token_pattern(x)
    if name == "induction_head":
        return induction_pattern(x)
    raise ValueError(f"name must be one of {HEAD_PATTERNS}, got {name!r}")


def similarity_score(weights: Tensor, pattern: Tensor, *, exclude_bos: bool = False,
                     exclude_current_token: bool = False, error_measure: ErrorMeasure = "mul"
                     ) -> Tensor:
    """Per-head score of ``weights`` (H, T, T) against ``pattern`` (T, T): shape (H,)."""
    if weights.dim() != 3 or weights.shape[-2:] != pattern.shape or pattern.dim() != 2:
        raise ValueError(f"weights must be (heads, T, T) with pattern (T, T), got "
                         f"{tuple(weights.shape)} and {tuple(pattern.shape)}")
    a = weights.detach().to(torch.float32).clone()
    d = pattern.to(a.device, torch.float32)
    t = a.shape[-1]
    if error_measure == "mul":
        if exclude_bos:
            a[..., 0] = 0
        if exclude_current_token:
            a.diagonal(dim1=-2, dim2=-1).zero_()
        return (a * d).sum(dim=(-2, -1)) / a.sum(dim=(-2, -1))
    if error_measure == "abs":
        diff = (a - d).abs()
        if exclude_bos:
            diff[..., 0] = 0
        if exclude_current_token:
            diff.diagonal(dim1=-2, dim2=-1).zero_()
        raw = (diff.mean(dim=(-2, -1)) * t).tolist()  # Python's round, as TransformerLens
        return torch.tensor([1 - round(float(r), 3) for r in raw], dtype=torch.float32)
    raise ValueError(f"error_measure must be 'mul' or 'abs', got {error_measure!r}")


def detect_heads(weights: Tensor, tokens: Tensor, name: str, **options: object) -> Tensor:
    """TransformerLens's ``detect_head`` score for every head, from attention weights.

    ``weights`` (B, H, T, T) or (H, T, T) are one layer's patterns on ``tokens`` (B, T) or (T,);
    ``name`` one of :data:`HEAD_PATTERNS`; ``options`` those of :func:`similarity_score`.
    Returns (H,): the per-sequence scores averaged over the batch, as ``detect_head`` does for a
    list of sequences.
    """
    w = weights.unsqueeze(0) if weights.dim() == 3 else weights
    x = tokens.unsqueeze(0) if tokens.dim() == 1 else tokens
    if w.dim() != 4 or x.dim() != 2 or w.shape[0] != x.shape[0] or w.shape[-1] != x.shape[-1]:
        raise ValueError(f"weights (B, H, T, T) and tokens (B, T) must agree, got "
                         f"{tuple(weights.shape)} and {tuple(tokens.shape)}")
    scores = [similarity_score(w[b], detection_pattern(name, x[b]), **options)  # type: ignore[arg-type]
              for b in range(w.shape[0])]
    return torch.stack(scores).mean(dim=0)


def transformer_lens_previous_token_score(weights: Tensor) -> Tensor:
    """Previous-token score per head on TransformerLens's scale (``"mul"``, every row counted):
    sum_{t >= 1} A[t, t-1] / T averaged over the batch; (heads,)."""
    w = weights.unsqueeze(0) if weights.dim() == 3 else weights
    diag = w.diagonal(offset=-1, dim1=-2, dim2=-1).to(torch.float32)  # (B, H, T-1)
    return (diag.sum(dim=-1) / w.to(torch.float32).sum(dim=(-2, -1))).mean(dim=0)


def transformer_lens_induction_score(weights: Tensor, tokens: Tensor) -> Tensor:
    """Induction score per head on TransformerLens's scale (``detect_head(...,
    "induction_head")``): the share of all attention on the token after an earlier copy of the
    current one; (heads,). On [x, x] with distinct tokens a perfect head scores 0.5."""
    return detect_heads(weights, tokens, "induction_head")
