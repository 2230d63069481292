"""Exact finite-point interpolation by a two-layer ReLU network (the FFN 'lookup table').

000:741 (Yun et al.'s step 3): once every token carries a distinct code, a token-wise two-layer
ReLU network maps the finitely many codes to arbitrary targets. Construction (Zhang, Bengio,
Hardt, Recht & Vinyals, ICLR 2017, Theorem 1: N points in R^d need N hidden units, 2N + d
weights):

1. project the codes on a direction a: z_i = a . x_i (distinct for almost every a);
2. sort them, z_(1) < ... < z_(N), and put the biases between consecutive points:
   b_1 < z_(1) < b_2 < z_(2) < ... < b_N < z_(N) (here b_1 = z_(1) - 1 and
   b_j = (z_(j-1) + z_(j)) / 2);
3. the hidden activations M_ij = ReLU(z_(i) - b_j) form a lower-triangular matrix with a
   positive diagonal, so the output weights w with M w = y exist and are unique (forward
   substitution).

The network is x -> w . ReLU(a . x - b) (nn.Linear(d, N) -> ReLU -> nn.Linear(N, k)), exact up to
the rounding of the triangular solve.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from transformer_math.bugs import declare_bug, planted
from transformer_math.nn.init import no_init_draws

BIAS_ON_POINT = declare_bug(
    "expressivity.relu-lookup-bias-on-point",
    "the lookup's biases are placed on the sorted points (b_j = z_(j)) instead of between them: "
    "unit j is zero at its own point, the triangular system has a zero diagonal and the output "
    "weights are not finite",
    module=__name__,
    seen_in="an off-by-one when placing ReLU breakpoints between sorted samples")


def relu_lookup(codes: Tensor, targets: Tensor, gen: torch.Generator) -> nn.Sequential:
    """A two-layer ReLU network (float64) with N = len(codes) hidden units that maps each code
    (N, d) to its target (N, k) (see the module doc). Raises if two codes project equally."""
    if codes.dim() != 2 or targets.dim() != 2 or codes.shape[0] != targets.shape[0]:
        raise ValueError(f"codes (N, d) and targets (N, k) expected, got {tuple(codes.shape)} "
                         f"and {tuple(targets.shape)}")
    n, d = codes.shape
    a = torch.randn(d, generator=gen, dtype=torch.float64)
    a = a / a.norm()
    z = codes.to(torch.float64) @ a
    order = torch.argsort(z)
    zs = z[order]
    if n > 1 and float((zs[1:] - zs[:-1]).min()) <= 0:
        raise ValueError("two codes have the same projection: draw another direction")
    bias = torch.empty(n, dtype=torch.float64)
    bias[0] = zs[0] - 1.0
    bias[1:] = (zs[:-1] + zs[1:]) / 2
    if planted(BIAS_ON_POINT):  # planted bug: falsifier of expressivity.ffn-lookup
        bias = zs.clone()
    m = torch.relu(zs[:, None] - bias[None, :])  # (N, N) lower triangular
    w = torch.linalg.solve_triangular(m, targets.to(torch.float64)[order], upper=False)
    with no_init_draws():  # every weight is set below: nothing is drawn from the global RNG
        net = nn.Sequential(nn.Linear(d, n), nn.ReLU(), nn.Linear(n, targets.shape[1])).double()
    with torch.no_grad():
        net[0].weight.copy_(a[None, :].expand(n, d))
        net[0].bias.copy_(-bias)
        net[2].weight.copy_(w.T)
        net[2].bias.zero_()
    return net
