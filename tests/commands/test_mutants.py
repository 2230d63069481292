"""``tmath mutants`` through its own typer app, on demo claims and demo bugs."""

from __future__ import annotations

import json

import pytest
import typer
from typer.testing import CliRunner

from transformer_math import bugs
from transformer_math.claims import mutants as zoo_module
from transformer_math.claims import registry
from transformer_math.claims.registry import Context, Evidence, close_to, decide
from transformer_math.commands.mutants import register
from transformer_math.registry import Registry

FLIP = bugs.declare_bug("demo.command-flip", "flips the demo sign", module=__name__)
QUIET = bugs.declare_bug("demo.command-quiet", "changes what no check reads", module=__name__)


def _app() -> typer.Typer:
    app = typer.Typer()
    register(app)

    @app.command("noop")  # a second command keeps typer in multi-command mode
    def noop() -> None:
        """Nothing."""

    return app


@pytest.fixture
def demo(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(registry, "CLAIMS", Registry("claim"))
    monkeypatch.setattr(registry, "_import_topic_modules", lambda: None)
    monkeypatch.setattr(zoo_module, "select_bugs", lambda pattern=None: [
        bugs.BUGS[n] for n in (FLIP, QUIET) if pattern is None or pattern in n])

    @registry.claim("demo.sign", source="s", statement="the sign is +1", falsifier=FLIP,
                    expected="verified", seed_refs=[("000", 1, 2)])
    def sign(ctx: Context) -> Evidence:
        bugs.planted(QUIET)
        value = -1.0 if bugs.planted(FLIP) else 1.0
        margins = [close_to("sign", value, 1.0, abs_=0.5)]
        return Evidence(1.0, value, 0.5, decide(margins), margins=margins)


def test_matrix_lists_kills_and_survivors_and_exits_1(demo, tmp_path):
    out = tmp_path / "zoo.json"
    res = CliRunner().invoke(_app(), ["mutants", "--json", str(out)])
    assert res.exit_code == 1, res.output
    assert "SURVIVES demo.command-quiet" in res.output
    assert "1/2 bugs killed" in res.output
    doc = json.loads(out.read_text())
    rows = {b["name"]: b for b in doc["bugs"]}
    assert rows[FLIP]["killed_by"] == ["demo.sign"] and rows[QUIET]["survived"] == ["demo.sign"]
    assert doc["reached"]["demo.sign"] == sorted([FLIP, QUIET])


def test_all_killed_exits_0(demo):
    res = CliRunner().invoke(_app(), ["mutants", "--bug", "flip", "--first-kill"])
    assert res.exit_code == 0, res.output
    assert "1/1 bugs killed" in res.output


def test_user_mistakes_exit_2_with_one_line(demo):
    for args in (["--tier", "slow"], ["--size", "huge"], ["--seeds", "0"], ["--bug", "("],
                 ["-k", "nothing-matches"], ["--bug", "nothing-matches"]):
        res = CliRunner().invoke(_app(), ["mutants", *args])
        assert res.exit_code == 2, (args, res.output)
        assert "Traceback" not in res.output
        assert len([ln for ln in res.output.strip().splitlines() if ln.strip()]) == 1, res.output
