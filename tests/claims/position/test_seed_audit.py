"""Issue 18, the seed audit of 000 §8.3.3 and 004's RoPE parts: each extended or new position
claim refutes the seed's version by a measured seed margin, holds its own margins, and fails
with its planted falsifier; plus the closed forms and counterexamples of theory/rope_audit.py in
both directions."""

from __future__ import annotations

import math

import pytest
import torch

from transformer_math.bugs import plant
from transformer_math.claims.position.axial import check_axial_rope
from transformer_math.claims.position.encodings import check_sinusoidal_shift
from transformer_math.claims.position.representation import check_rope_torus_representation
from transformer_math.claims.position.rope import (
    check_rope_group_property,
    check_rope_orthogonal,
    check_rope_relative,
)
from transformer_math.claims.registry import Context, Size, Verdict, all_hold, get_claim
from transformer_math.theory import rope_audit as ra

CTX = Context(seed=0, size=Size.TINY)

CASES = [
    # (check, falsifier, seed margins that must fail (substring of their names))
    (check_sinusoidal_shift, "sinusoid.frequency-exponent", ["000:574"]),
    (check_rope_orthogonal, "rope.layout-no-permutation", ["004:263"]),
    (check_rope_torus_representation, "rope.cos-sin-swapped", ["004:429"]),
    (check_axial_rope, "rope.axial-sections-interleaved", ["004:527", "004:551"]),
]
# issue 31: the seed margins of 000:576 (a sufficient condition), 000:614 (uniqueness up to
# f(0)), 004:399/405 (the ⊗ of '直积群') and 000:670/686 (a question, an exercise) are gone
DROPPED = [(check_sinusoidal_shift, "000:576"), (check_rope_torus_representation, "004:399"),
           (check_rope_torus_representation, "004:405"), (check_axial_rope, "000:670")]


@pytest.mark.parametrize(("check", "bug", "seed_lines"), CASES,
                         ids=[c[0].__name__ for c in CASES])
def test_refuted_by_measurement_and_falsifier_fails(check, bug, seed_lines) -> None:
    ev = check(CTX)
    assert ev.verdict is Verdict.REFUTED, [m for m in ev.margins if not m.holds]
    assert all_hold(ev.margins)
    failing = [m.name for m in ev.seed_margins if not m.holds]
    for line in seed_lines:
        assert any(line in name for name in failing), (line, failing)
    with plant(bug):
        bad = check(CTX)
    assert bad.verdict is Verdict.FAILED


def test_sinusoid_injective_at_base_100_and_with_one_pair() -> None:
    ev = check_sinusoidal_shift(CTX)
    m = ev.measured
    assert m["base 100 min distance"] > 1.0  # the nearest codes are neighbours
    assert m["base 100 |PE(744) - PE(200)|"] > 5.0  # the seed's collision is not one
    assert m["base 100 lowest pair |Δ| at shift 544"] < 1e-2  # only that pair nearly repeats
    assert m["one pair nearest shift"] == 710  # 710/113 ≈ 2π
    assert 1e-5 < m["one pair nearest return"] < 1e-4


@pytest.mark.parametrize(("check", "line"), DROPPED, ids=[f"{c.__name__}-{x}" for c, x in DROPPED])
def test_dropped_seed_readings_are_not_seed_margins(check, line) -> None:
    ev = check(CTX)
    assert not any(line in m.name for m in ev.seed_margins), line


def test_rope_group_uniqueness_counterexamples_are_reported_not_refuted() -> None:
    ev = check_rope_group_property(CTX)
    assert ev.verdict is Verdict.VERIFIED and not ev.seed_margins
    assert ev.measured["2-D continuous_distance"] == pytest.approx(2.0)
    assert ev.measured["2-D integer_det_at_1"] == pytest.approx(-1.0)
    with plant("rope.cos-sin-swapped"):
        assert check_rope_group_property(CTX).verdict is Verdict.FAILED


def test_rope_relative_carries_the_roformer_correction() -> None:
    c = get_claim("position.rope-relative")
    assert [(x.seed, x.line) for x in c.corrections] == [("004", 230), ("004", 1087)]
    assert "2104.09864" in c.corrections[0].source
    assert check_rope_relative(CTX).verdict is Verdict.VERIFIED


def test_corrections_on_scaling_and_axial() -> None:
    assert [(x.seed, x.line) for x in get_claim("position.scaling-methods").corrections] == [
        ("004", 499)]
    assert [(x.seed, x.line) for x in get_claim("position.axial-rope").corrections] == [
        ("004", 449)]


# ---------------------------------------------------------------- theory/rope_audit, both ways


def test_exp_of_generator_is_rotation_and_torus_is_faithful() -> None:
    J = ra.so2_generator()
    for a in (0.1, 2.0, -3.0):
        assert torch.allclose(torch.linalg.matrix_exp(a * J), ra.rotation_2d(a), atol=1e-12)
    phi = torch.tensor([0.5, 6.0, 3.1], dtype=torch.float64)
    assert torch.allclose(ra.torus_phases(ra.torus_element(phi)), phi, atol=1e-12)
    # two different torus elements never give the same matrix
    other = phi.clone()
    other[1] += 0.01
    assert (ra.torus_element(phi) - ra.torus_element(other)).abs().max() > 1e-3


def test_kronecker_is_not_the_direct_sum() -> None:
    a, b = 0.4, 1.1
    kron = ra.kronecker_rotations([a, b])
    direct = torch.block_diag(ra.rotation_2d(a), ra.rotation_2d(b))
    assert kron.shape == direct.shape == (4, 4)
    assert (kron - direct).abs().max() > 0.1
    assert ra.kronecker_rotations([0.0] * 4).shape == (16, 16)  # 2^{d/2} for d = 8
    prod = ra.plane_rotation(4, 0, a) @ ra.plane_rotation(4, 1, b)
    assert torch.allclose(prod, direct, atol=1e-15)


def test_relative_defect_both_directions() -> None:
    triples = [(1, 4, 3), (-2, 5, 7), (0, 0, 9)]
    F = ra.reflection(0.3)
    assert ra.relative_defect(ra.power_family(F, ra.rotation_2d(0.5)), triples) < 1e-12
    # a family that is not a homomorphism: f(m) = R(m^2 θ) (orthogonal, not relative)
    assert ra.relative_defect(lambda m: ra.rotation_2d(0.1 * m * m), triples) > 0.1
    assert ra.distance_to_so2(F) == pytest.approx(2.0)
    assert ra.distance_to_so2(ra.rotation_2d(1.3)) == pytest.approx(0.0, abs=1e-7)


def test_sinusoid_shift_distance_closed_form() -> None:
    assert ra.sinusoid_shift_distance(710, [1.0]) == pytest.approx(2 * abs(math.sin(355)))
    assert ra.sinusoid_shift_distance(0, [1.0, 0.1]) == 0.0


def test_so3_blocks_do_not_commute_but_one_axis_does() -> None:
    p = torch.tensor([1.0, 0.0, 0.0], dtype=torch.float64)
    r = torch.tensor([0.0, 1.0, 0.0], dtype=torch.float64)
    Rp, Rr = ra.so3_block_rotation(p, [1.0]), ra.so3_block_rotation(r, [1.0])
    assert (Rp.T @ Rr - ra.so3_block_rotation(r - p, [1.0])).abs().max() > 0.1
    z = torch.tensor([0.0, 0.0, 1.0], dtype=torch.float64)
    Ra, Rb = ra.so3_block_rotation(2 * z, [1.0]), ra.so3_block_rotation(5 * z, [1.0])
    assert torch.allclose(Ra.T @ Rb, ra.so3_block_rotation(3 * z, [1.0]), atol=1e-12)


def test_rodrigues_equals_matrix_exp() -> None:
    v = torch.tensor([0.3, -1.2, 2.0], dtype=torch.float64)
    assert torch.allclose(ra.so3_exp(v), torch.linalg.matrix_exp(ra.so3_hat(v)), atol=1e-12)
    p = torch.tensor([0.5, 0.2, -0.4], dtype=torch.float64)
    r = torch.tensor([-0.1, 0.7, 0.3], dtype=torch.float64)
    Rp, Rr = ra.so3_euler_rotation(p, [1.0]), ra.so3_euler_rotation(r, [1.0])
    assert (Rp.T @ Rr - ra.so3_euler_rotation(r - p, [1.0])).abs().max() > 1e-2


def test_seed_ndim_code_facts() -> None:
    assert not ra.seed_init_binds("pairs_per_dim")
    assert ra.seed_init_binds("head_dim") and ra.seed_init_binds("n_dims")
    ok, error = ra.module_apply_with_seed_signature()
    assert not ok and error.startswith("TypeError")
