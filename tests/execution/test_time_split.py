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


def test_blocks_do_not_nest():
    with TimeSplit(), pytest.raises(RuntimeError, match="nest"), TimeSplit():
        pass
