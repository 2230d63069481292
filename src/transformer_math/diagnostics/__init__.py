"""Measurements taken on any model or tensor (ARCHITECTURE.md layer 4): Jacobian norms, attention
entropy, FLOP counts, counted work (multiply-adds and elements), convex-hull membership, timings
and power-law fits."""

from transformer_math.diagnostics.fits import PowerLawFit, fit_power_law
from transformer_math.diagnostics.flops import FlopCount, count_flops
from transformer_math.diagnostics.geometry import HullTest, convex_hull_test, project_to_simplex
from transformer_math.diagnostics.jacobian import (
    attention_entropy,
    jacobian_matrix,
    jacobian_spectral_norm,
)
from transformer_math.diagnostics.op_counts import (
    WorkCount,
    WorkPolynomial,
    count_work,
    work_polynomial,
)
from transformer_math.diagnostics.qk_spectrum import (
    QKSpectrum,
    QKSpectrumMonitor,
    head_qk_matrices,
    qk_spectrum,
)
from transformer_math.diagnostics.timing import (
    median_seconds,
    time_over_sizes,
    times_over_sizes,
    torch_threads,
)

__all__ = [
    "FlopCount",
    "HullTest",
    "PowerLawFit",
    "QKSpectrum",
    "QKSpectrumMonitor",
    "WorkCount",
    "WorkPolynomial",
    "attention_entropy",
    "convex_hull_test",
    "count_flops",
    "count_work",
    "fit_power_law",
    "head_qk_matrices",
    "jacobian_matrix",
    "jacobian_spectral_norm",
    "median_seconds",
    "project_to_simplex",
    "qk_spectrum",
    "time_over_sizes",
    "times_over_sizes",
    "torch_threads",
    "work_polynomial",
]
