"""Thread counts (issue 38.5): a task runs with its ``--threads`` and leaves the caller's count
as it was; the commands that run claims take ``--threads`` and restore it too."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
import torch
from typer.testing import CliRunner

from transformer_math.cli import app
from transformer_math.diagnostics.timing import torch_threads
from transformer_math.execution import sweep as sweep_module
from transformer_math.execution.tasks import RunSettings, TaskKey, run_task, run_task_json


class _SeenError(Exception):
    pass


def test_a_claim_task_runs_with_its_threads_and_restores_the_count(monkeypatch) -> None:
    from transformer_math.claims import registry

    seen: list[int] = []

    def fake_run_claim(*args: Any, **kwargs: Any) -> Any:
        seen.append(torch.get_num_threads())
        raise _SeenError

    monkeypatch.setattr(registry, "run_claim", fake_run_claim)
    with torch_threads(2):
        for run in (lambda: run_task(TaskKey("attention.causal-mask", None),
                                     RunSettings(threads=1)),
                    lambda: run_task_json("attention.causal-mask", None,
                                          RunSettings(threads=3).to_json())):
            with pytest.raises(_SeenError):
                run()
            assert torch.get_num_threads() == 2  # restored, even after an exception
    assert seen == [1, 3]


@dataclasses.dataclass(frozen=True)
class _Config:
    seed: int = 0


class _Entry:
    def preset(self, size: str, seed: int) -> _Config:
        return _Config(seed)

    def run(self, config: _Config) -> int:
        return torch.get_num_threads()

    def metrics(self, result: int) -> dict[str, float]:
        return {"threads": float(result)}


def test_a_sweep_task_runs_with_its_threads_and_restores_the_count(monkeypatch) -> None:
    from transformer_math.experiments import sweeps

    monkeypatch.setattr(sweeps.SWEEPS, "get", lambda name: _Entry())
    with torch_threads(2):
        out = sweep_module.run_task("fake", "tiny", 0, {}, threads=1)
        assert torch.get_num_threads() == 2
    assert out["metrics"] == {"threads": 1.0}


@pytest.mark.parametrize("command", ["show", "margins", "verify", "mutants", "sweep"])
def test_claim_commands_document_threads(command: str) -> None:
    result = CliRunner().invoke(app, [command, "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "--threads" in result.output


def test_show_restores_the_thread_count(monkeypatch) -> None:
    with torch_threads(2):
        result = CliRunner().invoke(app, ["show", "architecture.chinchilla", "--size", "tiny",
                                          "--threads", "1", "--json"])
        assert result.exit_code == 0, result.output
        assert torch.get_num_threads() == 2


def test_bad_thread_counts_are_one_line_errors() -> None:
    for command in (["show", "architecture.chinchilla"], ["margins"], ["latency", "--preset",
                                                                      "gemma-2b", "--threads"]):
        args = [*command, "0"] if command[-1] == "--threads" else [*command, "--threads", "0"]
        result = CliRunner().invoke(app, args)
        assert result.exit_code == 2, (args, result.output)
        assert "--threads" in result.output and "Traceback" not in result.output
