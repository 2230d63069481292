"""Slow-memory (HBM) traffic of standard and tiled attention for an on-chip memory of M elements.

Math (Dao et al. 2022, FlashAttention, Algorithm 0 and Theorem 2; 000 §8.3.7 "理论 D"; FACTS.md):
for sequence length N, head dimension d and on-chip (SRAM) size M with d <= M <= N d,
    standard attention:  Theta(N d + N^2)       accesses,
    tiled (Flash):       Theta(N^2 d^2 / M)     accesses,
and no exact algorithm does o(N^2 d^2 / M) for every M in [d, N d] (Proposition 3).

Counts are in elements (multiply by the bytes of the dtype for bytes), for one (batch, head).

- Standard attention (Algorithm 0): read Q, K (2 N d), write S (N^2); read S, write P (2 N^2);
  read P and V (N^2 + N d), write O (N d): 4 N d + 4 N^2.
- Tiled attention in the loop order of ``functional.tiled_attention`` (FlashAttention-2: outer loop
  over query tiles of B_r rows, inner loop over key/value tiles of B_c rows): each query tile is
  read once, every K and V tile is read once per query tile, O and the logsumexp are written once:
      reads  = N d + ceil(N / B_r) * 2 N d   (+ the key/value tiles skipped under causality),
      writes = N d + N.
  Given M, the tiles must fit on chip: a Q tile and its accumulator (2 B_r d), a K and a V tile
  (2 B_c d) and one logits tile (B_r B_c). :func:`tile_sizes_for_sram` takes B_r = floor(M / 5d)
  and B_c = min(B_r, d), so that 2 B_r d + 2 B_c d + B_r B_c <= M; then
      accesses ~ 2 N^2 d / B_r ~ 10 N^2 d^2 / M,
  the Theorem 2 rate (as in FlashAttention's Algorithm 1, B_c = M / 4d, B_r = min(M / 4d, d)).
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class IOCount:
    """Elements read from and written to slow memory."""

    reads: int
    writes: int

    @property
    def total(self) -> int:
        return self.reads + self.writes


def _positive_int(name: str, value: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be a positive int, got {value!r}")
    return value


def standard_attention_io(seq_len: int, head_dim: int) -> IOCount:
    """HBM accesses of Algorithm 0 (materialise S and P in slow memory): 4 N d + 4 N^2."""
    n, d = _positive_int("seq_len", seq_len), _positive_int("head_dim", head_dim)
    return IOCount(reads=2 * n * d + n * n + n * n + n * d, writes=2 * n * n + n * d)


def tiled_attention_io(
    seq_len: int,
    head_dim: int,
    block_q: int,
    block_k: int,
    *,
    is_causal: bool = False,
    value_dim: int | None = None,
) -> IOCount:
    """HBM accesses of the tiled loop (closed form, summed tile by tile when causal)."""
    n, d = _positive_int("seq_len", seq_len), _positive_int("head_dim", head_dim)
    bq, bk = _positive_int("block_q", block_q), _positive_int("block_k", block_k)
    dv = d if value_dim is None else _positive_int("value_dim", value_dim)
    reads = n * d
    for i0 in range(0, n, bq):
        i1 = min(i0 + bq, n)
        keys = i1 if is_causal else n  # keys visited by this query tile (tile-aligned below)
        visited = sum(min(j0 + bk, n) - j0 for j0 in range(0, keys, bk))
        reads += visited * (d + dv)
    return IOCount(reads=reads, writes=n * dv + n)


def tile_sizes_for_sram(sram_elements: int, head_dim: int) -> tuple[int, int]:
    """(B_r, B_c) = (floor(M / 5d), min(B_r, d)): the largest tiles whose working set fits in M."""
    m, d = _positive_int("sram_elements", sram_elements), _positive_int("head_dim", head_dim)
    if m < 5 * d:
        raise ValueError(f"sram_elements must be >= 5 * head_dim = {5 * d} (one row tile), got {m}")
    block_q = m // (5 * d)
    return block_q, min(block_q, d)


def tile_working_set(block_q: int, block_k: int, head_dim: int) -> int:
    """On-chip elements used by one step of the tiled loop: 2 B_r d + 2 B_c d + B_r B_c."""
    return 2 * block_q * head_dim + 2 * block_k * head_dim + block_q * block_k


def flash_rate(seq_len: int, head_dim: int, sram_elements: int) -> float:
    """N^2 d^2 / M, the Theorem 2 rate (without its constant)."""
    return seq_len**2 * head_dim**2 / sram_elements


def crossover_sram(seq_len: int, head_dim: int) -> float:
    """M above which the tiled count (~ 2 N^2 d / B_r + 2 N d + N) beats standard attention.

    Solves 2 N^2 d / B_r + 2 N d + N = 4 N d + 4 N^2 for B_r and returns M = 5 d B_r; of order d^2.
    """
    n, d = seq_len, head_dim
    rhs = 4 * n * d + 4 * n * n - 2 * n * d - n
    block_q = 2 * n * n * d / rhs
    return 5 * d * math.ceil(block_q)
