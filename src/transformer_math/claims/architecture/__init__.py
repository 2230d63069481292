"""Claims ``architecture.*``: 000 §8.3.7 (residuals, normalisation, scaling laws, FlashAttention)
and 004's encoder/decoder layers (CLAIMS.md, "architecture").

The measurements check the project's own implementation (the one ``Transformer``, norms, tiled
attention) against an independent prediction (an ODE solved by Runge-Kutta, a theorem's rate,
...); the kinds are declared per claim (issue 31): ``chinchilla`` and ``encoder-decoder`` are
code audits of the seed's numbers and code, ``inference-aware-sizing``, ``kaplan-joint-law``,
``flash-io`` (an IO counter in the tiled loop) and ``vla-latency`` (a roofline) are models.
Modules: ``residual`` (Euler steps, Jacobians bounded independently of depth), ``norms``
(LayerNorm geometry, Pre- vs Post-LN), ``layernorm_scale`` (LayerNorm's sphere, its Jacobian of
rank d - 2 and norm 1/sqrt(var + eps)), ``scaling`` (Chinchilla, inference-aware sizing),
``kaplan`` (Kaplan et al.'s joint law vs the product form), ``flash`` (tiled attention IO and
exactness), ``encoder_decoder``. The RMSNorm-vs-LayerNorm speed (000:1122) is a benchmark, not
a claim (``bench/norms_bench.py``).
"""
