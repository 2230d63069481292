"""The learner's examples (``examples/``): the four project scripts M1-M4 of 000:1575-1587 and
one runnable example per chapter section.

Each M script has at most 30 lines (the seed's 000:1587 "M1-M4 每个脚本控制在 30 行以内", every
line of the file counted), runs with the venv's python, prints a predicted and a measured value,
and is a check, not a print: it exits 1 when its claim's falsifier (a planted library bug, see
``transformer_math.bugs``) is planted. The section examples run at small settings here.
The tests share one xdist group, the file's (``tests/conftest.py`` groups every test with the
other tests of its file unless it chooses a group): each spawns a python that imports torch, and
the induction-heads one trains a model, so they run on one worker, once.
"""

from __future__ import annotations

import json
import os
import runpy
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from transformer_math.bugs import plant

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

# script -> (claim whose computation it repeats, that claim's falsifier)
PROJECT_SCRIPTS = {
    "m1_sqrt_dk_variance.py": ("attention.sqrt-dk-variance", "attention.scale-by-dk"),
    "m2_rope_relative.py": ("position.rope-relative", "rope.rotation-sign"),
    "m3_icl_one_step_gd.py": ("icl.one-step-gd", "icl.gd-value-sign"),
    "m4_chinchilla.py": ("architecture.chinchilla", "scaling.training-cost-2nd"),
}
SECTION_EXAMPLES = ("rope_scaling_figure.py", "icl_equals_gd.py", "induction_heads_tiny.py",
                    "action_chunking.py", "policy_walkthrough.py")


def run_example(name: str, *args: str, timeout: float = 120) -> str:
    """Run ``examples/<name>`` with the test's python (the venv's); returns its stdout."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, str(EXAMPLES / name), *args], check=True,
                          capture_output=True, text=True, timeout=timeout, cwd=EXAMPLES.parent,
                          env=env)
    return done.stdout


@pytest.mark.parametrize("name", sorted(PROJECT_SCRIPTS))
def test_project_script_is_short_and_agrees(name: str) -> None:
    lines = (EXAMPLES / name).read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 30, f"{name} has {len(lines)} lines (000:1587 asks for at most 30)"
    out = run_example(name).lower()
    assert "predicted" in out and "measured" in out, out
    assert "ok" in out.splitlines()[-1], out


@pytest.mark.parametrize("name", sorted(PROJECT_SCRIPTS))
def test_project_script_exits_1_under_its_claims_falsifier(
        name: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """The same script, in this process, with the claim's planted bug: exit status 1."""
    _claim, bug = PROJECT_SCRIPTS[name]
    monkeypatch.setattr(sys, "argv", [name])
    with plant(bug), pytest.raises(SystemExit) as exit_info:
        runpy.run_path(str(EXAMPLES / name), run_name="__main__")
    assert exit_info.value.code == 1, capsys.readouterr().out


@pytest.mark.parametrize("name", sorted(PROJECT_SCRIPTS))
def test_project_script_leaves_the_global_rng_alone(
        name: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """Seeded ``torch.Generator``s only: torch's global RNG state is the same after a run."""
    monkeypatch.setattr(sys, "argv", [name])
    before = torch.random.get_rng_state()
    with pytest.raises(SystemExit) as exit_info:
        runpy.run_path(str(EXAMPLES / name), run_name="__main__")
    assert exit_info.value.code == 0, capsys.readouterr().out
    assert torch.equal(torch.random.get_rng_state(), before)


def test_m4_takes_token_counts_and_refuses_outside_the_band() -> None:
    """D = 1e9 agrees (N ~ 5e7, the seed's 000:1144 sizing); D = 1.4e12 does not: Approach 3's
    optimum there has D/N ~ 54, past the factor-2 band around 20, and the script says so."""
    assert "5.89e+07" in run_example("m4_chinchilla.py", "1e9")
    with pytest.raises(subprocess.CalledProcessError) as info:
        run_example("m4_chinchilla.py", "1.4e12")
    assert info.value.returncode == 1 and "MISMATCH" in info.value.stdout


def test_rope_scaling_figure_writes_a_png(tmp_path: Path) -> None:
    out = tmp_path / "rope.png"
    text = run_example("rope_scaling_figure.py", "--out", str(out), "--head-dim", "32",
                       "--train-len", "256", "--factor", "4")
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    rows = {line.split("|")[0].strip(): line for line in text.splitlines() if "|" in line}
    assert set(rows) >= {"plain RoPE", "PI (linear)", "NTK-aware", "YaRN"}
    assert rows["PI (linear)"].split("|")[1].strip() == "0"  # PI: no phase at L_test is new


def test_icl_equals_gd_layers_are_gd_steps() -> None:
    out = run_example("icl_equals_gd.py", "--layers", "3")
    assert out.splitlines()[-1].startswith("OK"), out


def test_induction_heads_tiny_trains_and_reports() -> None:
    out = run_example("induction_heads_tiny.py", "--steps", "30")
    assert "layer 1: induction score per head" in out and "repeated half" in out, out


def test_action_chunking_closed_form_and_point_mass() -> None:
    out = run_example("action_chunking.py", "--steps", "30", "--quick")
    assert "17.8" in out  # the seed's worked example 1600 / 90 at T = 400, eps = 0.01
    assert "k = 16" in out and "point-mass task" in out, out


def test_policy_walkthrough_trains_saves_loads_in_a_new_process_and_plots(
        tmp_path: Path) -> None:
    """Record, train (small), save; the rollout runs in the python the script starts, from the
    saved folder alone, and writes a PNG."""
    out = run_example("policy_walkthrough.py", "--out", str(tmp_path / "run"), "--episodes", "6",
                      "--steps", "120", "--horizon", "60", timeout=300)
    assert "recorded 6 expert episodes of 60 steps" in out, out
    assert sorted(p.name for p in (tmp_path / "run" / "policy").iterdir()) == [
        "config.json", "model.safetensors"]
    assert (tmp_path / "run" / "rollout.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    errors = json.loads(next(line for line in out.splitlines() if line.startswith("{")))
    assert errors["policy"] < errors["zero_action"], errors
    assert out.splitlines()[-1].startswith("OK"), out
    # the rollout stage alone, in another process, reads the same folder again
    again = run_example("policy_walkthrough.py", "rollout", "--out", str(tmp_path / "run"),
                        "--horizon", "60")
    assert json.loads(next(line for line in again.splitlines() if line.startswith("{"))) == errors


def test_readme_lists_every_example() -> None:
    readme = (EXAMPLES / "README.md").read_text(encoding="utf-8")
    scripts = sorted(p.name for p in EXAMPLES.glob("*.py"))
    assert set(scripts) == set(PROJECT_SCRIPTS) | set(SECTION_EXAMPLES)
    missing = [s for s in scripts if s not in readme]
    assert not missing, f"examples/README.md does not mention {missing}"
