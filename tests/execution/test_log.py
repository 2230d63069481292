"""The results log is append-only, crash-safe and read back strictly (execution/log.py)."""

from __future__ import annotations

import json

import pytest

from transformer_math import __version__
from transformer_math.claims.seeds import SeedRun
from transformer_math.execution import codec, log
from transformer_math.execution.log import LogError, ResultsLog
from transformer_math.execution.tasks import RunSettings, TaskKey

SETTINGS = RunSettings(seed=0, seeds=2, size="tiny", threads=1)
VERSIONS = {"architecture.pre-vs-post-norm": 2}
CLAIM = "architecture.pre-vs-post-norm"


def _payload(seed: int) -> dict:
    run = SeedRun(seed=seed, values={"pre_slope": -0.5 + seed}, extra=None, seconds=0.1)
    return {"kind": "seed", "phases": {"check": codec.encode(run)}, "seconds": 0.1}


def _log_with_two(path):
    lg = ResultsLog.create(path, SETTINGS)
    lg.append(TaskKey(CLAIM, 0), 2, _payload(0))
    lg.append(TaskKey(CLAIM, 1), 2, _payload(1))
    return lg


def test_appended_tasks_read_back(tmp_path):
    path = tmp_path / "run.jsonl"
    _log_with_two(path)
    back = ResultsLog.open(path, SETTINGS, VERSIONS)
    assert set(back.entries) == {TaskKey(CLAIM, 0), TaskKey(CLAIM, 1)}
    assert back.entries[TaskKey(CLAIM, 1)] == _payload(1)
    assert len(path.read_text().splitlines()) == 3 and not back.dropped_tail


def test_a_line_cut_short_by_a_crash_is_dropped_and_cut_off(tmp_path):
    path = tmp_path / "run.jsonl"
    _log_with_two(path)
    whole = path.read_bytes()
    path.write_bytes(whole[:-25])  # the last write stopped in the middle
    back = ResultsLog.open(path, SETTINGS, VERSIONS)
    assert back.dropped_tail and set(back.entries) == {TaskKey(CLAIM, 0)}
    assert path.read_bytes().endswith(b"\n") and len(path.read_text().splitlines()) == 2
    back.append(TaskKey(CLAIM, 1), 2, _payload(1))  # continues cleanly after the cut
    assert set(ResultsLog.open(path, SETTINGS, VERSIONS).entries) == {
        TaskKey(CLAIM, 0), TaskKey(CLAIM, 1)}


def test_a_task_is_recorded_once(tmp_path):
    lg = _log_with_two(tmp_path / "run.jsonl")
    with pytest.raises(LogError, match="already"):
        lg.append(TaskKey(CLAIM, 0), 2, _payload(0))
    path = tmp_path / "dup.jsonl"
    path.write_text((tmp_path / "run.jsonl").read_text()
                    + (tmp_path / "run.jsonl").read_text().splitlines()[1] + "\n")
    with pytest.raises(LogError, match=r"dup.jsonl:4: .* already in the log"):
        ResultsLog.open(path, SETTINGS, VERSIONS)


def test_stale_versions_are_skipped_and_rerun(tmp_path):
    path = tmp_path / "run.jsonl"
    _log_with_two(path)
    back = ResultsLog.open(path, SETTINGS, {CLAIM: 3})
    assert back.entries == {} and back.stale == 2


def test_never_overwrites_and_refuses_other_settings(tmp_path):
    path = tmp_path / "run.jsonl"
    _log_with_two(path)
    with pytest.raises(LogError, match="exists; pass --resume"):
        ResultsLog.create(path, SETTINGS)
    with pytest.raises(LogError, match=r"seeds 2 \(this run 3\)"):
        ResultsLog.open(path, RunSettings(seed=0, seeds=3, size="tiny"), VERSIONS)


def _line(claim=CLAIM, version=2, seed=0, **payload) -> str:
    return json.dumps({"claim": claim, "version": version, "seed": seed, "payload": payload})


@pytest.mark.parametrize("text, message", [
    ("", "no header"),
    ('{"kind": "something else"}\n', "not a transformer-math results log"),
    (json.dumps({"kind": log.KIND, "format": 99}) + "\n", "log format 99"),
    ("HEADER", "no header"),  # the header write itself was cut short
    ("HEADER\nnot json\n", r":2: not a JSON line"),
    ("HEADER\n" + _line(claim=1) + "\n", "claim must be"),
    ("HEADER\n" + json.dumps({"claim": CLAIM, "version": 2, "seed": 0}) + "\n",
     "exactly claim"),
    ("HEADER\n" + _line(kind="claim", seconds=1) + "\n", "does not fit"),
    ("HEADER\n" + _line(kind="seed", seconds=1, phases={"check": {
        "$dataclass": "os:system", "fields": {}}}) + "\n", "not a transformer_math type"),
    ("HEADER\n" + _line(kind="seed", seconds=-1) + "\n",
     "seconds must be a non-negative number"),
    ("HEADER\n" + _line(seed=1, **_payload(0)) + "\n", "not that seed's run"),
    ("HEADER\n" + _line(claim="demo.unknown-claim") + "\n", "not registered in this version"),
])
def test_malformed_logs_are_errors_naming_the_line(tmp_path, text, message):
    header = json.dumps({"kind": log.KIND, "format": log.FORMAT,
                         "settings": SETTINGS.to_json(), "version": __version__})
    path = tmp_path / "bad.jsonl"
    path.write_text(text.replace("HEADER", header))
    with pytest.raises(LogError, match=message):
        ResultsLog.open(path, SETTINGS, VERSIONS)


def test_size_limit(tmp_path, monkeypatch):
    path = tmp_path / "run.jsonl"
    _log_with_two(path)
    monkeypatch.setattr(log, "MAX_BYTES", 100)
    with pytest.raises(LogError, match="above the 100-byte limit"):
        ResultsLog.open(path, SETTINGS, VERSIONS)


def test_a_log_from_another_version_is_refused(tmp_path):
    path = tmp_path / "old.jsonl"
    header = json.dumps({"kind": log.KIND, "format": log.FORMAT,
                         "settings": SETTINGS.to_json(), "version": "0.0.1"})
    path.write_text(header + "\n")
    with pytest.raises(LogError, match=r"written by transformer-math '0\.0\.1'"):
        ResultsLog.open(path, SETTINGS, VERSIONS)


def test_a_log_that_is_a_link_is_refused(tmp_path):
    path = tmp_path / "run.jsonl"
    _log_with_two(path)
    link = tmp_path / "link.jsonl"
    link.symlink_to(path)
    with pytest.raises(LogError, match="symbolic link"):
        ResultsLog.open(link, SETTINGS, VERSIONS)


_SECOND_WRITER = """
import sys
from transformer_math.execution.log import LogError, ResultsLog
from transformer_math.execution.tasks import RunSettings
try:
    ResultsLog.open(__import__("pathlib").Path(sys.argv[1]),
                    RunSettings(seed=0, seeds=2, size="tiny"), {})
except LogError as exc:
    print("refused:", exc)
"""


def test_a_second_run_on_one_log_is_refused(tmp_path):
    import subprocess
    import sys

    path = tmp_path / "run.jsonl"
    held = ResultsLog.create(path, SETTINGS)  # this process holds the lock
    out = subprocess.run([sys.executable, "-c", _SECOND_WRITER, str(path)],
                         capture_output=True, text=True, timeout=120)
    assert "in use by another run" in out.stdout, out.stdout + out.stderr
    held.close()
    out = subprocess.run([sys.executable, "-c", _SECOND_WRITER, str(path)],
                         capture_output=True, text=True, timeout=120)
    assert "in use" not in out.stdout, out.stdout
