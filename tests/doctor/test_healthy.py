"""No false alarm: every check on the healthy tiny checkpoints, on both engines (issue 17).

The four checkpoints of ``conftest.py`` are saved by ``transformers``: Llama and GPT-2, randomly
initialised (HF's own init) and briefly trained. The whole doctor, every registered check, runs
on each through the project's engine and through ``transformers``' own implementation; nothing
may be at warning level or above and no probe may crash. The planted side (each check flags its
planted problem) is in the per-module test files and in ``test_zoo.py``.
"""

from __future__ import annotations

from typing import Any

import pytest

from transformer_math.doctor import examine


@pytest.mark.parametrize("engine", ["project", "transformers"])
@pytest.mark.parametrize("name", ["llama-random", "llama-trained", "gpt2-random",
                                  "gpt2-trained"])
def test_healthy_checkpoint_gives_no_warning(hf_checkpoints: dict[str, Any], name: str,
                                             engine: str) -> None:
    diagnosis = examine(hf_checkpoints[name], engine=engine)
    assert diagnosis.engine == engine
    crashed = [f"{f.check}: {f.summary}" for f in diagnosis.findings
               if f.details.get("crashed")]
    assert not crashed, crashed
    flagged = [f"{f.check} [{f.subject}]: {f.summary}" for f in diagnosis.flagged]
    assert not flagged, flagged
    assert diagnosis.exit_code == 0
    ran = {f.check for f in diagnosis.findings}
    assert len(ran) + len(diagnosis.skipped) == len(diagnosis.seconds) >= 20
