"""Claims of 004 ch. 12-13: attention localisation and the W_QK eigenspectrum (Bao et al. 2024).

Modules: ``qk_localization`` (entropy vs eigenvalue variance; the third seed's eigvalsh monitor
refuted), ``high_dim`` (004 ch. 13's propositions checked on Gaussian tokens).
"""
