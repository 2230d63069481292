"""computation.dyck-recognition: the circuit, the attention construction, both directions."""

from __future__ import annotations

import torch

from transformer_math.bugs import plant
from transformer_math.claims.registry import Context, Size, Verdict, get_claim, run_claim
from transformer_math.theory.dyck_recognition import (
    Dyck1AttentionConstruction,
    deep_nesting,
    dyck1_reference,
    dyck1_threshold_circuit,
    random_dyck_words,
)
from transformer_math.theory.parity_margin import exhaustive_bits

CATALAN = {2: 1, 4: 2, 6: 5, 8: 14, 10: 42}


def test_reference_counts_catalan_many_words() -> None:
    for n, count in CATALAN.items():
        assert int(dyck1_reference(exhaustive_bits(n)).sum()) == count


def test_circuit_and_construction_agree_with_the_definition() -> None:
    for n in range(1, 11):
        bits = exhaustive_bits(n)
        ref = dyck1_reference(bits)
        assert torch.equal(dyck1_threshold_circuit(bits), ref)
        net = Dyck1AttentionConstruction(n)
        assert torch.equal(net.predict(bits), ref)
        margin = (net.score(bits) - net.threshold()).abs().min()
        assert abs(float(margin) * 2 * (n + 1) - 1.0) < 1e-9


def test_worked_examples_and_deep_words() -> None:
    net = Dyck1AttentionConstruction(2)
    assert net.predict(torch.tensor([[1, 0], [0, 1]])).tolist() == [1, 0]  # "()" yes, ")(" no
    words = torch.cat([deep_nesting(64), random_dyck_words(4, 64, torch.Generator())])
    assert dyck1_reference(words).tolist() == [1] * 5
    assert Dyck1AttentionConstruction(64).predict(words).tolist() == [1] * 5


def test_claim_refutes_the_seed_and_catches_the_non_causal_prefix() -> None:
    claim = get_claim("computation.dyck-recognition")
    res = run_claim(claim, Context(size=Size.TINY))
    assert res.evidence.verdict is Verdict.REFUTED and res.expected_met
    assert [r.line for r in claim.refutes] == [838]
    assert res.falsifier_caught is True
    with plant("computation.dyck-prefix-not-causal"):
        bad = Dyck1AttentionConstruction(2).predict(torch.tensor([[0, 1]]))
    assert bad.tolist() == [1]  # ")(" accepted: only the final balance is seen
