"""Claims of 000 §8.3.2: attention as kernel regression, linear attention, set functions.

Every check measures the project's implementation (``MultiHeadAttention``,
``scaled_dot_product_attention``, ``functional.linear_attention``, ``nn.sets``) and compares it
with a prediction computed another way (the explicit Nadaraya-Watson regressor of
``nn.kernel_regression``, closed-form limits and bounds, Performer's variance formula).

Modules: ``regression`` (attention = Nadaraya-Watson; softmax = normalised Gaussian kernel),
``temperature`` (inverse temperature = inverse bandwidth), ``linear_attention`` (parallel =
recurrent = chunked), ``random_features`` (Performer's estimator), ``sets`` (permutation
symmetry; Deep Sets vs Set Transformer).
"""
