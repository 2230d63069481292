"""claims.memory.crosstalk and the memories of theory.associative_memory (003)."""

import pytest
import torch

from transformer_math.bugs import plant
from transformer_math.claims.memory.crosstalk import (
    RATIOS,
    _sweep,
    check_outer_product_crosstalk,
)
from transformer_math.claims.registry import CLAIMS, Context, Size, Verdict
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


def test_sweep_crosstalk_follows_n_minus_1_over_d_and_the_bug_inflates_it():
    done: list[float] = []
    clean = _sweep([32], 8, torch.Generator().manual_seed(0), done.append)
    assert done == [1.0] and len(clean.rows) == len(RATIOS)
    assert all(r["z"] <= 5 for r in clean.rows)
    with plant("memory.outer-product-transposed"):
        bad = _sweep([32], 8, torch.Generator().manual_seed(0), lambda _: None)
    # W^T k_i = sum_j k_j (v_j . k_i): nothing of v_i is left, crosstalk ~ 1 + N/d
    assert all(r["measured"] > r["pred"] + 0.5 for r in bad.rows)


def test_claim_verified_with_the_nearest_value_point():
    c = CLAIMS["memory.outer-product-crosstalk"]
    ev = check_outer_product_crosstalk(Context(seed=0, size=Size.TINY))
    assert ev.verdict is Verdict.VERIFIED is c.expected
    at_d = ev.measured["at_N_eq_d"]
    # the review's point: at N = d the cosine is ~0.71 and yet decoding is right
    assert all(v["cosine"] < 0.75 and v["nearest_accuracy"] >= 0.99 for v in at_d.values())


@pytest.mark.slow
def test_claim_falsifier_caught(quick_runs):
    result = quick_runs(0)["memory.outer-product-crosstalk"].result
    assert result.error is None and result.falsifier_caught is True
    assert "memory.outer-product-transposed" in result.reached
