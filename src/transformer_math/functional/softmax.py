"""Softmax, computed so that it never overflows and never returns NaN for a fully masked row.

Math (004 "Softmax数值稳定性", log-sum-exp identity):
    softmax(x)_i = exp(x_i - max_j x_j) / sum_j exp(x_j - max_j x_j),
which equals exp(x_i) / sum_j exp(x_j) exactly but keeps every exponent in (-inf, 0].

Convention for rows whose entries are all ``-inf`` (a query that may attend to nothing): the row
of weights is all zeros, so the attention output of that query is the zero vector. The naive
formula gives 0/0 = NaN there, which would then poison every later layer. An empty row (size 0
along ``dim``) gives an empty result.

Non-finite logits other than ``-inf`` propagate: a row containing NaN or ``+inf`` is all NaN
(the attention contract of ``functional/attention.py``: NaN in, NaN out; no data-dependent
check, so ``torch.compile`` and ``torch.func.vmap`` can trace it).
"""

from __future__ import annotations

import torch
from torch import Tensor

from transformer_math.bugs import declare_bug, planted

NO_MAX_SHIFT = declare_bug(
    "attention.softmax-no-max-shift", "stable_softmax computes exp(x) / sum exp(x) without "
    "subtracting the row maximum: inf/NaN for logits above ~88 (float32) or ~709 (float64)",
    module=__name__, seen_in="004 Softmax数值稳定性; hand-written softmax kernels (and the "
    "fp16 overflow of unshifted exp)")


def stable_softmax(logits: Tensor, dim: int = -1) -> Tensor:
    """Max-subtracted softmax along ``dim``; an all ``-inf`` row gives all-zero weights.

    A row with a NaN or ``+inf`` logit has no meaningful softmax and comes out all NaN
    (propagated, not refused: see the module docstring).
    """
    if not logits.is_floating_point():
        raise TypeError(f"logits must be a floating tensor, got dtype {logits.dtype}")
    if logits.shape[dim] == 0:  # no keys: nothing to normalise (amax would raise)
        return logits.clone()
    row_max = logits.amax(dim=dim, keepdim=True)
    # A fully masked row has max -inf; shift it by 0 instead so that exp() gives exact zeros.
    row_max = torch.where(torch.isneginf(row_max), torch.zeros_like(row_max), row_max)
    if planted(NO_MAX_SHIFT):  # planted bug: falsifier of attention.stable-softmax
        row_max = torch.zeros_like(row_max)
    exp = torch.exp(logits - row_max)
    denom = exp.sum(dim=dim, keepdim=True)
    return exp / torch.where(denom == 0, torch.ones_like(denom), denom)


def naive_softmax(logits: Tensor, dim: int = -1) -> Tensor:
    """exp(x) / sum exp(x) without the max shift: overflows to inf/NaN for logits above ~88 in
    float32. Kept so that ``attention.stable-softmax`` can show the problem is real."""
    exp = torch.exp(logits)
    return exp / exp.sum(dim=dim, keepdim=True)


def softmax_jacobian(probs: Tensor) -> Tensor:
    """Jacobian of softmax at a point, from its output p: J = diag(p) - p p^T (000 §8.3.1).

    ``probs`` has shape (..., n); the result has shape (..., n, n).
    """
    return torch.diag_embed(probs) - probs.unsqueeze(-1) * probs.unsqueeze(-2)
