"""``tmath train vla`` and ``tmath rollout vla-push`` (issue 32): the two commands of the README."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from transformer_math.cli import app


def _run(*argv: str):
    return CliRunner().invoke(app, list(argv))


def test_train_then_rollout_reports_a_wilson_interval(tmp_path):
    res = _run("train", "vla", "--size", "tiny", "--steps", "3", "--out", str(tmp_path / "pol"),
               "--json")
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["steps"] == 3
    assert (tmp_path / "pol" / "config.json").is_file()
    res = _run("rollout", "vla-push", "--policy", str(tmp_path / "pol"), "--episodes", "3",
               "--split", "held_out", "--instruction", "shuffled", "--out",
               str(tmp_path / "strip.png"), "--json")
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert doc["episodes"] == 3 and len(doc["wilson95"]) == 2
    assert (tmp_path / "strip.png").stat().st_size > 0


def test_scripted_expert_succeeds_and_mistakes_are_one_line(tmp_path):
    res = _run("rollout", "vla-push", "--episodes", "4", "--out", str(tmp_path / "s.png"),
               "--json")
    assert res.exit_code == 0 and json.loads(res.stdout)["successes"] == 4
    for argv in (["rollout", "vla-push", "--split", "test"],
                 ["rollout", "vla-push", "--episodes", "0"],
                 ["rollout", "grid", "--episodes", "2"],
                 ["rollout", "vla-push", "--policy", str(tmp_path)],
                 ["train", "act", "--out", str(tmp_path / "x")],
                 ["train", "vla", "--size", "huge", "--out", str(tmp_path / "x")]):
        res = _run(*argv)
        assert res.exit_code == 2, (argv, res.output)
        assert len([line for line in res.stderr.splitlines() if line.strip()]) == 1
