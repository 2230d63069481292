"""nn.sets: Deep Sets and the Set Transformer blocks are permutation symmetric (000 §8.3.2 B)."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from transformer_math.bugs import plant
from transformer_math.nn.hooks import run_with_cache
from transformer_math.nn.init import seeded
from transformer_math.nn.sets import (
    DeepSets,
    InducedSetAttentionBlock,
    PoolingByMultiheadAttention,
    SetAttentionBlock,
    SetTransformer,
    set_pool,
)

F64 = torch.float64


def _perm_strategy():
    return st.integers(min_value=2, max_value=9).flatmap(
        lambda n: st.tuples(st.just(n), st.permutations(list(range(n))), st.integers(0, 2**16))
    )


_MODELS: dict[str, torch.nn.Module] = {}


def _models() -> dict[str, torch.nn.Module]:
    if not _MODELS:
        builders = {
            "sum": lambda: DeepSets(3, 16, 2, pooling="sum"),
            "mean": lambda: DeepSets(3, 16, 2, pooling="mean"),
            "max": lambda: DeepSets(3, 16, 2, pooling="max"),
            "st": lambda: SetTransformer(3, 8, 2, num_heads=2, num_sab=1, num_seeds=2),
            "sab": lambda: SetAttentionBlock(3, 1),
            "isab": lambda: InducedSetAttentionBlock(3, 1, 2),
            "pma": lambda: PoolingByMultiheadAttention(3, 1, 2),
        }
        for name, build in builders.items():
            _MODELS[name] = seeded(build, 0).to(F64).eval()
    return _MODELS


@settings(max_examples=25, deadline=None)
@given(_perm_strategy())
def test_set_layers_permutation_symmetry(case):
    n, perm, seed = case
    perm = torch.tensor(perm)
    x = torch.randn(2, n, 3, generator=torch.Generator().manual_seed(seed), dtype=F64)
    models = _models()
    with torch.no_grad():
        for name in ("sum", "mean", "max", "st", "pma"):
            assert torch.allclose(models[name](x[:, perm]), models[name](x), atol=1e-10), name
        for name in ("sab", "isab"):
            assert torch.allclose(models[name](x[:, perm]), models[name](x)[:, perm], atol=1e-10)


def test_set_padding_mask_equals_smaller_set():
    models = _models()
    x = torch.randn(1, 6, 3, generator=torch.Generator().manual_seed(3), dtype=F64)
    pad = torch.tensor([[False] * 4 + [True] * 2])
    with torch.no_grad():
        for name in ("sum", "mean", "max", "st"):
            assert torch.allclose(models[name](x, pad), models[name](x[:, :4]), atol=1e-10), name


def test_padded_elements_get_no_attention_weight():
    sab = _models()["sab"]
    x = torch.randn(1, 6, 3, generator=torch.Generator().manual_seed(4), dtype=F64)
    pad = torch.tensor([[False] * 4 + [True] * 2])
    _, cache = run_with_cache(sab, x, pad, names=["mab.attention.hook_pattern"])
    weights = cache["mab.attention.hook_pattern"]  # (1, 1, 6, 6)
    assert torch.all(weights[..., 4:] == 0)
    assert torch.allclose(weights.sum(-1), torch.ones(1, 1, 6, dtype=F64))


def test_set_pool_rules_and_errors():
    h = torch.tensor([[[1.0], [3.0], [-5.0]]])
    mask = torch.tensor([[False, False, True]])
    assert set_pool(h, "sum", mask).item() == 4.0
    assert set_pool(h, "mean", mask).item() == 2.0
    assert set_pool(h, "max", mask).item() == 3.0
    assert set_pool(h, "max", torch.ones(1, 3, dtype=torch.bool)).item() == 0.0
    with pytest.raises(ValueError, match="pooling"):
        set_pool(h, "median")
    with pytest.raises(ValueError, match="shape"):
        DeepSets(3, 4, 1)(torch.randn(2, 5, 4))


def test_sab_over_batch_bug_mixes_sets_and_loses_per_set_equivariance():
    """Planted sets.sab-attends-over-batch: SAB attends along the batch axis, so the output of
    set 0 depends on set 1 and permuting one set alone is not equivariant; the correct SAB
    treats every set on its own."""
    sab = seeded(lambda: SetAttentionBlock(3, 1), 0).to(F64).eval()
    g = torch.Generator().manual_seed(5)
    x = torch.randn(3, 6, 3, generator=g, dtype=F64)
    x2 = x.clone()
    x2[1] = torch.randn(6, 3, generator=g, dtype=F64)  # change set 1 only
    perm = torch.tensor([2, 0, 1, 5, 3, 4])
    xp = x.clone()
    xp[0] = x[0, perm]  # permute set 0 only
    with torch.no_grad():
        assert torch.allclose(sab(x)[0], sab(x2)[0], atol=1e-12)
        assert torch.allclose(sab(xp)[0], sab(x)[0, perm], atol=1e-12)
        with plant("sets.sab-attends-over-batch"):
            assert (sab(x)[0] - sab(x2)[0]).abs().max() > 1e-3
            assert (sab(xp)[0] - sab(x)[0, perm]).abs().max() > 1e-3
