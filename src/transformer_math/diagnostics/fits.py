"""Power-law fits y = a x^b by least squares on log y = log a + b log x.

Used for measured growth exponents (time vs sequence length, Jacobian norm vs input scale). The
fit reports the coefficient of determination r^2 of the log-log regression, so a caller can tell a
clean power law from a curve that merely has a slope.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class PowerLawFit:
    exponent: float  # b
    prefactor: float  # a
    r2: float  # of the log-log linear regression

    def predict(self, x: float) -> float:
        return self.prefactor * x**self.exponent


def fit_power_law(x: Sequence[float], y: Sequence[float]) -> PowerLawFit:
    """Least-squares fit of log y = log a + b log x; needs >= 2 distinct positive x and y > 0."""
    if len(x) != len(y):
        raise ValueError(f"x and y must have equal length, got {len(x)} and {len(y)}")
    if len(x) < 2:
        raise ValueError(f"need at least 2 points, got {len(x)}")
    if any(v <= 0 or not math.isfinite(v) for v in (*x, *y)):
        raise ValueError("x and y must be finite and positive for a log-log fit")
    lx = [math.log(v) for v in x]
    ly = [math.log(v) for v in y]
    mx, my = sum(lx) / len(lx), sum(ly) / len(ly)
    sxx = sum((a - mx) ** 2 for a in lx)
    if sxx == 0:
        raise ValueError("x must contain at least two distinct values")
    sxy = sum((a - mx) * (b - my) for a, b in zip(lx, ly, strict=True))
    slope = sxy / sxx
    intercept = my - slope * mx
    ss_res = sum((b - (intercept + slope * a)) ** 2 for a, b in zip(lx, ly, strict=True))
    ss_tot = sum((b - my) ** 2 for b in ly)
    r2 = 1.0 - ss_res / ss_tot if ss_tot > 0 else 1.0
    return PowerLawFit(exponent=slope, prefactor=math.exp(intercept), r2=r2)
