"""Malformed results files (issue 39.3): every typed field of a claim entry, given a value of the
wrong type, is refused by ``read_results`` naming the field, and ``tmath report`` exits 2 with one
line; a value of the right type renders. Before the schema, ``per_seed.mean`` as a list or a
string ended in a traceback inside the renderer."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from transformer_math.claims.registry import Figure, Series, at_least
from transformer_math.cli import app
from transformer_math.report.html import render_report
from transformer_math.report.results import read_results
from transformer_math.report.results_schema import CLAIM_FIELDS, SchemaError, check_claim_entry

from .test_report import document  # noqa: F401  (fixture)

WRONG = [[1, 2], "text", 3.5, {"a": [1]}, True]


def _results_entry(doc: dict[str, Any]) -> dict[str, Any]:
    entry = copy.deepcopy(doc["claims"][0])
    entry["per_seed"] = {"seeds": [0, 1], "values": {"x": [1.0, 2.0]}, "mean": {"x": 1.5},
                         "spread": {"x": 1.0}, "min": {"x": 1.0}, "max": {"x": 2.0}}
    return entry


def test_a_real_document_passes(document: dict[str, Any]) -> None:  # noqa: F811
    for i, entry in enumerate(document["claims"]):
        check_claim_entry(entry, f"claims[{i}]")


def test_wrong_types_are_refused_or_render(document: dict[str, Any], tmp_path: Path) -> None:  # noqa: F811
    entry = _results_entry(document)
    refused = 0
    for key in CLAIM_FIELDS:
        for bad in WRONG:
            e = copy.deepcopy(entry)
            e[key] = bad
            try:
                check_claim_entry(e, "claims[0]")
            except SchemaError as exc:
                assert f"claims[0].{key}" in str(exc) and "\n" not in str(exc)
                refused += 1
                continue
            doc = dict(document, claims=[e])
            render_report(doc, tmp_path / f"r-{refused}-{key}")  # accepted values render
    assert refused >= 3 * len(CLAIM_FIELDS)


@pytest.mark.parametrize("field", ["mean", "spread", "values", "seeds", "min"])
@pytest.mark.parametrize("bad", [[1, 2], "s", {"x": "one"}])
def test_per_seed_fields_are_typed(document: dict[str, Any], tmp_path: Path,  # noqa: F811
                                   field: str, bad: Any) -> None:
    entry = _results_entry(document)
    if field == "seeds" and not isinstance(bad, str):
        bad = ["zero"] if isinstance(bad, dict) else [1.5, 2]
    entry["per_seed"][field] = bad
    path = tmp_path / "results.json"
    path.write_text(json.dumps(dict(document, claims=[entry])))
    with pytest.raises(ValueError, match=rf"claims\[0\]\.per_seed\.{field}"):
        read_results(path)
    res = CliRunner().invoke(app, ["report", str(tmp_path / "out"), "--from", str(path)])
    assert res.exit_code == 2, res.output
    (line,) = res.stderr.strip().splitlines()
    assert line.startswith("tmath report: error: ") and "per_seed" in line


def test_figure_and_margin_fields_are_typed(document: dict[str, Any]) -> None:  # noqa: F811
    entry = _results_entry(document)
    good = Figure("t", "x", "y", [Series("s", [1.0], [2.0])], hlines=[(1.0, "one")]).to_json()
    for path, value in [("figures", [dict(good, series="none")]),
                        ("figures", [dict(good, hlines=[["a", "b"]])]),
                        ("margins", [at_least("m", 1.0, 0.0).to_json() | {"value": "1"}]),
                        ("refutes", [{"seed": "000", "line": "12"}]),
                        ("seed_refs", [{"seed": "000", "lines": [1, 2, 3]}])]:
        e = dict(entry, **{path: value})
        with pytest.raises(SchemaError, match=rf"claims\[0\]\.{path}"):
            check_claim_entry(e, "claims[0]")
