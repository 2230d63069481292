import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from transformer_math.diagnostics.attention_stats import effective_rank, normalized_entropy
from transformer_math.diagnostics.qk_spectrum import QKSpectrumMonitor, qk_spectrum
from transformer_math.functional.attention import scaled_dot_product_attention
from transformer_math.functional.critical_scaling import (
    critical_gamma,
    log_length_scale_fn,
    simplex_self_weight,
    simplex_tokens,
)
from transformer_math.nn.attention import MultiHeadAttention
from transformer_math.nn.kernel_regression import (
    EpanechnikovKernel,
    GaussianKernel,
    NadarayaWatson,
    SoftmaxAttentionKernel,
    nadaraya_watson,
)
from transformer_math.nn.sets import (
    DeepSets,
    InducedSetAttentionBlock,
    PoolingByMultiheadAttention,
    SetAttentionBlock,
    SetTransformer,
)
from transformer_math.theory.associative_memory import (
    GatedMLPMemory,
    OuterProductMemory,
    random_unit_vectors,
    retrieval_stats,
)

F64 = torch.float64


def test_nw_identity_float_precision():
    torch.manual_seed(0)
    mha = MultiHeadAttention(8, 2, backend="reference").to(F64)
    x = torch.randn(1, 5, 8, dtype=F64)
    q, k, v = mha.project_qkv(x, x, x)
    att = scaled_dot_product_attention(q, k, v).output[0, 1]
    kern = SoftmaxAttentionKernel.from_attention(mha, 1)
    nw = nadaraya_watson(x[0], x[0], v[0, 1], kern)
    assert torch.allclose(att, nw, atol=1e-13)


def test_nadaraya_watson_regressor_and_epanechnikov_support():
    x = torch.linspace(0, 1, 50, dtype=F64).unsqueeze(1)
    y = torch.sin(2 * math.pi * x[:, 0])
    reg = NadarayaWatson(GaussianKernel(0.05)).fit(x, y)
    pred = reg(torch.tensor([[0.25]], dtype=F64))
    assert abs(float(pred) - 1.0) < 0.05
    far = NadarayaWatson(EpanechnikovKernel(0.1)).fit(x, y)(torch.tensor([[5.0]], dtype=F64))
    assert float(far) == 0.0  # no point within the bandwidth: zero, not NaN
    with pytest.raises(ValueError, match="fitted"):
        NadarayaWatson(GaussianKernel())(x)
    with pytest.raises(ValueError, match="bandwidth"):
        GaussianKernel(-1.0)


def _perm_strategy():
    return st.integers(min_value=2, max_value=9).flatmap(
        lambda n: st.tuples(st.just(n), st.permutations(list(range(n))), st.integers(0, 2**16))
    )


_torch_models = None


def _models():
    global _torch_models
    if _torch_models is None:
        torch.manual_seed(0)
        _torch_models = {
            "sum": DeepSets(3, 16, 2, pooling="sum"),
            "mean": DeepSets(3, 16, 2, pooling="mean"),
            "max": DeepSets(3, 16, 2, pooling="max"),
            "st": SetTransformer(3, 8, 2, num_heads=2, num_sab=1, num_seeds=2),
            "sab": SetAttentionBlock(3, 1),
            "isab": InducedSetAttentionBlock(3, 1, 2),
            "pma": PoolingByMultiheadAttention(3, 1, 2),
        }
        for m in _torch_models.values():
            m.to(F64).eval()
    return _torch_models


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
    x = torch.randn(1, 6, 3, dtype=F64)
    pad = torch.tensor([[False] * 4 + [True] * 2])
    with torch.no_grad():
        for name in ("sum", "mean", "max", "st"):
            assert torch.allclose(models[name](x, pad), models[name](x[:, :4]), atol=1e-10), name


def test_qk_monitor_rotation_complex_eigenvalues():
    theta = 0.7
    c, s_ = math.cos(theta), math.sin(theta)
    rot = torch.tensor([[c, -s_], [s_, c]], dtype=F64)
    spec = qk_spectrum(rot)
    got = sorted(spec.eigenvalues.tolist(), key=lambda z: z.imag)
    assert abs(got[0] - complex(c, -s_)) < 1e-12
    assert abs(got[1] - complex(c, s_)) < 1e-12
    assert spec.max_imag == pytest.approx(math.sin(theta))
    # a symmetric-only routine sees a different (real) matrix: the demonstration of the seed's bug
    wrong = torch.linalg.eigvalsh(rot)
    assert not wrong.is_complex()
    assert torch.allclose(spec.symmetric_eigenvalues, torch.full((2,), math.cos(theta), dtype=F64))
    assert torch.allclose(spec.singular_values, torch.ones(2, dtype=F64))


def test_qk_monitor_hooks_on_model():
    torch.manual_seed(0)
    model = torch.nn.Sequential(MultiHeadAttention(8, 2))

    class Wrap(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.att = MultiHeadAttention(8, 2, num_kv_heads=1)

        def forward(self, x):
            return self.att(x).output

    wrap = Wrap()
    with QKSpectrumMonitor(wrap).attach(every=2) as mon:
        for _ in range(3):
            wrap(torch.randn(1, 4, 8))
    assert [r["step"] for r in mon.history] == [0, 0, 2, 2]
    wrap(torch.randn(1, 4, 8))
    assert len(mon.history) == 4  # detached
    rows = QKSpectrumMonitor(model).measure(step=5)
    assert len(rows) == 2 and rows[0]["step"] == 5


def test_attention_stats():
    uniform = torch.full((3, 5), 0.2)
    assert torch.allclose(normalized_entropy(uniform), torch.ones(3))
    assert float(effective_rank(torch.eye(4))) == pytest.approx(4.0)
    assert float(effective_rank(torch.ones(4, 4))) == pytest.approx(1.0)


def test_critical_scaling_closed_form_and_scale_fn():
    n, rho, gamma = 64, 0.5, 2.5
    y = simplex_tokens(n, rho)
    gram = y @ y.T
    assert torch.allclose(torch.diagonal(gram), torch.ones(n, dtype=F64))
    beta = log_length_scale_fn(gamma, divide_by_sqrt_head_dim=False)(n + 1, n)
    yy = y[None, None]
    w = scaled_dot_product_attention(yy, yy, yy, scale=beta, return_weights=True).weights
    assert float(w[0, 0, 0, 0]) == pytest.approx(simplex_self_weight(n, gamma, rho), rel=1e-12)
    assert critical_gamma(rho) == 2.0
    mha = MultiHeadAttention(8, 2, scale_fn=log_length_scale_fn(1.0))
    mha(torch.randn(1, 5, 8))
    with pytest.raises(ValueError, match="gamma"):
        log_length_scale_fn(-1.0)


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
