"""The report package: value formatting, strict JSON, figure drawing and the HTML report.

Results documents are built from throw-away claims run with ``run_claim`` (they are never
registered), so these tests do not depend on the real claim modules.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from transformer_math import bugs
from transformer_math.claims.registry import (
    Claim,
    Context,
    Evidence,
    Falsifier,
    Figure,
    Series,
    Tier,
    Verdict,
    at_least,
    run_claim,
)
from transformer_math.report.figures import draw_figure, parse_style
from transformer_math.report.html import figure_filename, render_report
from transformer_math.report.results import (
    build_results,
    dumps,
    read_results,
    summary_from_claims,
    to_jsonable,
    write_json,
)
from transformer_math.report.table import format_value

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
WRONG_SCALE = bugs.declare_bug("demo.report-wrong-scale", "doubles it", module=__name__)
NO_EFFECT = bugs.declare_bug("demo.report-no-effect", "changes nothing", module=__name__)
OK = [at_least("runs", 1.0, 0.0)]


def _claim(cid: str, check: Any, falsifier: Falsifier | None = None, statement: str = "s") -> Claim:
    return Claim(cid, cid.split(".")[0], "test seed", statement, Tier.QUICK, check, falsifier)


def _all_kinds_figure() -> Figure:
    xs = [1.0, 2.0, 4.0, 8.0, 16.0]
    return Figure(
        title="every kind",
        xlabel="n",
        ylabel="value",
        series=[
            Series("line", xs, [x**2 for x in xs], "line", "o-"),
            Series("scatter", xs, [x**1.5 for x in xs], "scatter", "sr"),
            Series("bars", xs, [x for x in xs], "bar"),
            Series("more bars", xs, [x + 1 for x in xs], "bar", "g"),
            Series("step", xs, [x / 2 for x in xs], "step", "--"),
        ],
        logy=True,
        hlines=[(4.0, "four")],
        vlines=[(2.0, "two")],
    )


@pytest.fixture
def document() -> dict[str, Any]:
    """A results document with verified, uncaught, failed, figure and broken-figure claims."""

    def verified(ctx: Context) -> Evidence:
        wrong = bugs.planted(WRONG_SCALE)
        measured = 2.5 if wrong else 1.0
        return Evidence(
            1.0,
            measured,
            0.01,
            Verdict.FAILED if wrong else Verdict.VERIFIED,
            notes=["first note", "multi\nline note"],
            details={"values": [1, 2, 3]},
            margins=[at_least("not wrong", 0.0 if wrong else 1.0, 1.0)],
        )

    def uncaught(ctx: Context) -> Evidence:
        bugs.planted(NO_EFFECT)
        return Evidence(0.5, 0.5, 0.0, Verdict.VERIFIED, margins=OK)

    def failed(ctx: Context) -> Evidence:
        return Evidence(1.0, float("nan"), 0.1, Verdict.FAILED)

    def with_figures(ctx: Context) -> Evidence:
        good = _all_kinds_figure()
        broken = Figure("broken", "x", "y", [Series("bad", [1.0, 2.0], [1.0])])
        return Evidence([1, 2], [1, 2], 0, Verdict.VERIFIED, figures=[good, broken], margins=OK)

    claims = [
        _claim(
            "demo.verified",
            verified,
            Falsifier(WRONG_SCALE, "doubles it"),
            statement='softmax <rows> & sums are "one"',
        ),
        _claim("demo.uncaught", uncaught, Falsifier(NO_EFFECT)),
        _claim("demo.failed", failed),
        _claim("demo.figures", with_figures),
    ]
    results = [run_claim(c, Context(seed=1)) for c in claims]
    return build_results(results, seed=1, tier="quick", size="tiny")


# --- formatting ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, "—"),
        (0.123456, "0.1235"),
        (1234567.0, "1.235e+06"),
        (1050624, "1050624"),
        (True, "True"),
        ([0.5, 0.25], "[0.5, 0.25]"),
        ({"a": 1.0}, "{a: 1}"),
        ("NaN", "NaN"),
    ],
)
def test_format_value(value: Any, expected: str) -> None:
    assert format_value(value) == expected


def test_format_value_shortens_lists_and_strings() -> None:
    text = format_value(list(range(100)))
    assert text == "[0, 1, 2, …, 99] (100 items)"
    long = format_value("x" * 200, max_chars=20)
    assert len(long) == 20 and long.endswith("…")


def test_to_jsonable_and_strict_json() -> None:
    value = {
        "nan": float("nan"),
        "inf": [float("inf"), -math.inf],
        "tensor": torch.tensor([1.0, 2.0]),
        "numpy": np.float32(0.5),
        "tuple": (1, 2),
        "verdict": Verdict.REFUTED,
        "path": Path("a/b"),
    }
    out = to_jsonable(value)
    assert out == {
        "nan": "NaN",
        "inf": ["Infinity", "-Infinity"],
        "tensor": [1.0, 2.0],
        "numpy": 0.5,
        "tuple": [1, 2],
        "verdict": "refuted",
        "path": "a/b",
    }
    assert json.loads(dumps(value)) == out


# --- results documents -----------------------------------------------------------------------


def test_build_results_schema(document: dict[str, Any]) -> None:
    by_id = {c["id"]: c for c in document["claims"]}
    assert by_id["demo.verified"]["falsifier"]["caught"] is True
    assert by_id["demo.verified"]["falsifier"]["measured"] == 2.5
    assert by_id["demo.uncaught"]["falsifier"]["caught"] is False
    assert by_id["demo.failed"]["measured"] == "NaN"
    summary = document["summary"]
    assert summary["verified"] == 3 and summary["failed"] == 1
    assert summary["problems"] == 2
    assert {"seed", "tier", "size", "version", "torch", "timestamp"} <= set(summary)
    counted = summary_from_claims(document["claims"])
    for key, value in counted.items():
        if key != "seconds":
            assert summary[key] == value, key


def test_read_results_round_trip_and_errors(document: dict[str, Any], tmp_path: Path) -> None:
    path = write_json(document, tmp_path / "deep" / "results.json")
    assert read_results(path) == json.loads(dumps(document))
    with pytest.raises(ValueError, match="does not exist"):
        read_results(tmp_path / "missing.json")
    (tmp_path / "bad.json").write_text("[1, 2")
    with pytest.raises(ValueError, match="not valid JSON"):
        read_results(tmp_path / "bad.json")
    (tmp_path / "noid.json").write_text('{"claims": [{"verdict": "verified"}]}')
    with pytest.raises(ValueError, match=r"claims\[0\]"):
        read_results(tmp_path / "noid.json")


# --- figures ---------------------------------------------------------------------------------


def test_draw_every_series_kind(tmp_path: Path) -> None:
    path = draw_figure(_all_kinds_figure(), tmp_path / "f" / "kinds.png")
    assert path.read_bytes()[:8] == PNG_MAGIC
    # The JSON form draws too, with log x and categorical x values.
    data = Figure(
        "cats",
        "variant",
        "params",
        [Series("n", ["MHA", "GQA", "MQA"], [3, 2, 1], "bar")],
        hlines=[(2.5, "")],
    ).to_json()
    assert draw_figure(data, tmp_path / "cats.png").read_bytes()[:8] == PNG_MAGIC
    logx = Figure("log", "n", "t", [Series("t", [10.0, 100.0, 1000.0], [1.0, 2.0, 3.0])], logx=True)
    assert draw_figure(logx, tmp_path / "logx.png").is_file()


def test_draw_figure_rejects_malformed_data(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="2 x values but 1 y values"):
        draw_figure(Figure("t", "x", "y", [Series("s", [1.0, 2.0], [1.0])]), tmp_path / "a.png")
    with pytest.raises(ValueError, match="kind must be one of"):
        draw_figure(Figure("t", "x", "y", [Series("s", [1.0], [1.0], "pie")]), tmp_path / "b.png")
    with pytest.raises(TypeError):
        draw_figure("not a figure", tmp_path / "c.png")


def test_parse_style() -> None:
    assert parse_style("o--r") == ("o", "--", "r")
    assert parse_style("") == (None, None, None)
    assert parse_style("-.") == (None, "-.", None)
    with pytest.raises(ValueError, match="format string"):
        parse_style("zz")


# --- HTML report -----------------------------------------------------------------------------


def test_render_report(document: dict[str, Any], tmp_path: Path) -> None:
    out_dir = tmp_path / "report"
    stale = out_dir / "figures" / "old.png"
    stale.parent.mkdir(parents=True)
    stale.write_bytes(PNG_MAGIC)

    index = render_report(document, out_dir)
    assert index == out_dir / "index.html"
    page = index.read_text()
    for c in document["claims"]:
        assert f'id="{c["id"]}"' in page
    # Figures: the good one is drawn, the broken one is reported, and old PNGs are gone.
    good = out_dir / "figures" / figure_filename("demo.figures", 0)
    assert good.read_bytes()[:8] == PNG_MAGIC
    assert f'src="figures/{good.name}"' in page
    assert not (out_dir / "figures" / figure_filename("demo.figures", 1)).exists()
    assert "could not be drawn" in page and "2 x values but 1 y values" in page
    assert not stale.exists()
    # Everything is escaped and nothing is fetched from the network.
    assert "softmax &lt;rows&gt; &amp; sums are &quot;one&quot;" in page
    assert "<rows>" not in page
    # The only script is the inline filter script: no file or address is loaded.
    assert page.count("<script") == 1 and "<script>" in page and " src=\"http" not in page
    assert "http://" not in page and "https://" not in page
    # Summary, falsifier, notes and versions are shown.
    assert "falsifiers caught" in page and "wrong-scale" in page and "NOT caught" in page
    assert "first note" in page and "<pre>multi\nline note</pre>" in page
    assert document["summary"]["torch"] in page
    assert json.loads((out_dir / "results.json").read_text()) == json.loads(dumps(document))


def test_render_report_without_summary(document: dict[str, Any], tmp_path: Path) -> None:
    minimal = {
        "claims": [{k: v for k, v in c.items() if k != "figures"} for c in document["claims"]]
    }
    page = render_report(minimal, tmp_path).read_text()
    assert "demo.failed" in page
    with pytest.raises(ValueError, match="'claims' list"):
        render_report({"claims": "nope"}, tmp_path)


def test_read_results_refuses_deep_nesting_before_parsing(tmp_path: Path) -> None:
    """Was a RecursionError traceback from json.loads (tmath report on nested JSON)."""
    from transformer_math.report.results import (
        MAX_RESULTS_DEPTH,
        json_nesting_depth,
        read_results,
    )

    deep = tmp_path / "deep.json"
    deep.write_text('{"claims": ' + "[" * 100_000 + "]" * 100_000 + "}")
    with pytest.raises(ValueError, match="nested 100001 levels deep"):
        read_results(deep)
    assert json_nesting_depth('{"a": "[[[\\"[", "b": [{}]}') == 3  # brackets in strings skipped
    ok = tmp_path / "ok.json"
    ok.write_text('{"claims": [{"id": "a", "measured": ' + "[" * (MAX_RESULTS_DEPTH - 3)
                  + "]" * (MAX_RESULTS_DEPTH - 3) + "}]}")
    assert read_results(ok)["claims"][0]["id"] == "a"


def test_tmath_report_on_nested_json_is_one_line(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from transformer_math.cli import app

    (tmp_path / "results.json").write_text("[" * 50_000 + "]" * 50_000)
    res = CliRunner().invoke(app, ["report", str(tmp_path)])
    assert res.exit_code == 2, res.output
    (line,) = res.stderr.strip().splitlines()
    assert line.startswith("tmath report: error: ") and "nested" in line
