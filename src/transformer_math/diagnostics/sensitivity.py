"""Sensitivity of a soft-attention layer to flipping one input symbol (Hahn, TACL 2020).

Hahn's argument (000 §8.3.5 "结果五", exercise 8.3.5-4): with bounded logits |s_j| <= B, a softmax
attention row over N keys has weights alpha_j = e^{s_j} / sum_i e^{s_i} <= e^{2B} / N. Changing the
symbol at one key position j (not the query) changes only s_j and v_j, and with Z' the new
normaliser,
    o' - o = [w'_j (v'_j - o) - w_j (v_j - o)] / Z',   w = e^s,
so  |o' - o| <= 4 V e^{2B} / N,  V = max_j |v_j|,
and after the output projection |W_O (o' - o)| <= ||W_O||_2 * 4 V e^{2B} / N = O(1/N).
PARITY flips with every bit (sensitivity 1 at every n), so a bounded soft-attention layer cannot
compute it for all n. The measurement here reads the layer's output at a fixed query (BOS)
position as a cross-attention row, i.e. exactly the row of self-attention at that position,
through the project's MultiHeadAttention (``reference`` backend: the project's own softmax).

The layer is the project's attention itself (no variant of it lives here, issue 31): a bug in the
attention's normalisation (e.g. ``attention.softmax-wrong-axis``, which for the single BOS query
leaves the weights e^{s_j} unnormalised) makes one symbol's influence O(1) instead of O(1/N).
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from transformer_math.nn.attention import MultiHeadAttention
from transformer_math.nn.init import no_init_draws


class BoundedAttentionLayer:
    """A single-head soft-attention layer over symbols {0, 1} with bounded weights.

    Symbol embeddings e(0), e(1) and a BOS embedding have norm <= ``embed_norm``; the query is
    BOS's. All weights are fixed at construction (seeded); the layer is the project's
    :class:`MultiHeadAttention`, float64.
    """

    def __init__(self, embed_dim: int, generator: torch.Generator, embed_norm: float = 1.0):
        if not isinstance(embed_dim, int) or embed_dim < 1:
            raise ValueError(f"embed_dim must be a positive int, got {embed_dim!r}")
        if not (math.isfinite(embed_norm) and embed_norm > 0):
            raise ValueError(f"embed_norm must be positive and finite, got {embed_norm}")
        with no_init_draws():  # every weight is drawn from ``generator`` below
            self.attn = MultiHeadAttention(embed_dim, 1, backend="reference").double()
        with torch.no_grad():
            for p in self.attn.parameters():
                p.copy_(torch.randn(p.shape, generator=generator, dtype=torch.float64)
                        / math.sqrt(embed_dim))
        table = torch.randn(3, embed_dim, generator=generator, dtype=torch.float64)
        self.table = embed_norm * table / table.norm(dim=-1, keepdim=True)  # rows: 0, 1, BOS

    def embed(self, symbols: Tensor) -> Tensor:
        """symbols (B, n) in {0, 1} -> (B, n + 1, d) with BOS first."""
        if symbols.dim() != 2:
            raise ValueError(f"symbols must have shape (batch, n), got {tuple(symbols.shape)}")
        bos = torch.full((symbols.shape[0], 1), 2, dtype=torch.long)
        return self.table[torch.cat([bos, symbols.long()], dim=1)]

    @torch.no_grad()
    def output(self, symbols: Tensor) -> Tensor:
        """The layer's output at the BOS position, shape (B, d)."""
        x = self.embed(symbols)  # (B, N, d), N = n + 1 keys
        return self.attn(x[:, :1], x)[:, 0]

    @torch.no_grad()
    def hahn_bound(self, num_keys: int) -> float:
        """||W_O||_2 * 4 V e^{2B} / N for this layer's weights (see the module docstring)."""
        emb = self.table
        q = self.attn.q_proj(emb[2:3])  # BOS query
        k = self.attn.k_proj(emb)
        v = self.attn.v_proj(emb)
        logits = (q @ k.T) / math.sqrt(self.attn.head_dim)
        big_b = float(logits.abs().max())
        big_v = float(v.norm(dim=-1).max())
        w_o = float(torch.linalg.matrix_norm(self.attn.out_proj.weight, ord=2))
        return w_o * 4 * big_v * math.exp(2 * big_b) / num_keys


@torch.no_grad()
def single_flip_sensitivity(
    layer: BoundedAttentionLayer,
    length: int,
    num_samples: int,
    generator: torch.Generator,
) -> float:
    """Mean over random strings and a random position of |f(x with one symbol flipped) - f(x)|.

    ``f`` is the layer output at BOS (Euclidean norm of the change).
    """
    if not isinstance(length, int) or length < 1:
        raise ValueError(f"length must be a positive int, got {length!r}")
    if not isinstance(num_samples, int) or num_samples < 1:
        raise ValueError(f"num_samples must be a positive int, got {num_samples!r}")
    symbols = torch.randint(0, 2, (num_samples, length), generator=generator)
    where = torch.randint(0, length, (num_samples,), generator=generator)
    flipped = symbols.clone()
    rows = torch.arange(num_samples)
    flipped[rows, where] = 1 - flipped[rows, where]
    before = layer.output(symbols)
    after = layer.output(flipped)
    return float((after - before).norm(dim=-1).mean())


def boolean_sensitivity(fn, bits: Tensor) -> float:
    """Average sensitivity of a Boolean function: mean over rows and positions of
    [fn(x with bit i flipped) != fn(x)] (1.0 for PARITY at every length)."""
    if bits.dim() != 2:
        raise ValueError(f"bits must have shape (batch, n), got {tuple(bits.shape)}")
    base = fn(bits)
    changed = []
    for i in range(bits.shape[1]):
        flipped = bits.clone()
        flipped[:, i] = 1 - flipped[:, i]
        changed.append((fn(flipped) != base).double())
    return float(torch.stack(changed).mean())
