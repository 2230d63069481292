"""Helpers of the icl claim modules: the constructed LSA, the worked example, the regime
margins of the task-diversity check (both directions)."""

from __future__ import annotations

import math

from transformer_math.claims.icl.gd_construction import WORKED_EXAMPLE, worked_example
from transformer_math.claims.icl.task_diversity import contrast, regime_margins


def test_worked_example_is_measured_exactly() -> None:
    assert max(abs(a - b) for a, b in zip(worked_example(), WORKED_EXAMPLE, strict=True)) < 1e-12


def test_contrast() -> None:
    assert contrast(3.0, 1.0) == 0.5 and contrast(1.0, 3.0) == -0.5 and contrast(0.0, 0.0) == 0.0


def test_regime_margins_hold_for_a_transition_and_fail_without_one() -> None:
    ridge, zero = 0.6, 1.25
    ok = regime_margins([1, 128], dd=[0.0, 0.03], dr=[1.1, 0.02], mse=[1.7, 0.62],
                        ridge_mse=ridge, zero_mse=zero)
    assert all(m.holds for m in ok)
    dmmse_everywhere = regime_margins([1, 128], dd=[0.0, 0.01], dr=[1.1, 0.02], mse=[1.7, 0.62],
                                      ridge_mse=ridge, zero_mse=zero)
    assert dmmse_everywhere[0].holds and not dmmse_everywhere[1].holds
    plateau = regime_margins([1, 128], dd=[0.0, 0.5], dr=[1.1, 0.4], mse=[1.7, 1.2],
                             ridge_mse=ridge, zero_mse=zero)  # closer to ridge but not learned
    assert not plateau[1].holds
    assert not math.isinf(plateau[1].value)
