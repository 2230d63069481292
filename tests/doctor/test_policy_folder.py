"""``tmath doctor`` on policy folders (``doctor/policy.py``, issue 35 item 4).

Small policies saved in temporary folders: a state-only ACT with ACT's temporal ensemble, an ACT
with one camera (receding-horizon queue), a VLA, and a LeRobot ACT folder written by the adapter.
Predictions are written here from the definitions (ACT's weights exp(-m i) / Z with i = 0 the
oldest prediction; the chunk horizon k / fps); the falsifiers are the library's planted bugs
(``transformer_math.bugs``) and a wrong-sign coefficient in a folder's config.json.
"""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest
import torch
from typer.testing import CliRunner

from transformer_math import bugs
from transformer_math.cli import app
from transformer_math.doctor.findings import Severity
from transformer_math.doctor.policy import (
    LEROBOT,
    PROJECT,
    examine_policy,
    policy_folder_kind,
    prefix_lm_allowed,
)
from transformer_math.robotics.policies.act import ACTConfig, ACTPolicy
from transformer_math.robotics.policies.act_lerobot import LeRobotACTConfig, LeRobotACTPolicy
from transformer_math.robotics.policies.ensembling import TemporalEnsembler
from transformer_math.robotics.policies.lerobot_act_adapter import write_lerobot_act
from transformer_math.robotics.policies.vla import VLAConfig, VLAPolicy

K = 8  # chunk size of the ACT folders
DECAY = 0.01


def _built(policy):
    policy.reset_parameters(torch.Generator().manual_seed(0))
    return policy.eval()


@pytest.fixture(scope="module")
def folders(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("policies")
    act = _built(ACTPolicy(ACTConfig(state_dim=3, action_dim=2, chunk_size=K, dim=32,
                                     num_heads=4, encoder_layers=1, decoder_layers=1)))
    act.set_executor(TemporalEnsembler(DECAY))
    act.save_pretrained(root / "act")
    camera = _built(ACTPolicy(ACTConfig(state_dim=3, action_dim=2, chunk_size=K, dim=32,
                                        num_heads=4, encoder_layers=1, decoder_layers=1,
                                        cameras="top", image_height=16, image_width=16)))
    camera.save_pretrained(root / "act_camera")
    vla = _built(VLAPolicy(VLAConfig(dim=32, num_heads=4, num_layers=2, chunk_size=4,
                                     max_text_len=24)))
    vla.save_pretrained(root / "vla")
    lerobot = _built(LeRobotACTPolicy(LeRobotACTConfig(
        state_dim=3, action_dim=2, chunk_size=K, dim=16, num_heads=2, dim_feedforward=32,
        encoder_layers=1, vae_encoder_layers=1, latent_dim=4)))
    lerobot.set_executor(TemporalEnsembler(DECAY))
    write_lerobot_act(lerobot, root / "lerobot")
    return {"act": root / "act", "act_camera": root / "act_camera", "vla": root / "vla",
            "lerobot": root / "lerobot", "root": root}


def _edited(folder: Path, out: Path, **changes: object) -> Path:
    shutil.rmtree(out, ignore_errors=True)
    shutil.copytree(folder, out)
    raw = json.loads((out / "config.json").read_text())
    raw.update(changes)
    (out / "config.json").write_text(json.dumps(raw))
    return out


def _one(diagnosis, check: str, subject: str = ""):
    found = [f for f in diagnosis.by_check(check) if not subject or f.subject == subject]
    assert len(found) == 1, [(f.check, f.subject) for f in diagnosis.findings]
    return found[0]


def test_folder_kinds(folders: dict[str, Path], tmp_path: Path) -> None:
    assert policy_folder_kind(folders["act"]) == PROJECT
    assert policy_folder_kind(folders["vla"]) == PROJECT
    assert policy_folder_kind(folders["lerobot"]) == LEROBOT
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "llama", "type": "act"}))
    assert policy_folder_kind(tmp_path) is None  # a Hugging Face config
    assert policy_folder_kind(tmp_path / "missing") is None


@pytest.mark.parametrize("name", ["act", "act_camera", "vla", "lerobot"])
def test_healthy_policies_pass_and_say_what_they_sampled(folders: dict[str, Path],
                                                        name: str) -> None:
    d = examine_policy(folders[name], fps=50, latency=1e-3)
    assert d.engine == "policy"
    assert not d.flagged, [(f.check, f.subject, f.summary) for f in d.flagged]
    ran = {f.check for f in d.findings}
    assert {"policy.config", "policy.executor", "attention.saturation",
            "attention.mask-coverage", "policy.chunk-horizon", "policy.chunk-latency"} <= ran
    for f in d.findings:
        assert f.details.get("sampled"), (f.check, f.subject)
    coverage = d.by_check("attention.mask-coverage")
    if name in ("act", "act_camera", "lerobot", "vla"):  # posterior padding / prefix-LM mask
        assert _one(d, "attention.mask-coverage", "forbidden keys").measured == 0.0
    assert all(f.measured is not None and f.measured < 1e-4 for f in coverage)


def test_ensembler_weights_equal_acts_definition(folders: dict[str, Path]) -> None:
    """Prediction from the paper: w_i = exp(-m i) / sum_j exp(-m j), i = 0 the oldest."""
    predicted = [math.exp(-DECAY * i) for i in range(K)]
    predicted = [w / sum(predicted) for w in predicted]
    for name in ("act", "lerobot"):
        f = _one(examine_policy(folders[name], checks=["policy.executor"]), "policy.executor")
        measured = f.details["executed_weights_oldest_first"]
        assert max(abs(a - b) for a, b in zip(measured, predicted, strict=True)) < 1e-6
        assert measured[0] > measured[-1]  # the oldest weighs most


@pytest.mark.parametrize("name", ["act", "lerobot"])
def test_planted_reversed_ensemble_is_flagged(folders: dict[str, Path], name: str) -> None:
    with bugs.plant("robotics.ensemble-weights-reversed"):
        d = examine_policy(folders[name], checks=["policy.executor"])
    f = _one(d, "policy.executor")
    assert f.severity is Severity.ERROR
    assert f.details["executed_weights_oldest_first"][0] < f.details["reference_weights"][0]


@pytest.mark.parametrize("bug", ["robotics.chunk-index-frozen",
                                 "robotics.chunk-requery-every-step"])
def test_planted_queue_bugs_are_flagged(folders: dict[str, Path], bug: str) -> None:
    assert _one(examine_policy(folders["act_camera"], checks=["policy.executor"]),
                "policy.executor").severity is Severity.OK
    with bugs.plant(bug):
        d = examine_policy(folders["act_camera"], checks=["policy.executor"])
    assert _one(d, "policy.executor").severity is Severity.ERROR


@pytest.mark.parametrize("name", ["act", "vla", "lerobot"])
def test_planted_mask_after_softmax_is_flagged(folders: dict[str, Path], name: str) -> None:
    """The posterior's padding mask (ACT) and the prefix-LM mask (VLA) applied after the
    softmax leave rows that do not sum to 1."""
    with bugs.plant("attention.mask-after-softmax"):
        d = examine_policy(folders[name], checks=["attention.mask-coverage"])
    f = _one(d, "attention.mask-coverage", "row sums")
    assert f.severity is Severity.ERROR and f.measured > 0.05


def test_prefix_lm_reference() -> None:
    allowed = prefix_lm_allowed(3, 2)  # prefix 3, state 1, actions 2
    assert allowed[:3, :3].all() and not allowed[:3, 3:].any()
    assert allowed[3, :4].all() and not allowed[3, 4:].any()
    assert allowed[4:].all()


@pytest.mark.parametrize("name", ["act", "lerobot"])
def test_wrong_sign_coefficient_is_flagged(folders: dict[str, Path], tmp_path: Path,
                                           name: str) -> None:
    bad = _edited(folders[name], tmp_path / "bad", temporal_ensemble_coeff=-0.01)
    d = examine_policy(bad, fps=50, latency=1e-3)
    f = _one(d, "policy.ensembling", "coefficient")
    assert f.severity is Severity.ERROR and f.measured == -0.01
    w = f.details["weights_oldest_first"]
    assert w[-1] / w[0] == pytest.approx(math.exp(0.01 * (K - 1)), rel=1e-9)
    assert _one(d, "policy.loads").severity is Severity.ERROR  # the loaders refuse it too
    assert "policy.executor" in d.skipped


def test_newest_first_order_is_info(folders: dict[str, Path], tmp_path: Path) -> None:
    edited = _edited(folders["act"], tmp_path / "newest",
                     temporal_ensemble_order="newest_first")
    d = examine_policy(edited, checks=["policy.ensembling", "policy.executor"])
    assert _one(d, "policy.ensembling", "order").severity is Severity.INFO
    f = _one(d, "policy.executor")  # the executor follows the order it declares
    assert f.severity is Severity.OK
    assert f.details["executed_weights_oldest_first"][-1] > f.details[
        "executed_weights_oldest_first"][0]


def test_chunk_horizon_and_latency(folders: dict[str, Path]) -> None:
    d = examine_policy(folders["act_camera"], fps=10, chunk_bound=0.5, latency=1.0,
                       checks=["policy.chunk-*"])
    horizon = _one(d, "policy.chunk-horizon")
    assert horizon.measured == pytest.approx(K / 10) and horizon.severity is Severity.WARNING
    assert _one(d, "policy.chunk-latency", "chunk vs latency").severity is Severity.WARNING
    ok = examine_policy(folders["act_camera"], fps=10, latency=0.01, checks=["policy.chunk-*"])
    assert not ok.flagged
    # ensembling queries every control step: 1 / fps against the latency
    ens = examine_policy(folders["act"], fps=50, latency=0.03, checks=["policy.chunk-latency"])
    period = _one(ens, "policy.chunk-latency", "query period vs latency")
    assert period.measured == pytest.approx(1 / 50) and period.severity is Severity.WARNING


def test_measured_latency_and_budget(folders: dict[str, Path]) -> None:
    d = examine_policy(folders["act"], checks=["policy.chunk-latency"])
    f = _one(d, "policy.chunk-latency")
    assert f.severity is Severity.INFO and f.measured > 0
    assert "median of 5 predict_action_chunk calls" in f.details["sampled"]
    tight = examine_policy(folders["vla"], budget=1e-4)
    assert tight.budget is not None and tight.budget["skipped"]
    assert all(tight.skipped[n].startswith("budget:") for n in tight.budget["skipped"])
    assert tight.by_check("policy.config")  # static checks run first, whatever the budget


def test_static_run_loads_nothing(folders: dict[str, Path]) -> None:
    d = examine_policy(folders["lerobot"], static_only=True, fps=50)
    assert d.engine == "static"
    assert {f.check for f in d.findings} == {"policy.config", "policy.ensembling",
                                             "policy.chunk-horizon"}


# ------------------------------------------------------------------------------------- CLI
def _one_line_error(output: str) -> str:
    lines = [line for line in output.strip().splitlines() if line.strip()]
    assert len(lines) == 1, output
    assert "Traceback" not in output
    assert lines[0].startswith("tmath doctor: error: "), lines[0]
    return lines[0]


def test_cli_on_policy_folders(folders: dict[str, Path], tmp_path: Path) -> None:
    runner = CliRunner()
    ok = runner.invoke(app, ["doctor", str(folders["lerobot"]), "--fps", "50", "--latency",
                             "0.001", "--json", "-"])
    assert ok.exit_code == 0, ok.output
    doc = json.loads(ok.stdout)
    assert doc["engine"] == "policy" and doc["options"]["folder"] == "lerobot"
    bad = _edited(folders["act"], tmp_path / "bad", temporal_ensemble_coeff=-0.5)
    result = runner.invoke(app, ["doctor", str(bad), "--static"])
    assert result.exit_code == 1, result.output
    assert "policy.ensembling" in result.output


@pytest.mark.parametrize("setup, args, words", [
    ("neither", [], "neither a Hugging Face checkpoint"),
    ("empty", [], "no config.json"),
    ("act", ["--context", "64"], "--context applies to language-model checkpoints"),
    ("act", ["--engine", "transformers"], "--engine applies to language-model"),
    ("act", ["--fps", "0"], "--fps must be > 0"),
    ("act", ["--check", "rope.*"], "match no policy doctor check"),
    ("empty", ["--fps", "50"], "--fps applies to policy folders"),
])
def test_cli_bad_usage_exit_2_one_line(folders: dict[str, Path], tmp_path: Path, setup: str,
                                       args: list[str], words: str) -> None:
    if setup == "neither":
        path = tmp_path / "neither"
        path.mkdir()
        (path / "config.json").write_text(json.dumps({"type": "not_a_policy"}))
        (path / "model.safetensors").write_bytes(b"")
    elif setup == "empty":
        path = tmp_path
    else:
        path = folders[setup]
    result = CliRunner().invoke(app, ["doctor", str(path), *args])
    assert result.exit_code == 2, result.output
    assert words in _one_line_error(result.output)


def test_a_folder_lerobot_saved(tmp_path: Path) -> None:
    """The fixture lerobot 0.4.4 wrote (tests/fixtures/lerobot_act/state): healthy; with a
    negative coefficient under ensembling, the static check flags it."""
    folder = Path(__file__).resolve().parents[1] / "fixtures" / "lerobot_act" / "state"
    assert policy_folder_kind(folder) == LEROBOT
    d = examine_policy(folder, fps=50, latency=1e-3)
    assert not d.flagged, [(f.check, f.summary) for f in d.flagged]
    queue = _one(d, "policy.executor")
    assert queue.subject == "action queue" and queue.details["queried_at"][:3] == [0, 3, 6]
    assert _one(d, "attention.mask-coverage", "forbidden keys").measured == 0.0
    bad = _edited(folder, tmp_path / "bad", temporal_ensemble_coeff=-0.01, n_action_steps=1)
    f = _one(examine_policy(bad, static_only=True), "policy.ensembling", "coefficient")
    assert f.severity is Severity.ERROR


def test_other_policy_types_skip_what_does_not_apply(tmp_path: Path) -> None:
    from transformer_math.robotics.policies.bc import BCConfig, BCPolicy
    from transformer_math.robotics.policies.decision_transformer import (
        DecisionTransformer,
        DTConfig,
    )

    for policy in (BCPolicy(BCConfig(3, 2)), DecisionTransformer(DTConfig(3, 2))):
        folder = tmp_path / policy.kind
        policy.save_pretrained(folder)
        d = examine_policy(folder, fps=50, latency=1e-3)
        assert d.exit_code == 0, [(f.check, f.summary) for f in d.flagged]
        assert "no transformer trunk" in d.skipped["attention.saturation"]
    assert "no chunk executor" in d.skipped["policy.executor"]  # the decision transformer


def test_the_documented_example_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    """docs/doctor_policies.md's python block, in a temporary folder; it prints what the doc
    says it prints."""
    import re

    doc = (Path(__file__).resolve().parents[2] / "docs" / "doctor_policies.md").read_text(
        encoding="utf-8")
    (block,) = re.findall(r"```python\n(.*?)```", doc, re.S)
    printed = re.search(r"prints \(.*?\):\n\n```\n(.*?)```", doc, re.S)
    assert printed is not None
    monkeypatch.chdir(tmp_path)
    exec(compile(block, "docs/doctor_policies.md", "exec"), {})
    assert capsys.readouterr().out == printed.group(1)


def test_planted_prefix_lm_boundary_is_flagged(folders: dict[str, Path]) -> None:
    """attention.prefix-lm-boundary-late (the VLA's prefix-LM mask; the language-model doctor
    does not reach it): prefix queries then see a suffix token."""
    with bugs.plant("attention.prefix-lm-boundary-late"):
        d = examine_policy(folders["vla"], checks=["attention.mask-coverage"])
    f = _one(d, "attention.mask-coverage", "forbidden keys")
    assert f.severity is Severity.ERROR and f.measured > 1e-3
