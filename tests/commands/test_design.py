"""``tmath design`` (``theory.vla_design``): the chapter's six-step VLA checklist (000:1344-1360).

The worked case reproduces N* = D / 20 = 5e7, the JSON has six steps of the documented schema,
every basis entry that names a claim is registered (or is one of the decoder claims being
written), and bad input exits 2 with one line and no traceback.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from typer.testing import CliRunner

from transformer_math.claims.registry import all_claims
from transformer_math.cli import app
from transformer_math.theory import vla_design as vd
from transformer_math.theory.latency import HARDWARE

WORKED = ["design", "--tokens", "1e9", "--tasks", "800", "--hz", "30", "--horizon", "300"]
KEYS = {"step", "question", "answer", "basis", "chapter_says", "differs", "values"}


def _run(argv: list[str]) -> object:
    return CliRunner().invoke(app, argv)


@pytest.fixture(scope="module")
def worked() -> dict:
    result = _run([*WORKED, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_worked_case_reproduces_n_star(worked: dict) -> None:
    step3 = worked["steps"][2]
    assert step3["step"] == 3
    assert math.isclose(step3["values"]["n_star_approach_1"], 5e7, rel_tol=1e-12)
    assert "5e+07" in step3["answer"]
    # the family member nearest N* and the latency bound on the edge preset
    assert step3["values"]["chosen_layers"] == 10
    assert step3["values"]["binding"] == "data (Chinchilla)"
    assert worked["inputs"]["hardware"]["name"] == "jetson-agx-orin-64gb"


def test_json_schema(worked: dict) -> None:
    steps = worked["steps"]
    assert [s["step"] for s in steps] == [1, 2, 3, 4, 5, 6]
    for s in steps:
        assert set(s) == KEYS
        assert s["question"] and s["answer"] and s["chapter_says"] and s["basis"]
        assert s["differs"] is None or isinstance(s["differs"], str)
        assert any(ch.isdigit() for ch in s["answer"]), s["answer"]


def test_basis_ids_name_registered_claims_and_real_calculators(worked: dict) -> None:
    registered = {c.id for c in all_claims()}
    named = {b for s in worked["steps"] for b in s["basis"] if not b.startswith("calculator:")}
    unknown = named - registered
    assert not unknown, unknown
    for p in vd.DECODER_CLAIMS:  # the decoder claims of issue 20
        assert p in worked["steps"][4]["basis"]
    for b in (b for s in worked["steps"] for b in s["basis"] if b.startswith("calculator:")):
        module, fn = b.removeprefix("calculator: ").rsplit(".", 1)
        mod = __import__(f"transformer_math.{module}", fromlist=[fn])
        assert callable(getattr(mod, fn)), b


def test_text_output_names_decoders_and_claims() -> None:
    result = _run(WORKED)
    assert result.exit_code == 0, result.output
    for word in ("N* = D/20 = 5e+07", "robotics.flow-matching-decoder", "architecture.vla-latency",
                 "k = 24", "icl.task-diversity-transition"):
        assert word in result.stdout


def test_chunk_optimum_is_the_integer_argmin() -> None:
    for T, eps, lam in ((300, 0.01, 0.01), (400, 0.01, 0.001), (50, 0.5, 0.9), (10, 1.0, 1e-4)):
        k = vd.best_chunk(T, eps, lam)
        cost = [vd.chunk_tradeoff(T, eps, lam, c) for c in range(1, T + 1)]
        assert vd.chunk_tradeoff(T, eps, lam, k) == pytest.approx(min(cost))


def test_decoder_costs_order() -> None:
    inp = vd.DesignInputs(tokens=1e9, tasks=800, hz=30, horizon=300,
                          hardware=HARDWARE["jetson-agx-orin-64gb"])
    d = vd.design(inp).steps[4].values["decoders"]
    assert d["cvae"]["decoder_ms"] < d["flow"]["decoder_ms"] < d["diffusion"]["decoder_ms"]
    assert d["flow"]["decoder_ms"] * 5 == pytest.approx(d["diffusion"]["decoder_ms"])
    assert d["ar_bins_k1"]["decoder_ms"] < d["ar_bins"]["decoder_ms"]


def test_results_file_quotes_verdicts(tmp_path: Path) -> None:
    doc = {"claims": [{"id": "icl.task-diversity-transition", "verdict": "verified",
                       "expected_met": True, "details": {"log2_M_star_first_seed": 3.42}}]}
    f = tmp_path / "r.json"
    f.write_text(json.dumps(doc))
    result = _run([*WORKED, "--results", str(f), "--json"])
    assert result.exit_code == 0, result.output
    step4 = json.loads(result.stdout)["steps"][3]
    assert step4["values"]["project_log2_m_star"] == 3.42
    assert "2^3.42" in step4["answer"]
    assert step4["values"]["claim_verdicts"]["icl.task-diversity-transition"].startswith("verif")


@pytest.mark.parametrize("argv, option", [
    (["--hz", "0"], "--hz"),
    (["--tokens", "-1"], "--tokens"),
    (["--tokens", "abc"], "--tokens"),
    (["--hardware", "nope"], "--hardware"),
    (["--horizon", "0"], "--horizon"),
    (["--tflops", "10"], "--bandwidth"),
    (["--results", "MISSING"], "--results"),
    (["--results", "BADJSON"], "--results"),
])
def test_bad_input_exits_2_with_one_line(argv: list[str], option: str, tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("[" * 20000)
    argv = [a.replace("MISSING", str(tmp_path / "none.json")).replace("BADJSON", str(bad))
            for a in argv]
    result = _run(["design", *argv])
    assert result.exit_code == 2, result.output
    (line,) = [ln for ln in result.stderr.splitlines() if ln.strip()]
    assert line.startswith("tmath design: error: ") and option in line, line
    assert "Traceback" not in result.output
    assert result.stdout == ""
