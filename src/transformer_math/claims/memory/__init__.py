"""Claims of 003 (concept page, associative-memory view): outer-product memory crosstalk.

Module: ``crosstalk`` (crosstalk (N-1)/d of W = sum v_i k_i^T; a gated MLP memory of equal size).
"""
