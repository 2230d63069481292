"""The bug zoo against the quick tier: every bug planted in the library is killed by a quick
claim (issue 14: "a bug only the tests catch is a missing claim").

Each bug runs only against the quick claims whose clean run passed its site (recorded by
``bugs.recording``), the claim whose falsifier it is first, and stops at its first kill; the
clean runs are the shared seed-0 runs of ``quick_runs``. ``tmath mutants`` prints the whole
matrix.
"""

from __future__ import annotations

import pytest

from transformer_math.claims.mutants import run_zoo, select_bugs
from transformer_math.claims.registry import Context, Size, Tier, all_claims

MIN_BUGS = 25  # issue 14: "At least 25 bugs"


@pytest.fixture(scope="module")
def zoo_report(quick_runs):
    import torch

    quick = [c for c in all_claims() if c.tier is Tier.QUICK]
    clean = {cid: run.result for cid, run in quick_runs(0).items()}
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return run_zoo(quick, select_bugs(), Context(seed=0, size=Size.TINY, seeds=1),
                       first_kill=True, baseline=clean)
    finally:
        torch.set_num_threads(before)


@pytest.mark.slow
def test_every_library_bug_is_killed_by_a_quick_claim(zoo_report):
    s = zoo_report.summary()
    assert s["bugs"] >= MIN_BUGS, s
    assert not s["unhealthy_claims"], s["unhealthy_claims"]
    assert not s["unreached"], f"bugs no quick claim reaches: {s['unreached']}"
    assert not s["survivors"], f"bugs no quick claim kills: {s['survivors']}"


@pytest.mark.slow
def test_every_falsifier_bug_is_in_the_zoo(zoo_report):
    from transformer_math.claims.registry import Falsifier

    names = {r.bug.name for r in zoo_report.rows}
    for c in all_claims():
        if isinstance(c.falsifier, Falsifier):
            assert c.falsifier.bug in names, (c.id, c.falsifier.bug)
