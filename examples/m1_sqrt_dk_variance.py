"""M1 (000 §8.3.1 property (2), project M1 at 000:1580): Var(q.k) = d_k, Var(q.k/sqrt(d_k)) = 1.

For q, k with independent N(0, 1) components, q.k = sum_l q_l k_l is a sum of d_k independent
terms of mean 0 and variance 1, so Var(q.k) = d_k; scaling by 1/sqrt(d_k) divides it by d_k.
Measured: sample variances of the library's logits (attention_logits with scale 1, and
attention_scores at its default scale). Tolerance: 5 standard errors of a sample variance,
sqrt(2/N + 6/(d_k N)) relative (6/d_k: the excess kurtosis of q.k). Exit 1 on a mismatch.
"""
import math
import sys

import torch

from transformer_math.functional.attention import attention_logits, attention_scores

N, ok = 20_000, True
g = torch.Generator().manual_seed(0)
print("  d_k | predicted  measured | predicted scaled  measured scaled | rel. tol")
for d_k in (16, 64, 256, 512):
    q, k = torch.randn(2, N, 1, 1, d_k, generator=g)  # N independent (q, k) pairs
    raw = attention_logits(q, k, 1.0).double().var().item()
    scaled = attention_scores(q, k).double().var().item()
    tol = 5 * math.sqrt(2 / N + 6 / (d_k * N))
    ok = ok and abs(raw / d_k - 1) < tol and abs(scaled - 1) < tol
    print(f"{d_k:5d} | {d_k:9.1f} {raw:9.2f} | {1:16.3f} {scaled:16.3f} | {tol:.3f}")
print("OK: measured = predicted" if ok else "MISMATCH beyond the tolerance")
sys.exit(0 if ok else 1)
