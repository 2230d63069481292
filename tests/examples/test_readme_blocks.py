"""README.md (issue 38, items 1, 2 and 8): its generated blocks are current, its snippets run,
its commands and links exist, it needs nothing outside the clone, and the Makefile's
TORCH_INDEX reaches the torch install only."""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
TMATH = [sys.executable, "-c", "from transformer_math.cli import main; main()"]


def _tool():
    spec = importlib.util.spec_from_file_location("readme_blocks",
                                                  ROOT / "tools" / "readme_blocks.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", README.read_text(encoding="utf-8"), re.S)


def test_generated_blocks_are_current() -> None:
    tool = _tool()
    text = README.read_text(encoding="utf-8")
    names = set(re.findall(r"<!-- generated:([a-z-]+) -->", text))
    assert names == set(tool.BLOCKS), names
    _, stale = tool.render(text)
    assert not stale, f"stale README blocks {stale}: run python tools/readme_blocks.py"


def test_the_bug_count_ignores_bugs_a_test_declares() -> None:
    """CI at 97d39e4 found the block stale because a test module's demo bug, declared earlier in
    the same pytest worker, was counted as a library bug."""
    from transformer_math import bugs
    from transformer_math.claims import counts

    before = counts.bugs_declared()
    bugs.declare_bug("demo.readme-count", "a demo bug a test declares", module=__name__)
    assert counts.bugs_declared() == before


def test_a_stale_block_is_found() -> None:
    tool = _tool()
    text = README.read_text(encoding="utf-8").replace("claims**", "claims (typed)**", 1)
    _, stale = tool.render(text)
    assert "catalogue" in stale


def test_readme_is_short_and_needs_nothing_outside_the_clone() -> None:
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 260
    assert "../shared" not in text and "FACTS.md" not in text and "ARCHITECTURE.md" not in text
    assert not re.search(r"issue \d+", text), "history belongs in CHANGELOG.md"
    for target in re.findall(r"\]\(([^)#]+)\)", text):
        assert (ROOT / target).exists(), f"README links to missing {target}"


def test_every_command_of_the_readme_exists() -> None:
    from typer.main import get_command

    from transformer_math.cli import app

    commands = set(get_command(app).commands)
    text = "\n".join(_blocks("bash") + _blocks("text"))
    used = set(re.findall(r"(?:^|\s|/)tmath ([a-z][a-z-]*)", text, re.M))
    assert used and used <= commands, used - commands
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    for target in re.findall(r"^make (\w+)", text, re.M):
        assert re.search(rf"^{target}:", makefile, re.M), target


def test_python_snippets_and_the_doctor_run(tmp_path: Path) -> None:
    """Every ```python block, in order, in one folder (the checkpoint snippet writes
    ``tiny-llama``), then the doctor and inspect commands the README gives on that folder."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    for i, code in enumerate(_blocks("python")):
        done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, f"README python block {i}:\n{code}\n{done.stderr[-3000:]}"
    for args in (["doctor", "tiny-llama", "--static"], ["inspect", "tiny-llama"]):
        done = subprocess.run([*TMATH, *args], cwd=tmp_path, env=env, capture_output=True,
                              text=True, timeout=300)
        assert done.returncode in (0, 1), f"tmath {' '.join(args)}: {done.stderr[-2000:]}"
        assert "Traceback" not in done.stdout + done.stderr


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_torch_index_reaches_the_torch_install_only() -> None:
    url = "https://download.pytorch.org/whl/cpu"
    plans = {}
    for extra in ([], [f"TORCH_INDEX={url}"]):
        done = subprocess.run(["make", "-n", "-W", "pyproject.toml", "setup", *extra], cwd=ROOT,
                              capture_output=True, text=True, timeout=60, check=True)
        plans[bool(extra)] = [line for line in done.stdout.splitlines() if "pip install" in line]
    torch_line, package_line = plans[True]
    assert "torch==2.13.0" in torch_line and f"--index-url {url}" in torch_line
    assert "--index-url" not in package_line
    assert not any("--index-url" in line for line in plans[False])
    assert "TORCH_INDEX=https://download.pytorch.org/whl/cpu" in README.read_text(encoding="utf-8")
