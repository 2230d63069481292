"""BC MLP: chunk execution through the queue."""

from __future__ import annotations

import torch

from transformer_math.robotics.policies.bc import BCConfig, BCPolicy


def test_bc_select_action_uses_the_chunk_queue():
    policy = BCPolicy(BCConfig(3, 2, chunk_size=4)).eval()
    obs = {"observation.state": torch.randn(1, 3)}
    chunk = policy.predict_action_chunk(obs)
    policy.reset()
    for i in range(4):
        torch.testing.assert_close(policy.select_action(obs), chunk[:, i])
