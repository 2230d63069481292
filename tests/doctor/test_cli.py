"""``tmath doctor`` end to end through the real ``tmath`` application (in-process, CliRunner):
exit 0 on a healthy checkpoint, 1 on a planted problem, 2 with one line on bad usage; ``--json -``
is the Diagnosis on stdout; ``--help`` does not import torch.

Runs select checks with ``--check`` where the whole doctor is not the point (the whole doctor
takes tens of seconds on the shared test machine; its per-check times are in the JSON)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from transformer_math import bugs
from transformer_math.cli import app

FAST = ["--check", "position.*", "--check", "attention.heads", "--check", "norm.placement"]


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner(env={"COLUMNS": "200", "NO_COLOR": "1"})


def _one_line_error(output: str) -> str:
    lines = [line for line in output.strip().splitlines() if line.strip()]
    assert len(lines) == 1, output
    assert "Traceback" not in output
    assert lines[0].startswith("tmath doctor: error: "), lines[0]
    return lines[0]


def test_healthy_checkpoints_exit_0(runner: CliRunner, hf_llama_random: str,
                                    hf_gpt2_random: str) -> None:
    for path in (hf_llama_random, hf_gpt2_random):
        result = runner.invoke(app, ["doctor", path, *FAST])
        assert result.exit_code == 0, result.output
        assert "healthy:" in result.stdout
        assert "doctor: running position.learned-table" in result.stderr  # progress on stderr


def test_learned_table_shorter_than_context_exits_1(runner: CliRunner,
                                                    hf_gpt2_random: str) -> None:
    """The GPT-2 fixture has 64 learned positions; a 256-token target context is a warning."""
    result = runner.invoke(app, ["doctor", hf_gpt2_random, "--context", "256", *FAST])
    assert result.exit_code == 1, result.output
    assert "PROBLEMS FOUND" in result.stdout
    assert "position.learned-table" in result.stdout
    assert "meaning:" in result.stdout and "fix:" in result.stdout and "source:" in result.stdout


def test_planted_engine_bug_exits_1(runner: CliRunner, hf_llama_random: str) -> None:
    """GQA heads tiled instead of grouped, planted in the project's engine: flagged by the
    attention.recompute check (and the same run without the bug is healthy)."""
    args = ["doctor", hf_llama_random, "--check", "attention.recompute"]
    clean = runner.invoke(app, args)
    assert clean.exit_code == 0, clean.output
    with bugs.plant("attention.gqa-tiled"):
        result = runner.invoke(app, args)
    assert result.exit_code == 1, result.output
    assert "attention.recompute" in result.stdout


def test_json_dash_is_the_diagnosis_on_stdout(runner: CliRunner, hf_llama_random: str,
                                              tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["doctor", hf_llama_random, "--seed", "3", *FAST,
                                 "--json", "-"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["exit_code"] == 0 and doc["engine"] == "project"
    assert doc["options"]["seed"] == 3
    assert {f["check"] for f in doc["findings"]} <= set(doc["seconds"])
    assert "attention.heads" in doc["seconds"]
    assert "healthy:" in result.stderr  # the table went to stderr
    assert not (tmp_path / "-").exists()


def test_json_file_and_static(runner: CliRunner, hf_llama_random: str, tmp_path: Path) -> None:
    out = tmp_path / "sub" / "d.json"
    result = runner.invoke(app, ["doctor", hf_llama_random, "--static", "--json", str(out)])
    assert result.exit_code == 0, result.output
    doc = json.loads(out.read_text())
    assert doc["engine"] == "static" and doc["findings"]


def test_transformers_engine(runner: CliRunner, hf_gpt2_random: str) -> None:
    result = runner.invoke(app, ["doctor", hf_gpt2_random, "--engine", "transformers",
                                 "--check", "attention.heads", "--json", "-"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["engine"] == "transformers"


@pytest.mark.parametrize("args, words", [
    (["/nonexistent/ckpt"], "does not exist"),
    (["{tmp}"], "no config.json"),
    (["{file}"], "not a directory"),
    (["{bad}"], "cannot load checkpoint"),
    (["{ckpt}", "--context", "0"], "--context must be >= 1"),
    (["{ckpt}", "--train-tokens", "-5"], "--train-tokens must be > 0"),
    (["{ckpt}", "--train-tokens", "inf"], "--train-tokens must be a finite number"),
    (["{ckpt}", "--engine", "vllm"], "--engine must be one of project, transformers"),
    (["{ckpt}", "--probe-len", "1"], "--probe-len must be >= 2"),
    (["{ckpt}", "--seed", "-1"], "--seed must be >= 0"),
    (["{ckpt}", "--check", "no-such-check*"], "match no doctor check"),
    (["{ckpt}", "--json", "{file}/x.json"], "cannot write --json"),
    (["{ckpt}", "--report", "{file}"], "exists and is not a folder"),
])
def test_bad_usage_exit_2_one_line(runner: CliRunner, hf_llama_random: str, tmp_path: Path,
                                   args: list[str], words: str) -> None:
    (tmp_path / "f.txt").write_text("x")
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "config.json").write_text("{not json")
    subs = {"{tmp}": str(tmp_path), "{file}": str(tmp_path / "f.txt"), "{bad}": str(bad),
            "{ckpt}": hf_llama_random}
    for key, value in subs.items():
        args = [a.replace(key, value) for a in args]
    result = runner.invoke(app, ["doctor", *args])
    assert result.exit_code == 2, result.output
    assert words in _one_line_error(result.output)


def test_transformers_engine_missing_is_exit_2(runner: CliRunner, hf_llama_random: str,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "transformers" else real(name, *a))
    result = runner.invoke(app, ["doctor", hf_llama_random, "--engine", "transformers"])
    assert result.exit_code == 2, result.output
    assert "needs the 'transformers' package" in _one_line_error(result.output)


def test_help_does_not_import_torch() -> None:
    code = textwrap.dedent("""
        import json, sys
        from transformer_math.cli import main
        try:
            main(["doctor", "--help"])
        except SystemExit as exit:
            assert exit.code == 0, exit.code
        print(json.dumps({m: m in sys.modules for m in ("torch", "matplotlib")}))
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, check=True)
    assert "--train-tokens" in out.stdout and "--engine" in out.stdout
    assert json.loads(out.stdout.strip().splitlines()[-1]) == {"torch": False,
                                                               "matplotlib": False}
