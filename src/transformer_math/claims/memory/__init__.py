"""Claims of 003 (concept page, associative-memory view): outer-product memory crosstalk.

Module: ``crosstalk`` (crosstalk (N-1)/d of W = sum v_i k_i^T; the "interference equals signal"
threshold N = d + 1 against nearest-value retrieval; the gated-MLP half retired in issue 14).
"""
