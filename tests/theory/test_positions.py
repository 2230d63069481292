"""Tests of theory/positions.py: the closed forms the position claims compare against."""

from __future__ import annotations

import math

import pytest
import torch

from transformer_math.functional.rope import rotary_matrix
from transformer_math.functional.rope_scaling import default_inv_freq
from transformer_math.nn.position import ALiBi
from transformer_math.theory.positions import (
    aliased_fraction,
    alibi_closed_form_slopes,
    reflection_family,
    roformer_relative_bound,
    seed_ndim_rope_tables,
)


def test_roformer_bound_decays_and_starts_at_its_mean_partial_sum() -> None:
    inv = default_inv_freq(128, 1e4)
    bound = roformer_relative_bound(inv, torch.arange(0, 257))
    # s = 0: every e^{i 0} = 1, |S_j| = j, mean over j = 1..64 is 32.5
    assert math.isclose(float(bound[0]), 32.5, rel_tol=1e-12)
    assert float(bound[200:].mean()) < 0.5 * float(bound[1:9].mean())
    # equal frequencies θ = 1: the bound oscillates with s but never decays
    equal = roformer_relative_bound(torch.ones(64, dtype=torch.float64), torch.arange(0, 257))
    assert float(equal[200:].mean()) > 0.5 * float(equal[1:9].mean())


def test_alibi_slopes_closed_form() -> None:
    assert alibi_closed_form_slopes(1) == [2.0 ** -8]
    assert alibi_closed_form_slopes(4) == [2.0 ** (-2 * k) for k in range(1, 5)]
    six = alibi_closed_form_slopes(6)  # 4 of the 4-head rule, then 2^-1, 2^-3 (8-head odds)
    assert six == [2.0 ** -2, 2.0 ** -4, 2.0 ** -6, 2.0 ** -8, 2.0 ** -1, 2.0 ** -3]
    for h in (2, 6, 8, 12):
        torch.testing.assert_close(ALiBi(h).slopes.double(),
                                   torch.tensor(alibi_closed_form_slopes(h), dtype=torch.float64))
    with pytest.raises(ValueError):
        alibi_closed_form_slopes(0)


def test_reflections_are_orthogonal_but_not_a_group() -> None:
    inv = default_inv_freq(8, 1e4)
    f3, f5, f2 = (reflection_family(p, inv) for p in (3, 5, 2))
    eye = torch.eye(8, dtype=torch.float64)
    torch.testing.assert_close(f3.T @ f3, eye)
    # f(m)^T f(n) is a rotation by ±(n - m) θ per plane (det +1), f(n - m) a reflection (det -1)
    product = f3.T @ f5
    assert float(torch.linalg.det(product[:2, :2])) == pytest.approx(1.0)
    assert float(torch.linalg.det(f2[:2, :2])) == pytest.approx(-1.0)
    rotations = (rotary_matrix(2, inv), rotary_matrix(-2, inv))
    assert any(torch.allclose(product, r) for r in rotations)
    assert float((product - f2).abs().max()) > 0.1


def test_aliased_fraction_bounds() -> None:
    inv = default_inv_freq(16, 1e4)
    high = torch.nonzero(2 * math.pi / inv < 64).flatten()
    on_high = aliased_fraction(inv, high, 64, 512, 0.3)
    on_all = aliased_fraction(inv, torch.arange(8), 64, 512, 0.3)
    assert 0.0 <= on_all < on_high <= 1.0
    assert aliased_fraction(inv, high, 64, 512, math.pi) == 1.0  # every phase is within π


def test_seed_ndim_tables_build_half_the_frequencies() -> None:
    n_freq, shape = seed_ndim_rope_tables(64, 2, 32)
    assert n_freq == 16 and shape == (1, 1, 32, 32)


# ------------------------------------------------------------ independent closed forms (issue 14)


def test_vaswani_formula_and_shift_matrix() -> None:
    import math

    from transformer_math.theory.positions import vaswani_shift_matrix, vaswani_sinusoid

    pe = vaswani_sinusoid(40, 8)
    assert pe[3, 2] == pytest.approx(math.sin(3 / 10000 ** (2 / 8)))
    assert pe[3, 3] == pytest.approx(math.cos(3 / 10000 ** (2 / 8)))
    M = vaswani_shift_matrix(5, 8)
    torch.testing.assert_close(pe[5:], pe[:-5] @ M.T, atol=1e-12, rtol=0)


def test_closed_form_frequencies_by_hand() -> None:
    import math

    from transformer_math.theory.positions import closed_form_rope_frequencies, roformer_frequencies

    assert roformer_frequencies(4, 100.0) == [1.0, 0.1]
    lin, f = closed_form_rope_frequencies("linear", 4, 100.0, {"factor": 2.0})
    assert lin == [0.5, 0.05] and f == 1.0
    ntk, _ = closed_form_rope_frequencies("ntk", 4, 100.0, {"factor": 2.0})
    assert ntk[0] == 1.0 and ntk[1] == pytest.approx(0.1 / 2)  # lowest pair divided by s
    _, yf = closed_form_rope_frequencies("yarn", 4, 100.0, {
        "factor": 4.0, "original_max_position_embeddings": 64})
    assert yf == pytest.approx(0.1 * math.log(4) + 1)
    short, _ = closed_form_rope_frequencies("longrope", 4, 100.0, {
        "original_max_position_embeddings": 64, "short_factor": [1, 1], "long_factor": [2, 4],
        "factor": 4.0}, 64)
    long, lf = closed_form_rope_frequencies("longrope", 4, 100.0, {
        "original_max_position_embeddings": 64, "short_factor": [1, 1], "long_factor": [2, 4],
        "factor": 4.0}, 65)
    assert short == [1.0, 0.1] and long == [0.5, 0.025]
    assert lf == pytest.approx(math.sqrt(1 + math.log(4) / math.log(64)))


def test_axial_closed_form() -> None:
    from transformer_math.theory.positions import axial_angles_closed_form

    got = axial_angles_closed_form(torch.tensor([[2.0, 3.0]]), [1.0, 0.5, 0.25], [2, 1])
    assert got.tolist() == [[2.0, 1.0, 0.75]]
