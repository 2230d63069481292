"""PARITY as a constant-depth threshold circuit: PARITY is in TC^0 (it is not in AC^0).

A threshold gate outputs [sum_i w_i x_i >= t]. With k = sum_i b_i, the n gates g_k = [k >= j],
j = 1..n, give the unary code of k; the output gate [sum_j (-1)^(j+1) g_j >= 1] computes
sum_{j <= k} (-1)^(j+1) = k mod 2. Depth 2, n + 1 gates, integer weights, so PARITY is in TC^0
(constant depth, polynomial size, unbounded fan-in threshold gates), whereas it is not in AC^0
(Furst, Saxe & Sipser 1984; Hastad 1986). 000 §8.3.5's "PARITY is not in TC^0" is therefore
wrong; the limit for soft attention is Hahn's (TACL 2020) sensitivity argument instead.
"""

from __future__ import annotations

import torch

from transformer_math.bugs import declare_bug, planted

CONSTANT_SIGNS = declare_bug(
    "computation.threshold-constant-signs",
    "the output gate of the PARITY threshold circuit gets weights +1 for every unary gate "
    "instead of alternating signs: the circuit computes OR",
    module=__name__,
    seen_in="dropping the (-1)^(j+1) of the output gate; a circuit that is right on every "
    "string with at most one 1")


def parity_threshold_circuit(bits: torch.Tensor) -> torch.Tensor:
    """Depth-2 threshold circuit for PARITY with n + 1 gates: bits (B, n) in {0, 1} -> (B,).

    Layer 1: g_k = [sum_i b_i >= k], k = 1..n (threshold gates, weights 1).
    Layer 2: [sum_k (-1)^(k+1) g_k >= 1]; the alternating sum is 1 iff the number of ones is odd.
    """
    n = bits.shape[1]
    k = torch.arange(1, n + 1)
    layer1 = (bits.sum(dim=1, keepdim=True) >= k[None, :]).long()  # (B, n) threshold gates
    weights = torch.where(k % 2 == 1, 1, -1)
    if planted(CONSTANT_SIGNS):  # planted bug: falsifier of computation.circuit-class-audit
        weights = torch.ones_like(k)
    return ((layer1 * weights[None, :]).sum(dim=1) >= 1).long()

