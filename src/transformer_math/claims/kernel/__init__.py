"""Claims of 000 §8.3.2: attention as kernel regression, linear attention, set functions.

Every check measures the project's implementation (``MultiHeadAttention``,
``scaled_dot_product_attention``, ``functional.linear_attention``, ``nn.sets``) and compares it
with a prediction computed another way (the explicit Nadaraya-Watson regressor of
``nn.kernel_regression``, closed-form limits and bounds, Performer's variance formula).

Modules: ``regression`` (attention = Nadaraya-Watson; softmax vs normalised Gaussian kernel),
``temperature`` (inverse temperature = inverse bandwidth), ``linear_attention`` (parallel =
recurrent = chunked; linear attention = Nadaraya-Watson with kernel phi(q).phi(k)),
``random_features`` (Performer's estimator), ``sets`` (permutation symmetry; Deep Sets vs Set
Transformer).

Falsifiers are bugs planted in the library (issue 14): ``kernel-regression.*``
(``nn.kernel_regression``), ``linear-attention.*`` (``functional.linear_attention``),
``sets.sab-attends-over-batch`` (``nn.sets``), ``attention.scale-as-temperature``
(``functional.attention``).
"""
