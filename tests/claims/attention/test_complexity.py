"""attention.multihead-param-count and attention.complexity-table: exact counts."""

from __future__ import annotations


def test_multihead_param_count_numbers(attention_result):
    res = attention_result("attention.multihead-param-count")
    assert res.evidence.measured == 1_050_624
    assert res.evidence.details["seed_total"] == 360_448
    assert res.evidence.details["without_bias"] == 1_048_576
    assert res.evidence.details["torch_multihead_attention"] == 1_050_624
    assert res.falsifier_evidence is not None
    assert res.falsifier_evidence.predicted == 360_448


def test_complexity_table_numbers(attention_result):
    res = attention_result("attention.complexity-table")
    for row in res.evidence.details["settings"]:
        assert row["projections_measured"] == row["projections_predicted"]
        assert row["products_measured"] == row["products_predicted"]
        n, d, b = row["n"], row["d"], row["batch"]
        assert row["products_measured"] == b * 4 * n * n * d
        assert row["projections_measured"] == b * 8 * n * d * d
        assert row["weights_numel"] == b * row["heads"] * n * n  # read at hook_pattern
    wrong = res.falsifier_evidence
    assert wrong is not None
    for row in wrong.details["settings"]:
        assert row["products_measured"] == row["heads"] * row["products_predicted"]
