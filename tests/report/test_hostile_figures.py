"""Hostile but small results files (issue 40.1-40.2): work bounded by what a reader can see, and
a failed render never damages the report already on disk."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from transformer_math.claims.registry import Figure, Series
from transformer_math.cli import app
from transformer_math.report.figures import MAX_CATEGORIES, MAX_SERIES, draw_figure


def test_forty_thousand_categories_are_refused_at_once(tmp_path: Path) -> None:
    """Before: 5,000 text categories took 90 s (a list lookup per point), 40,000 never ended."""
    xs = [f"c{i}" for i in range(40_000)]
    fig = Figure("many", "x", "y", [Series("s", xs, [1.0] * len(xs))])
    start = time.perf_counter()
    with pytest.raises(ValueError, match=f"more than {MAX_CATEGORIES} x categories"):
        draw_figure(fig, tmp_path / "a.png")
    assert time.perf_counter() - start < 5.0  # refused before matplotlib sees it


def test_too_many_series_are_refused(tmp_path: Path) -> None:
    series = [Series(f"s{i}", [0.0, 1.0], [0.0, 1.0]) for i in range(MAX_SERIES + 1)]
    with pytest.raises(ValueError, match="series, more than a reader"):
        draw_figure(Figure("t", "x", "y", series), tmp_path / "b.png")


def test_categories_within_the_bound_still_draw(tmp_path: Path) -> None:
    xs = [f"c{i}" for i in range(MAX_CATEGORIES)]
    path = draw_figure(Figure("t", "x", "y", [Series("s", xs, [float(i) for i in range(len(xs))],
                                                     "bar")]), tmp_path / "c.png")
    assert path.stat().st_size > 0


def _one_claim_document(figure: dict) -> dict:
    return {"schema": "transformer-math/results/1",
            "claims": [{"id": "demo.hostile", "verdict": "verified", "figures": [figure],
                        "margins": [], "notes": []}]}


def test_report_with_a_hostile_figure_renders_the_rest(tmp_path: Path) -> None:
    xs = [f"c{i}" for i in range(40_000)]
    figure = Figure("many", "x", "y", [Series("s", xs, [1.0] * len(xs))]).to_json()
    results = tmp_path / "r.json"
    results.write_text(json.dumps(_one_claim_document(figure)))
    start = time.perf_counter()
    res = CliRunner().invoke(app, ["report", str(tmp_path / "out"), "--from", str(results)])
    assert res.exit_code == 0, res.output
    assert time.perf_counter() - start < 60.0
    html = (tmp_path / "out" / "index.html").read_text(encoding="utf-8")
    assert "demo.hostile" in html and "categories" in html


def test_lone_surrogate_leaves_the_old_report_whole(tmp_path: Path) -> None:
    """A results file holding a lone surrogate (legal JSON) once cut index.html to 0 bytes."""
    out = tmp_path / "out"
    good = tmp_path / "good.json"
    good.write_text(json.dumps(_one_claim_document(
        Figure("ok", "x", "y", [Series("s", [0.0, 1.0], [0.0, 1.0])]).to_json())))
    assert CliRunner().invoke(app, ["report", str(out), "--from", str(good)]).exit_code == 0
    before = (out / "index.html").read_bytes()
    bad = tmp_path / "bad.json"
    bad.write_text('{"claims": [{"id": "demo.s", "verdict": "verified", "statement": "\\ud800"}]}')
    res = CliRunner().invoke(app, ["report", str(out), "--from", str(bad)])
    assert res.exit_code == 2, res.output
    assert len(res.stderr.strip().splitlines()) == 1
    assert (out / "index.html").read_bytes() == before
