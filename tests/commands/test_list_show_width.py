"""``tmath list`` and ``tmath show`` fit 80 and 100 columns (issue 38.4)."""

from __future__ import annotations

import io
import json

import pytest
from rich.cells import cell_len
from rich.console import Console
from typer.testing import CliRunner

from transformer_math.cli import app
from transformer_math.commands._claim_views import (
    claim_detail,
    list_columns,
    list_table,
    table_width,
)

runner = CliRunner()


def _claims() -> list[dict]:
    result = runner.invoke(app, ["list", "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)["claims"]


def _widest(text: str) -> int:
    return max(cell_len(line) for line in text.splitlines())


@pytest.mark.parametrize("columns", [80, 100])
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_list_fits_and_keeps_tier_and_expected(columns: int, lang: str) -> None:
    result = runner.invoke(app, ["list", "--lang", lang], env={"COLUMNS": str(columns)})
    assert result.exit_code == 0, result.output
    assert _widest(result.output) <= columns
    header = result.output.splitlines()[0].split()
    assert header[:3] == ["claim", "tier", "expects"]
    rows = {line.split()[0]: line.split() for line in result.output.splitlines()[2:]
            if line.strip() and "." in line.split()[0]}
    for c in _claims():
        assert rows[c["id"]][1:3] == [c["tier"], c["expected"]], c["id"]


def test_columns_are_chosen_by_width() -> None:
    claims = _claims()
    at_80, at_100, at_180 = (list_columns(claims, w) for w in (80, 100, 180))
    assert list(at_80)[:3] == ["claim", "tier", "expects"]
    assert "statement" in at_100 and "statement" not in at_80
    assert table_width(at_80) <= 80 and table_width(at_100) <= 100
    assert table_width(at_180) <= 180 and "source" in at_180
    assert set(list_columns(claims, None)) == {"claim", "tier", "expects", "kind", "statement",
                                               "source", "falsifier"}


def test_wide_shows_every_column_whole() -> None:
    claims = _claims()
    result = runner.invoke(app, ["list", "--wide"], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[0].split() == ["claim", "tier", "expects", "kind",
                                                     "statement", "source", "falsifier"]
    longest = max(claims, key=lambda c: len(c["statement"]))
    assert " ".join(longest["statement"].split()) in result.output


def test_a_narrow_table_cuts_text_with_an_ellipsis() -> None:
    claims = _claims()
    out = Console(width=100, file=io.StringIO())
    out.print(list_table(claims, list_columns(claims, 100)))
    assert "…" in out.file.getvalue()


def test_show_prints_conditions_seed_margins_refutations_and_falsifier() -> None:
    result = runner.invoke(app, ["show", "architecture.chinchilla", "--size", "tiny"],
                           env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    text = result.output
    assert _widest(text) <= 80
    for needle in ("pass conditions", "the seed's version", "refutes 000:1148", "quote",
                   "correct", "falsifier scaling.training-cost-2nd", "caught", "NO", "yes"):
        assert needle in text, needle


def _entry(**extra: object) -> dict:
    margin = {"name": "|err|", "value": 0.5, "threshold": 0.1, "sense": "<=", "slack": -0.4}
    return {"id": "t.x", "verdict": "verified", "expected": "verified", "expected_met": True,
            "tier": "quick", "kind": "measurement", "statement": "s " * 200,
            "margins": [{**margin, "value": 0.01, "slack": 0.09}], "seed_margins": [],
            "refutes": [], "falsifier": {"name": "f", "bug": "b", "description": "d",
                                         "caught": True, "verdict": "failed",
                                         "measured": {"err": 0.5}, **extra}}


@pytest.mark.parametrize("width", [80, 100])
def test_detail_fits_and_shows_the_failing_condition_of_the_falsifier(width: int) -> None:
    # a falsifier whose measured values look alike with and without the bug (issue 38:
    # "1050624 vs 1050624") still names the pass condition it broke (failed_conditions)
    margin = {"name": "|err| with the bug", "value": 0.5, "threshold": 0.1, "sense": "<=",
              "slack": -0.4, "predicted": None, "measured": 0.5, "test": "measured <= 0.1"}
    entry = _entry(failed_conditions=[margin], measured=1050624)
    entry["measured"] = 1050624
    out = Console(width=width, file=io.StringIO())
    out.print(claim_detail(entry))
    text = out.file.getvalue()
    assert _widest(text) <= width
    assert "pass conditions that failed with the bug (why it was caught)" in text
    assert "|err| with the bug" in text and "NO" in text
    assert "measured without the bug" in text and "measured with the bug" in text
    assert "refutes: nothing" in text


def test_detail_says_when_a_caught_falsifier_recorded_no_failed_condition() -> None:
    out = Console(width=80, file=io.StringIO())
    out.print(claim_detail(_entry(failed_conditions=[])))
    assert "pass conditions that failed with the bug: none recorded" in out.file.getvalue()


def _rendered(entry: dict, width: int) -> str:
    out = Console(width=width, file=io.StringIO())
    out.print(claim_detail(entry))
    return out.file.getvalue()


def _row(text: str, name: str) -> list[str]:
    line = next(line for line in text.splitlines() if line.lstrip("│ ").startswith(name))
    return line.strip("│ ").split()


def test_a_deviation_is_not_shown_as_the_quantity() -> None:
    # issue 38.3: "Var(q.k), d_k = 16 ... measured 0.02319" when the variance was 15.98
    close = {"name": "Var(q.k)", "value": 0.02, "threshold": 0.8, "sense": "<=",
             "slack": 0.78, "predicted": 16.0, "measured": 15.98,
             "test": "|measured - predicted| <= 0.05 |predicted|"}
    entry = {**_entry(), "margins": [close]}
    for width in (80, 100):
        text = _rendered(entry, width)
        assert _widest(text) <= width
        head = _row(text, "quantity")
        assert head == ["quantity", "predicted", "measured", "tested", "threshold", "holds"]
        assert _row(text, "Var(q.k)") == ["Var(q.k)", "16", "15.98", "0.02", "<=", "0.8", "yes"]
        assert "tested = |measured - predicted|; threshold = 0.05 |predicted|" in text


def test_plain_conditions_show_measured_and_threshold_only() -> None:
    text = _rendered(_entry(), 80)
    assert _row(text, "quantity") == ["quantity", "measured", "threshold", "holds"]
    assert _row(text, "|err|") == ["|err|", "0.01", "<=", "0.1", "yes"]
    assert "tested =" not in text


def test_a_seed_condition_that_fails_refutes_the_seed_not_the_project() -> None:
    seed = {"name": "seed 000:1: x", "value": 11.0, "threshold": 0.1, "sense": "<=",
            "slack": -10.9, "predicted": None, "measured": 11.0, "test": "measured <= 0.1"}
    out = Console(width=100, file=io.StringIO(), force_terminal=True, color_system="standard")
    out.print(claim_detail({**_entry(), "seed_margins": [seed]}))
    raw = out.file.getvalue()
    plain = _rendered({**_entry(), "seed_margins": [seed]}, 100)
    assert "a 'no' refutes the seed" in plain
    assert _row(plain, "seed 000:1: x")[-1] == "no"
    assert "\x1b[1;36mno" in raw  # bold cyan, the terminal colour of "refuted" (not red)


def test_show_names_the_margin_fields_on_a_real_claim() -> None:
    result = runner.invoke(app, ["show", "attention.sqrt-dk-variance", "--size", "tiny",
                                 "--json"])
    assert result.exit_code == 0, result.output
    entry = json.loads(result.output)
    first = entry["margins"][0]
    assert first["predicted"] == 16 and first["test"].startswith("|measured - predicted|")
    failed = entry["falsifier"]["failed_conditions"]
    assert failed and all(m["slack"] < 0 for m in failed)
    for width in (80, 100):
        text = _rendered(entry, width)
        assert _widest(text) <= width
        row = _row(text, first["name"])
        assert f"{first['measured']:.4g}" in row and f"{first['value']:.4g}" in row
        assert "pass conditions that failed with the bug (why it was caught)" in text
        assert failed[0]["name"] in text
