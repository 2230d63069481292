"""computation.parity-margin v4: a construction check (verified); the seed's error-rate reading
of Hahn's lemma is corrected by citation, not refuted by this n-dependent construction."""

from __future__ import annotations

import itertools

import torch

from transformer_math.bugs import plant
from transformer_math.claims.registry import Context, Size, Verdict, get_claim, run_claim
from transformer_math.functional.norms import layer_norm
from transformer_math.theory.parity_margin import ParityMarginConstruction, exhaustive_bits


def test_verified_construction_with_cited_corrections() -> None:
    claim = get_claim("computation.parity-margin")
    res = run_claim(claim, Context(size=Size.TINY))
    ev = res.evidence
    assert ev.verdict is Verdict.VERIFIED and res.expected_met
    assert all(m.holds for m in ev.margins) and not ev.seed_margins
    assert ev.measured["errors_at_n_max"] == 0.0
    assert not claim.refutes and claim.kind.value == "construction"
    assert {c.line for c in claim.corrections} == {864, 125, 128, 866, 893}
    assert res.falsifier_caught is True


def test_fixed_gain_confidence_decays_while_layernorm_restores_it() -> None:
    ev = run_claim(get_claim("computation.parity-margin"), Context(size=Size.TINY),
                   falsifier=False).evidence
    ce = ev.measured["fixed_gain_cross_entropy_bits"]
    assert all(b > a for a, b in itertools.pairwise(ce)) and 0.9 < ce[-1] < 1.0
    ln = ev.measured["layernorm_cross_entropy_bits"]
    assert max(ln) - min(ln) < 1e-12  # independent of n


def test_layernorm_without_eps_maps_the_pair_to_signs() -> None:
    net = ParityMarginConstruction(9)
    y = net.score(exhaustive_bits(9))
    out = layer_norm(torch.stack([y, -y], dim=-1), eps=0.0)
    assert torch.allclose(out[..., 0], torch.sign(y), atol=1e-12)
    # with eps the margin is capped once y^2 ~ eps
    capped = layer_norm(torch.stack([y, -y], dim=-1), eps=1e-1)[..., 0].abs()
    assert float(capped.max()) < 0.5


def test_off_by_one_positions_make_errors() -> None:
    with plant("computation.parity-position-off-by-one"):
        ev = run_claim(get_claim("computation.parity-margin"), Context(size=Size.TINY),
                       falsifier=False).evidence
    assert ev.verdict is Verdict.FAILED
