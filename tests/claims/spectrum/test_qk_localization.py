"""claims.spectrum.qk_localization: the constructed heads and the refutation of the seed."""

import math

import pytest
import torch

from transformer_math.bugs import plant
from transformer_math.claims.registry import Context, Size, Verdict, all_hold, decide
from transformer_math.claims.spectrum.qk_localization import (
    _head_with_spectrum,
    _pattern_entropy,
    _pearson,
    _seed_monitor_refutation,
    check_qk_localization,
)
from transformer_math.diagnostics.attention_stats import mean_attention_entropy
from transformer_math.diagnostics.qk_spectrum import head_qk_matrices, qk_spectrum
from transformer_math.functional.attention import scaled_dot_product_attention

F64 = torch.float64


@pytest.mark.parametrize(("mean", "std"), [(1.0, 0.5), (0.0, 1.0)])
def test_head_has_the_prescribed_spectrum(mean, std):
    mha = _head_with_spectrum(8, mean, std, torch.Generator().manual_seed(0))
    spec = qk_spectrum(head_qk_matrices(mha)[0])
    assert spec.eig_mean == pytest.approx(mean, abs=1e-10)
    assert spec.eig_variance == pytest.approx(std**2, abs=1e-10)
    assert spec.max_imag < 1e-8  # real eigenvalues by construction
    w = head_qk_matrices(mha)[0]
    assert (w - w.T).abs().max() > 1e-2  # ... of a non-symmetric matrix


def test_entropy_is_read_from_the_pattern_hook():
    mha = _head_with_spectrum(8, 1.0, 0.5, torch.Generator().manual_seed(1))
    x = torch.randn(2, 6, 8, generator=torch.Generator().manual_seed(2), dtype=F64)
    with torch.no_grad():
        q = (x @ mha.q_proj.weight.T)[:, None]
    weights = scaled_dot_product_attention(q, x[:, None], x[:, None], return_weights=True).weights
    assert _pattern_entropy(mha, x) == pytest.approx(mean_attention_entropy(weights), abs=1e-12)


def test_seed_monitor_reads_one_triangle_and_misses_the_rank():
    ref = _seed_monitor_refutation(32, torch.Generator().manual_seed(0))
    assert ref["reads_one_triangle"] < 1e-10
    assert ref["nonzero_true"] <= 8 < ref["nonzero_seed"]  # rank(W_QK) <= d_k = 8
    assert ref["sym_dev"] > 1e-3


def test_verdict_refutes_the_seed_by_measurement_and_the_monitor_bug_fails_it():
    ctx = Context(seed=0, size=Size.TINY)
    ev = check_qk_localization(ctx)
    assert ev.verdict is Verdict.REFUTED and all_hold(ev.margins)
    assert ev.verdict is decide(ev.margins, ev.seed_margins)
    assert not any(m.holds for m in ev.seed_margins)  # every seed statement fails on its own
    assert ev.details["kappa_entropy_correlation"] > 0.5  # kappa rises as attention spreads
    assert ev.details["seed_monitor_error"] > 1e-2 > 1e-8 > ev.details["monitor_error"]
    assert math.log(64) > max(ev.measured["entropy"])
    with plant("spectrum.eigvalsh-nonsymmetric"):
        wrong = check_qk_localization(ctx)
    assert wrong.verdict is Verdict.FAILED
    failing = {m.name for m in wrong.margins if not m.holds}
    assert "monitor error on the spectrum mean and variance" in failing
    assert wrong.measured["entropy"] == ev.measured["entropy"]  # the heads are the same


def test_pearson_in_both_directions():
    assert _pearson([1.0, 2.0, 3.0], [2.0, 4.0, 6.0]) == pytest.approx(1.0)
    assert _pearson([1.0, 2.0, 3.0], [3.0, 2.0, 1.0]) == pytest.approx(-1.0)
