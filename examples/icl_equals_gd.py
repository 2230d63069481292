"""In-context learning = gradient descent, layer by layer (000 §8.3.6 "多层 = 多步", 000:949-963,
exercise 8.3.6-4 at 000:1072; von Oswald et al. 2023, Prop. 1).

L stacked copies of the one-step construction (``theory.icl_construction.stacked_gd_weights``)
loaded into the library's ``LinearSelfAttention`` perform L GD steps on the prompt's least
squares L(w) = 1/(2N) |X w - y|^2 from w_0 = 0:

    w_L = eta sum_{j<L} (I - eta H)^j b,   H = X^T X / N,  b = X^T y / N,

a Neumann partial sum that tends to the OLS solution w* = H^{-1} b when 0 < eta < 2/lambda_max,
with |w_L - w*| <= |I - eta H|^L |w*| (geometric: depth buys precision).

Measured per depth L: the model's implicit weights w_L (its predictions for the basis queries
e_1..e_d), their distance to the L-th GD iterate (computed from residuals,
``theory.icl_construction.gd_iterates``) and to w*, against the bound. Exit 1 if a model
differs from its GD step by more than 1e-9 or exceeds the bound.

    python examples/icl_equals_gd.py [--layers 10] [--dim 4] [--context 32] [--seed 0]
"""

from __future__ import annotations

import argparse
import sys

import torch

from transformer_math.nn.linear_self_attention import LinearSelfAttention, regression_tokens
from transformer_math.theory.icl_construction import (
    gd_iterates,
    least_squares_terms,
    neumann_error_bound,
    stacked_gd_weights,
)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--layers", type=int, default=10, help="deepest model (L = 1..layers)")
    parser.add_argument("--dim", type=int, default=4)
    parser.add_argument("--context", type=int, default=32, help="N in-context examples")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    d, n, f64 = args.dim, args.context, torch.float64
    g = torch.Generator().manual_seed(args.seed)
    x = torch.randn(n, d, generator=g, dtype=f64)
    y = x @ torch.randn(d, generator=g, dtype=f64) + 0.1 * torch.randn(n, generator=g, dtype=f64)
    hess, b = least_squares_terms(x, y)
    eta = 1.0 / float(torch.linalg.eigvalsh(hess).max())  # inside (0, 2 / lambda_max)
    w_star = torch.linalg.solve(hess, b)
    gd = gd_iterates(x, y, eta, args.layers)  # (L + 1, d)
    bound = neumann_error_bound(hess, w_star, eta, args.layers)
    tokens = regression_tokens(x.expand(d, n, d), y.expand(d, n), torch.eye(d, dtype=f64))
    print(f"d = {d}, N = {n}, eta = 1/lambda_max = {eta:.4f}, |w*| = {float(w_star.norm()):.4f}")
    print(" L | |w_L(model) - w_L(GD)| | |w_L(model) - w*|  bound |I-eta H|^L |w*|")
    ok = True
    for layers in range(1, args.layers + 1):
        model = LinearSelfAttention(d + 1, layers, generator=g, dtype=f64)
        for layer, weights in zip(model.layers, stacked_gd_weights(d, eta, n, layers),
                                  strict=True):
            layer.load_weights(*weights.as_tuple())
        with torch.no_grad():
            w_model = model.predict(tokens)  # prediction for query e_i = i-th weight
        gap = float((w_model - gd[layers]).abs().max())
        err = float((w_model - w_star).norm())
        ok = ok and gap < 1e-9 and err <= float(bound[layers]) * (1 + 1e-9) + 1e-12
        print(f"{layers:2d} | {gap:22.1e} | {err:16.3e}  {float(bound[layers]):23.3e}")
    print("OK: L layers = L GD steps, error within the Neumann bound" if ok else "MISMATCH")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
