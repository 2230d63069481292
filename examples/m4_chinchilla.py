"""M4 (000 §8.3.7 理论 C, project M4 at 000:1583; Hoffmann et al. 2022): given D training tokens,
the compute-optimal model size N and the training FLOPs C.

Predicted (the chapter's rule): D/N ~ 20, so N = D/20 and C = 6 N D (2 N forward + 4 N backward
FLOPs per parameter and token; Kaplan et al. 2020 §2.1). Measured: the library's numerical
argmin of Chinchilla's fitted loss E + A/N^alpha + B/D^beta (Approach 3, eq. 10) along its
budget line, at the budget C whose optimum uses D tokens (bisection in log C). Tolerance: N
within a factor 2 of D/20 ("about": Approach 3's D/N grows with C, from 17 at D = 1e9 to 54 at
1.4e12, past the band); C = 6 N D to 1e-6 (the argmin's resolution is ~1e-8).
Usage: python examples/m4_chinchilla.py [D ...]. Exit 1 on a mismatch.
"""
import math
import sys

from transformer_math.theory.scaling_laws import CHINCHILLA_LOSS, numerical_compute_optimum

ok = True
print("  D tokens | predicted N  C = 6ND | measured N  C        D/N")
for D in [float(a) for a in sys.argv[1:]] or [1e9, 1e10, 1e11]:
    lo, hi = math.log(1e10), math.log(1e32)  # the optimal D grows with the budget C
    for _ in range(60):
        mid = (lo + hi) / 2
        low = numerical_compute_optimum(CHINCHILLA_LOSS, math.exp(mid)).tokens < D
        lo, hi = (mid, hi) if low else (lo, mid)
    opt = numerical_compute_optimum(CHINCHILLA_LOSS, math.exp((lo + hi) / 2))
    n, c, N, C = D / 20, 6 * D / 20 * D, opt.params, opt.flops
    ok = ok and abs(math.log2(N / n)) <= 1 and abs(C / (6 * N * D) - 1) < 1e-6
    print(f"{D:10.3g} | {n:11.3g} {c:8.3g} | {N:10.3g} {C:8.3g} {D / N:5.1f}")
print("OK: within the tolerance" if ok else "MISMATCH beyond the tolerance")
sys.exit(0 if ok else 1)
