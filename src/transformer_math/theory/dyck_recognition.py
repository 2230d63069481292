"""Dyck-1 (balanced parentheses) by a depth-2 threshold circuit and by two soft-attention layers.

A string over {(, )} is encoded as bits x_i = 1 for '(' and 0 for ')'; its prefix balances are
b_k = sum_{i <= k} (2 x_i - 1). It is in Dyck-1 iff b_k >= 0 for every k and b_n = 0.

Threshold circuit (TC^0): layer 1 has the n + 1 gates g_k = [sum_{i <= k} 2 x_i >= k]
(b_k >= 0) and h = [sum_i 2 x_i <= n] (b_n <= 0); the output gate is their AND,
[sum_k g_k + h >= n + 1]. Depth 2, n + 2 gates, for every nesting depth: Dyck-1 is in TC^0
(000:838 says deep nesting is beyond fixed depth; Yao, Peng, Papadimitriou & Narasimhan, ACL
2021, handle bounded-depth Dyck-k with D + 1 hard-attention layers or 2 soft ones).

Soft-attention construction (the project's MultiHeadAttention, reference backend, float64),
positions 0 (BOS, value 0) and 1..n (the symbols); residual stream (v, last, slot):
v_i = 2 x_i - 1, last_i = [i = n].
1. Causal uniform attention (W_Q = W_K = 0) with value v writes m_k = b_k / (k + 1) into the
   slot (k + 1 keys: BOS and the first k symbols).
2. A token-wise ReLU network with gain G = n + 1 computes
   neg_k = ReLU(-G m_k) - ReLU(-G m_k - 1) (1 iff b_k <= -1, since then -G m_k >= 1; 0 iff
   b_k >= 0), pos_k = ReLU(G m_k) - ReLU(G m_k - 1) (1 iff b_k >= 1) and the violation flag
   f_k = neg_k + ReLU(pos_k + last_k - 1) (a negative prefix, or a positive final balance).
3. Causal uniform attention with value f, read at the last position: y = (#violations)/(n + 1).
Decision: accept iff y < 1 / (2 (n + 1)); |y - 1/(2(n+1))| = 1/(2(n+1)) on every input, the
same 1/n margin as the PARITY construction (Hahn's confidence limit), with constant depth.
"""

from __future__ import annotations

import torch
from torch import Tensor

from transformer_math.bugs import declare_bug, planted
from transformer_math.nn.attention import MultiHeadAttention
from transformer_math.theory.parity_margin import uniform_attention

PREFIX_NOT_CAUSAL = declare_bug(
    "computation.dyck-prefix-not-causal",
    "the Dyck-1 construction's first attention layer runs without the causal mask: every "
    "position averages the whole string, so it sees the final balance b_n / (n + 1) instead of "
    "its prefix balance and ')(' is accepted",
    module=__name__,
    seen_in="is_causal left at its default False when an encoder-style layer is reused for a "
    "prefix computation")

_V, _LAST, _SLOT = range(3)
WIDTH = 3


def dyck1_reference(bits: Tensor) -> Tensor:
    """Membership in Dyck-1 by the definition (running counter): bits (B, n) -> (B,) in {0, 1}."""
    steps = 2 * bits.long() - 1
    prefix = steps.cumsum(dim=1)
    return ((prefix.min(dim=1).values >= 0) & (prefix[:, -1] == 0)).long()


def dyck1_threshold_circuit(bits: Tensor) -> Tensor:
    """Depth-2 threshold circuit with n + 2 gates: bits (B, n) -> (B,) (see the module doc)."""
    n = bits.shape[1]
    k = torch.arange(1, n + 1)
    twice_opens = 2 * bits.long().cumsum(dim=1)  # sum_{i <= k} 2 x_i
    g = (twice_opens >= k[None, :]).long()  # (B, n): b_k >= 0
    h = (twice_opens[:, -1] <= n).long()  # b_n <= 0
    return ((g.sum(dim=1) + h) >= n + 1).long()


def _uniform_attention(source: int) -> MultiHeadAttention:
    """One head, W_Q = W_K = 0 (equal logits), value = coordinate ``source`` into the slot."""
    return uniform_attention(WIDTH, source, _SLOT)


def deep_nesting(n: int) -> Tensor:
    """'(' * (n/2) + ')' * (n/2): the deepest Dyck-1 word of length n (even), shape (1, n)."""
    if n % 2:
        raise ValueError(f"n must be even, got {n}")
    return torch.cat([torch.ones(n // 2), torch.zeros(n // 2)]).long()[None]


def random_dyck_words(count: int, n: int, gen: torch.Generator) -> Tensor:
    """Uniform-ish Dyck-1 words by the cycle lemma: a random arrangement of n/2 '(' and n/2 ')'
    rotated to start right after its first minimum prefix balance is a Dyck word."""
    rows = []
    for _ in range(count):
        perm = torch.randperm(n, generator=gen)
        bits = (perm < n // 2).long()
        prefix = (2 * bits - 1).cumsum(0)
        start = int(torch.argmin(prefix)) + 1
        rows.append(torch.roll(bits, -start))
    return torch.stack(rows)


class Dyck1AttentionConstruction:
    """The two-layer soft-attention recogniser for strings of length ``n``."""

    def __init__(self, n: int) -> None:
        if not isinstance(n, int) or n < 1:
            raise ValueError(f"n must be a positive int, got {n!r}")
        self.n = n
        self.gain = float(n + 1)
        self.prefix_mean = _uniform_attention(_V)
        self.count_flags = _uniform_attention(_SLOT)

    def embed(self, bits: Tensor) -> Tensor:
        """bits (B, n) -> residual stream (B, n + 1, 3), float64, BOS (v = 0) prepended."""
        if bits.dim() != 2 or bits.shape[1] != self.n:
            raise ValueError(f"bits must have shape (batch, {self.n}), got {tuple(bits.shape)}")
        x = torch.zeros(bits.shape[0], self.n + 1, WIDTH, dtype=torch.float64)
        x[:, 1:, _V] = 2.0 * bits.to(torch.float64) - 1.0
        x[:, -1, _LAST] = 1.0
        return x

    def flags(self, x: Tensor) -> Tensor:
        """Token-wise ReLU network: violation flag f_k from m_k = slot (see the module doc)."""
        z = self.gain * x[..., _SLOT]
        neg = torch.relu(-z) - torch.relu(-z - 1)
        pos = torch.relu(z) - torch.relu(z - 1)
        out = x.clone()
        out[..., _SLOT] = neg + torch.relu(pos + x[..., _LAST] - 1)
        return out

    @torch.no_grad()
    def score(self, bits: Tensor) -> Tensor:
        """y = (number of violations) / (n + 1), read at the last position: (B,)."""
        x = self.embed(bits)
        causal = not planted(PREFIX_NOT_CAUSAL)  # planted bug: falsifier of dyck-recognition
        x = x + self.prefix_mean(x, is_causal=causal)  # slot <- b_k / (k + 1)
        x = self.flags(x)
        y = self.count_flags(x, is_causal=True)[..., _SLOT]
        return y[:, -1]

    def threshold(self) -> float:
        return 0.5 / (self.n + 1)

    def predict(self, bits: Tensor) -> Tensor:
        return (self.score(bits) < self.threshold()).long()
