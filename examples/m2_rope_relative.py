"""M2 (000 §8.3.3 理论 B, project M2 at 000:1581; Su et al. 2021): <R_m q, R_n k> depends only on
the offset n - m.

Each R_m is a rotation, so R_m^T R_n = R_{n-m} and <R_m q, R_n k> = q^T R_{n-m} k.
Predicted: q^T R_{n-m} k from the explicit float64 matrix rotary_matrix(n - m) (only the offset
enters). Measured: the library's RotaryEmbedding.rotate applied to q at m and k at n, and again
at (m + s, n + s). Tolerance: float32 angles at positions < 2e4 err by ~1e-3 rad, hence 5e-3
relative to |q| |k|. Exit 1 on a mismatch.
"""
import sys

import torch

from transformer_math.functional.rope import rotary_matrix
from transformer_math.nn.position import RotaryEmbedding

d, g, worst = 64, torch.Generator().manual_seed(0), 0.0
rope = RotaryEmbedding(d)
print("     m      n  n-m |  predicted | measured (m, n)  measured (m+s, n+s)")
for m, n, s in torch.randint(0, 10_000, (6, 3), generator=g).tolist():
    q, k = torch.randn(2, 1, 1, 1, d, generator=g)
    predicted = float(q.flatten().double() @ rotary_matrix(n - m, rope.inv_freq.double(),
                                                           layout="half") @ k.flatten().double())
    score = [float((rope.rotate(q, torch.tensor([a])) * rope.rotate(k, torch.tensor([b]))).sum())
             for a, b in ((m, n), (m + s, n + s))]
    worst = max(worst, *(abs(x - predicted) / float(q.norm() * k.norm()) for x in score))
    print(f"{m:6d} {n:6d} {n - m:5d} | {predicted:10.4f} | {score[0]:15.4f} {score[1]:19.4f}")
print(f"max relative deviation {worst:.1e} (tolerance 5e-3):", "OK" if worst < 5e-3 else "FAIL")
sys.exit(0 if worst < 5e-3 else 1)
