"""attention.multihead-param-count and attention.complexity-table: exact counts."""

from __future__ import annotations


def test_multihead_param_count_numbers(attention_result):
    res = attention_result("attention.multihead-param-count")
    assert res.evidence.measured == 1_050_624
    assert res.evidence.details["seed_total"] == 360_448
    assert res.evidence.details["measured_weights"] == 1_048_576
    assert res.evidence.details["torch_multihead_attention"] == 1_050_624
    # the refutation is measured: the seed's numbers fail against the same counts
    assert all(m.holds for m in res.evidence.margins)
    assert res.evidence.seed_margins and not any(m.holds for m in res.evidence.seed_margins)
    wrong = res.falsifier_evidence  # attention.gqa-kv-heads-ignored: GQA built as MHA
    assert wrong is not None and wrong.predicted == 1_050_624
    assert wrong.details["gqa_kv2_measured"] == 1_050_624 != wrong.details["gqa_kv2_predicted"]


def test_complexity_table_numbers(attention_result):
    res = attention_result("attention.complexity-table")
    for row in res.evidence.details["settings"]:
        assert row["projections_measured"] == row["projections_predicted"]
        assert row["products_measured"] == row["products_predicted"]
        n, d, b = row["n"], row["d"], row["batch"]
        assert row["products_measured"] == b * 4 * n * n * d
        if row["kv_heads"] == row["heads"]:
            assert row["projections_measured"] == b * 8 * n * d * d
        else:  # K and V: H_kv heads of d_k
            assert row["projections_measured"] < b * 8 * n * d * d
        assert row["linear_products_measured"] == row["linear_products_predicted"]
        assert row["weights_numel"] == b * row["heads"] * n * n  # read at hook_pattern
    wrong = res.falsifier_evidence
    assert wrong is not None
    for row in wrong.details["settings"]:  # GQA built as MHA: every row costs 8 n d^2
        assert row["projections_measured"] == row["batch"] * 8 * row["n"] * row["d"] ** 2
