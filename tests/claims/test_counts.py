"""One definition of each count (``claims/counts.py``, issue 38 item 2): the definitions on
small entries, and the registry's summary, ``tmath chapters`` and the report's table by section
agreeing on one catalogue."""

from __future__ import annotations

import html as html_text
import re
from pathlib import Path
from typing import Any

from transformer_math import chapters
from transformer_math.claims import counts
from transformer_math.claims.registry import all_claims, claim_json
from transformer_math.commands.chapters import section_counts
from transformer_math.report.html import render_report
from transformer_math.report.results import summary_from_claims


def _entry(cid: str, kind: str, verdict: str | None, *, expected: str = "verified",
           refutes: list[dict[str, Any]] | None = None,
           corrections: list[dict[str, Any]] | None = None,
           section: str | None = "8.3.3") -> dict[str, Any]:
    return {"id": cid, "kind": kind, "verdict": verdict, "expected": expected, "tier": "quick",
            "section": section, "refutes": refutes or [], "corrections": corrections or []}


def test_distinct_errors_split_by_kind_and_count_each_place_once() -> None:
    first = {"seed": "000", "line": 500, "also": [[ "000", 510], ["004", 20]]}
    again = {"seed": "000", "line": 510, "also": []}  # a line another error already touches
    entries = [
        _entry("a", "measurement", "refuted", refutes=[first, again]),
        _entry("b", "model", "refuted", refutes=[{"seed": "000", "line": 520, "also": [521]}]),
        _entry("c", "measurement", "failed", refutes=[{"seed": "000", "line": 530}]),
        _entry("d", "code-audit", None, expected="refuted", refutes=[{"seed": "000", "line": 9}]),
    ]
    # c failed: its records are not errors shown; d has not run: its expected verdict counts
    assert counts.distinct_errors(entries) == {"measured": 3, "modelled": 1, "lines": 6}
    assert counts.by_verdict(entries) == {"verified": 0, "refuted": 3, "failed": 1, "cited": 0,
                                          "inconclusive": 0}
    assert counts.by_kind(entries) == {"measurement": {"refuted": 1, "failed": 1},
                                       "model": {"refuted": 1}, "code-audit": {"refuted": 1}}


def test_a_section_counts_records_at_their_quoted_line_wherever_the_claim_is_read() -> None:
    s833 = next(s for s in chapters.SECTIONS if s.key == "8.3.3")
    s831 = next(s for s in chapters.SECTIONS if s.key == "8.3.1")
    inside, outside = s833.start + 1, s831.start + 1
    entries = [
        _entry("a", "measurement", "refuted", section="8.3.1",
               refutes=[{"seed": "000", "line": inside}],
               corrections=[{"seed": "000", "line": inside}, {"seed": "000", "line": outside}]),
        _entry("b", "model", "refuted", section="8.3.3",
               refutes=[{"seed": "000", "line": inside}]),
    ]
    row = counts.section_row(entries, s833)
    assert row["claims"] == ["b"]
    assert (row["distinct_errors"], row["modelled_errors"], row["corrections"]) == (1, 1, 1)
    row = counts.section_row(entries, s831)
    assert (row["distinct_errors"], row["modelled_errors"], row["corrections"]) == (0, 0, 1)


def _catalogue_as_run() -> list[dict[str, Any]]:
    """Every registered claim with the verdict it expects, as if a run had obtained it."""
    return [{**claim_json(c), "verdict": c.expected.value if c.expected else None,
             "expected_met": True} for c in all_claims()]


def test_summary_chapters_and_list_agree_on_the_catalogue() -> None:
    entries = _catalogue_as_run()
    catalogue = counts.catalogue([claim_json(c) for c in all_claims()])
    summary = summary_from_claims(entries)
    assert summary["distinct_errors"] == catalogue["distinct_errors"]
    assert {v: summary[v] for v in counts.VERDICTS} == catalogue["by_verdict"]
    assert summary["by_kind"] == catalogue["by_kind"]
    rows = section_counts()
    errors = catalogue["distinct_errors"]
    assert sum(r["distinct_errors"] for r in rows) == errors["measured"]
    assert sum(r["modelled_errors"] for r in rows) == errors["modelled"]
    assert sum(r["corrections"] for r in rows) == catalogue["corrections"]
    assert sum(len(r["claims"]) for r in rows) == catalogue["total"]


_ROW = re.compile(r'<tr( class="total")?><td>(?:<a href="#sec-([^"]+)">)?([^<]*).*?</td>(.*?)</tr>',
                  re.S)


def test_the_reports_table_by_section_equals_tmath_chapters(tmp_path: Path) -> None:
    """The run of the whole catalogue at its expected verdicts: each section's distinct errors
    (shown by running code) and cited corrections in the report are ``tmath chapters``'s."""
    index = render_report({"claims": _catalogue_as_run()}, tmp_path)
    html = index.read_text(encoding="utf-8")
    table = html[html.index('class="grid by-section"'):]
    table = table[:table.index("</table>")]
    by_title = {html_text.escape(s.title_en): s.key for s in chapters.SECTIONS}
    shown: dict[str, tuple[int, int]] = {}
    for cls, anchor, title, cells in _ROW.findall(table):
        numbers = [int(n) for n in re.findall(r'<td class="num">(\d+)</td>', cells)]
        key = "total" if cls else anchor or by_title[title]
        shown[key] = (numbers[-2], numbers[-1])
    rows = {r["section"]: r for r in section_counts()}
    for key, (errors, corrections) in shown.items():
        if key in ("total", "other"):
            continue
        assert (errors, corrections) == (rows[key]["distinct_errors"],
                                          rows[key]["corrections"]), key
    listed = {k for k, r in rows.items() if r["distinct_errors"] or r["corrections"]}
    assert listed <= set(shown), "a section holding errors is missing from the report"
    catalogue = counts.catalogue([claim_json(c) for c in all_claims()])
    assert shown["total"] == (catalogue["distinct_errors"]["measured"], catalogue["corrections"])
