"""Sensitivity diagnostics: the log-log fit, Hahn's 1/n decay and PARITY's sensitivity 1."""

from __future__ import annotations

import pytest
import torch

from transformer_math.bugs import plant
from transformer_math.data.parity import parity
from transformer_math.diagnostics.fits import fit_power_law
from transformer_math.diagnostics.sensitivity import (
    BoundedAttentionLayer,
    boolean_sensitivity,
    single_flip_sensitivity,
)


def test_fit_recovers_a_known_power_law():
    xs = [16.0, 64.0, 256.0, 1024.0]
    fit = fit_power_law(xs, [3.0 / x for x in xs])
    assert fit.exponent == pytest.approx(-1.0, abs=1e-12)
    assert fit.prefactor == pytest.approx(3.0, rel=1e-12)
    assert fit.r2 == pytest.approx(1.0)
    with pytest.raises(ValueError, match="positive"):
        fit_power_law([1.0, 2.0], [1.0, 0.0])
    with pytest.raises(ValueError, match="at least 2 points"):
        fit_power_law([1.0], [1.0])


def test_bounded_layer_sensitivity_decays_like_one_over_n_and_respects_the_bound():
    layer = BoundedAttentionLayer(8, torch.Generator().manual_seed(0))
    ns = [16, 64, 256]
    sens = [single_flip_sensitivity(layer, n, 16, torch.Generator().manual_seed(n)) for n in ns]
    assert fit_power_law([float(n) for n in ns], sens).exponent == pytest.approx(-1.0, abs=0.2)
    assert all(s <= layer.hahn_bound(n + 1) for s, n in zip(sens, ns, strict=True))


def test_attention_normalised_over_the_wrong_axis_does_not_decay():
    """The probe runs the library's attention: its softmax over the (single) query axis leaves
    e^{s_j} unnormalised, and one symbol's influence no longer decays with n."""
    layer = BoundedAttentionLayer(8, torch.Generator().manual_seed(0))

    def sens(n: int) -> float:
        return single_flip_sensitivity(layer, n, 16, torch.Generator().manual_seed(1))

    assert sens(256) < 0.25 * sens(16)  # the correct layer: ~1/n (16x fewer at 16x the length)
    with plant("attention.softmax-wrong-axis"):
        a, b = sens(16), sens(256)
    assert b == pytest.approx(a, rel=0.5)


def test_boolean_sensitivity_of_parity_and_majority():
    bits = torch.randint(0, 2, (64, 9), generator=torch.Generator().manual_seed(0))
    assert boolean_sensitivity(parity, bits) == 1.0

    def majority(b: torch.Tensor) -> torch.Tensor:
        return (b.sum(-1) * 2 > b.shape[-1]).long()

    assert boolean_sensitivity(majority, bits) < 0.5
