"""A run says what it left out (issue 38.3): the quick tier skips the training claims, ``-k``
the claims it does not match; the report and the terminal both say how many."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from transformer_math import i18n
from transformer_math.claims import registry
from transformer_math.claims.registry import Claim, Context, Evidence, Tier, at_most, decide
from transformer_math.cli import app
from transformer_math.registry import Registry
from transformer_math.report.html import render_report
from transformer_math.report.left_out import left_out, left_out_text


def _check(ctx: Context) -> Evidence:
    margins = [at_most("error", 0.0, 1.0)]
    return Evidence(0.0, 0.0, 1.0, decide(margins), margins=margins)


def _claim(cid: str, tier: Tier) -> Claim:
    return Claim(cid, "demo", "test", "a statement", tier, _check)


CLAIMS = [_claim("demo.a", Tier.QUICK), _claim("demo.b", Tier.QUICK),
          _claim("demo.train1", Tier.FULL), _claim("demo.train2", Tier.FULL)]


def _en(key: str, **values: object) -> str:
    return i18n.ui(key, "en", **values)


def test_counts_by_reason() -> None:
    quick = left_out(CLAIMS, CLAIMS[:1], tier="quick", pattern="demo.a")
    assert quick["total"] == 3 and quick["by_tier"] == {"full": 2} and quick["by_pattern"] == 1
    assert quick["ids"] == ["demo.b", "demo.train1", "demo.train2"]
    line = left_out_text(quick, _en)
    assert line.startswith("This run left out 3 of the registered claims")
    assert "2 training claims of tier full" in line and "1 claims not matching -k demo.a" in line
    full = left_out(CLAIMS, CLAIMS, tier="full")
    assert full["total"] == 0 and left_out_text(full, _en) == ""
    assert left_out_text(None, _en) == "" and left_out_text("junk", _en) == ""  # type: ignore


def test_the_report_and_the_terminal_say_it(monkeypatch: pytest.MonkeyPatch,
                                            tmp_path: Path) -> None:
    table: Registry[Claim] = Registry("claim")
    for c in CLAIMS:
        table.add(c.id, c, topic=c.topic, tier=c.tier.value)
    monkeypatch.setattr(registry, "CLAIMS", table)
    monkeypatch.setattr(registry, "_import_topic_modules", lambda: None)
    out = tmp_path / "results.json"
    result = CliRunner().invoke(app, ["verify", "--seeds", "1", "--json", str(out)])
    assert result.exit_code == 0, result.output
    assert "left out 2 of the registered claims: 2 training claims of tier full" in \
        " ".join(result.stdout.split())
    document = json.loads(out.read_text())
    assert document["summary"]["left_out"]["by_tier"] == {"full": 2}
    for lang, words in (("en", "2 training claims of tier full"), ("zh", "2 条需要训练的 full")):
        page = render_report(document, tmp_path / lang, lang=lang).read_text(encoding="utf-8")
        assert words in page
