"""computation.rope-circuit-shape: the seed's rope_circuit is 2 d_k wide; RoFormer's is d_k."""

from __future__ import annotations

import torch

from transformer_math.bugs import plant
from transformer_math.claims.registry import Context, Size, Verdict, get_claim, run_claim
from transformer_math.functional.rope import rotary_matrix
from transformer_math.functional.rope_scaling import default_inv_freq
from transformer_math.theory.rope_circuit import rope_block_matrix, seed_rope_circuit_matrix


def test_seed_pseudo_code_doubles_the_size_and_keeps_the_identity() -> None:
    theta = default_inv_freq(8, 10000.0)
    seed = seed_rope_circuit_matrix(5, theta, 8)
    assert seed.shape == (16, 16)
    assert torch.equal(seed[:8, :8], torch.eye(8, dtype=torch.float64))
    assert torch.allclose(seed[8:, 8:], rope_block_matrix(5, theta), atol=1e-15)


def test_block_matrix_is_the_project_rotation() -> None:
    theta = default_inv_freq(8, 10000.0)
    r = rope_block_matrix(3, theta)
    assert r.shape == (8, 8)
    assert torch.allclose(r, rotary_matrix(3, theta), atol=1e-14)
    assert torch.allclose(r.T @ r, torch.eye(8, dtype=torch.float64), atol=1e-14)
    with plant("computation.rope-block-transposed"):
        assert torch.allclose(rope_block_matrix(3, theta), rotary_matrix(-3, theta), atol=1e-14)


def test_claim_is_refuted_and_catches_its_falsifier() -> None:
    res = run_claim(get_claim("computation.rope-circuit-shape"), Context(size=Size.TINY))
    assert res.evidence.verdict is Verdict.REFUTED and res.expected_met
    assert res.falsifier_caught is True
    assert not any(m.holds for m in res.evidence.seed_margins)
