"""A missing output folder is created, as the README says (issue 38.7: the old README said exit 2
while the code created it; creating it is what a user wants, like ``mkdir -p``); a path that is
a file is refused with exit 2 and one line."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from transformer_math.cli import app

from .conftest import CHAPTER_CLAIMS

README = Path(__file__).resolve().parents[2] / "README.md"


def _results(tmp_path: Path) -> Path:
    path = tmp_path / "results.json"
    path.write_text(json.dumps({"schema": "transformer-math/results/1",
                                "claims": CHAPTER_CLAIMS[:2], "summary": {"seed": 0}}))
    return path


def test_a_missing_report_folder_is_created(tmp_path: Path) -> None:
    out = tmp_path / "not" / "yet" / "there"
    res = CliRunner().invoke(app, ["report", str(out), "--from", str(_results(tmp_path))])
    assert res.exit_code == 0, res.output
    assert (out / "index.html").is_file()


def test_a_file_where_the_folder_should_be_exits_2(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    res = CliRunner().invoke(app, ["report", str(blocker), "--from", str(_results(tmp_path))])
    assert res.exit_code == 2
    assert "exists and is not a folder" in res.stderr and res.stderr.count("\n") == 1


def test_the_readme_documents_what_the_code_does() -> None:
    text = " ".join(README.read_text(encoding="utf-8").split())
    assert "(a missing output folder is created)" in text
