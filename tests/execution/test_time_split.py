"""TimeSplit cuts a block's time into training, evaluation and the rest, and cleans up."""

from __future__ import annotations

import time

import pytest
import torch

from transformer_math.execution.time_split import PARTS, TimeSplit


def test_split_of_a_small_training_loop():
    g = torch.Generator().manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 1))
    opt = torch.optim.Adam(model.parameters())
    x = torch.randn(512, 64, generator=g)
    backward = torch.autograd.backward
    with TimeSplit() as split:
        for _ in range(20):
            loss = model(x).square().mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        with torch.no_grad():
            model(x)
        time.sleep(0.05)  # neither training nor evaluation
    s = split.seconds
    assert set(s) == set(PARTS)
    assert all(s[k] > 0 for k in PARTS)
    assert s["other_s"] >= 0.05
    assert torch.autograd.backward is backward  # restored
    with TimeSplit() as again:  # hooks were removed: nothing counted from the last block
        pass
    assert again.seconds["train_forward_s"] == 0.0


def test_profiling_leaves_the_library_on_its_own_path():
    """No global module hook (the attention's hooked path would run instead), and a falsifier
    whose bug sits in the reference backend is still caught under --profile."""
    from transformer_math.claims.registry import get_claim
    from transformer_math.execution.executors import execute
    from transformer_math.execution.tasks import RunSettings
    from transformer_math.nn.hooks import hooks_live

    call = torch.nn.Module.__call__
    with TimeSplit():
        assert not hooks_live()
    assert torch.nn.Module.__call__ is call
    claims = [get_claim("attention.asymmetry"), get_claim("attention.causal-mask")]
    results, _ = execute(claims, RunSettings(size="tiny", seeds=1), profile=True)
    for r in results:
        assert r.falsifier_caught, r.claim.id
        assert r.timing["split"]["claim"]["eval_forward_s"] > 0


def test_blocks_do_not_nest():
    with TimeSplit(), pytest.raises(RuntimeError, match="nest"), TimeSplit():
        pass
