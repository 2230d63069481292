"""Decision Transformer: token layout, read-out at the state token, rollout, the trunk."""

from __future__ import annotations

import pytest
import torch

from transformer_math.robotics.policies.decision_transformer import (
    DecisionTransformer,
    DTConfig,
    token_layout,
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



def test_dt_token_layout():
    assert token_layout(2) == [("return", 0), ("state", 0), ("action", 0),
                               ("return", 1), ("state", 1), ("action", 1)]
    dt = _dt()
    s, a, r, t = _dt_inputs()
    tokens = dt.embed_tokens(s, a, r, t)
    assert tokens.shape == (1, 12, 16)
    s2 = s.clone()
    s2[0, 1] += 1.0  # state of step 1 -> token 3*1 + 1 = 4 only
    changed = (dt.embed_tokens(s2, a, r, t) - tokens).abs().sum(-1)[0] > 1e-6
    assert changed.nonzero().flatten().tolist() == [4]



def test_dt_action_is_read_at_the_state_token():
    dt = _dt()
    s, a, r, t = _dt_inputs()
    out = dt.action_outputs(s, a, r, t)  # (1, 4, 2), tanh-bounded
    assert out.shape == (1, 4, 2) and out.abs().max() <= 1.0
    a2 = a.clone()
    a2[0, 2] += 5.0  # a_2 must not influence its own prediction (or earlier ones)
    torch.testing.assert_close(dt.action_outputs(s, a2, r, t)[:, :3], out[:, :3])
    assert not torch.allclose(dt.action_outputs(s, a2, r, t)[:, 3], out[:, 3])
    s2 = s.clone()
    s2[0, 2] += 1.0  # the state token s_2 predicts a_2
    assert not torch.allclose(dt.action_outputs(s2, a, r, t)[:, 2], out[:, 2])
    r2 = r.clone()
    r2[0, 2] += 3.0  # so does the return-to-go R_2 before it
    assert not torch.allclose(dt.action_outputs(s, a, r2, t)[:, 2], out[:, 2])
    torch.testing.assert_close(dt.action_outputs(s, a, r2, t)[:, :2], out[:, :2])



def test_dt_rollout_decrements_return_and_rejects_bad_shapes():
    dt = _dt()
    dt.reset(5.0)
    dt.select_action({"observation.state": torch.zeros(1, 3)})
    dt.select_action({"observation.state": torch.zeros(1, 3), "reward": torch.tensor([2.0])})
    assert float(dt._hist["r"][-1]) == 3.0
    with pytest.raises(ValueError, match="states"):
        dt.action_outputs(torch.zeros(1, 2, 5), torch.zeros(1, 2, 2), torch.zeros(1, 2),
                          torch.zeros(1, 2, dtype=torch.long))
    with pytest.raises(ValueError, match="action_type"):
        DTConfig(3, 2, action_type="hybrid")


def test_dt_trunk_is_a_causal_transformer_preset():
    from transformer_math.nn.hooks import run_with_cache
    from transformer_math.robotics.policies.decision_transformer import dt_trunk

    c = dt_trunk(DTConfig(3, 2, context_len=4, dim=16, num_layers=2))
    assert c.causal and c.head_size == 0 and c.position == "none" and c.max_seq_len == 12
    assert c.vocab_size is None and c.input_size is None and c.has_final_norm
    dt = _dt()
    s, a, r, t = _dt_inputs()
    batch = {"observation.state": s, "action": a, "return_to_go": r, "timestep": t}
    _, cache = run_with_cache(dt, batch, names=["trunk.layers.*.attn.hook_pattern"])
    pattern = cache["trunk.layers.0.attn.hook_pattern"]  # (1, H, 12, 12), causal
    assert pattern.shape == (1, 1, 12, 12)
    assert float(pattern.triu(1).abs().max()) == 0.0


# ---------------------------------------------------------------------------- planted bugs
def test_bug_rtg_not_decremented():
    from transformer_math.bugs import plant

    def rollout():
        dt = _dt()
        dt.reset(torch.tensor([5.0]))
        dt.select_action({"observation.state": torch.zeros(1, 3)})
        for r in (2.0, 1.0):
            dt.select_action({"observation.state": torch.zeros(1, 3),
                              "reward": torch.tensor([r])})
        return dt.conditioning_returns[0].tolist()

    assert rollout() == [5.0, 3.0, 2.0]  # R_{t+1} = R_t - r_t
    with plant("robotics.rtg-not-decremented"):
        assert rollout() == [5.0, 5.0, 5.0]


def test_bug_dt_noncausal():
    from transformer_math.bugs import plant
    from transformer_math.robotics.policies.decision_transformer import dt_trunk

    @torch.no_grad()
    def future_effect():
        dt = _dt()
        s, a, r, t = _dt_inputs()
        base = dt.action_outputs(s, a, r, t)[:, 1]
        a2 = a.clone()
        a2[:, 1:] += 1.0  # a_1 and later actions: invisible to the prediction of a_1
        return float((dt.action_outputs(s, a2, r, t)[:, 1] - base).abs().max())

    assert dt_trunk(DTConfig(3, 2)).causal and future_effect() == 0.0
    with plant("robotics.dt-noncausal"):
        assert not dt_trunk(DTConfig(3, 2)).causal and future_effect() > 1e-4
