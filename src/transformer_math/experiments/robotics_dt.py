"""Decision Transformer studies (000 §8.3.8 "理论 A"): stitching and return reachability.

Stitching (``StitchingConfig``): on the gridworld of ``envs/gridworld.py`` whose data hold only
A->B and B->C halves (and A->D), tabular offline Q-learning and a discrete-action Decision
Transformer conditioned on the stitched optimum (return 4) are rolled out from A.

Reachability (``ReachabilityConfig``): a continuous Decision Transformer trained on the 1-D
runner's behaviour data (returns in about [-12, 12]) is conditioned on targets from below to far
above that range; the achieved return is measured for each target.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import torch

from transformer_math.robotics.envs.gridworld import (
    CELLS,
    HORIZON,
    NUM_ACTIONS,
    NUM_STATES,
    OBS_DIM,
    Episode,
    StitchGridEnv,
    generate_stitch_dataset,
)
from transformer_math.robotics.envs.runner import (
    RunnerConfig,
    generate_runner_dataset,
    runner_observation,
)
from transformer_math.robotics.policies.decision_transformer import DecisionTransformer, DTConfig
from transformer_math.robotics.policies.q_learning import TabularQLearning
from transformer_math.robotics.training import build_seeded, train_policy

Progress = Callable[[float], None] | None


def returns_to_go(rewards: np.ndarray) -> np.ndarray:
    """R_t = sum_{t' >= t} r_{t'} along the last axis."""
    return np.flip(np.cumsum(np.flip(rewards, -1), -1), -1).copy()


# ---------------------------------------------------------------------------------- stitching
@dataclass(frozen=True)
class StitchingConfig:
    seed: int = 0
    num_per_segment: int = 100
    train_steps: int = 600
    batch_size: int = 64
    lr: float = 1e-3
    dim: int = 64
    num_layers: int = 2
    target_return: float = 4.0  # A->B->C, the stitched optimum
    gamma: float = 0.95
    dropout: float = 0.1
    include_full_trajectories: bool = False  # True: the falsifier's data holds A->B->C too

    @classmethod
    def tiny(cls, seed: int = 0) -> StitchingConfig:
        # Issue 12: the old tiny DT (30 steps, width 32, 1 layer) learnt nothing and failed for
        # every target, so the falsifier (A->B->C in the data) went uncaught. The route of a
        # return from A is not monotone in the return (2: via B, 3: to D, 4: via B to C); width
        # 32 / 1 layer (and dropout 0.1) map it monotonically within 600 steps (R = 4 -> D even
        # with A->B->C in the data); width 64 / 2 layers without dropout separate it at 4 of the
        # seeds 0-4 after 600 steps (3 of 5 at lr 2e-3) and at all 5 after 1000 steps.
        # Issue 14: the falsifier is now a planted bug (robotics.dt-noncausal), not the complete
        # episodes, so the DT only has to reproduce the in-data returns (R = 3 -> D) and not
        # reach C at R = 4: 300 steps do that at seeds 0-4 (1000 steps took 122 s a seed).
        return cls(seed=seed, num_per_segment=20, train_steps=300, batch_size=64, dim=64,
                   num_layers=2, dropout=0.0)

    @classmethod
    def default(cls, seed: int = 0) -> StitchingConfig:
        return cls(seed=seed)

    @classmethod
    def large(cls, seed: int = 0) -> StitchingConfig:
        return cls(seed=seed, num_per_segment=300, train_steps=2000, dim=128, num_layers=3)


@dataclass
class GridRollout:
    ret: float
    reached: str  # "C", "D" or "" (neither)
    cells: list[tuple[int, int]]


@dataclass
class StitchingResult:
    config: StitchingConfig
    q_learning: GridRollout
    dt: GridRollout
    dt_by_target: dict[float, GridRollout]
    data_returns_at_a: list[float]
    q_value_at_a: float
    seconds: float


def _grid_rollout(env: StitchGridEnv, act: Callable[[np.ndarray, int, float], int]) -> GridRollout:
    obs, info = env.reset(seed=0)
    total, reward, cells, end = 0.0, 0.0, [env.cell], ""
    for _ in range(env.horizon):
        obs, reward, terminated, truncated, info = env.step(act(obs, info["state"], reward))
        total += reward
        cells.append(env.cell)
        if terminated:
            end = "C" if env.cell == CELLS["C"] else "D"
            break
        if truncated:
            break
    return GridRollout(total, end, cells)


def grid_batch(episodes: list[Episode], context: int) -> dict[str, torch.Tensor]:
    """Padded DT training batch of whole gridworld episodes: return_to_go[i, t] = R_t of episode
    i (:func:`returns_to_go`), mask True on real steps."""
    n = len(episodes)
    states = torch.zeros(n, context, OBS_DIM)
    actions = torch.zeros(n, context, dtype=torch.long)
    rtg = torch.zeros(n, context)
    mask = torch.zeros(n, context, dtype=torch.bool)
    for i, ep in enumerate(episodes):
        t = len(ep.actions)
        states[i, :t] = torch.from_numpy(ep.observations)
        actions[i, :t] = torch.from_numpy(ep.actions)
        rtg[i, :t] = torch.from_numpy(returns_to_go(ep.rewards))
        mask[i, :t] = True
    steps = torch.arange(context).expand(n, -1)
    return {"observation.state": states, "action": actions, "return_to_go": rtg,
            "timestep": steps.clone(), "mask": mask}


def run_stitching(config: StitchingConfig, progress: Progress = None) -> StitchingResult:
    start = time.perf_counter()
    segments = ("A->B", "B->C", "A->D") + (("A->B->C",) if config.include_full_trajectories
                                           else ())
    episodes = generate_stitch_dataset(config.num_per_segment, config.seed, segments)
    # offline Q-learning on every transition of the data
    q = TabularQLearning(NUM_STATES, NUM_ACTIONS, gamma=config.gamma)
    q.fit((int(s), int(a), float(r), int(s2), bool(d)) for ep in episodes
          for s, a, r, s2, d in zip(ep.states, ep.actions, ep.rewards, ep.next_states, ep.dones,
                                    strict=True))
    env = StitchGridEnv()
    q_roll = _grid_rollout(env, lambda obs, s, r: q.select_action(s))
    # Decision Transformer on whole episodes (context = horizon)
    dt_cfg = DTConfig(OBS_DIM, NUM_ACTIONS, "discrete", context_len=HORIZON,
                      max_ep_len=HORIZON + 2, dim=config.dim, num_layers=config.num_layers,
                      num_heads=1, dropout=config.dropout, rtg_scale=1.0)
    dt = build_seeded(lambda: DecisionTransformer(dt_cfg), config.seed)
    full = grid_batch(episodes, HORIZON)

    def sample(g: torch.Generator) -> dict[str, torch.Tensor]:
        idx = torch.randint(0, len(episodes), (config.batch_size,), generator=g)
        return {k: v[idx] for k, v in full.items()}

    train_policy(dt, sample, steps=config.train_steps, lr=config.lr,
                 generator=torch.Generator().manual_seed(config.seed), progress=progress)

    def dt_rollout(target: float) -> GridRollout:
        dt.reset(target)

        def act(obs: np.ndarray, s: int, reward: float) -> int:
            batch = {"observation.state": torch.from_numpy(obs)[None],
                     "reward": torch.tensor([reward])}
            return int(dt.select_action(batch)[0])

        return _grid_rollout(env, act)

    by_target = {t: dt_rollout(t) for t in (2.0, 3.0, config.target_return)}
    data_at_a = sorted({float(returns_to_go(ep.rewards)[0]) for ep in episodes
                        if ep.segment.startswith("A")})
    return StitchingResult(config, q_roll, by_target[config.target_return], by_target,
                           data_at_a, q.value(int(episodes[0].states[0])),
                           time.perf_counter() - start)


# ------------------------------------------------------------------------------- reachability
@dataclass(frozen=True)
class ReachabilityConfig:
    seed: int = 0
    num_episodes: int = 500
    context_len: int = 20
    train_steps: int = 1500
    batch_size: int = 64
    lr: float = 1e-3
    dim: int = 64
    num_layers: int = 2
    rtg_scale: float = 10.0
    targets: tuple[float, ...] = tuple(float(x) for x in range(-20, 41, 4))

    @classmethod
    def tiny(cls, seed: int = 0) -> ReachabilityConfig:
        # Issue 12: 30 steps on 40 episodes gave a DT that ignored its target (mean tracking
        # gap 4.98 against 0.95); 1000 steps on 200 episodes track to ~0.3. 31 targets (-20 to
        # 40 in steps of 2, one batched rollout) replace the 4, so that the gain above the data
        # range is a fit over 8 targets instead of a two-point slope (with the default's step 4
        # its spread over seeds 0-4 was a third of its slack; with step 2 a quarter).
        return cls(seed=seed, num_episodes=200, train_steps=1000, batch_size=32, dim=32,
                   num_layers=1, targets=tuple(float(x) for x in range(-20, 41, 2)))

    @classmethod
    def default(cls, seed: int = 0) -> ReachabilityConfig:
        return cls(seed=seed)

    @classmethod
    def large(cls, seed: int = 0) -> ReachabilityConfig:
        return cls(seed=seed, num_episodes=2000, train_steps=5000, dim=128, num_layers=3)


@dataclass
class ReachabilityResult:
    config: ReachabilityConfig
    targets: list[float]
    achieved: list[float]
    data_min: float
    data_max: float
    data_q05: float
    data_q95: float
    optimum: float
    seconds: float
    losses: list[float] = field(default_factory=list)


@dataclass
class TrainedRunnerDT:
    policy: DecisionTransformer
    data_returns: np.ndarray
    losses: list[float]
    seconds: float


def train_reachability_dt(config: ReachabilityConfig, progress: Progress = None) -> TrainedRunnerDT:
    """Train the continuous Decision Transformer on the runner's behaviour data."""
    start = time.perf_counter()
    task = RunnerConfig()
    data = generate_runner_dataset(task, config.num_episodes, config.seed)
    obs = torch.from_numpy(data.observations)
    act = torch.from_numpy(data.actions)
    rtg = torch.from_numpy(returns_to_go(data.rewards))
    k, horizon = config.context_len, task.horizon
    dt_cfg = DTConfig(2, 1, "continuous", context_len=k, max_ep_len=horizon + 1,
                      dim=config.dim, num_layers=config.num_layers, num_heads=1, dropout=0.1,
                      rtg_scale=config.rtg_scale)
    dt = build_seeded(lambda: DecisionTransformer(dt_cfg), config.seed)
    offsets = torch.arange(k)

    def sample(g: torch.Generator) -> dict[str, torch.Tensor]:
        ep = torch.randint(0, config.num_episodes, (config.batch_size,), generator=g)
        st = torch.randint(0, horizon - k + 1, (config.batch_size,), generator=g)
        idx = (ep[:, None], st[:, None] + offsets)
        return {"observation.state": obs[idx], "action": act[idx], "return_to_go": rtg[idx],
                "timestep": st[:, None] + offsets}

    losses = train_policy(dt, sample, steps=config.train_steps, lr=config.lr,
                          generator=torch.Generator().manual_seed(config.seed), progress=progress)
    return TrainedRunnerDT(dt, rtg[:, 0].numpy(), losses[-100:], time.perf_counter() - start)


def evaluate_reachability(config: ReachabilityConfig,
                          trained: TrainedRunnerDT) -> ReachabilityResult:
    """Condition on every target and roll out once (deterministic policy and environment); the
    DT decrements its return-to-go by the rewards it is fed (R_{t+1} = R_t - r_t)."""
    start = time.perf_counter()
    task = RunnerConfig()
    dt, horizon = trained.policy, task.horizon
    targets = torch.tensor(config.targets, dtype=torch.float32)
    dt.reset(targets)
    x = np.zeros(len(config.targets))
    reward = torch.zeros(len(config.targets))
    achieved = np.zeros(len(config.targets))
    for t in range(horizon):
        batch = {"observation.state": torch.from_numpy(runner_observation(task, x, t)),
                 "reward": reward}
        a = np.clip(dt.select_action(batch)[:, 0].double().numpy(), -1.0, 1.0)
        x = x + a
        achieved += a
        reward = torch.from_numpy(a).float()
    returns = trained.data_returns
    return ReachabilityResult(
        config, list(config.targets), achieved.tolist(), float(returns.min()),
        float(returns.max()), float(np.quantile(returns, 0.05)),
        float(np.quantile(returns, 0.95)), float(horizon),
        trained.seconds + time.perf_counter() - start, trained.losses,
    )


def run_reachability(config: ReachabilityConfig, progress: Progress = None) -> ReachabilityResult:
    return evaluate_reachability(config, train_reachability_dt(config, progress))


def run(config: StitchingConfig | ReachabilityConfig,
        progress: Progress = None) -> StitchingResult | ReachabilityResult:
    """Run the study that ``config`` describes (stitching or return reachability)."""
    if isinstance(config, StitchingConfig):
        return run_stitching(config, progress)
    if isinstance(config, ReachabilityConfig):
        return run_reachability(config, progress)
    raise TypeError(f"config must be StitchingConfig or ReachabilityConfig, got "
                    f"{type(config).__name__}")
