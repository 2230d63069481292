"""``tmath annotate --results`` on hostile results documents (issues 39 and 40): every malformed
entry exits 2 with one line naming the field, line ranges are checked against the seed's length
before anything is allocated, and badge links are built from percent-encoded path parts (a
folder named ``javascript:...`` never becomes a link that runs script).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from transformer_math.cli import app
from transformer_math.seed_annotation import safe_href


def _seed(tmp_path: Path, lines: int = 90) -> Path:
    path = tmp_path / "003_copy.txt"
    path.write_text("".join(f"line {n}\n" for n in range(1, lines + 1)), encoding="utf-8")
    return path


def _results(folder: Path, claim: dict) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    doc = {"claims": [claim], "summary": {"total": 1}}
    (folder / "results.json").write_text(json.dumps(doc))
    return folder / "results.json"


GOOD = {"id": "memory.demo", "verdict": "verified", "seed_refs": [{"seed": "003", "lines": [2, 4]}]}


@pytest.mark.parametrize(("change", "field"), [
    ({"seed_refs": [{"seed": "003", "lines": [1, 2, 3]}]}, "seed_refs[0].lines"),
    ({"seed_refs": [{"seed": "003"}]}, "seed_refs[0].lines"),
    ({"seed_refs": ["003:1"]}, "seed_refs[0]"),
    ({"seed_refs": [{"seed": "003", "lines": [-100000000, 5]}]}, "seed_refs[0].lines[0]"),
    ({"refutes": [{"seed": "003", "line": "abc"}]}, "refutes[0].line"),
    ({"refutes": [{"seed": "003"}]}, "refutes[0].line"),
    ({"verdict": {"nested": "object"}}, "verdict"),
    ({"id": "a/"}, "id"),
    ({"refutes": [{"seed": "003", "line": 5, "also": [["003", 10**9]]}]}, "also[0][1]"),
])
def test_malformed_entries_exit_2_naming_the_field(tmp_path, change, field):
    seed = _seed(tmp_path)
    results = _results(tmp_path / "r", {**GOOD, **change})
    out = CliRunner().invoke(app, ["annotate", str(seed), "--seed", "003", "--report",
                                   str(tmp_path / "o"), "--results", str(results)])
    assert out.exit_code == 2, out.output
    assert field in out.output and "Traceback" not in out.output
    assert len(out.output.strip().splitlines()) <= 3, out.output


def test_a_javascript_folder_name_is_no_link_scheme(tmp_path):
    assert safe_href("javascript:alert(1);x=/index.html") == \
        "./javascript%3Aalert%281%29%3Bx%3D/index.html"
    seed = _seed(tmp_path)
    folder = tmp_path / "javascript:alert(document.domain);x="
    _results(folder, GOOD)
    (folder / "index.html").write_text("<html></html>")
    out = CliRunner().invoke(app, ["annotate", str(seed), "--seed", "003", "--report",
                                   str(tmp_path), "--results", str(folder)])
    assert out.exit_code == 0, out.output
    page = (tmp_path / "003.html").read_text(encoding="utf-8")
    assert 'href="javascript:' not in page and 'href="./javascript%3A' in page
