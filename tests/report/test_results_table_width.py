"""``tmath verify``'s results table fits 80 and 100 columns without cutting a number (issue 38.4:
at 80 columns the seconds column used to print ``0.…`` and predicted/measured vanished)."""

from __future__ import annotations

import io

import pytest
from rich.cells import cell_len
from rich.console import Console

from transformer_math.report.table import results_table

CLAIMS = [
    {"id": "architecture.flash-recompute-flops", "verdict": "inconclusive", "kind": "measurement",
     "predicted": 0.125, "measured": 0.1249, "falsifier": {"caught": True}, "seconds": 123.45},
    {"id": "position.rope-relative", "verdict": "refuted", "kind": "seed-code audit",
     "predicted": [1, 2, 3, 4, 5], "measured": "a long measured string", "falsifier": None,
     "seconds": 0.5},
]


@pytest.mark.parametrize("columns", [80, 100])
def test_results_table_fits_and_keeps_every_value(columns: int) -> None:
    buf = io.StringIO()
    Console(file=buf, width=columns, color_system=None).print(results_table(CLAIMS))
    text = buf.getvalue()
    assert max(cell_len(line) for line in text.splitlines()) <= columns
    for whole in ("123.45", "0.50", "inconclusive", "refuted", "0.125", "0.1249"):
        assert whole in text, (whole, text)
    # a long id folds onto the next lines of its own column instead of being cut
    assert text.count("\n") > 6 and "architectur" in text
