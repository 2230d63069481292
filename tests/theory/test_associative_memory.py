"""theory.associative_memory: outer-product memory, crosstalk predictions (003)."""

import math

import pytest
import torch

from transformer_math.bugs import plant
from transformer_math.theory.associative_memory import (
    OuterProductMemory,
    predicted_cosine,
    predicted_crosstalk_rms,
    predicted_nearest_error,
    random_unit_vectors,
    retrieval_stats,
)

F64 = torch.float64


def test_transposed_bug_breaks_exact_recall_of_orthonormal_keys():
    """Planted memory.outer-product-transposed: W = sum k_i v_i^T. With orthonormal keys the
    correct memory returns every value exactly (no crosstalk); the transposed one does not."""
    g = torch.Generator().manual_seed(0)
    keys = torch.linalg.qr(torch.randn(16, 16, generator=g, dtype=F64))[0][:8]  # orthonormal
    values = random_unit_vectors(8, 16, generator=g)
    good = OuterProductMemory(keys, values)
    assert torch.allclose(good.retrieve(keys), values, atol=1e-12)
    with plant("memory.outer-product-transposed"):
        bad = OuterProductMemory(keys, values)
    assert (bad.retrieve(keys) - values).abs().max() > 0.1
    assert torch.allclose(bad.weight, good.weight.T, atol=1e-15)


def test_predictions():
    assert predicted_crosstalk_rms(65, 64) == pytest.approx(1.0)
    assert predicted_cosine(65, 64) == pytest.approx(1 / math.sqrt(2))
    # the Gaussian estimate: tiny at N = d = 64, large at N = 4d, monotone in N
    errs = [predicted_nearest_error(n, 64) for n in (16, 64, 128, 256)]
    assert errs == sorted(errs)
    assert errs[1] < 3e-3 and errs[3] > 0.2
    with pytest.raises(ValueError):
        predicted_nearest_error(1, 64)


def test_nearest_value_accuracy_at_n_equals_d_while_cosine_is_low():
    g = torch.Generator().manual_seed(1)
    keys, values = random_unit_vectors(64, 64, generator=g), random_unit_vectors(64, 64,
                                                                                generator=g)
    stats = retrieval_stats(OuterProductMemory(keys, values), keys, values)
    assert stats.mean_cosine < 0.8
    assert stats.nearest_value_accuracy >= 0.98
