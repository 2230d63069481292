"""Claims ``architecture.*``: 000 §8.3.7 (residuals, normalisation, scaling laws, FlashAttention)
and 004's encoder/decoder layers (CLAIMS.md, "architecture").

Every check measures the project's own implementation (the one ``Transformer``, norms, tiled
attention and its IO counter, the scaling-law calculator) and compares it with an independent
prediction (an ODE solved by Runge-Kutta, a theorem's rate, the paper's Table 3, ...).
Modules: ``residual`` (Euler steps, Jacobians), ``norms`` (LayerNorm geometry, Pre- vs
Post-LN), ``scaling`` (Chinchilla), ``flash`` (tiled attention IO and exactness),
``encoder_decoder``.
"""
