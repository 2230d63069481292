"""The report explains itself (issue 38.3): pass conditions show the quantity's predicted and
measured values and the inequality tested, and a caught falsifier shows the condition that
failed under the bug (the box that read "1050624 vs 1050624")."""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

from transformer_math.claims.registry import close_to
from transformer_math.report.html import render_report
from transformer_math.report.table import DASH

from .conftest import CHAPTER_CLAIMS


def _doc(**changes: Any) -> dict[str, Any]:
    entry = copy.deepcopy(CHAPTER_CLAIMS[3])  # attention.scale
    entry.update(changes)
    return {"schema": "transformer-math/results/1", "claims": [entry],
            "summary": {"seed": 0, "tier": "quick", "size": "tiny"}}


def _page(doc: dict[str, Any], tmp_path: Path, lang: str = "en") -> str:
    return render_report(doc, tmp_path / lang, lang=lang).read_text(encoding="utf-8")


def test_a_deviation_is_not_labelled_as_the_quantity(tmp_path: Path) -> None:
    margin = close_to("Var(q.k), d_k = 16", 15.98, 16.0, rel=0.05).to_json()
    page = _page(_doc(margins=[margin]), tmp_path)
    table = re.search(r'<table class="grid wide margins">.*?</table>', page, flags=re.S)
    assert table is not None
    row = re.search(r"<tr><td>Var\(q\.k\), d_k = 16</td>(.*?)</tr>", table.group(0)).group(1)
    cells = re.findall(r"<td[^>]*>(.*?)</td>", row)
    assert cells[0] == "16" and cells[1] == "15.98"  # predicted, measured: the variance
    assert "|measured - predicted| ≤ 0.05 |predicted|" in cells[2]
    assert "0.02" in cells[2] and "≤ 0.8" in cells[2]  # the deviation, named as such


def test_a_caught_falsifier_shows_the_condition_that_failed(tmp_path: Path) -> None:
    failed = close_to("parameter count", 1050624.0, 1050624.0, abs_=0.5).to_json()
    failed.update(name="sum of gradients", value=3.0, measured=3.0, threshold=1e-6,
                  slack=1e-6 - 3.0, test="measured <= 1e-06", predicted=None)
    falsifier = {"name": "b", "bug": "b", "description": "d", "caught": True,
                 "verdict": "failed", "measured": 1050624, "failed_conditions": [failed]}
    for lang, heading in (("en", "failed with the bug"), ("zh", "植入缺陷后不成立")):
        page = _page(_doc(measured=1050624, falsifier=falsifier), tmp_path, lang)
        box = re.search(r'<div class="falsifier caught">.*?</table>', page, flags=re.S)
        assert box is not None and heading in box.group(0)
        assert "sum of gradients" in box.group(0) and "measured ≤ 1e-06" in box.group(0)


def test_an_older_document_without_the_new_fields_still_renders(tmp_path: Path) -> None:
    old = {"name": "|variance - 1|", "value": 0.02, "threshold": 0.1, "sense": "<=",
           "slack": 0.08}
    page = _page(_doc(margins=[old]), tmp_path)
    row = re.search(r"<tr><td>\|variance - 1\|</td>(.*?)</tr>", page).group(1)
    assert re.findall(r"<td[^>]*>(.*?)</td>", row)[:3] == [DASH, "0.02", "≤ 0.1"]


def test_refuted_is_teal_and_the_legend_explains_the_words(tmp_path: Path) -> None:
    """A refuted verdict is a finding about the seed text: teal, not the purple readers took for
    the project failing; the legend names every verdict, kind, the falsifier and both seeds."""
    doc = {"schema": "transformer-math/results/1", "claims": copy.deepcopy(CHAPTER_CLAIMS),
           "summary": {"seed": 0}}
    for lang in ("en", "zh"):
        page = _page(doc, tmp_path, lang)
        assert ".refuted { background: var(--teal); }" in page and "--teal:#0f7b76" in page
        assert "var(--magenta)" not in page  # nothing of the report is purple any more
        legend = re.search(r'<dl class="legend">.*?</dl>', page, flags=re.S).group(0)
        for verdict in ("verified", "refuted", "failed", "cited", "inconclusive"):
            assert f'class="badge {verdict}"' in legend
        assert legend.count('class="badge kindtag"') == 5
    assert "random-number seed" in _page(doc, tmp_path, "en")
