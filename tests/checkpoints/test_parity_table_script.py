"""``tools/parity_table.py`` (the issue-33 parity table) keeps working: one family, float32,
a short generation, written atomically to a markdown file; bad arguments exit 2."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("transformers")

SCRIPT = Path(__file__).resolve().parents[2] / "tools" / "parity_table.py"


def _script() -> Any:
    spec = importlib.util.spec_from_file_location("parity_table", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_one_family_row_and_file(tmp_path, capsys) -> None:
    out = tmp_path / "table.md"
    assert _script().main(["--names", "gpt2", "--dtypes", "float32", "--new", "5",
                           "--out", str(out)]) == 0
    text = out.read_text()
    assert "Command: `nice python tools/parity_table.py --names gpt2" in text
    row = next(line for line in text.splitlines() if line.startswith("| gpt2 | float32"))
    short = float(row.split("|")[3])
    assert short <= 2e-5
    assert re.search(r"\| 5/5 \|", row)


def test_the_switch_each_config_crosses() -> None:
    script = _script()
    rc = script.corpus_module()
    assert script.switch_of(rc.scaled("phi-3-mini-128k")) == (
        "LongRoPE original_max_position_embeddings", 4096)
    assert script.switch_of(rc.scaled("mistral-7b-v0.1"))[1] == 4096
    assert script.switch_of(rc.scaled(script.DYNAMIC))[0].startswith("dynamic")
    assert script.switch_of(rc.scaled("llama-3.2-1b")) is None


@pytest.mark.parametrize("argv, word", [(["--names", "nope"], "--names"),
                                        (["--new", "0"], "--new")])
def test_bad_arguments_exit_2(argv, word, capsys) -> None:
    assert _script().main(argv) == 2
    err = capsys.readouterr().err
    assert word in err and len(err.strip().splitlines()) == 1
