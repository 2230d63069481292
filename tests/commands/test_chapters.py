"""``tmath chapters``: the registry's map of the textbook, section by section."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from transformer_math import chapters
from transformer_math.claims.registry import all_claims
from transformer_math.cli import app
from transformer_math.commands.chapters import section_counts


def test_every_claim_is_read_in_exactly_one_section_and_counts_add_up() -> None:
    rows = section_counts()
    assert [r["section"] for r in rows] == [s.key for s in chapters.SECTIONS]
    read = [cid for r in rows for cid in r["claims"]]
    assert sorted(read) == sorted(c.id for c in all_claims())  # each once, none lost
    assert (sum(r["distinct_errors"] + r["modelled_errors"] for r in rows)
            == sum(len(c.refutes) for c in all_claims()))
    assert sum(r["corrections"] for r in rows) == sum(len(c.corrections) for c in all_claims())
    by_key = {r["section"]: r for r in rows}
    assert "position.rope-relative" in by_key["8.3.3"]["claims"]


def test_command_prints_table_and_json() -> None:
    runner = CliRunner()
    result = runner.invoke(app, ["chapters", "--lang", "zh"])
    assert result.exit_code == 0, result.output
    assert "§8.3.3 位置编码理论" in result.output and "total" in result.output
    result = runner.invoke(app, ["chapters", "--json", "-"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    assert doc["totals"]["claims"] == len(all_claims())
    result = runner.invoke(app, ["chapters", "--lang", "de"])
    assert result.exit_code == 2 and "--lang must be one of en, zh" in result.output
