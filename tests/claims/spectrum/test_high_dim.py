"""spectrum.high-dim-single-head: 004 ch. 13 by computation, both directions."""

from __future__ import annotations

import math

import torch

from transformer_math.bugs import plant
from transformer_math.claims.registry import Context, Size, Verdict, get_claim, run_claim
from transformer_math.theory.high_dim_attention import (
    gaussian_tokens,
    seed_kappa,
    single_head_attention,
)


def test_attention_rows_are_distributions_and_identity_localises() -> None:
    g = torch.Generator().manual_seed(0)
    x = gaussian_tokens(4, 8, 128, g)
    a = single_head_attention(x, torch.eye(128, dtype=torch.float64))
    assert torch.allclose(a.sum(-1), torch.ones(4, 8, dtype=torch.float64), atol=1e-12)
    assert float(torch.diagonal(a, dim1=-2, dim2=-1).mean()) > 0.9
    # the falsifier (issue 31) sits in the library's default scale, which this computation runs
    with plant("attention.scale-by-dk"):
        flat = single_head_attention(x, torch.eye(128, dtype=torch.float64))
    assert float(torch.diagonal(flat, dim1=-2, dim2=-1).mean()) < 0.5


def test_kappa_is_unbounded_for_signed_spectra() -> None:
    w = torch.diag(torch.tensor([1.0, -0.999, 0.0], dtype=torch.float64))
    assert math.isclose(seed_kappa(w), 1000.0, rel_tol=1e-9)


def test_claim_refutes_every_seed_statement() -> None:
    claim = get_claim("spectrum.high-dim-single-head")
    res = run_claim(claim, Context(size=Size.TINY))
    ev = res.evidence
    assert ev.verdict is Verdict.REFUTED and res.expected_met
    assert all(m.holds for m in ev.margins)
    # 004:914, 940, 958 (004:960 is booked once, by spectrum.qk-localization)
    assert len(ev.seed_margins) == 3 and not any(m.holds for m in ev.seed_margins)
    assert {r.line for r in claim.refutes} == {914, 940, 958}
    assert res.falsifier_caught is True
