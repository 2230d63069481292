"""Diffusion, flow-matching and binned autoregressive action heads (issue 20, item 3).

The samplers are checked against closed forms with oracle networks: for data concentrated on one
chunk A*, the exact epsilon / A0 / velocity predictions make DDIM (any K) and the Euler flow
integrator (any K) return A* exactly, and each planted sampler bug breaks that. Tokenisation
round-trips within half a bin; a short training lowers each loss; everything is deterministic
given the policy's seed.
"""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from transformer_math import bugs
from transformer_math.robotics.policies.ar_bins import ARBinsConfig, ARBinsPolicy
from transformer_math.robotics.policies.denoising import TIME_SCALE, timestep_features
from transformer_math.robotics.policies.diffusion import (
    DiffusionConfig,
    DiffusionPolicy,
    cosine_alpha_bar,
    ddim_timesteps,
)
from transformer_math.robotics.policies.flow_matching import (
    FlowMatchingConfig,
    FlowMatchingPolicy,
)
from transformer_math.robotics.training import build_seeded, chunk_sampler, train_policy

TARGET = torch.tensor([[0.3, -1.2], [0.8, 0.1], [-0.5, 0.6]])  # A* (k = 3, A = 2), normalised


class DiffusionOracle(nn.Module):
    """The exact network for data = A*: epsilon = (x - sqrt(abar) A*) / sqrt(1 - abar), or A*."""

    def __init__(self, abar: torch.Tensor, train_steps: int, prediction: str) -> None:
        super().__init__()
        self.abar, self.train_steps, self.prediction = abar, train_steps, prediction

    def forward(self, x, t, s):
        if self.prediction == "sample":
            return TARGET.expand_as(x)
        step = (t * self.train_steps / TIME_SCALE).round().long()
        a = self.abar[step][:, None, None]
        return (x - a.sqrt() * TARGET) / (1 - a).sqrt()


class FlowOracle(nn.Module):
    """The exact velocity for data = A*: v(x, tau) = (A* - x) / (1 - tau)."""

    def forward(self, x, t, s):
        tau = (t / TIME_SCALE)[:, None, None]
        return (TARGET - x) / (1 - tau)


def _diffusion(prediction: str = "epsilon", **kw) -> DiffusionPolicy:
    cfg = DiffusionConfig(2, 2, chunk_size=3, dim=16, num_heads=2, num_layers=1,
                          prediction=prediction, **kw)
    return build_seeded(lambda: DiffusionPolicy(cfg), 0)


def test_cosine_schedule_is_nichol_dhariwal():
    alphas, abar = cosine_alpha_bar(100)
    f = [math.cos((u + 0.008) / 1.008 * math.pi / 2) ** 2 for u in (0.0, 0.5, 1.0)]
    assert float(abar[49]) == pytest.approx(f[1] / f[0], rel=1e-9)  # abar_t = f((t+1)/T)/f(0)
    assert torch.allclose(torch.cumprod(alphas, 0), abar)
    assert float((1 - alphas).max()) == pytest.approx(0.999)  # beta capped at the last step


def test_ddim_timesteps_span_the_range():
    for k in (1, 2, 5, 10, 100):
        times = ddim_timesteps(100, k)
        assert len(times) == k == len(set(times)) and times[0] == 99
        assert times == sorted(times, reverse=True) and (k == 1 or times[-1] == 0)
    with bugs.plant("robotics.ddim-timesteps-truncated"):
        assert ddim_timesteps(100, 10) == list(range(99, 89, -1))
    for bad in (0, 101, 2.0):
        with pytest.raises(ValueError, match="steps"):
            ddim_timesteps(100, bad)


@pytest.mark.parametrize("prediction", ["epsilon", "sample"])
@pytest.mark.parametrize("steps", [1, 3, 10, 100])
def test_ddim_with_the_exact_network_returns_the_data(prediction, steps):
    policy = _diffusion(prediction, train_steps=100)
    policy.denoiser = DiffusionOracle(policy.alphas_cumprod, 100, prediction)
    out = policy.sample(torch.zeros(4, 2), steps)
    torch.testing.assert_close(out, TARGET.expand(4, -1, -1), atol=1e-3, rtol=0)


class TwoModeOracle(nn.Module):
    """The exact A0 prediction E[A | x_t] for data = +A* or -A* with probability 1/2 each:
    w_+- ~ exp(-|x - sqrt(abar) (+-A*)|^2 / (2 (1 - abar)))."""

    def __init__(self, abar: torch.Tensor, train_steps: int, prediction: str) -> None:
        super().__init__()
        self.abar, self.train_steps, self.prediction = abar, train_steps, prediction

    def forward(self, x, t, s):
        step = (t * self.train_steps / TIME_SCALE).round().long()
        a = self.abar[step][:, None, None]
        d_plus = ((x - a.sqrt() * TARGET) ** 2).sum((1, 2), keepdim=True)
        d_minus = ((x + a.sqrt() * TARGET) ** 2).sum((1, 2), keepdim=True)
        w = torch.sigmoid((d_minus - d_plus) / (2 * (1 - a)))
        x0 = (2 * w - 1) * TARGET
        return x0 if self.prediction == "sample" else (x - a.sqrt() * x0) / (1 - a).sqrt()


def _mode_gap(out: torch.Tensor) -> float:
    """Mean distance of each sample to the nearer of +-A* (0 when every sample is a mode)."""
    gap = torch.minimum((out - TARGET).abs().amax((1, 2)), (out + TARGET).abs().amax((1, 2)))
    return float(gap.mean())


@pytest.mark.parametrize(("prediction", "bug"), [
    ("epsilon", "robotics.ddim-timesteps-truncated"),
    ("sample", "robotics.ddim-timesteps-truncated")])
def test_ddim_reaches_the_modes_and_its_bugs_do_not(prediction, bug):
    """With the exact network of a two-mode distribution, DDIM (K = 10) lands on a mode; each
    planted sampler bug returns points between the modes."""
    policy = _diffusion(prediction, train_steps=100)
    policy.denoiser = TwoModeOracle(policy.alphas_cumprod, 100, prediction)
    policy.generator.manual_seed(0)
    out = policy.sample(torch.zeros(256, 2), 10)
    assert _mode_gap(out) < 0.02
    assert 0.35 < float((out[:, 0, 0] > 0).double().mean()) < 0.65  # both modes
    policy.generator.manual_seed(0)
    with bugs.plant(bug):
        broken = policy.sample(torch.zeros(256, 2), 10)
    assert _mode_gap(broken) > 0.1


@pytest.mark.parametrize("steps", [1, 2, 10])
def test_euler_flow_with_the_exact_velocity_returns_the_data(steps):
    policy = build_seeded(lambda: FlowMatchingPolicy(FlowMatchingConfig(
        2, 2, chunk_size=3, dim=16, num_heads=2, num_layers=1)), 0)
    policy.velocity = FlowOracle()
    out = policy.sample(torch.zeros(4, 2), steps)
    torch.testing.assert_close(out, TARGET.expand(4, -1, -1), atol=1e-5, rtol=0)


def test_flow_target_is_data_minus_noise_unless_the_bug_is_planted():
    """The training target of the straight path (1 - tau) eps + tau A is A - eps: with the
    velocity network replaced by a probe that records its inputs, the loss of the exact
    velocity is 0, and of the reversed target it is not."""

    class Probe(nn.Module):
        def forward(self, x, t, s):
            tau = (t / TIME_SCALE)[:, None, None]
            self.seen = (x, tau)
            return (TARGET - x) / (1 - tau)  # = A - eps on the path

    policy = build_seeded(lambda: FlowMatchingPolicy(FlowMatchingConfig(
        2, 2, chunk_size=3, dim=16, num_heads=2, num_layers=1)), 0)
    policy.velocity = Probe()
    batch = {"observation.state": torch.zeros(8, 2), "action": TARGET.expand(8, -1, -1)}
    assert float(policy(batch)[0]) == pytest.approx(0.0, abs=1e-8)
    with bugs.plant("robotics.flow-target-reversed"):
        assert float(policy(batch)[0]) > 0.5


def test_timestep_features_are_sinusoidal():
    phi = timestep_features(torch.tensor([0.0, 500.0]), 8)
    assert phi.shape == (2, 8)
    assert torch.equal(phi[0], torch.cat([torch.ones(4), torch.zeros(4)]))
    assert float(phi[1, 0]) == pytest.approx(math.cos(500.0))
    with pytest.raises(ValueError, match="even"):
        timestep_features(torch.zeros(1), 7)


def _ar(**kw) -> ARBinsPolicy:
    cfg = ARBinsConfig(2, 2, chunk_size=3, dim=16, num_heads=2, num_layers=1, **kw)
    policy = build_seeded(lambda: ARBinsPolicy(cfg), 0)
    g = torch.Generator().manual_seed(0)
    policy.fit_normalization(torch.randn(500, 2, generator=g), torch.randn(500, 2, generator=g))
    return policy


def test_bins_round_trip_within_half_a_bin():
    policy = _ar()
    g = torch.Generator().manual_seed(1)
    a = torch.rand(16, 3, 2, generator=g) * (policy.bin_high - policy.bin_low) + policy.bin_low
    back = policy.detokenize(policy.tokenize(a))
    half = (policy.bin_high - policy.bin_low) / 256 / 2
    assert bool(((back - a).abs() <= half + 1e-6).all())
    ids = policy.tokenize(torch.full((1, 3, 2), 1e6))  # outside the range: the last bin
    assert bool((ids == 255).all())
    assert policy.tokenize(a).shape == (16, 6)


def test_ar_prediction_at_a_position_never_sees_its_own_token():
    """Labels are shifted: the logits scored against b_i come from inputs before b_i, so
    changing b_i leaves them unchanged (the planted bug feeds b_i itself)."""
    policy = _ar()
    policy.eval()
    g = torch.Generator().manual_seed(2)
    ids = torch.randint(0, 256, (2, 6), generator=g)
    s = torch.randn(2, 2, generator=g)

    def logits(tokens, shifted=True):
        prefix = policy.state_proj(s)[:, None]
        if shifted:
            return policy.trunk(inputs_embeds=torch.cat([prefix, policy.token_embed(
                tokens[:, :-1])], 1))
        return policy.trunk(inputs_embeds=torch.cat([prefix, policy.token_embed(tokens)],
                                                    1))[:, 1:]

    changed = ids.clone()
    changed[:, 3] = (changed[:, 3] + 7) % 256
    with torch.no_grad():
        assert torch.equal(logits(ids)[:, 3], logits(changed)[:, 3])
        assert not torch.equal(logits(ids, False)[:, 3], logits(changed, False)[:, 3])


@pytest.mark.parametrize("make", [lambda: _diffusion("sample"), lambda: _diffusion("epsilon"),
                                  lambda: build_seeded(lambda: FlowMatchingPolicy(
                                      FlowMatchingConfig(2, 2, chunk_size=3, dim=16,
                                                         num_heads=2, num_layers=1)), 0),
                                  _ar], ids=["diffusion-A0", "diffusion-eps", "flow", "ar"])
def test_training_lowers_the_loss_and_sampling_is_seeded(make):
    policy = make()
    g = torch.Generator().manual_seed(3)
    obs = torch.randn(20, 8, 2, generator=g)
    act = obs.flip(-1).clone()  # a deterministic function of the state
    policy.fit_normalization(obs, act)
    losses = train_policy(policy, chunk_sampler(obs, act, 3, 32), steps=150, lr=3e-3,
                          generator=torch.Generator().manual_seed(0))
    assert sum(losses[-20:]) / 20 < 0.85 * sum(losses[:20]) / 20
    batch = {"observation.state": obs[:4, 0]}
    policy.generator.manual_seed(5)
    first = policy.predict_action_chunk(batch)
    policy.generator.manual_seed(5)
    assert torch.equal(policy.predict_action_chunk(batch), first)
    assert first.shape == (4, 3, 2)


def test_decoder_configs_are_checked():
    for kw, name in (({"inference_steps": 0}, "inference_steps"),
                     ({"train_steps": 5, "inference_steps": 6}, "inference_steps"),
                     ({"prediction": "v"}, "prediction"), ({"clip_sample": 0.0}, "clip_sample")):
        with pytest.raises(ValueError, match=name):
            DiffusionConfig(2, 2, **kw)
    with pytest.raises(ValueError, match="inference_steps"):
        FlowMatchingConfig(2, 2, inference_steps=0)
    for kw, name in (({"sampling": "beam"}, "sampling"), ({"temperature": -1.0}, "temperature"),
                     ({"bins": 1}, "bins")):
        with pytest.raises(ValueError, match=name):
            ARBinsConfig(2, 2, **kw)
    policy = _diffusion()
    with pytest.raises(ValueError, match="steps"):
        policy.predict_action_chunk({"observation.state": torch.zeros(1, 2)}, steps=101)
