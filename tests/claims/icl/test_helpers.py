"""Helpers of the icl claim modules: the constructed LSA, the worked example, the regime
numbers of the task-diversity check (both directions)."""

from __future__ import annotations

import math

from transformer_math.claims.icl.gd_construction import WORKED_EXAMPLE, worked_example
from transformer_math.claims.icl.task_diversity import contrast, memorise_then_learn


def test_worked_example_is_measured_exactly() -> None:
    assert max(abs(a - b) for a, b in zip(worked_example(), WORKED_EXAMPLE, strict=True)) < 1e-12


def test_contrast() -> None:
    assert contrast(3.0, 1.0) == 0.5 and contrast(1.0, 3.0) == -0.5 and contrast(0.0, 0.0) == 0.0


def test_memorise_then_learn_both_directions() -> None:
    ridge, zero = 0.6, 1.25
    ok = memorise_then_learn([1, 128], dd=[0.0, 0.03], dr=[1.1, 0.02], mse=[1.7, 0.62],
                             ridge_mse=ridge, zero_mse=zero)
    assert ok["memorised"] > 0 and ok["learned"] > 0 and ok["ridge_side"] > 0
    ridge_at_small_m = memorise_then_learn([1, 128], dd=[1.1, 0.03], dr=[0.0, 0.02],
                                           mse=[1.7, 0.62], ridge_mse=ridge, zero_mse=zero)
    assert ridge_at_small_m["memorised"] < 0
    plateau = memorise_then_learn([1, 128], dd=[0.0, 0.5], dr=[1.1, 0.4], mse=[1.7, 1.2],
                                  ridge_mse=ridge, zero_mse=zero)  # closer to ridge, not learned
    assert plateau["learned"] < 0 and not math.isinf(plateau["learned"])


def test_ridge_side_z_is_the_gap_over_its_paired_stderr() -> None:
    r = memorise_then_learn([1, 128], dd=[0.0, 0.05], dr=[1.1, 0.02], mse=[1.7, 0.62],
                            ridge_mse=0.6, zero_mse=1.25, gap_stderr=[0.1, 0.01])
    assert math.isclose(r["ridge_side_z"], 3.0)  # (0.05 - 0.02) / 0.01: decided at 3
    closer_to_dmmse = memorise_then_learn([1, 128], dd=[0.0, 0.02], dr=[1.1, 0.05],
                                          mse=[1.7, 0.62], ridge_mse=0.6, zero_mse=1.25,
                                          gap_stderr=[0.1, 0.01])
    assert closer_to_dmmse["ridge_side_z"] < 0
