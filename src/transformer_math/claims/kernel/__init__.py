"""Claims of 000 §8.3.2: attention as kernel regression, linear attention, set functions.

Every measurement checks the project's implementation (``MultiHeadAttention``,
``scaled_dot_product_attention``, ``functional.linear_attention``, ``nn.sets``) against a
prediction computed another way (the explicit kernels of ``nn.kernel_regression``, closed-form
limits and bounds, Performer's variance formula); ``set-function-audit`` is a construction.

Modules: ``regression`` (softmax vs normalised Gaussian kernel), ``mercer`` (the token kernel
is not symmetric), ``temperature`` (inverse temperature = inverse bandwidth),
``linear_attention`` (parallel = recurrent = chunked), ``random_features`` (Performer's
estimator), ``retrieval`` (linear vs softmax on exact retrieval), ``sets`` (permutation
symmetry; Deep Sets vs Set Transformer), ``set_functions`` (Deep Sets represent pairwise
relations).

Falsifiers are bugs planted in the library (issue 14): ``attention.scale-as-temperature``
(``functional.attention``), ``attention.scale-by-model-width`` (``nn.attention``),
``linear-attention.*`` (``functional.linear_attention``), ``sets.*`` (``nn.sets``). Issue 31
retired ``kernel.nadaraya-watson`` and ``kernel.linear-attention-kernel-regression`` (algebraic
rewrites) to ``tests/nn/test_attention_kernel_identities.py``, which kills the
``kernel-regression.*`` bugs.
"""
