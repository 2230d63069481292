"""Sorting and counting by constant-depth threshold circuits: both are in TC^0.

A threshold gate outputs [sum_i w_i z_i >= t] (integer weights). 000:874 and 000:887 place exact
sorting beyond TC^0; Chandra, Stockmeyer & Vishkin (SIAM J. Comput. 1984) reduce sorting,
multiplication and counting to MAJORITY in constant depth. The circuits below are evaluated
gate layer by gate layer, every gate a threshold of the previous layers' outputs.

Counting (depth 2): bit k of the number of ones s of x_1..x_n. Layer 1: c_t = [sum_i x_i >= t],
t = 1..n (the unary code of s). Layer 2: [sum_t (beta_k(t) - beta_k(t - 1)) c_t >= 1], beta_k(t)
= bit k of t; the sum telescopes to beta_k(s). Bit 0 is PARITY (theory.threshold_circuits).

Sorting n numbers of b bits (depth 5), v_i = sum_k 2^k x_{i,k}:
1. before_{ij} = [2 (v_i - v_j) + [j < i] >= 1]: j precedes i (smaller, or equal and earlier);
2. R_{i,t} = [sum_j before_{ij} >= t], t = 0..n: the unary code of the rank r_i of i;
3. E_{i,t} = [R_{i,t} - R_{i,t+1} >= 1]: r_i = t (ranks are distinct thanks to the tie-break);
4. A_{i,t,k} = [E_{i,t} + x_{i,k} >= 2]: i sits at place t and has bit k;
5. out_{t,k} = [sum_i A_{i,t,k} >= 1].
Gates: n^2 + n (n + 1) + n^2 + n^2 b + n b, polynomial; the weights 2^k are polynomial for
b = O(log n) bits (and comparison of longer numbers is in AC^0 anyway).
"""

from __future__ import annotations

import torch
from torch import Tensor

from transformer_math.bugs import declare_bug, planted

NO_TIE_BREAK = declare_bug(
    "computation.sorting-no-tie-break",
    "the sorting circuit's comparison gates drop the index tie-break ([v_j < v_i] only): equal "
    "numbers get the same rank, one place stays empty and another is claimed twice",
    module=__name__,
    seen_in="rank-by-counting-smaller sorts that forget stability; correct only on inputs "
    "without repeated values")


def _gate(weighted_sum: Tensor, threshold: float | Tensor) -> Tensor:
    return (weighted_sum >= threshold).long()


def counting_circuit(bits: Tensor) -> Tensor:
    """Depth-2 threshold circuit for the binary count of ones: (B, n) -> (B, L) bits, L =
    n.bit_length() (least significant first)."""
    n = bits.shape[1]
    t = torch.arange(1, n + 1)
    c = _gate(bits.sum(dim=1, keepdim=True), t[None, :])  # (B, n) layer 1
    width = max(1, n.bit_length())
    ks = torch.arange(width)
    beta = (t[:, None] >> ks[None, :]) & 1  # (n, L): bit k of t
    beta_prev = ((t - 1)[:, None] >> ks[None, :]) & 1
    weights = beta - beta_prev  # (n, L), entries in {-1, 0, 1}
    return _gate(c @ weights, 1.0)  # (B, L) layer 2


def sorting_circuit(x: Tensor) -> Tensor:
    """Depth-5 threshold circuit sorting n numbers of b bits ascending: x (B, n, b) bits (least
    significant first) -> (B, n, b) bits of the sorted numbers."""
    _, n, b = x.shape
    v = (x.long() * (2 ** torch.arange(b))[None, None, :]).sum(dim=-1)  # (B, n)
    idx = torch.arange(n)
    earlier = (idx[None, :] < idx[:, None]).long()  # [j < i] as (i, j)
    if planted(NO_TIE_BREAK):  # planted bug: falsifier of computation.sorting-counting-tc0
        earlier = torch.zeros_like(earlier)
    before = _gate(2 * (v[:, :, None] - v[:, None, :]) + earlier[None], 1.0)  # (B, i, j) L1
    counts = before.sum(dim=-1)  # (B, n)
    t = torch.arange(n + 1)
    r = _gate(counts[:, :, None], t[None, None, :])  # (B, n, n + 1) layer 2
    e = _gate(r[..., :-1] - r[..., 1:], 1.0)  # (B, i, t) layer 3: rank_i == t
    a = _gate(e[:, :, :, None] + x.long()[:, :, None, :], 2.0)  # (B, i, t, k) layer 4
    return _gate(a.sum(dim=1), 1.0)  # (B, t, k) layer 5


def all_inputs(n: int, b: int) -> Tensor:
    """Every assignment of n numbers of b bits: (2^(n b), n, b) (n b <= 16)."""
    total = n * b
    if not 1 <= total <= 16:
        raise ValueError(f"n * b must be in [1, 16], got {total}")
    codes = torch.arange(2**total)[:, None]
    return ((codes >> torch.arange(total)[None, :]) & 1).reshape(-1, n, b)
