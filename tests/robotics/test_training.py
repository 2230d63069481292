"""The shared training loop: deterministic with dropout, global RNG untouched."""

from __future__ import annotations

import torch

from transformer_math.robotics.policies.decision_transformer import (
    DecisionTransformer,
    DTConfig,
)
from transformer_math.robotics.training import build_seeded


def _dt_inputs():
    g = torch.Generator().manual_seed(0)
    return (torch.randn(1, 4, 3, generator=g), torch.randn(1, 4, 2, generator=g),
            torch.randn(1, 4, generator=g), torch.arange(4)[None])



def test_training_with_dropout_is_deterministic_and_leaves_global_rng_alone():
    from transformer_math.robotics.training import train_policy

    def train():
        cfg = DTConfig(3, 2, context_len=4, max_ep_len=10, dim=16, num_layers=1, dropout=0.5)
        dt = build_seeded(lambda: DecisionTransformer(cfg), 0)
        s, a, r, t = _dt_inputs()
        batch = {"observation.state": s, "action": a.tanh(), "return_to_go": r, "timestep": t}
        return train_policy(dt, lambda g: batch, steps=5, lr=1e-2,
                            generator=torch.Generator().manual_seed(1))

    state = torch.random.get_rng_state()
    first = train()
    torch.rand(3)  # perturb the global RNG: must not change the result
    assert train() == first
    torch.random.set_rng_state(state)
    before = torch.random.get_rng_state()
    train()
    assert torch.equal(torch.random.get_rng_state(), before)
