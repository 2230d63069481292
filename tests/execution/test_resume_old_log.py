"""A results log written before Margin gained its quantity fields (issue 38.3) still resumes:
the codec fills the fields' defaults instead of refusing the log."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from transformer_math.claims.registry import get_claim
from transformer_math.execution.executors import execute
from transformer_math.execution.log import ResultsLog
from transformer_math.execution.tasks import RunSettings

WHOLE = "attention.sqrt-dk-variance"  # one task; its payload holds the evidence's Margins
SETTINGS = RunSettings(seed=0, seeds=2, size="tiny", threads=1)
NEW_FIELDS = ("predicted", "measured", "tested", "bound")


def _strip(value: Any) -> int:
    """Remove the new Margin fields everywhere in a log line, as an older version wrote it."""
    n = 0
    if isinstance(value, dict):
        if str(value.get("$dataclass", "")).endswith(":Margin"):
            for f in NEW_FIELDS:
                n += value["fields"].pop(f, None) is not None or 0
        for v in value.values():
            n += _strip(v)
    elif isinstance(value, list):
        for v in value:
            n += _strip(v)
    return n


def test_an_older_log_resumes(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    first, _ = execute([get_claim(WHOLE)], SETTINGS, log=ResultsLog.create(path, SETTINGS))
    header, *lines = path.read_text().splitlines()
    items = [json.loads(line) for line in lines]
    assert sum(_strip(item) for item in items) > 0  # the log did hold Margins
    path.write_text("\n".join([header, *(json.dumps(i) for i in items)]) + "\n")
    log = ResultsLog.open(path, SETTINGS, {WHOLE: get_claim(WHOLE).version})
    assert log.stale == 0 and len(log.entries) == 1
    results, info = execute([get_claim(WHOLE)], SETTINGS, log=log)
    assert info.resumed == 1 and info.tasks == 0
    assert results[0].evidence.verdict is first[0].evidence.verdict
    old = results[0].evidence.margins[0]
    assert old.predicted is None and old.tested == "" and old.value == \
        first[0].evidence.margins[0].value
