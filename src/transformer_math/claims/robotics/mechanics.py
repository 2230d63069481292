"""Quick claims on the mechanics the trained robotics claims rest on (000 §8.3.8), no training.

- ``robotics.temporal-ensembling``: ACT's ensembled action is the closed-form weighted mean of
  the predictions for the current step, the OLDEST weighted most (Zhao et al. 2023); the seed's
  formula (000 line 1269) weighs them by age, the newest most.
- ``robotics.receding-horizon``: a chunk executed with control horizon T_a runs a_{s|s}, ...,
  a_{s+T_a-1|s} and re-queries every T_a steps (the ACT-MPC dictionary, 000 lines 1273-1279).
- ``robotics.return-to-go``: the Decision Transformer's data carry R_t = sum_{t' >= t} r_{t'}
  (000 line 1216) and its rollout conditions on R_{t+1} = R_t - r_t (Chen et al. 2021).
- ``robotics.dt-causal-conditioning``: the DT's action at step t is a function of R_t, s_t and
  the earlier tokens only (000 lines 1218-1220, 329).
- ``robotics.act-cvae``: ACT's loss is L1 + beta KL(q || N(0, I)) (000 line 1249), inference
  uses z = 0 (line 1251) and different z decode to different chunks (line 1314).

Every check drives the library's own classes (``robotics/policies``) on scripted inputs, so the
planted bugs of those modules reach them.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from transformer_math.claims.registry import (
    Context,
    Evidence,
    Refutation,
    at_least,
    at_most,
    claim,
    decide,
    exceeds,
)
from transformer_math.claims.robotics._common import SOURCE
from transformer_math.experiments.robotics_dt import grid_batch, returns_to_go
from transformer_math.robotics.envs.gridworld import generate_stitch_dataset
from transformer_math.robotics.policies.act import ACTConfig, ACTPolicy, act_loss
from transformer_math.robotics.policies.decision_transformer import DecisionTransformer, DTConfig
from transformer_math.robotics.policies.ensembling import make_executor
from transformer_math.robotics.training import build_seeded

#: float32 rounding of a weighted mean of <= 16 numbers of size <= 1: 16 * 2^-23 ~ 2e-6; 1e-5
#: leaves a factor 5 (the two weightings differ by ~1e-2 on these inputs).
F32_MEAN_TOL = 1e-5


def _scripted_chunks(ctx: Context, steps: int, k: int, width: int = 3) -> torch.Tensor:
    """c[s] = the chunk (1, k, width) returned at step s: i.i.d. N(0, 1) (fixed by the seed)."""
    return torch.randn(steps, 1, k, width, generator=ctx.generator(1))


def _execute(mode: str, chunks: torch.Tensor) -> tuple[torch.Tensor, list[int]]:
    """Run the library executor ``mode`` over the scripted chunk stream; the executed actions
    (steps, width) and the steps at which it queried the policy."""
    steps, _, k, _ = chunks.shape
    executor = make_executor(mode, k)
    executor.reset()
    queries: list[int] = []
    out = []
    for t in range(steps):
        def chunk_fn(obs: torch.Tensor, t: int = t) -> torch.Tensor:
            queries.append(t)
            return chunks[t]

        out.append(executor(chunk_fn, torch.zeros(1, 1))[0])
    return torch.stack(out), queries


def _ensemble_reference(chunks: torch.Tensor, decay: float, oldest_first: bool) -> torch.Tensor:
    """Closed form: a_t = sum_i w_i c[s_i][t - s_i] / sum_i w_i over the issue steps
    s_0 < s_1 < ... of the predictions still covering t; w_i = exp(-m i) (oldest first, i = 0
    the oldest) or exp(-m * age), age = t - s (the seed's w_j = e^{-beta j})."""
    steps, _, k, _ = chunks.shape
    out = []
    for t in range(steps):
        issued = [s for s in range(max(0, t - k + 1), t + 1)]
        ages = [t - s for s in issued]
        expo = range(len(issued)) if oldest_first else ages
        w = torch.tensor([math.exp(-decay * e) for e in expo], dtype=torch.float64)
        preds = torch.stack([chunks[s, 0, t - s].double() for s in issued])
        out.append((w[:, None] * preds).sum(0) / w.sum())
    return torch.stack(out)


@claim(
    "robotics.temporal-ensembling",
    source=f"{SOURCE} 'Temporal ensemble（低通滤波）'; Zhao et al. 2023 (ACT, released code)",
    statement="ACT's temporal ensembling executes, at every step t, the weighted mean of all "
    "chunk predictions for t with w_i = exp(-0.01 i), i = 0 the OLDEST (older predictions weigh "
    "more), a low-pass filter over the chunk stream. The seed's w_j = e^{-beta j} over the "
    "prediction a_{t|t-j} (j the age: the newest weighs most) is not ACT's weighting.",
    tier="quick",
    falsifier="robotics.ensemble-weights-reversed",
    expected="refuted",
    version=1,
    seed_refs=[("000", 1267, 1271)],
    refutes=[Refutation(
        seed="000", line=1269,
        says="ACT ensembles a_bar_t = sum_j w_j a_{t|t-j} / Z with w_j = e^{-beta j} (j the "
        "age of the prediction: the newest, j = 0, weighs most)",
        correct="ACT weighs the OLDEST prediction most: w_i = exp(-m i), i = 0 the oldest, "
        "m = 0.01 (Zhao et al. 2023; LeRobot's ACTTemporalEnsembler); the seed's formula is the "
        "newest-first variant")],
)
def check_temporal_ensembling(ctx: Context) -> Evidence:
    k, steps, decay = 16, 40, 0.01  # ACT's m = 0.01; 40 steps cover the warm-up and steady state
    chunks = _scripted_chunks(ctx, steps, k)
    executed, queries = _execute("act_ensemble", chunks)
    executed = executed.double()
    act_ref = _ensemble_reference(chunks, decay, oldest_first=True)
    seed_ref = _ensemble_reference(chunks, decay, oldest_first=False)
    err_act = float((executed - act_ref).abs().max())
    err_seed = float((executed - seed_ref).abs().max())
    # low-pass: gain at the Nyquist frequency of the chunk stream (predictions alternating in
    # sign with the issue step) relative to the DC gain, from the ensembler itself
    alt = torch.tensor([(-1.0) ** s for s in range(steps)])[:, None, None, None].expand(
        steps, 1, k, 1).clone()
    nyquist = float(_execute("act_ensemble", alt)[0][k:, 0].abs().max())
    dc = float(_execute("act_ensemble", torch.ones(steps, 1, k, 1))[0][k:, 0].abs().min())
    margins = [
        at_most("max |executed - oldest-first closed form|", err_act, F32_MEAN_TOL),
        at_least("queries per step (ensembling queries every step)",
                 len(queries) / steps, 1.0),
        at_most("Nyquist / DC gain of the ensembler (steady state)", nyquist / dc, 0.1),
    ]
    seed_margins = [
        at_most("seed's newest-first w_j = e^{-beta j}: max |executed - its closed form|",
                err_seed, F32_MEAN_TOL),
    ]
    return Evidence(
        predicted={"executed action": "oldest-first weighted mean (w_i = exp(-0.01 i))",
                   "seed (000:1269)": "newest-first, w_j = exp(-beta * age)"},
        measured={"max error vs oldest-first": err_act, "max error vs seed's form": err_seed,
                  "Nyquist / DC gain": round(nyquist / dc, 5)},
        tolerance=f"{F32_MEAN_TOL:g}: float32 rounding of a 16-term weighted mean (~2e-6) x 5; "
        "low-pass: the highest frequency attenuated by at least 20 dB (gain 0.1)",
        verdict=decide(margins, seed_margins),
        notes=["k = 16, 40 steps, i.i.d. N(0, 1) chunk entries from the seed's generator; the "
               "library's make_executor('act_ensemble', k) is driven by a scripted chunk stream.",
               "Both weightings are FIR low-pass filters; they differ in which prediction (the "
               "oldest or the freshest) dominates, i.e. in how fast new observations act."],
        margins=margins,
        seed_margins=seed_margins,
    )


@claim(
    "robotics.receding-horizon",
    source=f"{SOURCE} '与 MPC 的同构' and the ACT-MPC dictionary",
    statement="A chunk policy executed with control horizon T_a (the MPC control horizon) "
    "queries the policy at steps 0, T_a, 2 T_a, ... and executes a_{s|s}, ..., a_{s+T_a-1|s} "
    "of the chunk issued at s; T_a = k is open loop, T_a = 1 replans every step.",
    tier="quick",
    falsifier="robotics.chunk-index-frozen",
    expected="verified",
    version=1,
    seed_refs=[("000", 1273, 1279)],
)
def check_receding_horizon(ctx: Context) -> Evidence:
    k, steps = 8, 40
    chunks = _scripted_chunks(ctx, steps, k)
    wrong_queries, wrong_actions = {}, {}
    for mode, t_a in (("open_loop", k), ("replan", 1)):
        executed, queries = _execute(mode, chunks)
        want_q = list(range(0, steps, t_a))
        want_a = torch.stack([chunks[(t // t_a) * t_a, 0, t % t_a] for t in range(steps)])
        wrong_queries[mode] = len(set(queries) ^ set(want_q))
        wrong_actions[mode] = int(((executed - want_a).abs().amax(-1) > 0).sum())
    margins = [at_most(f"{m}: query steps differing from 0, T_a, 2 T_a, ...", v, 0)
               for m, v in wrong_queries.items()]
    margins += [at_most(f"{m}: executed actions differing from a_{{t|s}}", v, 0)
                for m, v in wrong_actions.items()]
    return Evidence(
        predicted={"queries": "every T_a steps", "executed": "a_{t|s}, s = T_a floor(t / T_a)"},
        measured={"wrong query steps": wrong_queries, "wrong actions": wrong_actions},
        tolerance="exact (the executor copies the scripted chunk entries)",
        verdict=decide(margins),
        notes=[f"k = {k}, {steps} steps; open loop (T_a = k) and replanning (T_a = 1) through "
               "the library's make_executor."],
        margins=margins,
    )


def _tiny_dt(ctx: Context, action_type: str = "continuous") -> DecisionTransformer:
    """A small randomly initialised DT (dropout 0, eval mode): nothing is trained."""
    cfg = DTConfig(3, 2 if action_type == "continuous" else 5, action_type, context_len=8,
                   max_ep_len=16, dim=16, num_layers=2, num_heads=2, dropout=0.0, rtg_scale=4.0)
    dt = build_seeded(lambda: DecisionTransformer(cfg), ctx.seed)
    dt.eval()
    return dt


@claim(
    "robotics.return-to-go",
    source=f"{SOURCE} 理论 A (R_t = sum_{{t' >= t}} r_t'); Chen et al. 2021 (R_{{t+1}} = "
    "R_t - r_t at evaluation)",
    statement="The Decision Transformer's training data carry the return-to-go R_t = "
    "sum_{t' >= t} r_{t'} (suffix sums of the rewards), and its rollout conditions step t + 1 on "
    "R_{t+1} = R_t - r_t: the target minus the rewards collected so far.",
    tier="quick",
    falsifier="robotics.rtg-not-decremented",
    expected="verified",
    version=1,
    seed_refs=[("000", 1212, 1216)],
)
def check_return_to_go(ctx: Context) -> Evidence:
    g = np.random.default_rng(ctx.seed)
    # (a) data: suffix sums, the library's returns_to_go and the gridworld training batch
    rewards = g.normal(size=(5, 12))
    direct = np.array([[rewards[i, t:].sum() for t in range(12)] for i in range(5)])
    err_suffix = float(np.abs(returns_to_go(rewards) - direct).max())
    episodes = generate_stitch_dataset(3, ctx.seed)
    batch = grid_batch(episodes, 14)
    err_batch = max(float(np.abs(batch["return_to_go"][i, : len(ep.rewards)].numpy()
                                 - np.array([ep.rewards[t:].sum()
                                             for t in range(len(ep.rewards))])).max())
                    for i, ep in enumerate(episodes))
    # (b) rollout: a scripted reward stream fed to the DT's select_action
    dt = _tiny_dt(ctx)
    steps, targets = 12, torch.tensor([10.0, -3.0, 0.5])
    r = torch.from_numpy(g.normal(size=(steps, 3))).float()
    dt.reset(targets)
    for t in range(steps):
        batch_t = {"observation.state": torch.from_numpy(g.normal(size=(3, 3))).float()}
        if t > 0:
            batch_t["reward"] = r[t - 1]
        dt.select_action(batch_t)
    conditioned = dt.conditioning_returns.double()  # (3, steps)
    want = targets.double()[:, None] - torch.cat(
        [torch.zeros(3, 1, dtype=torch.float64), r.double().T.cumsum(1)[:, :-1]], 1)
    err_rollout = float((conditioned - want).abs().max())
    # float32: 12 subtractions of N(0, 1) rewards from targets <= 10: ~12 * 2^-23 * 20 ~ 3e-5
    tol = 1e-4
    margins = [
        at_most("max |returns_to_go - suffix sums|", err_suffix, 1e-12),
        at_most("max |grid batch return_to_go - suffix sums|", err_batch, 1e-6),
        at_most("max |conditioned R_t - (R_1 - sum_{t' < t} r_t')|", err_rollout, tol),
    ]
    return Evidence(
        predicted={"data": "R_t = suffix sum of rewards", "rollout": "R_{t+1} = R_t - r_t"},
        measured={"data error": err_suffix, "grid batch error": err_batch,
                  "rollout error": err_rollout,
                  "conditioned returns (first rollout)": [round(float(x), 4)
                                                         for x in conditioned[0]]},
        tolerance="data: float64 summation order (1e-12), float32 batch (1e-6); rollout: float32 "
        "running differences (~3e-5, 1e-4 allowed)",
        verdict=decide(margins),
        notes=["Untrained DT (dim 16): the rollout's conditioning does not depend on the weights."],
        margins=margins,
    )


@claim(
    "robotics.dt-causal-conditioning",
    source=f"{SOURCE} 理论 A (p(a_t | R_t, s_t, R_{{t-1}}, s_{{t-1}}, a_{{t-1}}, ...)); "
    "§8.3.1 causal mask",
    statement="The Decision Transformer's prediction of a_t, read at the state token s_t, is a "
    "function of R_1..R_t, s_1..s_t and a_1..a_{t-1} only: changing a_t or any later token "
    "leaves it unchanged, changing R_t or s_t changes it.",
    tier="quick",
    falsifier="robotics.dt-noncausal",
    expected="verified",
    version=1,
    seed_refs=[("000", 1218, 1220), ("000", 317, 329)],
)
def check_dt_causal_conditioning(ctx: Context) -> Evidence:
    dt = _tiny_dt(ctx)
    g = ctx.generator(2)
    b, n, t = 4, 6, 2  # step t = 2 of 6
    states = torch.randn(b, n, 3, generator=g)
    actions = torch.randn(b, n, 2, generator=g).tanh()
    rtg = torch.randn(b, n, generator=g) * 4.0
    steps = torch.arange(n).expand(b, -1)
    with torch.no_grad():
        base = dt.action_outputs(states, actions, rtg, steps)[:, t]

        def change(states=states, actions=actions, rtg=rtg) -> float:
            return float((dt.action_outputs(states, actions, rtg, steps)[:, t] - base)
                         .abs().max())

        later_a = actions.clone()
        later_a[:, t:] = torch.randn(b, n - t, 2, generator=g).tanh()
        later_s, later_r = states.clone(), rtg.clone()
        later_s[:, t + 1:] += 1.0
        later_r[:, t + 1:] += 3.0
        new_r, new_s = rtg.clone(), states.clone()
        new_r[:, t] += 3.0
        new_s[:, t] += 1.0
        d_future = max(change(actions=later_a), change(states=later_s, rtg=later_r))
        d_rtg, d_state = change(rtg=new_r), change(states=new_s)
    # float32 forward passes of the same inputs are bitwise equal on one thread; 1e-6 allows
    # for a different reduction order. A change of R_t by 3 (0.75 after rtg_scale) moves a
    # randomly initialised output by ~1e-2; 1e-4 is 100 x the rounding allowance.
    margins = [
        at_most("max |change of a_t's output| when a_t and later tokens change", d_future,
                1e-6),
        exceeds("max |change| when R_t changes", d_rtg, 1e-4),
        exceeds("max |change| when s_t changes", d_state, 1e-4),
    ]
    return Evidence(
        predicted={"a_t, later tokens": "no effect", "R_t, s_t": "an effect"},
        measured={"future change": d_future, "R_t change": d_rtg, "s_t change": d_state},
        tolerance="1e-6 for float rounding; an effect means > 1e-4",
        verdict=decide(margins),
        notes=["Untrained DT (dim 16, 2 layers, 2 heads, dropout 0), step 3 of 6."],
        margins=margins,
    )


@claim(
    "robotics.act-cvae",
    source=f"{SOURCE} 理论 B (L_ACT = E_q |A - A_hat|_1 + beta KL(q || N(0, I)); z = 0 at "
    "inference); CVAE row of the decoding table; Zhao et al. 2023",
    statement="ACT's training loss equals the mean absolute chunk error plus beta times the "
    "closed-form Gaussian KL of q(z | s, A) from N(0, I) at the reparameterised sample; at "
    "inference the decoder is run with z = 0; different latents decode to different chunks.",
    tier="quick",
    falsifier="robotics.act-latent-dropped",
    expected="verified",
    version=1,
    seed_refs=[("000", 1247, 1251), ("000", 1314, 1314)],
)
def check_act_cvae(ctx: Context) -> Evidence:
    cfg = ACTConfig(3, 2, chunk_size=4, dim=16, num_heads=2, encoder_layers=1, decoder_layers=1,
                    latent_dim=8, kl_weight=10.0, seed=ctx.seed)
    policy = build_seeded(lambda: ACTPolicy(cfg), ctx.seed)
    policy.eval()
    g = ctx.generator(3)
    s = torch.randn(5, 3, generator=g)
    a = torch.randn(5, 4, 2, generator=g)
    batch = {"observation.state": s, "action": a}
    with torch.no_grad():
        state = policy.generator.get_state()
        loss, _ = policy(batch)
        policy.generator.set_state(state)
        mu, logvar = policy.encode(s, a)  # normalisation is the identity here (not fitted)
        z = mu + torch.exp(0.5 * logvar) * torch.randn(mu.shape, generator=policy.generator)
        rec = (policy.decode(s, z) - a).abs().mean()
        kl = (0.5 * (mu**2 + logvar.exp() - 1 - logvar)).sum(-1).mean()
        want = float(rec + 10.0 * kl)
        err_loss = abs(float(loss) - want)
        ref_loss, _ = act_loss(a * 0.5, a, mu, logvar, 10.0)
        err_act_loss = abs(float(ref_loss) - float(a.abs().mean() * 0.5 + 10.0 * kl))
        zero_chunk = policy.predict_action_chunk({"observation.state": s})
        err_zero = float((zero_chunk - policy.decode(s, torch.zeros_like(mu))).abs().max())
        z1, z2 = (torch.randn(mu.shape, generator=g) for _ in range(2))
        d_latent = float((policy.decode(s, z1) - policy.decode(s, z2)).abs().max())
    # float32 sums of ~40 terms of size ~1 (losses ~10): ~40 * 2^-23 * 10 ~ 5e-5; 1e-4 allowed
    margins = [
        at_most("|forward loss - (L1 + 10 KL) recomputed|", err_loss, 1e-4),
        at_most("|act_loss - (L1 + 10 KL) closed form|", err_act_loss, 1e-4),
        at_most("max |inference chunk - decode(s, z = 0)|", err_zero, 1e-6),
        exceeds("max |decode(s, z1) - decode(s, z2)|", d_latent, 1e-3),
    ]
    return Evidence(
        predicted={"loss": "L1 + 10 KL", "inference": "z = 0", "latent": "changes the chunk"},
        measured={"loss error": err_loss, "act_loss error": err_act_loss,
                  "z = 0 error": err_zero, "chunk change between two z": d_latent},
        tolerance="float32 rounding (1e-4 on losses ~10, 1e-6 on chunks); the latent's effect "
        "must exceed 1e-3 (random init moves the chunk by ~1e-1)",
        verdict=decide(margins),
        notes=["Untrained ACT (dim 16, latent 8, chunk 4); normalisation buffers at identity."],
        margins=margins,
    )
