"""A fixed-n soft-attention construction for PARITY whose decision margin shrinks like 1/n.

Chiang & Cholak ("Overcoming a Theoretical Limitation of Self-Attention", ACL 2022) show that
soft attention *can* compute PARITY exactly for every fixed length n, escaping Hahn's (TACL 2020)
limit only because the construction's confidence margin shrinks with n (they restore it with
layer normalisation, i.e. a gain that grows with n). 000 §8.3.5 ("鱼与熊掌不可兼得") and
exercise 8.3.5-5 state this trade-off. This module builds a simplified two-layer construction
in that spirit (our own weights, not the paper's), from the project's MultiHeadAttention (the
``reference`` backend: the project's own softmax attention, so the 1/(n + 1) is what the
project's softmax computes over n + 1 keys, not something this module writes down):

Input: position 0 is BOS (bit 0), positions i = 1..n hold the bits; the residual stream of
position i is (b_i, r_i, s_i, 0) with r_i = i / (n + 1) and s_i = cos(pi i) = (-1)^i.
1. Uniform attention (W_Q = W_K = 0, all logits equal) with value b_j writes
   a = k / (n + 1) into the slot coordinate, k = number of ones.
2. A token-wise ReLU network with input gain G = n + 1 computes delta_i = G (r_i - a) = i - k and
   h_i = ReLU(s_i - 2|delta_i|) - ReLU(-s_i - 2|delta_i|), which is s_k = (-1)^k at i = k and 0
   elsewhere (|delta| >= 1 kills both terms).
3. Uniform attention with value h_j gives y = (1 / (n + 1)) sum_j h_j = (-1)^k / (n + 1).
Decision: PARITY = 1 iff y < 0. Margin |y| = 1 / (n + 1) for every input, so reading the answer
at a fixed confidence needs a gain (Lipschitz constant) of n + 1, and the FFN's own input gain is
G = n + 1: both grow linearly with n. With a gain fixed in advance (``gain`` given), the bump
|delta| < 1 covers several positions once n + 1 > gain and the construction breaks.
Worked values (n = 3): bits 101 -> k = 2, y = +1/4; bits 100 -> k = 1, y = -1/4.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from transformer_math.bugs import declare_bug, planted
from transformer_math.nn.attention import MultiHeadAttention
from transformer_math.nn.init import no_init_draws

POSITION_OFF_BY_ONE = declare_bug(
    "computation.parity-position-off-by-one",
    "the PARITY construction encodes positions as r_i = i / n instead of i / (n + 1) (BOS not "
    "counted): the count k / (n + 1) that uniform attention writes no longer lines up with "
    "r_k, the bump misses position k and the decision value is no longer (-1)^k / (n + 1)",
    module=__name__,
    seen_in="forgetting the BOS token when normalising positions: uniform attention averages "
    "over n + 1 keys, not n")

_BIT, _POS, _SIGN, _SLOT = range(4)  # residual-stream coordinates
WIDTH = 4


def uniform_attention(width: int, source: int, slot: int) -> MultiHeadAttention:
    """One head of width ``width``, W_Q = W_K = 0 (all logits 0: weights exactly 1/T), value =
    coordinate ``source`` written to coordinate ``slot``: the mean of ``source`` over the keys
    (the counting layer of the PARITY and Dyck constructions)."""
    with no_init_draws():  # every weight is set below
        attn = MultiHeadAttention(width, 1, bias=False, backend="reference").double()
    with torch.no_grad():
        for proj in (attn.q_proj, attn.k_proj, attn.v_proj, attn.out_proj):
            proj.weight.zero_()
        attn.v_proj.weight[slot, source] = 1.0
        attn.out_proj.weight[slot, slot] = 1.0
    return attn


def _uniform_attention(source: int) -> MultiHeadAttention:
    return uniform_attention(WIDTH, source, _SLOT)


class ParityMarginConstruction:
    """The construction for one length ``n``; ``gain`` defaults to the required n + 1."""

    def __init__(self, n: int, gain: float | None = None) -> None:
        if not isinstance(n, int) or n < 1:
            raise ValueError(f"n must be a positive int, got {n!r}")
        if gain is not None and not (math.isfinite(gain) and gain > 0):
            raise ValueError(f"gain must be a positive finite number, got {gain}")
        self.n = n
        self.gain = float(n + 1) if gain is None else float(gain)
        self.count_ones = _uniform_attention(_BIT)
        self.sum_bump = _uniform_attention(_SLOT)

    def embed(self, bits: Tensor) -> Tensor:
        """bits (B, n) in {0, 1} -> residual stream (B, n + 1, 4), float64, BOS prepended."""
        if bits.dim() != 2 or bits.shape[1] != self.n:
            raise ValueError(f"bits must have shape (batch, {self.n}), got {tuple(bits.shape)}")
        b = bits.shape[0]
        i = torch.arange(self.n + 1, dtype=torch.float64)
        x = torch.zeros(b, self.n + 1, WIDTH, dtype=torch.float64)
        x[:, 1:, _BIT] = bits.to(torch.float64)
        x[:, :, _POS] = i / (self.n + 1)
        if planted(POSITION_OFF_BY_ONE):  # planted bug: falsifier of computation.parity-margin
            x[:, :, _POS] = i / self.n
        x[:, :, _SIGN] = torch.cos(math.pi * i).round()
        return x

    def bump(self, x: Tensor) -> Tensor:
        """Token-wise ReLU network: h = ReLU(s - 2|delta|) - ReLU(-s - 2|delta|),
        delta = gain * (r - a), written into the slot coordinate."""
        delta = self.gain * (x[..., _POS] - x[..., _SLOT])
        magnitude = torch.relu(delta) + torch.relu(-delta)  # |delta| with two ReLU units
        s = x[..., _SIGN]
        h = torch.relu(s - 2 * magnitude) - torch.relu(-s - 2 * magnitude)
        out = x.clone()
        out[..., _SLOT] = h
        return out

    @torch.no_grad()
    def score(self, bits: Tensor) -> Tensor:
        """The decision value y (B,) read at BOS; PARITY = 1 iff y < 0."""
        x = self.embed(bits)
        x = x + self.count_ones(x)  # slot <- k / (n + 1)
        x = self.bump(x)  # slot <- (-1)^k at i = k, else 0
        y = self.sum_bump(x)[..., _SLOT]  # (B, n + 1), equal at every position
        return y[:, 0]

    def predict(self, bits: Tensor) -> Tensor:
        return (self.score(bits) < 0).long()

    def predicted_margin(self) -> float:
        """The margin the construction should have: 1 / (n + 1)."""
        return 1.0 / (self.n + 1)


def exhaustive_bits(n: int) -> Tensor:
    """All 2^n bit strings of length n, shape (2^n, n) (n <= 16)."""
    if not isinstance(n, int) or not 1 <= n <= 16:
        raise ValueError(f"n must be an int in [1, 16] for exhaustive enumeration, got {n!r}")
    codes = torch.arange(2**n)[:, None]
    return (codes >> torch.arange(n)[None, :]) & 1
