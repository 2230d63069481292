"""Ray runs the same tasks as the inline executor: equal results seed by seed, and a killed
worker's task is retried and recorded once (issue 19)."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from transformer_math.claims.registry import get_claim
from transformer_math.execution.executors import execute
from transformer_math.execution.tasks import RunSettings

pytestmark = pytest.mark.xdist_group("ray")  # one local Ray at a time on the test machine

CLAIMS = ("computation.parity", "architecture.pre-vs-post-norm")  # two training claims
SETTINGS = RunSettings(seed=0, seeds=2, size="tiny", threads=1)
TMATH = [sys.executable, "-m", "transformer_math.cli"]


def comparable(entry: dict) -> dict:
    d = dict(entry)
    d.pop("seconds")
    d.pop("timing")
    d["details"] = {k: v for k, v in d["details"].items() if k != "seconds"}  # wall clock
    return d


@pytest.fixture(scope="module")
def inline() -> dict:
    from transformer_math.report.results import to_jsonable

    results, info = execute([get_claim(c) for c in CLAIMS], SETTINGS)
    assert info.executor == "inline"
    return {r.claim.id: comparable(to_jsonable(r.to_json())) for r in results}


def test_two_ray_workers_equal_the_inline_run_seed_by_seed(inline):
    from transformer_math.report.results import to_jsonable

    results, info = execute([get_claim(c) for c in CLAIMS], SETTINGS, workers=2)
    assert info.executor == "ray" and info.workers == 2 and info.tasks == 4
    for r in results:
        got = comparable(to_jsonable(r.to_json()))
        assert got["per_seed"] == inline[r.claim.id]["per_seed"]
        assert got["per_seed"]["seeds"] == [0, 1]
        assert got == inline[r.claim.id]


def _running_tasks(marker: bytes) -> list[int]:
    """PIDs of Ray workers executing a task now (Ray titles them ``ray::<function>``) that
    belong to this test's run: their environment, inherited from its driver, holds ``marker``
    (another Ray run on the machine must not lose a worker to this test)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                title = (entry / "cmdline").read_bytes().split(b"\0")[0]
                if not title.startswith(b"ray::run_task_json"):
                    continue
                if marker in (entry / "environ").read_bytes().split(b"\0"):
                    pids.append(int(entry.name))
            except OSError:
                continue
    return pids


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="finds Ray's workers through /proc")
def test_a_killed_worker_is_retried_and_every_result_recorded_once(inline, tmp_path):
    log, out = tmp_path / "run.jsonl", tmp_path / "out.json"
    pattern = "^(" + "|".join(CLAIMS) + ")$"
    tag = f"TMATH_WORKER_KILL_TEST={os.getpid()}-{time.time_ns()}"
    marker = tag.encode()
    proc = subprocess.Popen(
        [*TMATH, "verify", "--tier", "full", "-k", pattern, "--size", "tiny", "--seeds", "2",
         "--workers", "2", "--log", str(log), "--json", str(out)],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True,
        env={**os.environ, tag.split("=")[0]: tag.split("=")[1]})
    killed = None
    try:
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline and proc.poll() is None and killed is None:
            running = _running_tasks(marker)
            if running:
                time.sleep(0.5)  # well inside the task (each takes seconds)
                if running[0] in _running_tasks(marker):
                    os.kill(running[0], signal.SIGKILL)
                    killed = running[0]
            time.sleep(0.05)
        _, err = proc.communicate(timeout=600)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert killed is not None, "no Ray worker was seen running a task"
    assert proc.returncode == 0, err[-3000:]
    doc = json.loads(out.read_text())
    assert doc["executor"] == "ray" and doc["run"]["tasks"] == 4
    keys = [(d["claim"], d["seed"]) for d in map(json.loads, log.read_text().splitlines()[1:])]
    assert sorted(keys) == sorted((c, s) for c in CLAIMS for s in (0, 1))  # each once
    for entry in doc["claims"]:
        assert comparable(entry) == inline[entry["id"]]


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_a_cluster_at_an_address_runs_the_tasks(inline, tmp_path):
    """``--address``: a head node started with ``ray start --head`` (this machine standing in for
    a cluster); the package travels to it as a runtime-env module."""
    import tempfile

    port = _free_port()
    env = {**os.environ, "RAY_AUTH_MODE": "disabled", "RAY_worker_niceness": "0"}
    short = Path(tempfile.mkdtemp(prefix="tm-ray-"))  # Unix socket paths must stay short
    ray_cli = str(Path(sys.executable).with_name("ray"))
    head = subprocess.Popen(
        [ray_cli, "start", "--head", "--block", "--num-cpus", "2", "--port", str(port),
         "--include-dashboard", "false", "--disable-usage-stats",
         "--temp-dir", str(short)],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    out = tmp_path / "out.json"
    try:
        import socket

        deadline = time.monotonic() + 120
        while True:  # the head takes a few seconds to listen
            try:
                socket.create_connection(("127.0.0.1", port), timeout=2).close()
                break
            except OSError:
                assert time.monotonic() < deadline and head.poll() is None, (
                    (short / "head.err").read_text()[-2000:])
                time.sleep(0.5)
        res = subprocess.run(
            [*TMATH, "verify", "-k", "^architecture.pre-vs-post-norm$", "--size", "tiny",
             "--seeds", "2", "--address", f"127.0.0.1:{port}", "--json", str(out)],
            env=env, capture_output=True, text=True, timeout=300)
        assert res.returncode == 0, res.stderr[-2000:]
    finally:  # the head's processes share its process group (SIGTERM drains for a minute)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(head.pid, signal.SIGKILL)
        head.wait(timeout=60)
        shutil.rmtree(short, ignore_errors=True)
    doc = json.loads(out.read_text())
    assert doc["executor"] == "ray" and doc["run"]["address"] == f"127.0.0.1:{port}"
    (entry,) = doc["claims"]
    assert comparable(entry) == inline[entry["id"]]


def test_an_unreachable_cluster_is_a_one_line_error(tmp_path):
    env = {**os.environ, "RAY_AUTH_MODE": "disabled"}
    res = subprocess.run([*TMATH, "verify", "-k", "^attention.sqrt-dk-variance$", "--address",
                          f"127.0.0.1:{_free_port()}"], env=env, capture_output=True, text=True,
                         timeout=120)
    assert res.returncode == 2 and "nothing answers at" in res.stderr, res.stderr
    assert "Traceback" not in res.stderr


def test_a_listener_that_is_not_ray_is_refused_within_seconds(tmp_path):
    """Issue 40: a TCP listener that is not Ray (here an HTTP/1 server) passed the reachability
    check and ray.init then retried for minutes; now it is one line, exit 2, in seconds."""
    import socket
    import threading
    import time

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(4)
    port = server.getsockname()[1]
    stop = threading.Event()

    def answer() -> None:
        server.settimeout(0.5)
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            with conn:
                try:
                    conn.recv(1024)
                    conn.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
                except OSError:
                    pass

    thread = threading.Thread(target=answer, daemon=True)
    thread.start()
    try:
        start = time.perf_counter()
        res = subprocess.run([*TMATH, "verify", "-k", "^attention.sqrt-dk-variance$",
                              "--address", f"127.0.0.1:{port}"], capture_output=True, text=True,
                             timeout=120)
        took = time.perf_counter() - start
    finally:
        stop.set()
        thread.join(timeout=5)
        server.close()
    assert res.returncode == 2 and "is not a Ray cluster" in res.stderr, res.stderr
    assert "Traceback" not in res.stderr and took < 60, took
