"""data.regression: prompt sampling and the interleaved (x, y) tokens."""

from __future__ import annotations

import pytest
import torch

from transformer_math.bugs import plant
from transformer_math.data.regression import interleave_regression_tokens, sample_regression


def _gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def test_gaussian_inputs_have_the_requested_covariance() -> None:
    sigma = torch.tensor([[2.0, 0.5], [0.5, 1.0]])
    batch = sample_regression(20000, 1, 2, generator=_gen(1), sigma=sigma)
    cov = batch.x[:, 0].T @ batch.x[:, 0] / 20000
    assert torch.allclose(cov, sigma, atol=0.08)
    with pytest.raises(ValueError, match="x_distribution"):
        sample_regression(2, 2, 2, generator=_gen(0), x_distribution="cauchy")  # type: ignore[arg-type]


def test_interleaved_tokens() -> None:
    x = torch.arange(12.0).view(2, 3, 2)
    y = torch.tensor([[10.0, 20.0, 30.0], [40.0, 50.0, 60.0]])
    tokens = interleave_regression_tokens(x, y)
    assert tokens.shape == (2, 6, 3)
    assert torch.equal(tokens[:, 0::2, 0], torch.zeros(2, 3))  # x tokens (0, x_i)
    assert torch.equal(tokens[:, 0::2, 1:], x)
    assert torch.equal(tokens[:, 1::2, 0], y)  # y tokens (y_i, 0, ..., 0)
    assert torch.equal(tokens[:, 1::2, 1:], torch.zeros(2, 3, 2))
    with pytest.raises(ValueError, match="expected"):
        interleave_regression_tokens(x, y[:, :2])


def test_planted_label_before_input_swaps_the_tokens() -> None:
    x = torch.arange(6.0).view(1, 3, 2)
    y = torch.tensor([[10.0, 20.0, 30.0]])
    good = interleave_regression_tokens(x, y)
    assert good[0, 0].tolist() == [0.0, 0.0, 1.0] and good[0, 1].tolist() == [10.0, 0.0, 0.0]
    with plant("data.regression-label-before-input"):
        bad = interleave_regression_tokens(x, y)
    assert torch.equal(bad[:, 0::2], good[:, 1::2]) and torch.equal(bad[:, 1::2], good[:, 0::2])
