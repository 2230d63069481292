"""Policies: DT token layout and read-out token, ACT loss terms, save/load, Q-learning."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from transformer_math.robotics.envs.gridworld import (
    CELLS,
    NUM_ACTIONS,
    NUM_STATES,
    generate_stitch_dataset,
    state_index,
    transition,
)
from transformer_math.robotics.policies.act import ACTConfig, ACTPolicy, act_loss
from transformer_math.robotics.policies.base import load_policy
from transformer_math.robotics.policies.bc import BCConfig, BCPolicy
from transformer_math.robotics.policies.decision_transformer import (
    DecisionTransformer,
    DTConfig,
    token_layout,
)
from transformer_math.robotics.policies.q_learning import TabularQLearning
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


def test_act_loss_hand_example():
    pred = torch.tensor([[[1.0, 2.0]]])
    target = torch.zeros(1, 1, 2)
    mu = torch.tensor([[1.0, 0.0]])
    logvar = torch.tensor([[0.0, math.log(2.0)]])
    loss, info = act_loss(pred, target, mu, logvar, kl_weight=10.0)
    kl = 0.5 * (1 + 1 - 1 - 0) + 0.5 * (0 + 2 - 1 - math.log(2.0))
    assert info["l1"] == pytest.approx(1.5)
    assert info["kl"] == pytest.approx(kl)
    assert float(loss) == pytest.approx(1.5 + 10 * kl)


def test_act_forward_and_inference_modes():
    cfg = ACTConfig(2, 2, chunk_size=3, dim=16, num_heads=2, encoder_layers=1,
                    decoder_layers=1, latent_sampling="sample")
    act = build_seeded(lambda: ACTPolicy(cfg), 0)
    batch = {"observation.state": torch.randn(4, 2), "action": torch.randn(4, 3, 2)}
    loss, info = act(batch)
    assert info["kl"] >= 0 and float(loss.detach()) == pytest.approx(info["l1"] + 10 * info["kl"],
                                                            rel=1e-5)
    act.eval()
    c1 = act.predict_action_chunk(batch)
    c2 = act.predict_action_chunk(batch)
    assert c1.shape == (4, 3, 2) and not torch.allclose(c1, c2)  # z sampled per call
    with pytest.raises(ValueError, match="action"):
        act({"observation.state": torch.randn(4, 2), "action": torch.randn(4, 2, 2)})
    with pytest.raises(ValueError, match=r"observation\.state"):
        act.predict_action_chunk({"observation.state": torch.randn(4, 5)})


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


def test_bc_select_action_uses_the_chunk_queue():
    policy = BCPolicy(BCConfig(3, 2, chunk_size=4)).eval()
    obs = {"observation.state": torch.randn(1, 3)}
    chunk = policy.predict_action_chunk(obs)
    policy.reset()
    for i in range(4):
        torch.testing.assert_close(policy.select_action(obs), chunk[:, i])


def test_offline_q_learning_stitches_halves():
    data = generate_stitch_dataset(5, 0)
    q = TabularQLearning(NUM_STATES, NUM_ACTIONS, gamma=0.95)
    q.fit((int(s), int(a), float(r), int(s2), bool(d)) for ep in data
          for s, a, r, s2, d in zip(ep.states, ep.actions, ep.rewards, ep.next_states, ep.dones,
                                    strict=True))
    xy, visited, total = CELLS["A"], False, 0.0
    for _ in range(14):
        xy, visited, r, done = transition(xy, visited, q.select_action(state_index(xy, visited)))
        total += r
        if done:
            break
    assert xy == CELLS["C"] and total == 4.0
    assert q.value(state_index(CELLS["A"], False)) == pytest.approx(
        2 * 0.95**5 + 2 * 0.95**8)
    assert np.isinf(q.q).any()  # unseen actions are never bootstrapped


def test_act_latent_held_per_episode_and_mse_variant():
    cfg = ACTConfig(2, 2, chunk_size=3, dim=16, num_heads=2, encoder_layers=1,
                    decoder_layers=1, latent_sampling="sample_per_episode")
    act = build_seeded(lambda: ACTPolicy(cfg), 0).eval()
    obs = {"observation.state": torch.randn(2, 2)}
    act.reset()
    c1, c2 = act.predict_action_chunk(obs), act.predict_action_chunk(obs)
    torch.testing.assert_close(c1, c2)  # same latent within an episode
    act.reset()
    assert not torch.allclose(act.predict_action_chunk(obs), c1)  # new episode, new latent
    loss, info = act_loss(torch.ones(1, 1, 2), torch.zeros(1, 1, 2), torch.zeros(1, 1),
                          torch.zeros(1, 1), 10.0, reconstruction="mse")
    assert info["mse"] == pytest.approx(1.0) and float(loss) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="reconstruction_loss"):
        ACTConfig(2, 2, reconstruction_loss="huber")


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
