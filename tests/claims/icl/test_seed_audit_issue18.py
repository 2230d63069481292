"""Issue 18 (SEED_AUDIT part A, 000 §8.3.6): depth vs condition number, Gamma -> Sigma on
icl.ahn-gamma-moment, and the cited corrections. Issue 31: the refutations of 000:929 (a
schematic), 000:963/1399 (a fixed-kappa statement) and 000:967 ('approximates') are dropped;
the seed's W_V is tests/claims/icl/test_construction_checks.py."""

from __future__ import annotations

import itertools
import math

import torch

from transformer_math.bugs import plant
from transformer_math.claims.icl.depth_precision import (
    KAPPAS,
    predicted_layers,
    prompt_with_spectrum,
)
from transformer_math.claims.registry import Context, Size, Verdict, all_claims, get_claim
from transformer_math.theory.icl_construction import least_squares_terms

CTX = Context(seed=0, size=Size.TINY, seeds=1)


def test_prompts_have_the_prescribed_condition_number() -> None:
    g = torch.Generator().manual_seed(0)
    for kappa in KAPPAS:
        x, y = prompt_with_spectrum(kappa, g)
        lam = torch.linalg.eigvalsh(least_squares_terms(x, y)[0])
        assert math.isclose(float(lam.max() / lam.min()), kappa, rel_tol=1e-9)
        assert math.isclose(float(lam.max()), 1.0, rel_tol=1e-9)


def test_predicted_layers_is_about_kappa_log_inverse_eps() -> None:
    lam = torch.tensor([1 / 64, 1.0], dtype=torch.float64)
    layers = predicted_layers(lam, 1.0, 1e-6)
    # sqrt(mean((1 - 1/64)^(2L), 0)) <= 1e-6  <=>  L >= log(1e-6 sqrt 2) / log(1 - 1/64)
    assert layers == math.ceil(math.log(1e-6 * math.sqrt(2)) / math.log(1 - 1 / 64))
    assert 0.8 < layers / (64 * math.log(1e6)) < 1.0


def test_formerly_refuted_claims_verify_and_their_bug_fails() -> None:
    for cid in ("icl.depth-condition-number", "icl.ahn-gamma-moment"):
        c = get_claim(cid)
        ev = c.check(CTX)
        assert ev.verdict is Verdict.VERIFIED, cid
        assert all(m.holds for m in ev.margins), cid
        assert not ev.seed_margins and not c.refutes, cid
        assert c.statement_zh, cid
        with plant(c.falsifier.bug):
            assert c.check(CTX).verdict is Verdict.FAILED, cid
    assert not any(c.refutes for c in all_claims() if c.topic == "icl")


def test_cited_corrections_on_icl_claims() -> None:
    lines = {cid: {r.line for r in get_claim(cid).corrections}
             for cid in ("icl.one-step-gd", "icl.newton-schulz",
                         "icl.task-diversity-transition")}
    assert lines["icl.one-step-gd"] >= {143, 913, 1036}
    assert lines["icl.newton-schulz"] >= {1054}
    assert lines["icl.task-diversity-transition"] >= {1001, 1626}
    for cid in lines:
        for r in get_claim(cid).corrections:
            assert r.source.strip() and r.correct.strip()


def test_demo_risk_closed_form_is_minimised_at_the_optimal_step() -> None:
    from transformer_math.theory.icl_demo_risk import (
        one_layer_optimal_risk,
        one_layer_optimal_step,
        one_layer_risk,
    )

    for k, noise in ((2, 0.0), (8, 1.0), (64, 0.25)):
        eta = one_layer_optimal_step(4, k, noise)
        best = one_layer_risk(4, k, noise, eta)
        assert math.isclose(best, one_layer_optimal_risk(4, k, noise), rel_tol=1e-12)
        assert one_layer_risk(4, k, noise, 0.9 * eta) > best < one_layer_risk(4, k, noise,
                                                                              1.1 * eta)
    # isotropic, noiseless: Ahn et al.'s n / (n + d + 1)
    assert math.isclose(one_layer_optimal_step(4, 10, 0.0), 10 / 15)
    risks = [one_layer_optimal_risk(4, k, 1.0) for k in (2, 4, 8, 16)]
    assert all(a > b for a, b in itertools.pairwise(risks))
