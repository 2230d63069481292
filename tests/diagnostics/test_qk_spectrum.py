"""diagnostics.qk_spectrum: the W_QK spectra and the monitor (Bao et al. 2024; 004 ch. 12)."""

import math

import pytest
import torch

from transformer_math.bugs import plant
from transformer_math.diagnostics.qk_spectrum import (
    QKSpectrumMonitor,
    head_qk_matrices,
    qk_spectrum,
)
from transformer_math.nn.attention import MultiHeadAttention
from transformer_math.nn.config import TransformerConfig
from transformer_math.nn.hooks import run_with_cache
from transformer_math.nn.init import seeded
from transformer_math.nn.transformer import build_transformer

F64 = torch.float64


def test_rotation_has_complex_eigenvalues():
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


@pytest.mark.parametrize("num_kv_heads", [2, 1])
def test_head_matrices_give_the_logits_read_at_the_hooks(num_kv_heads):
    """x_i^T W_QK^(h) x_j / sqrt(d_k) is the logit seen at hook_scores (no bias, no positions)."""
    mha = seeded(lambda: MultiHeadAttention(8, 2, num_kv_heads=num_kv_heads, bias=False,
                                            backend="reference"), 0).to(F64)
    x = torch.randn(1, 5, 8, generator=torch.Generator().manual_seed(1), dtype=F64)
    _, cache = run_with_cache(mha, x, names=["hook_scores"])
    w = head_qk_matrices(mha)  # (H, d, d)
    logits = torch.einsum("td,hde,se->hts", x[0], w, x[0]) / math.sqrt(mha.head_dim)
    assert torch.allclose(cache["hook_scores"][0], logits, atol=1e-12)


def test_monitor_forward_hooks_and_detach():
    class Wrap(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.att = MultiHeadAttention(8, 2, num_kv_heads=1)

        def forward(self, x):
            return self.att(x)

    wrap = seeded(Wrap, 0)
    g = torch.Generator().manual_seed(0)
    with QKSpectrumMonitor(wrap).attach(every=2) as mon:
        for _ in range(3):
            wrap(torch.randn(1, 4, 8, generator=g))
    assert [r["step"] for r in mon.history] == [0, 0, 2, 2]
    wrap(torch.randn(1, 4, 8, generator=g))
    assert len(mon.history) == 4  # detached
    rows = QKSpectrumMonitor(torch.nn.Sequential(wrap.att)).measure(step=5)
    assert len(rows) == 2 and rows[0]["step"] == 5
    with pytest.raises(ValueError, match="no attention module"):
        QKSpectrumMonitor(torch.nn.Linear(2, 2))


def test_monitor_finds_every_layer_of_a_transformer():
    cfg = TransformerConfig(hidden_size=16, num_layers=2, num_heads=4, vocab_size=11,
                            max_seq_len=8)
    model = build_transformer(cfg, 0)
    rows = QKSpectrumMonitor(model).measure(step=0)
    assert sorted({r["module"] for r in rows}) == ["layers.0.attn", "layers.1.attn"]
    assert len(rows) == 2 * 4
    # rank(W_QK) <= d_k = 4 < d = 16: mean |lambda|^2 is spread over at most d_k eigenvalues
    assert all(r["max_imag"] is not None and r["eig_variance"] >= 0 for r in rows)


def test_planted_eigvalsh_reads_one_triangle_and_eigvals_is_right():
    g = torch.Generator().manual_seed(3)
    p = torch.eye(6, dtype=F64) + 0.3 * torch.randn(6, 6, generator=g, dtype=F64)
    lam = torch.tensor([0.5, 1.0, 1.5, 2.0, 2.5, 3.0], dtype=F64)
    w = p @ torch.diag(lam) @ torch.linalg.inv(p)  # non-symmetric, known real spectrum
    good = qk_spectrum(w)
    assert good.eig_mean == pytest.approx(1.75, abs=1e-10)
    assert good.eig_variance == pytest.approx(float(lam.var(correction=0)), abs=1e-10)
    with plant("spectrum.eigvalsh-nonsymmetric"):
        bad = qk_spectrum(w)
    torch.testing.assert_close(bad.eigenvalues.real, torch.linalg.eigvalsh(w))
    assert abs(bad.eig_variance - good.eig_variance) > 1e-3
