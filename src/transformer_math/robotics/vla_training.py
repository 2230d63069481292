"""Train and evaluate the VLA policy on VLAPush: demonstrations, sizes, success with a Wilson CI.

Data: :func:`~transformer_math.robotics.envs.vla_push.generate_vla_push_dataset` (scripted
expert, ``split="train"``: held-out colour-shape pairs never named). Mini-batches (LeRobot keys):
``observation.images.top`` (B, 3, S, S) in [0, 1], ``observation.state`` (B, 3), ``task``
(B strings), ``action`` (B, k, 3) the next k expert actions and ``action_is_pad`` (B, k), True
past the step that reached success. Training is :func:`.training.train_policy` (AdamW, warm-up
then cosine, clip 1).

Evaluation runs ``episodes`` environments in lockstep (one batch through the policy per control
step, each episode its own seed ``seed + i``); ``instruction="shuffled"`` replaces each episode's
instruction by the one of episode ``(i + 1) mod n`` (a well-formed instruction about other
objects: the control of "the words are used"). The success rate comes with the Wilson score
interval (Wilson 1927; Brown, Cai & DasGupta 2001 recommend it over the normal interval for
small n):

    centre = (p + z^2 / 2n) / (1 + z^2 / n),
    half   = z sqrt(p (1 - p) / n + z^2 / 4n^2) / (1 + z^2 / n),      z = 1.96 (95 %).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

from transformer_math.robotics.envs.vla_push import (
    VLAPushConfig,
    VLAPushDataset,
    VLAPushEnv,
    generate_vla_push_dataset,
)
from transformer_math.robotics.policies.vla import VLAConfig, VLAPolicy
from transformer_math.robotics.training import build_seeded, train_policy

CAMERA_KEY = "observation.images.top"


@dataclass(frozen=True)
class VLASize:
    """A named size: the policy's widths and the training budget."""

    dim: int
    num_layers: int
    num_heads: int
    chunk_size: int
    episodes: int
    steps: int
    batch_size: int
    lr: float
    instructions_per_scene: int = 1


SIZES: dict[str, VLASize] = {
    # trains in the test suite in seconds (a smoke test of the whole path, not a good policy)
    "tiny": VLASize(dim=32, num_layers=2, num_heads=4, chunk_size=4, episodes=32, steps=40,
                    batch_size=16, lr=1e-3),
    # the 2-core setting (issue 32 item 7: under 20 minutes per seed; about 6.5 minutes on one
    # thread). Session 51: 400 demonstrations over-fitted once the conv stem let the image in
    # (flow loss 0.60 on the training batches, 0.94 on fresh scenes); 3000 did not (0.54, 0.63)
    "default": VLASize(dim=64, num_layers=2, num_heads=4, chunk_size=4, episodes=3000,
                       steps=6000, batch_size=32, lr=1e-3, instructions_per_scene=3),
    # what a GPU would run (documented in docs/vla.md, not run here)
    "large": VLASize(dim=256, num_layers=8, num_heads=8, chunk_size=8, episodes=5000,
                     steps=20000, batch_size=256, lr=3e-4),
}
MAX_TEXT_LEN = 56
"""Longest instruction of the grammar is 53 bytes; + BOS and EOS."""
BPE_TEXT_LEN = 16
"""Longest instruction of the grammar is 10 words (at most 10 BPE tokens after training on the
grammar's sentences: every word is seen); + BOS and EOS."""
BPE_VOCAB = 64
TOKENIZER_NAMES = ("bytes", "bpe")


def wilson_interval(successes: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """The Wilson score interval (module docstring) of ``successes`` out of ``n`` > 0."""
    if n < 1 or not 0 <= successes <= n:
        raise ValueError(f"need n >= 1 and 0 <= successes <= n, got {successes}, {n}")
    p = successes / n
    denom = 1.0 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def vla_config(size: str, seed: int = 0, **overrides: object) -> VLAConfig:
    if size not in SIZES:
        raise ValueError(f"size must be one of {sorted(SIZES)}, got {size!r}")
    s = SIZES[size]
    fields = {"dim": s.dim, "num_layers": s.num_layers, "num_heads": s.num_heads,
              "chunk_size": s.chunk_size, "max_text_len": MAX_TEXT_LEN, "seed": seed,
              **overrides}
    return VLAConfig(**fields)  # type: ignore[arg-type]


def images_to_tensor(images: np.ndarray) -> Tensor:
    """(..., S, S, 3) uint8 -> (..., 3, S, S) float32 in [0, 1] (LeRobot's image layout)."""
    t = torch.from_numpy(np.ascontiguousarray(images)).float() / 255.0
    return t.movedim(-1, -3)


def demo_sampler(data: VLAPushDataset, chunk_size: int, batch_size: int
                 ) -> Callable[[torch.Generator], dict[str, object]]:
    """Mini-batches of (observation, next k actions) from the demonstrations (module docstring)."""
    n, t = data.actions.shape[:2]
    images = torch.from_numpy(data.images)
    states = torch.from_numpy(data.states)
    actions = torch.from_numpy(data.actions)
    lengths = torch.from_numpy(data.lengths)
    offsets = torch.arange(chunk_size)

    def sample(g: torch.Generator) -> dict[str, object]:
        ep = torch.randint(0, n, (batch_size,), generator=g)
        start = (torch.rand(batch_size, generator=g) * lengths[ep]).long()
        idx = start[:, None] + offsets  # (B, k)
        pad = idx >= lengths[ep][:, None]
        idx = idx.clamp_max(t - 1)
        return {CAMERA_KEY: images_to_tensor(images[ep, start].numpy()),
                "observation.state": states[ep, start],
                "task": [data.tasks[int(e)] for e in ep],
                "action": actions[ep[:, None], idx], "action_is_pad": pad}

    return sample


def valid_steps(data: VLAPushDataset) -> tuple[np.ndarray, np.ndarray]:
    """(states, actions) of the steps before each demonstration's success, (M, 3) each: the
    frames :func:`demo_sampler` starts a chunk at. The padded frames after success (the idle
    action (0, 0, -1), about 2/3 of the 32-step rows at 10.6 steps per demonstration) are left
    out of the normalisation statistics: with them the action std was (0.42, 0.42, 0.80) and
    the gripper mean -0.60, against (0.73, 0.74, 0.98) and +0.21 on the steps trained on
    (session 46, 400 demonstrations, seed 0)."""
    t = data.actions.shape[1]
    valid = np.arange(t)[None, :] < data.lengths[:, None]
    return data.states[valid], data.actions[valid]


def train_vla(size: str = "tiny", seed: int = 0, *, steps: int | None = None,
              episodes: int | None = None, tokenizer: str = "bytes",
              instructions_per_scene: int | None = None,
              progress: Callable[[float], None] | None = None,
              **overrides: object) -> tuple[VLAPolicy, list[float]]:
    """A VLA policy trained on expert demonstrations of the train split (deterministic in
    ``seed``: data seed ``seed``, weights seed ``seed``, batches ``seed + 1``).
    ``tokenizer="bpe"``: a BPE of at most :data:`BPE_VOCAB` tokens trained on the
    demonstrations' instructions (the train split's: held-out pairs never named)."""
    if tokenizer not in TOKENIZER_NAMES:
        raise ValueError(f"tokenizer must be one of {TOKENIZER_NAMES}, got {tokenizer!r}")
    config = vla_config(size, seed, **overrides)  # checks the size's name
    s = SIZES[size]
    per_scene = s.instructions_per_scene if instructions_per_scene is None else (
        instructions_per_scene)
    data = generate_vla_push_dataset(VLAPushConfig(), episodes or s.episodes, seed=seed,
                                     instructions_per_scene=per_scene)
    bpe = None
    if tokenizer == "bpe":
        from dataclasses import replace

        from transformer_math.robotics.policies.vla_tokenizer import train_bpe

        bpe = train_bpe(sorted(set(data.tasks)), BPE_VOCAB)
        config = replace(config, tokenizer="bpe", vocab_size=bpe.get_vocab_size(),
                         tokenizer_bytes=len(bpe.to_str().encode("utf-8")),
                         max_text_len=BPE_TEXT_LEN)
    policy = build_seeded(lambda: VLAPolicy(config), seed)
    if bpe is not None:
        policy.set_tokenizer(bpe)
    states, actions = valid_steps(data)
    policy.fit_normalization(states, actions)
    g = torch.Generator().manual_seed(seed + 1)
    losses = train_policy(policy, demo_sampler(data, config.chunk_size, s.batch_size),
                          steps=steps or s.steps, lr=s.lr, generator=g, progress=progress)
    return policy, losses


@dataclass(frozen=True)
class EvalResult:
    split: str
    instruction: str
    episodes: int
    successes: int
    grabbed_any: int = 0
    """Episodes in which the gripper held some object at least once."""
    grabbed_named: int = 0
    """Episodes whose first grabbed object is the one the instruction names (with shuffled
    instructions still the scene's own: did the policy go for the object its scene needs?)."""

    @property
    def rate(self) -> float:
        return self.successes / self.episodes

    @property
    def interval(self) -> tuple[float, float]:
        return wilson_interval(self.successes, self.episodes)

    def as_dict(self) -> dict[str, object]:
        lo, hi = self.interval
        return {"split": self.split, "instruction": self.instruction,
                "episodes": self.episodes, "successes": self.successes,
                "success_rate": round(self.rate, 4), "wilson95": [round(lo, 4), round(hi, 4)],
                "grabbed_any": self.grabbed_any, "grabbed_named": self.grabbed_named}


INSTRUCTIONS = ("true", "shuffled")


@torch.no_grad()
def evaluate(policy: VLAPolicy | None, *, episodes: int = 50, split: str = "train",
             seed: int = 10_000, instruction: str = "true",
             frames: list[np.ndarray] | None = None) -> EvalResult:
    """Success of ``policy`` (None: the scripted expert, which reads the scene, not the words)
    on ``episodes`` fresh scenes of ``split`` (module docstring); the images episode 0 saw are
    appended to ``frames`` when given."""
    if instruction not in INSTRUCTIONS:
        raise ValueError(f"instruction must be one of {INSTRUCTIONS}, got {instruction!r}")
    if episodes < 1:
        raise ValueError(f"episodes must be >= 1, got {episodes}")
    cfg = VLAPushConfig(split=split)
    envs = [VLAPushEnv(cfg) for _ in range(episodes)]
    obs = [env.reset(seed=seed + i) for i, env in enumerate(envs)]
    tasks = [info["task"] for _, info in obs]
    if instruction == "shuffled":
        tasks = tasks[1:] + tasks[:1]
    current = [o for o, _ in obs]
    done = [False] * episodes
    success = [False] * episodes
    first: list[int | None] = [None] * episodes
    if policy is not None:
        policy.reset()
    for _ in range(cfg.horizon):
        if frames is not None and not done[0]:
            frames.append(current[0]["pixels"])
        if policy is None:
            actions = np.stack([env.expert_action() if not d else np.zeros(3, np.float32)
                                for env, d in zip(envs, done, strict=True)])
        else:
            batch = {CAMERA_KEY: images_to_tensor(np.stack([o["pixels"] for o in current])),
                     "observation.state": torch.from_numpy(np.stack([o["agent_pos"]
                                                                     for o in current])),
                     "task": tasks}
            actions = policy.select_action(batch).clamp(-1.0, 1.0).cpu().numpy()
        for i, env in enumerate(envs):
            if done[i]:
                continue
            o, _, terminated, truncated, _ = env.step(actions[i].astype(np.float32))
            current[i] = o
            success[i] = success[i] or terminated
            if first[i] is None:
                first[i] = env.held
            done[i] = terminated or truncated
        if all(done):
            break
    if frames is not None:
        frames.append(current[0]["pixels"])
    named = sum(f is not None and env.scene is not None and f == env.scene.source
                for f, env in zip(first, envs, strict=True))
    return EvalResult(split, instruction, episodes, int(sum(success)),
                      sum(f is not None for f in first), int(named))


ABLATED_INPUTS = (CAMERA_KEY, "observation.state", "task")
MAX_ABLATION_EPISODES = 10_000
MAX_ABLATION_BATCH = 4096


@torch.no_grad()
def input_ablation(policy: VLAPolicy, *, episodes: int = 400, seed: int = 123,
                   batch_size: int = 512) -> dict[str, float]:
    """Which inputs does ``policy`` use? Its flow-matching loss on one batch of fresh expert
    demonstrations (``seed``, train split), then with each input of :data:`ABLATED_INPUTS`
    permuted across the batch (a fixed permutation; every other input, the noise and tau
    unchanged). An input the policy ignores leaves the loss where it was; one it needs raises
    it. Keys: ``"loss"`` and ``"loss with <input> shuffled"``. The policy's sampling generator
    is restored afterwards. "Fresh" means not the training data only when ``seed`` differs from
    the training seed (``train_vla``'s demonstrations use its own seed)."""
    if not 1 <= episodes <= MAX_ABLATION_EPISODES or not 2 <= batch_size <= MAX_ABLATION_BATCH:
        raise ValueError(f"need 1 <= episodes <= {MAX_ABLATION_EPISODES} and 2 <= batch_size <= "
                         f"{MAX_ABLATION_BATCH}, got {episodes}, {batch_size}")
    if not 0 <= seed <= 2**62:
        raise ValueError(f"seed must be in [0, 2**62], got {seed}")
    data = generate_vla_push_dataset(VLAPushConfig(), episodes, seed=seed)
    batch = demo_sampler(data, policy.config.chunk_size, batch_size)(
        torch.Generator().manual_seed(seed))
    perm = torch.randperm(batch_size, generator=torch.Generator().manual_seed(seed + 1))
    saved, was_training = policy.generator.get_state(), policy.training
    policy.eval()

    def loss(b: dict[str, object]) -> float:
        policy.generator.manual_seed(seed + 2)
        return float(policy(b)[0])

    try:
        out = {"loss": loss(batch)}
        for key in ABLATED_INPUTS:
            value = batch[key]
            shuffled = ([value[int(i)] for i in perm] if isinstance(value, list)
                        else value[perm])  # type: ignore[index]
            out[f"loss with {key} shuffled"] = loss({**batch, key: shuffled})
    finally:
        policy.generator.set_state(saved)
        policy.train(was_training)
    return out
