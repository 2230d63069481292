"""experiments.task_diversity: the in-context regressor preset and its read-out."""

from __future__ import annotations

import torch

from transformer_math.data.regression import sample_regression
from transformer_math.experiments.task_diversity import (
    TaskDiversityConfig,
    crossover_log2,
    regression_predictions,
)
from transformer_math.nn.transformer import build_transformer


def test_preset_starts_with_a_zero_position_table_and_a_scalar_head() -> None:
    cfg = TaskDiversityConfig(x_dim=3, num_points=5, d_model=16)
    model = build_transformer(cfg.model_config(), 0)
    assert model.embed_inputs is not None and model.embed_inputs.in_features == 4
    assert model.embed_positions.weight.shape == (10, 16)
    assert torch.count_nonzero(model.embed_positions.weight) == 0
    assert model.lm_head is not None and model.lm_head.bias is not None
    assert model.lm_head.out_features == 1


def test_prediction_of_y_i_does_not_see_y_i() -> None:
    cfg = TaskDiversityConfig(x_dim=3, num_points=5, d_model=16)
    model = build_transformer(cfg.model_config(), 0)
    batch = sample_regression(2, 5, 3, generator=torch.Generator().manual_seed(1))
    out = regression_predictions(model, batch.x, batch.y)
    assert out.shape == (2, 5)
    y2 = batch.y.clone()
    y2[:, 2] += 10.0  # changing y_3 must not change the predictions of y_1..y_3
    out2 = regression_predictions(model, batch.x, y2)
    assert torch.allclose(out[:, :3], out2[:, :3]) and not torch.allclose(out[:, 3:], out2[:, 3:])


def test_same_seed_same_model() -> None:
    cfg = TaskDiversityConfig.tiny().model_config()
    a, b = build_transformer(cfg, 3), build_transformer(cfg, 3)
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters(), strict=True))


def test_crossover_log2() -> None:
    assert crossover_log2([1.0, 2.0, 3.0], [-1.0, -1.0, 1.0]) == 2.5
    assert crossover_log2([1.0, 2.0], [1.0, 2.0]) is None
