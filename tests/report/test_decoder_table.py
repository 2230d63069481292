"""The decoding table rebuilt from a results document (issue 20)."""

from __future__ import annotations

import json

import pytest

from transformer_math.report.decoder_table import decoder_table, main


def _claim(claim_id: str, verdict: str, **values: tuple[float, float, float]) -> dict:
    return {"id": claim_id, "verdict": verdict,
            "measured": {k: {"mean": m, "min": lo, "max": hi} for k, (m, lo, hi) in
                         values.items()}}


DOC = {"claims": [
    _claim("robotics.diffusion-decoder", "verified", mse_collision=(0.9, 0.86, 0.95),
           collision=(0.02, 0.01, 0.04), minority_side=(0.4, 0.35, 0.45),
           success=(0.97, 0.95, 0.99), tracking_ratio=(0.95, 0.9, 1.0),
           ms_per_chunk=(14.0, 14.0, 14.0)),
    _claim("robotics.decoder-steps", "refuted", diffusion_collision_k1=(0.6, 0.5, 0.7),
           flow_collision_k1=(0.7, 0.6, 0.8), diffusion_ms_k1=(1.5, 1.4, 1.6),
           flow_ms_k1=(1.3, 1.2, 1.4)),
]}


def test_rows_carry_the_seed_columns_and_the_measured_ranges():
    text = decoder_table(DOC)
    assert "| MSE chunk MLP (conditional mean) | - | one forward | 0.90 (0.86-0.95) |" in text
    row = next(line for line in text.splitlines() if line.startswith("| diffusion, DDIM"))
    assert "K ~ 50" in row and "0.02 (0.01-0.04)" in row and "14.0 |" in row
    assert "robotics.diffusion-decoder: verified" in row
    assert "| 1 | 0.60 (0.50-0.70) | 0.70 (0.60-0.80) |" in text
    assert "| 10 |" not in text  # K absent from the document: no invented row
    flow = next(line for line in text.splitlines() if line.startswith("| flow matching"))
    assert flow.count("| - ") >= 5  # no claim in the document: dashes, not numbers


def test_bad_documents_are_refused(tmp_path, capsys):
    with pytest.raises(ValueError, match="claims"):
        decoder_table({"no": 1})
    path = tmp_path / "r.json"
    path.write_text(json.dumps(DOC))
    assert main([str(path)]) == 0
    assert "diffusion" in capsys.readouterr().out
    assert main([str(tmp_path / "missing.json")]) == 2
    assert main([]) == 2


def test_a_document_without_the_decoder_claims_is_refused(tmp_path, capsys):
    """Issue 38.7: a quick run's document (no decoder claim) printed a table of dashes; now it
    is refused with how to make one, exit 2 on the command line; a partial document names what
    it lacks."""
    quick = {"claims": [{"id": "attention.scaling", "verdict": "verified"}]}
    with pytest.raises(ValueError, match=r"none of the decoder claims.*--tier full"):
        decoder_table(quick)
    path = tmp_path / "quick.json"
    path.write_text(json.dumps({"schema": "transformer-math/results/1", **quick}))
    assert main([str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("decoder_table: the results document holds none of the decoder")
    assert err.count("\n") == 1
    assert "not in this results document" in decoder_table(DOC)
    assert "robotics.flow-matching-decoder" in decoder_table(DOC).splitlines()[-1]
