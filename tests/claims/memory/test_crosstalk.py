"""claims.memory.crosstalk and the memories of theory.associative_memory (003)."""

import torch

from transformer_math.claims.memory.crosstalk import RATIOS, _sweep
from transformer_math.theory.associative_memory import (
    GatedMLPMemory,
    OuterProductMemory,
    random_unit_vectors,
    retrieval_stats,
)


def test_associative_memory_basic():
    g = torch.Generator().manual_seed(0)
    keys = random_unit_vectors(16, 64, generator=g)
    values = random_unit_vectors(16, 64, generator=g)
    lin = retrieval_stats(OuterProductMemory(keys, values), keys, values)
    gated = retrieval_stats(GatedMLPMemory(keys, values), keys, values)
    assert gated.mean_cosine > lin.mean_cosine
    assert gated.nearest_value_accuracy == 1.0
    ident = GatedMLPMemory(keys, values, threshold=0.0, gate=False)
    assert torch.allclose(ident.retrieve(keys), OuterProductMemory(keys, values).retrieve(keys))


def test_sweep_crosstalk_follows_n_minus_1_over_d_and_correlation_inflates_it():
    done: list[float] = []
    clean = _sweep([32], 8, 0.0, torch.Generator().manual_seed(0), done.append)
    assert done == [1.0] and len(clean.rows) == len(RATIOS)
    assert all(r["ok"] for r in clean.rows)
    assert set(clean.equal_size) == {32}
    correlated = _sweep([32], 8, 0.3, torch.Generator().manual_seed(0), lambda _: None)
    # shared direction: k_j^T k_i ~ 0.3 instead of 0, so the crosstalk exceeds (N-1)/d
    assert all(r["measured"] > r["pred"] for r in correlated.rows)
