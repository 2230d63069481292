"""``tmath margins`` and the registry's margin rules, on throw-away claims."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from transformer_math import bugs
from transformer_math.claims import registry
from transformer_math.claims.registry import (
    Context,
    Evidence,
    Falsifier,
    Margin,
    Verdict,
    agreement,
    all_hold,
    at_least,
    at_most,
    close_to,
    run_claim,
)
from transformer_math.cli import app
from transformer_math.registry import Registry

BIG = bugs.declare_bug("testing.margins-big", "adds 1 to the error", module=__name__)
IGNORED = bugs.declare_bug("testing.margins-ignored", "ignored by the check", module=__name__)


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(registry, "CLAIMS", Registry("claim"))
    monkeypatch.setattr(registry, "_import_topic_modules", lambda: None)

    @registry.claim("testing.firm", source="s", statement="error far below tolerance",
                    falsifier=Falsifier(BIG))
    def firm(ctx: Context) -> Evidence:
        err = 1e-9 * (1 + ctx.seed % 2) + (1.0 if bugs.planted(BIG) else 0.0)
        margins = [at_most("error", err, 1e-6)]
        return Evidence(0, err, 1e-6, agreement(all_hold(margins)), margins=margins)

    @registry.claim("testing.thin", source="s", statement="a gap that passes by luck")
    def thin(ctx: Context) -> Evidence:
        gap = 0.05 + 0.01 * ((ctx.seed * 7) % 5)  # 0.05 .. 0.09: passes, slack < 3 spread
        margins = [at_least("gap", gap, 0.05)]
        return Evidence(0.05, gap, None, agreement(all_hold(margins)), margins=margins)

    @registry.claim("testing.liar", source="s", statement="verdict disagrees with its margins")
    def liar(ctx: Context) -> Evidence:
        return Evidence(0, 1, 0, Verdict.VERIFIED, margins=[at_most("error", 1.0, 0.0)])

    @registry.claim("testing.blind", source="s", statement="firm, but its falsifier is missed",
                    falsifier=Falsifier(IGNORED))
    def blind(ctx: Context) -> Evidence:
        bugs.planted(IGNORED)
        margins = [at_most("error", 0.0, 1e-6)]
        return Evidence(0, 0.0, 1e-6, agreement(all_hold(margins)), margins=margins)

    @registry.claim("testing.cited", source="s", statement="not checkable")
    def cited(ctx: Context) -> Evidence:
        return Evidence(None, None, None, Verdict.CITED)


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner(env={"COLUMNS": "200", "NO_COLOR": "1"})


def test_margin_arithmetic() -> None:
    assert at_least("a", 3.0, 1.0).slack == 2.0 and at_least("a", 0.5, 1.0).holds is False
    assert at_most("b", 0.5, 1.0).slack == 0.5 and at_most("b", 2.0, 1.0).holds is False
    m = close_to("c", 1.02, 1.0, rel=0.05)
    assert m.holds and abs(m.slack - 0.03) < 1e-12
    assert close_to("nan", float("nan"), 1.0, abs_=1.0).holds is False
    assert not all_hold([]) and all_hold([m])
    with pytest.raises(ValueError, match="sense"):
        Margin("x", 1.0, 0.0, ">")


def test_verdict_that_disagrees_with_margins_is_a_failure(fake: None) -> None:
    res = run_claim(registry.get_claim("testing.liar"), Context(seed=0))
    assert res.evidence.verdict is Verdict.FAILED
    assert res.error is not None and "disagrees with the margins" in res.error
    ok = run_claim(registry.get_claim("testing.firm"), Context(seed=0))
    assert ok.evidence.verdict is Verdict.VERIFIED and ok.falsifier_caught is True
    assert ok.to_json()["margins"][0]["name"] == "error"


def test_margins_command_firm_and_weak(fake: None, runner: CliRunner, tmp_path: Path) -> None:
    result = runner.invoke(app, ["margins", "-k", r"^testing\.(firm|cited)$", "--seeds", "0-4"])
    assert result.exit_code == 0, result.output
    assert "2/2 claims firm" in result.output
    out = tmp_path / "m.json"
    result = runner.invoke(app, ["margins", "-k", r"^testing\.(thin|liar)$", "--seeds", "0,1,2,3,4",
                                 "--json", str(out)])
    assert result.exit_code == 1, result.output
    assert "0/2 claims firm" in result.output
    doc = json.loads(out.read_text())
    thin = next(c for c in doc["claims"] if c["id"] == "testing.thin")
    assert thin["firm"] is False and thin["margins"][0]["min_slack"] >= 0  # passes, but thinly
    liar = next(c for c in doc["claims"] if c["id"] == "testing.liar")
    assert liar["problems"]
    result = runner.invoke(app, ["margins", "-k", "blind", "--seeds", "0-1"])
    assert result.exit_code == 1 and "falsifier not caught" in result.output, result.output


@pytest.mark.parametrize("seeds", ["4-0", "x", "3", "1,1", ""])
def test_margins_command_bad_seeds_is_one_line_usage_error(fake: None, runner: CliRunner,
                                                          seeds: str) -> None:
    result = runner.invoke(app, ["margins", "--seeds", seeds])
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.strip().splitlines() if line.strip()]
    assert len(lines) == 1 and "--seeds" in lines[0] and "Traceback" not in result.output
