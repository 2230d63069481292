"""M3 (000 §8.3.6, project M3 at 000:1582; von Oswald et al. 2023, Prop. 1): one linear
self-attention layer with W_K = W_Q = [[I, 0], [0, 0]], W_V = [[0, 0], [0, -1]], P = (eta/N) e e^T
outputs the prediction of one GD step. Predicted: one GD step from w_0 = 0 on L(w) = 1/(2N)
sum_i (w^T x_i - y_i)^2 is w_1 = (eta/N) X^T y (the seed's eta X^T y, 1/N made explicit),
predicting x_q^T w_1. Measured: the library's LinearSelfAttention loaded with
theory.icl_construction's weights on tokens [x_i; y_i], [x_q; 0], read out as -h[-1, -1] (the
layer stores the negative prediction). Tolerance 1e-10 (float64 round-off ~1e-15). Exit 1 if not.
"""
import sys

import torch

from transformer_math.nn.linear_self_attention import LinearSelfAttention, regression_tokens
from transformer_math.theory.icl_construction import one_step_gd_weights

g, B, N, d, eta, f64 = torch.Generator().manual_seed(0), 5, 20, 4, 0.3, torch.float64
x, xq = torch.randn(B, N, d, generator=g, dtype=f64), torch.randn(B, d, generator=g, dtype=f64)
y = torch.einsum("bnd,bd->bn", x, torch.randn(B, d, generator=g, dtype=f64))  # y_i = w*^T x_i
model = LinearSelfAttention(d + 1, generator=g, dtype=f64)
model.layers[0].load_weights(*one_step_gd_weights(d, eta, N).as_tuple())
with torch.no_grad():
    measured = model.predict(regression_tokens(x, y, xq))
predicted = (xq * eta / N * torch.einsum("bnd,bn->bd", x, y)).sum(-1)  # x_q^T w_1
diff = (predicted - measured).abs()
print("prompt | predicted x_q^T w_1 | measured -h[-1,-1] | |difference|")
for b in range(B):
    print(f"{b:6d} | {predicted[b]:19.12f} | {measured[b]:18.12f} | {diff[b]:.1e}")
worst = float(diff.max())
print(f"max |difference| {worst:.1e} (tolerance 1e-10):", "OK" if worst < 1e-10 else "FAIL")
sys.exit(0 if worst < 1e-10 else 1)
