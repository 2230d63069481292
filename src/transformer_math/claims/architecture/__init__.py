"""Claims ``architecture.*``: 000 §8.3.7 (residuals, normalisation, scaling laws, FlashAttention)
and 004's encoder/decoder layers (CLAIMS.md, "architecture").

Every check measures the project's own implementation (the one ``Transformer``, norms, tiled
attention and its IO counter, the scaling-law calculator) and compares it with an independent
prediction (an ODE solved by Runge-Kutta, a theorem's rate, the paper's Table 3, ...).
Modules: ``residual`` (Euler steps, Jacobians), ``norms`` (LayerNorm geometry, Pre- vs
Post-LN), ``layernorm_scale`` (LayerNorm's norm with eps and after gamma, beta; its Jacobian
1/sqrt(var + eps)), ``scaling`` (Chinchilla, inference-aware sizing), ``kaplan`` (Kaplan et
al.'s joint law vs the product form), ``flash`` (tiled attention IO and exactness),
``encoder_decoder``. The RMSNorm-vs-LayerNorm speed (000:1122) is a benchmark, not a claim
(``bench/norms_bench.py``).
"""
