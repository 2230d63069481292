"""Implementation checks of the robotics policies (issue 31: moved out of the claim catalogue).

These were the quick claims ``robotics.receding-horizon``, ``robotics.return-to-go``,
``robotics.act-cvae``, ``robotics.decoder-mechanics`` and the closed-form half of
``robotics.temporal-ensembling``: each checks that library code does what its own definition
says (no seed statement is at risk), so they are tests. Every test asserts the property on the
library code and, with the named bug planted, that the same check fails; the bugs name these
tests in their ``declare_bug(..., test=...)``.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from torch import Tensor, nn

from transformer_math import bugs
from transformer_math.experiments.robotics_dt import grid_batch, returns_to_go
from transformer_math.nn.adaln import AdaLNModulation
from transformer_math.nn.config import TransformerConfig
from transformer_math.nn.transformer import build_transformer
from transformer_math.robotics.envs.gridworld import generate_stitch_dataset
from transformer_math.robotics.policies.act import ACTConfig, ACTPolicy, act_loss
from transformer_math.robotics.policies.ar_bins import ARBinsConfig, ARBinsPolicy
from transformer_math.robotics.policies.decision_transformer import DecisionTransformer, DTConfig
from transformer_math.robotics.policies.denoising import TIME_SCALE
from transformer_math.robotics.policies.diffusion import DiffusionConfig, DiffusionPolicy
from transformer_math.robotics.policies.ensembling import make_executor
from transformer_math.robotics.policies.flow_matching import (
    FlowMatchingConfig,
    FlowMatchingPolicy,
)
from transformer_math.robotics.training import build_seeded

#: float32 rounding of a weighted mean of <= 16 numbers of size <= 1: 16 * 2^-23 ~ 2e-6; 1e-5
#: leaves a factor 5 (the two weightings differ by ~1e-2 on these inputs).
F32_MEAN_TOL = 1e-5


def _generator(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def _scripted_chunks(seed: int, steps: int, k: int, width: int = 3) -> Tensor:
    """c[s] = the chunk (1, k, width) returned at step s: i.i.d. N(0, 1)."""
    return torch.randn(steps, 1, k, width, generator=_generator(seed + 1))


def _execute(mode: str, chunks: Tensor) -> tuple[Tensor, list[int]]:
    """Run the library executor ``mode`` over a scripted chunk stream: the executed actions
    (steps, width) and the steps at which it queried the policy."""
    steps, _, k, _ = chunks.shape
    executor = make_executor(mode, k)
    executor.reset()
    queries: list[int] = []
    out = []
    for t in range(steps):
        def chunk_fn(obs: Tensor, t: int = t) -> Tensor:
            queries.append(t)
            return chunks[t]

        out.append(executor(chunk_fn, torch.zeros(1, 1))[0])
    return torch.stack(out), queries


# ------------------------------------------------------------------ temporal ensembling (ACT)
def _ensemble_reference(chunks: Tensor, decay: float, oldest_first: bool) -> Tensor:
    """a_t = sum_i w_i c[s_i][t - s_i] / sum_i w_i over the issue steps s_0 < s_1 < ... of the
    predictions covering t; w_i = exp(-m i), i = 0 the oldest (ACT), or exp(-m * age)."""
    steps, _, k, _ = chunks.shape
    out = []
    for t in range(steps):
        issued = list(range(max(0, t - k + 1), t + 1))
        expo = range(len(issued)) if oldest_first else [t - s for s in issued]
        w = torch.tensor([math.exp(-decay * e) for e in expo], dtype=torch.float64)
        preds = torch.stack([chunks[s, 0, t - s].double() for s in issued])
        out.append((w[:, None] * preds).sum(0) / w.sum())
    return torch.stack(out)


def _ensembling_errors(seed: int) -> tuple[float, float, float, float]:
    """(max |executed - oldest-first closed form|, the same against the newest-first form,
    queries per step, Nyquist / DC gain) of ``make_executor('act_ensemble', 16)``."""
    k, steps, decay = 16, 40, 0.01  # ACT's m = 0.01
    chunks = _scripted_chunks(seed, steps, k)
    executed, queries = _execute("act_ensemble", chunks)
    executed = executed.double()
    err_act = float((executed - _ensemble_reference(chunks, decay, True)).abs().max())
    err_new = float((executed - _ensemble_reference(chunks, decay, False)).abs().max())
    alt = torch.tensor([(-1.0) ** s for s in range(steps)])[:, None, None, None].expand(
        steps, 1, k, 1).clone()
    nyquist = float(_execute("act_ensemble", alt)[0][k:, 0].abs().max())
    dc = float(_execute("act_ensemble", torch.ones(steps, 1, k, 1))[0][k:, 0].abs().min())
    return err_act, err_new, len(queries) / steps, nyquist / dc


@pytest.mark.parametrize("seed", [0, 1])
def test_act_ensembler_is_the_oldest_first_weighted_mean(seed: int) -> None:
    err_act, err_new, per_step, gain = _ensembling_errors(seed)
    assert err_act <= F32_MEAN_TOL
    assert err_new > 100 * F32_MEAN_TOL  # the two weightings are told apart on these inputs
    assert per_step == 1.0  # ensembling queries the policy at every step
    assert gain <= 0.1  # a low-pass filter: the Nyquist component attenuated by >= 20 dB
    with bugs.plant("robotics.ensemble-weights-reversed"):
        err_act_bug, err_new_bug, _, _ = _ensembling_errors(seed)
    assert err_act_bug > 100 * F32_MEAN_TOL and err_new_bug <= F32_MEAN_TOL


# ------------------------------------------------------------------- receding horizon (MPC)
def _receding_horizon_errors(seed: int) -> dict[str, tuple[int, int]]:
    """mode -> (query steps differing from 0, T_a, 2 T_a, ..., executed actions differing from
    a_{t|s}, s = T_a floor(t / T_a)) for open loop (T_a = k) and replanning (T_a = 1)."""
    k, steps = 8, 40
    chunks = _scripted_chunks(seed, steps, k)
    out = {}
    for mode, t_a in (("open_loop", k), ("replan", 1)):
        executed, queries = _execute(mode, chunks)
        want_q = list(range(0, steps, t_a))
        want_a = torch.stack([chunks[(t // t_a) * t_a, 0, t % t_a] for t in range(steps)])
        out[mode] = (len(set(queries) ^ set(want_q)),
                     int(((executed - want_a).abs().amax(-1) > 0).sum()))
    return out


def test_receding_horizon_executes_the_chunk_and_requeries_every_t_a_steps() -> None:
    assert _receding_horizon_errors(0) == {"open_loop": (0, 0), "replan": (0, 0)}
    with bugs.plant("robotics.chunk-index-frozen"):
        frozen = _receding_horizon_errors(0)
    assert frozen["open_loop"][1] > 0
    with bugs.plant("robotics.chunk-requery-every-step"):
        requery = _receding_horizon_errors(0)
    assert requery["open_loop"][0] > 0


# ------------------------------------------------------------------ return-to-go (DT, data)
def _tiny_dt(seed: int) -> DecisionTransformer:
    cfg = DTConfig(3, 2, "continuous", context_len=8, max_ep_len=16, dim=16, num_layers=2,
                   num_heads=2, dropout=0.0, rtg_scale=4.0)
    dt = build_seeded(lambda: DecisionTransformer(cfg), seed)
    dt.eval()
    return dt


def _return_to_go_errors(seed: int) -> tuple[float, float, float]:
    """(returns_to_go vs suffix sums, the gridworld batch's return_to_go vs suffix sums, the
    rollout's conditioned R_t vs R_1 - sum_{t' < t} r_t')."""
    g = np.random.default_rng(seed)
    rewards = g.normal(size=(5, 12))
    direct = np.array([[rewards[i, t:].sum() for t in range(12)] for i in range(5)])
    err_suffix = float(np.abs(returns_to_go(rewards) - direct).max())
    episodes = generate_stitch_dataset(3, seed)
    batch = grid_batch(episodes, 14)
    err_batch = max(float(np.abs(batch["return_to_go"][i, : len(ep.rewards)].numpy()
                                 - np.array([ep.rewards[t:].sum()
                                             for t in range(len(ep.rewards))])).max())
                    for i, ep in enumerate(episodes))
    dt = _tiny_dt(seed)
    steps, targets = 12, torch.tensor([10.0, -3.0, 0.5])
    r = torch.from_numpy(g.normal(size=(steps, 3))).float()
    dt.reset(targets)
    for t in range(steps):
        batch_t = {"observation.state": torch.from_numpy(g.normal(size=(3, 3))).float()}
        if t > 0:
            batch_t["reward"] = r[t - 1]
        dt.select_action(batch_t)
    conditioned = dt.conditioning_returns.double()
    want = targets.double()[:, None] - torch.cat(
        [torch.zeros(3, 1, dtype=torch.float64), r.double().T.cumsum(1)[:, :-1]], 1)
    return err_suffix, err_batch, float((conditioned - want).abs().max())


def test_return_to_go_is_the_suffix_sum_and_the_rollout_decrements_it() -> None:
    err_suffix, err_batch, err_rollout = _return_to_go_errors(0)
    assert err_suffix <= 1e-12 and err_batch <= 1e-6
    # float32: 12 subtractions of N(0, 1) rewards from targets <= 10: ~3e-5
    assert err_rollout <= 1e-4
    with bugs.plant("robotics.rtg-not-decremented"):
        assert _return_to_go_errors(0)[2] > 1e-2


# ------------------------------------------------------------------------- ACT's CVAE loss
def _act_cvae_values(seed: int) -> dict[str, float]:
    cfg = ACTConfig(3, 2, chunk_size=4, dim=16, num_heads=2, encoder_layers=1, decoder_layers=1,
                    latent_dim=8, kl_weight=10.0, seed=seed)
    policy = build_seeded(lambda: ACTPolicy(cfg), seed)
    policy.eval()
    g = _generator(seed + 3)
    s = torch.randn(5, 3, generator=g)
    a = torch.randn(5, 4, 2, generator=g)
    with torch.no_grad():
        state = policy.generator.get_state()
        loss, _ = policy({"observation.state": s, "action": a})
        policy.generator.set_state(state)
        mu, logvar = policy.encode(s, a)  # normalisation is the identity here (not fitted)
        z = mu + torch.exp(0.5 * logvar) * torch.randn(mu.shape, generator=policy.generator)
        rec = (policy.decode(s, z) - a).abs().mean()
        kl = (0.5 * (mu**2 + logvar.exp() - 1 - logvar)).sum(-1).mean()
        ref_loss, _ = act_loss(a * 0.5, a, mu, logvar, 10.0)
        zero_chunk = policy.predict_action_chunk({"observation.state": s})
        z1, z2 = (torch.randn(mu.shape, generator=g) for _ in range(2))
        return {
            "loss": abs(float(loss) - float(rec + 10.0 * kl)),
            "act_loss": abs(float(ref_loss) - float(a.abs().mean() * 0.5 + 10.0 * kl)),
            "zero": float((zero_chunk - policy.decode(s, torch.zeros_like(mu))).abs().max()),
            "latent": float((policy.decode(s, z1) - policy.decode(s, z2)).abs().max()),
        }


def test_act_loss_is_l1_plus_beta_kl_and_inference_decodes_z_zero() -> None:
    v = _act_cvae_values(0)
    # float32 sums of ~40 terms of size ~1 (losses ~10): ~5e-5
    assert v["loss"] <= 1e-4 and v["act_loss"] <= 1e-4
    assert v["zero"] <= 1e-6
    assert v["latent"] >= 1e-3  # the latent moves the chunk (random init: ~1e-1)
    with bugs.plant("robotics.act-latent-dropped"):
        assert _act_cvae_values(0)["latent"] < 1e-3
    with bugs.plant("robotics.act-zero-latent-sampled"):
        assert _act_cvae_values(0)["zero"] > 1e-3


# ------------------------------------------------------- decoders' samplers, exact networks
MODE = torch.tensor([[0.3, -1.2], [0.8, 0.1], [-0.5, 0.6]], dtype=torch.float64)  # A* (3, 2)


class _TwoModeA0(nn.Module):
    """E[A | x_t] for data +A* or -A* (1/2 each) under x_t = sqrt(abar) A + sqrt(1 - abar) eps."""

    def __init__(self, abar: Tensor, train_steps: int) -> None:
        super().__init__()
        self.abar, self.train_steps = abar, train_steps

    def forward(self, x: Tensor, t: Tensor, s: Tensor) -> Tensor:
        a = self.abar[(t * self.train_steps / TIME_SCALE).round().long()][:, None, None]
        plus = ((x - a.sqrt() * MODE) ** 2).sum((1, 2), keepdim=True)
        minus = ((x + a.sqrt() * MODE) ** 2).sum((1, 2), keepdim=True)
        return (2 * torch.sigmoid((minus - plus) / (2 * (1 - a))) - 1) * MODE


class _PointVelocity(nn.Module):
    """The exact velocity towards data A*: v(x, tau) = (A* - x) / (1 - tau)."""

    def forward(self, x: Tensor, t: Tensor, s: Tensor) -> Tensor:
        return (MODE - x) / (1 - (t / TIME_SCALE)[:, None, None])


def _ddim_gap() -> float:
    """DDIM K = 10 with the exact two-mode A0: mean max-norm distance to the nearer mode."""
    policy = build_seeded(lambda: DiffusionPolicy(DiffusionConfig(
        2, 2, chunk_size=3, dim=16, num_heads=2, num_layers=1, prediction="sample")), 0).double()
    policy.denoiser = _TwoModeA0(policy.alphas_cumprod, policy.config.train_steps)
    policy.generator.manual_seed(0)
    x = policy.sample(torch.zeros(256, 2, dtype=torch.float64), 10)
    return float(torch.minimum((x - MODE).abs().amax((1, 2)),
                               (x + MODE).abs().amax((1, 2))).mean())


def _flow_values() -> tuple[float, float]:
    """(Euler K = 5 with the exact velocity: max |A - A*|, the loss of the exact velocity)."""
    policy = build_seeded(lambda: FlowMatchingPolicy(FlowMatchingConfig(
        2, 2, chunk_size=3, dim=16, num_heads=2, num_layers=1)), 0).double()
    policy.velocity = _PointVelocity()
    policy.generator.manual_seed(0)
    out = policy.sample(torch.zeros(8, 2, dtype=torch.float64), 5)
    batch = {"observation.state": torch.zeros(16, 2, dtype=torch.float64),
             "action": MODE.expand(16, -1, -1)}
    return float((out - MODE).abs().max()), float(policy(batch)[0])


def _ar_last_token_gradient() -> float:
    """|d loss / d E[b_n]|: the last bin token is only ever a label when labels are shifted."""
    policy = build_seeded(lambda: ARBinsPolicy(ARBinsConfig(
        2, 2, chunk_size=3, dim=16, num_heads=2, num_layers=1, bins=64)), 0)
    actions = torch.linspace(-1.0, 1.0, 6).reshape(1, 3, 2)  # six distinct bins
    policy.fit_normalization(torch.zeros(2, 2) + torch.tensor([[0.0], [1.0]]),
                             torch.tensor([[-1.0, -1.0], [1.0, 1.0]]))
    policy.bin_low.fill_(-1.01)
    policy.bin_high.fill_(1.01)
    target, _ = policy._target({"action": actions})
    ids = policy.tokenize(target)[0]
    assert len(set(ids.tolist())) == 6, ids
    policy.zero_grad()
    loss, _ = policy({"observation.state": torch.zeros(1, 2), "action": actions})
    loss.backward()
    return float(policy.token_embed.weight.grad[int(ids[-1])].abs().max())


def _adaln_dependence() -> float:
    """max |f(x, c) - f(x, -c)| of an adaLN Transformer with non-zero modulation weights."""
    cfg = TransformerConfig(hidden_size=16, num_layers=2, num_heads=2, input_size=3,
                            output_size=0, causal=False, position="learned", max_seq_len=4,
                            condition_size=8)
    model = build_transformer(cfg, 0)
    g = _generator(1)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, AdaLNModulation):
                nn.init.normal_(m.proj.weight, 0.0, 0.3, generator=g)
        x, c = torch.randn(2, 4, 3, generator=g), torch.randn(2, 8, generator=g)
        return float((model(inputs_embeds=x, condition=c)
                      - model(inputs_embeds=x, condition=-c)).abs().max())


def test_ddim_with_the_exact_two_mode_a0_lands_on_the_modes() -> None:
    # the sampler's last step reads the oracle's A0 at t = 0: mean gap <= 0.02 over 256 samples
    assert _ddim_gap() <= 0.02
    with bugs.plant("robotics.ddim-timesteps-truncated"):
        assert _ddim_gap() > 0.02


def test_euler_with_the_exact_velocity_returns_the_data_and_its_loss_is_zero() -> None:
    euler_err, flow_loss = _flow_values()
    assert euler_err <= 1e-9 and flow_loss <= 1e-12
    with bugs.plant("robotics.flow-target-reversed"):
        assert _flow_values()[1] > 1e-3


def test_binned_ar_loss_never_reads_the_last_token() -> None:
    assert _ar_last_token_gradient() == 0.0
    with bugs.plant("robotics.ar-labels-unshifted"):
        assert _ar_last_token_gradient() > 0.0


def test_adaln_transformer_output_depends_on_its_condition() -> None:
    assert _adaln_dependence() >= 1e-3
    with bugs.plant("nn.adaln-condition-ignored"):
        assert _adaln_dependence() < 1e-3
