"""Jacobian norms, attention entropy and FLOP counts on cases with known answers."""

from __future__ import annotations

import math

import pytest
import torch

from transformer_math.diagnostics import (
    attention_entropy,
    count_flops,
    jacobian_matrix,
    jacobian_spectral_norm,
)
from transformer_math.functional import softmax_jacobian, stable_softmax


def _matrix_with_singular_values(values: list[float], seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    n = len(values)
    u, _ = torch.linalg.qr(torch.randn(n + 2, n, generator=g, dtype=torch.float64))
    v, _ = torch.linalg.qr(torch.randn(n, n, generator=g, dtype=torch.float64))
    return u @ torch.diag(torch.tensor(values, dtype=torch.float64)) @ v.T  # (n + 2, n)


def test_jacobian_of_a_linear_map_is_the_matrix():
    W = _matrix_with_singular_values([3.0, 2.0, 0.5, 0.1])
    x = torch.randn(4, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    J = jacobian_matrix(lambda z: W @ z, x)
    assert J.shape == (6, 4)
    torch.testing.assert_close(J, W)


@pytest.mark.parametrize("method", ["exact", "power"])
def test_spectral_norm_of_a_linear_map(method):
    W = _matrix_with_singular_values([3.0, 2.0, 0.5, 0.1])
    x = torch.zeros(4, dtype=torch.float64)
    g = torch.Generator().manual_seed(2)
    norm = jacobian_spectral_norm(lambda z: W @ z, x, method=method, generator=g)
    assert norm == pytest.approx(3.0, rel=1e-6)


def test_spectral_norm_on_matrix_inputs_and_nonlinear_map():
    # f(X) = tanh(X) elementwise at X = 0 has Jacobian I; at X = a it is diag(1 - tanh(a)^2).
    x = torch.full((2, 3), 0.5, dtype=torch.float64)
    expected = 1 - math.tanh(0.5) ** 2
    assert jacobian_spectral_norm(torch.tanh, x) == pytest.approx(expected, rel=1e-12)
    g = torch.Generator().manual_seed(3)
    assert jacobian_spectral_norm(torch.tanh, x, method="power", generator=g) == pytest.approx(
        expected, rel=1e-6
    )


def test_softmax_jacobian_matches_autograd():
    z = torch.tensor([0.3, -1.2, 2.0, 0.0], dtype=torch.float64)
    auto = jacobian_matrix(lambda t: stable_softmax(t, dim=-1), z)
    torch.testing.assert_close(auto, softmax_jacobian(stable_softmax(z, dim=-1)))


def test_bad_method_is_rejected():
    with pytest.raises(ValueError, match="method"):
        jacobian_spectral_norm(torch.tanh, torch.zeros(2), method="svd")


def test_attention_entropy_limits():
    one_hot = torch.tensor([[0.0, 1.0, 0.0, 0.0]])
    uniform = torch.full((1, 4), 0.25)
    assert float(attention_entropy(one_hot)) == 0.0
    assert float(attention_entropy(uniform)) == pytest.approx(math.log(4))


def test_flop_count_of_a_known_matmul():
    a, b = torch.randn(8, 16), torch.randn(16, 4)
    counts = count_flops(torch.matmul, a, b)
    assert counts.total == 2 * 8 * 16 * 4
    assert counts.by_operator == {"aten.mm": 2 * 8 * 16 * 4}


def test_flop_count_of_a_batched_matmul_and_a_linear_layer():
    x = torch.randn(3, 5, 7)
    y = torch.randn(3, 7, 2)
    assert count_flops(torch.bmm, x, y).total == 2 * 3 * 5 * 7 * 2
    layer = torch.nn.Linear(7, 11)
    counts = count_flops(layer, x)
    assert counts.total == 2 * (3 * 5) * 7 * 11
    assert counts.module_total("Linear") == counts.total
