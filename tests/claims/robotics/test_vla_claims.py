"""The VLA claims' planted bugs do what their declarations say (issue 32)."""

from __future__ import annotations

import torch

from transformer_math import bugs
from transformer_math.claims.registry import Context, Size, Verdict, get_claim, run_claim
from transformer_math.functional.masks import prefix_lm_mask


def test_boundary_late_bug_lets_the_prefix_see_the_first_suffix_token_only() -> None:
    right = prefix_lm_mask(4, [1, 2])
    with bugs.plant("attention.prefix-lm-boundary-late"):
        late = prefix_lm_mask(4, [1, 2])
    assert not bool(right[:4, 4:].any())
    assert bool(late[:4, 4].all()) and not bool(late[:4, 5:].any())  # the state token only
    assert torch.equal(late[4:], right[4:])  # the suffix rows are unchanged


def test_cache_claim_sees_the_position_bug_but_not_the_recomputing_path() -> None:
    ctx = Context(seed=1, size=Size.TINY)
    claim = get_claim("robotics.vla-prefix-cache")
    with bugs.plant("robotics.vla-cache-positions-restart"):
        bad = run_claim(claim, ctx, falsifier=False)
    assert bad.error is None and bad.evidence.verdict is Verdict.FAILED
    failed = [m.name for m in bad.evidence.margins if not m.holds]
    assert failed and all("a_cached - a_recomputed" in n for n in failed)  # counts unchanged
    good = run_claim(claim, ctx, falsifier=False)
    assert good.evidence.verdict is Verdict.VERIFIED
