"""Policy checkpoints: save/load round trip of every kind, bad paths."""

from __future__ import annotations

import pytest
import torch

from transformer_math.robotics.policies.act import ACTConfig, ACTPolicy
from transformer_math.robotics.policies.base import load_policy
from transformer_math.robotics.policies.bc import BCConfig, BCPolicy
from transformer_math.robotics.policies.decision_transformer import (
    DecisionTransformer,
    DTConfig,
)
from transformer_math.robotics.training import build_seeded


def _dt(**kw):
    cfg = DTConfig(3, 2, context_len=4, max_ep_len=10, dim=16, num_layers=2, num_heads=1,
                   dropout=0.0, **kw)
    return build_seeded(lambda: DecisionTransformer(cfg), 0).eval()



def _dt_inputs():
    g = torch.Generator().manual_seed(0)
    return (torch.randn(1, 4, 3, generator=g), torch.randn(1, 4, 2, generator=g),
            torch.randn(1, 4, generator=g), torch.arange(4)[None])



@pytest.mark.parametrize("kind", ["bc", "act", "dt"])
def test_save_load_round_trip(tmp_path, kind):
    if kind == "bc":
        policy = BCPolicy(BCConfig(3, 2, chunk_size=4))
        policy.fit_normalization(torch.randn(50, 3) * 3 + 1, torch.randn(50, 2))
    elif kind == "act":
        policy = ACTPolicy(ACTConfig(3, 2, chunk_size=4, dim=16, num_heads=2,
                                     encoder_layers=1, decoder_layers=1))
    else:
        policy = _dt()
    policy.eval()
    path = tmp_path / f"{kind}.safetensors"
    policy.save(path)
    loaded = load_policy(path)
    assert type(loaded) is type(policy) and loaded.config == policy.config
    for (k1, v1), (k2, v2) in zip(policy.state_dict().items(), loaded.state_dict().items(),
                                  strict=True):
        assert k1 == k2 and torch.equal(v1, v2)
    if kind == "dt":
        s, a, r, t = _dt_inputs()
        torch.testing.assert_close(loaded.action_outputs(s, a, r, t),
                                   policy.action_outputs(s, a, r, t))
    else:
        obs = {"observation.state": torch.randn(2, 3)}
        torch.testing.assert_close(loaded.predict_action_chunk(obs),
                                   policy.predict_action_chunk(obs))



def test_load_rejects_missing_file(tmp_path):
    with pytest.raises(ValueError, match="checkpoint path"):
        load_policy(tmp_path / "none.safetensors")
