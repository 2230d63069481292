"""Inline execution of (claim, seed) tasks equals the direct run; logs resume without repeats."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from transformer_math.claims.registry import Context, Size, get_claim, run_claim
from transformer_math.execution.executors import execute
from transformer_math.execution.log import ResultsLog
from transformer_math.execution.tasks import RunSettings, TaskKey, plan
from transformer_math.report.results import to_jsonable

SEEDED = "architecture.pre-vs-post-norm"  # a quick claim that sweeps seeds (2 x ~1 s at tiny)
WHOLE = "attention.sqrt-dk-variance"  # a claim run as one task
SETTINGS = RunSettings(seed=0, seeds=2, size="tiny", threads=1)
TMATH = [sys.executable, "-m", "transformer_math.cli"]


def comparable(result) -> dict:
    """A result's JSON without the wall-clock fields."""
    d = to_jsonable(result.to_json())
    d.pop("seconds")
    d.pop("timing")
    return d


@pytest.fixture(scope="module")
def direct() -> dict:
    return {i: comparable(run_claim(get_claim(i), Context(seed=0, size=Size.TINY, seeds=2)))
            for i in (SEEDED, WHOLE)}


def test_plan_cuts_seeded_claims_by_seed():
    keys = plan([get_claim(SEEDED), get_claim(WHOLE)], SETTINGS)
    assert keys == [TaskKey(SEEDED, 0), TaskKey(SEEDED, 1), TaskKey(WHOLE, None)]
    assert get_claim(SEEDED).seeded and not get_claim(WHOLE).seeded


def test_inline_tasks_equal_the_direct_run(direct, tmp_path):
    log = ResultsLog.create(tmp_path / "run.jsonl", SETTINGS)
    results, info = execute([get_claim(SEEDED), get_claim(WHOLE)], SETTINGS, log=log)
    assert info.executor == "inline" and info.tasks == 3 and info.resumed == 0
    for r in results:
        assert comparable(r) == direct[r.claim.id]
    seeded = results[0]
    assert seeded.evidence.per_seed["seeds"] == [0, 1]
    assert len(seeded.timing["check_seed_s"]) == 2 and seeded.timing["falsifier_s"] > 0
    assert seeded.reached == run_claim(get_claim(SEEDED), Context(
        seed=0, size=Size.TINY, seeds=2)).reached  # bug sites replayed from the seed runs

    # resumed from the complete log: nothing runs, the results are the same
    again = ResultsLog.open(tmp_path / "run.jsonl", SETTINGS, {SEEDED: 2, WHOLE: 2}
                            | {c: get_claim(c).version for c in (SEEDED, WHOLE)})
    results2, info2 = execute([get_claim(SEEDED), get_claim(WHOLE)], SETTINGS, log=again)
    assert info2.tasks == 0 and info2.resumed == 3
    assert [comparable(r) for r in results2] == [comparable(r) for r in results]


def test_a_partial_log_runs_only_the_missing_tasks(direct, tmp_path):
    path = tmp_path / "run.jsonl"
    execute([get_claim(SEEDED)], SETTINGS, log=ResultsLog.create(path, SETTINGS))
    lines = path.read_text().splitlines()
    path.write_text("\n".join(lines[:2]) + "\n")  # the header and seed 0 only
    versions = {SEEDED: get_claim(SEEDED).version}
    log = ResultsLog.open(path, SETTINGS, versions)
    results, info = execute([get_claim(SEEDED)], SETTINGS, log=log)
    assert info.resumed == 1 and info.tasks == 1
    assert (f"resumed {path}: of 2 task(s), 1 reused from the log (their verdicts recomputed "
            "from their margins) and 1 run now; 0 of 1 claim(s) wholly from the log") \
        in info.notes[-1]
    assert comparable(results[0]) == direct[SEEDED]
    keys = [(d["claim"], d["seed"]) for d in map(json.loads, path.read_text().splitlines()[1:])]
    assert sorted(keys) == [(SEEDED, 0), (SEEDED, 1)]


def test_killed_driver_resumes_with_every_task_once(direct, tmp_path):
    """SIGKILL the whole ``tmath verify`` once the log holds a task, then ``--resume``."""
    log = tmp_path / "run.jsonl"
    out = tmp_path / "out.json"
    args = ["verify", "-k", f"^({SEEDED}|{WHOLE}|attention.multihead-param-count)$",
            "--size", "tiny", "--seeds", "2"]
    proc = subprocess.Popen([*TMATH, *args, "--log", str(log)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        if log.exists() and len(log.read_bytes().splitlines()) >= 2:
            break
        time.sleep(0.05)
    killed = proc.poll() is None
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    assert killed, "the run finished before it could be killed"
    done_before = len(log.read_bytes().splitlines()) - 1
    res = subprocess.run([*TMATH, *args, "--resume", str(log), "--json", str(out)],
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]
    doc = json.loads(out.read_text())
    assert doc["executor"] == "inline"
    assert doc["run"]["resumed"] >= done_before >= 1
    assert doc["run"]["resumed"] + doc["run"]["tasks"] == 4
    lines = [json.loads(x) for x in log.read_text().splitlines()[1:]]
    keys = [(d["claim"], d["seed"]) for d in lines]
    assert len(keys) == len(set(keys)) == 4
    by_id = {c["id"]: c for c in doc["claims"]}
    for claim_id in (SEEDED, WHOLE):
        got = dict(by_id[claim_id])
        got.pop("seconds")
        got.pop("timing")
        assert got == direct[claim_id]


@pytest.mark.parametrize("extra, message", [
    (["--log", "a.jsonl", "--resume", "b.jsonl"], "not both"),
    (["--resume", "missing.jsonl"], "is not an existing file"),
    (["--workers", "0"], "--workers must be >= 1"),
    (["--address", "not an address"], "--address must be HOST:PORT"),
    (["--address", "host:99999"], "--address must be HOST:PORT"),
])
def test_bad_execution_options_are_one_line_errors(tmp_path, extra, message):
    res = subprocess.run([*TMATH, "verify", "-k", WHOLE, *extra], capture_output=True,
                         text=True, cwd=tmp_path, timeout=120)
    assert res.returncode == 2 and message in res.stderr, res.stderr
    assert "Traceback" not in res.stderr and len(res.stderr.strip().splitlines()) == 1


def test_resume_with_other_settings_is_refused(tmp_path):
    log = tmp_path / "run.jsonl"
    ResultsLog.create(log, SETTINGS).close()  # released: the subprocess may take the lock
    res = subprocess.run([*TMATH, "verify", "-k", WHOLE, "--size", "tiny", "--seeds", "3",
                          "--resume", str(log)], capture_output=True, text=True, timeout=120)
    assert res.returncode == 2 and "seeds 2 (this run 3)" in res.stderr, res.stderr
    assert Path(log).read_text().count("\n") == 1  # nothing appended


def test_a_claim_registered_outside_the_package_is_refused_on_ray(monkeypatch):
    """Ray workers rebuild the registry by importing the package: a claim registered from a test
    or a script exists in the driver only. It is refused before Ray starts (found by the CLI
    fuzz test: every task failed with KeyError 'no claim with id')."""
    from transformer_math.claims.registry import Claim, Evidence, Tier, Verdict
    from transformer_math.execution import executors
    from transformer_math.execution.executors import ExecutorError, execute

    def check(ctx: Context) -> Evidence:
        return Evidence(1.0, 1.0, 0.0, Verdict.VERIFIED)

    claim = Claim("demo.outside", "demo", "test", "a statement", Tier.QUICK, check)
    monkeypatch.setattr(executors, "start_ray", lambda **kw: pytest.fail("Ray was started"))
    with pytest.raises(ExecutorError, match=r"demo\.outside.*--workers 1"):
        execute([claim], SETTINGS, workers=2)


def test_a_tampered_verdict_in_the_log_is_refused(tmp_path):
    """``--resume`` recomputes each logged verdict from its margins (issue 39): a line whose
    verdict was edited ('verified' -> 'refuted', margins unchanged) is refused."""
    from transformer_math.execution.log import LogError

    path = tmp_path / "run.jsonl"
    log = ResultsLog.create(path, SETTINGS)
    execute([get_claim(WHOLE)], SETTINGS, log=log)
    log.close()
    lines = path.read_text().splitlines()
    assert '"verified"' in lines[1]
    path.write_text("\n".join([lines[0], lines[1].replace('"verified"', '"refuted"', 1)]) + "\n")
    with pytest.raises(LogError, match="not the one its margins imply"):
        ResultsLog.open(path, SETTINGS, {WHOLE: get_claim(WHOLE).version})
