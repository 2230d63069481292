"""The doctor's HTML report (``doctor/report.py``): the findings table with severity colours,
the figures present in the diagnosis data (and only those), malformed figure data as a note."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from transformer_math.cli import app
from transformer_math.doctor.findings import Diagnosis, Finding, Severity
from transformer_math.doctor.report import FIGURES, write_report

GOOD = {
    "attention.logit_spread": {"values": [[1.0, 2.0, 3.0], [4.0, 5.0, float("nan")]],
                               "layers": 2, "heads": 3},
    "attention.entropy": {"values": [[0.9, 0.8, 0.7], [0.6, 0.5, 0.4]], "layers": 2,
                          "heads": 3},
    "rope.wavelengths": {"wavelengths": [6.28, 25.0, 99.0, 395.0], "trained_length": 16,
                         "context": 64},
    "depth.gradients": {"norms": [1.0, 0.5, 0.25]},
    "depth.jacobian": {"norms": [1.2, 1.1]},
}


def _diagnosis(figures: dict) -> Diagnosis:
    return Diagnosis(
        "ckpt/<b>", "project",
        [Finding("rope.tables", Severity.ERROR, "cos table off by 0.3", 0.3, 1e-3, "above",
                 subject="pair 3", meaning="the <attention> factor is lost", fix="apply it",
                 source="Peng et al. 2023, eq. 22"),
         Finding("attention.saturation", Severity.WARNING, "saturated", 0.6, 0.5, "above"),
         Finding("icl.induction", Severity.INFO, "no induction head", 0.02, 0.3, "below"),
         Finding("attention.heads", Severity.OK, "heads fine")],
        skipped={"alibi.slopes": "not ALiBi"}, seconds={"rope.tables": 0.1,
                                                        "attention.saturation": 0.2},
        figures=figures, options={"context": 64, "seed": 0})


def test_report_has_table_flags_and_every_figure(tmp_path: Path) -> None:
    index = write_report(_diagnosis(GOOD), tmp_path / "r")
    page = index.read_text()
    assert index.name == "index.html"
    for name in FIGURES:
        assert (tmp_path / "r" / "figures" / f"{name}.png").stat().st_size > 1000, name
        assert f'src="figures/{name}.png"' in page
    assert 'class="s-error"' in page and 'class="s-warning"' in page
    assert 'class="badge info"' in page and 'class="badge ok"' in page
    assert "&lt;attention&gt;" in page and "<attention>" not in page  # escaped
    assert "Peng et al. 2023, eq. 22" in page and "not ALiBi" in page
    assert "Problems found" in page and "figure-error" not in page.split("</style>")[1]
    assert json.loads((tmp_path / "r" / "diagnosis.json").read_text())["exit_code"] == 1


def test_only_present_figures_and_malformed_ones_are_notes(tmp_path: Path) -> None:
    figures = {"rope.wavelengths": GOOD["rope.wavelengths"],
               "attention.entropy": {"values": [[0.1, 0.2], [0.3]]},  # ragged
               "depth.jacobian": {"norms": "oops"}, "depth.gradients": [1, 2],
               "something.else": {"x": 1}}
    out = tmp_path / "r"
    (out / "figures").mkdir(parents=True)
    (out / "figures" / "stale.png").write_bytes(b"old")
    page = write_report(_diagnosis(figures).to_json(), out).read_text()
    pngs = sorted(p.name for p in (out / "figures").glob("*.png"))
    assert pngs == ["rope.wavelengths.png"]
    body = page.split("</style>")[1]
    assert body.count('class="figure-error"') == 3
    assert "something.else" in body
    assert 'src="figures/attention.logit_spread.png"' not in page


def test_healthy_report_and_no_figures(tmp_path: Path) -> None:
    page = write_report(Diagnosis("x", "static"), tmp_path).read_text()
    assert "Nothing at warning level or above" in page
    assert "No figure data" in page


def test_cli_report_draws_the_figures_the_checks_gave(hf_llama_random: str,
                                                      tmp_path: Path) -> None:
    out = tmp_path / "rep"
    result = CliRunner().invoke(app, ["doctor", hf_llama_random, "--check",
                                      "attention.saturation", "--check", "rope.wavelengths",
                                      "--report", str(out), "--json", str(tmp_path / "d.json")])
    assert result.exit_code == 0, result.output
    doc = json.loads((tmp_path / "d.json").read_text())
    drawn = sorted(p.stem for p in (out / "figures").glob("*.png"))
    assert drawn == sorted(n for n in doc["figures"] if n in FIGURES)
    assert {"attention.logit_spread", "attention.entropy", "rope.wavelengths"} <= set(drawn)
    assert (out / "index.html").is_file()
