"""LeRobot-like policy base: normalisation buffers, chunk execution and safetensors checkpoints.

Interface (LeRobot conventions, FACTS.md): ``forward(batch) -> (loss, info)`` for training,
``predict_action_chunk(batch) -> (B, k, A)``, ``select_action(batch) -> (B, A)`` (one action per
control step, using the policy's executor), ``reset()`` at episode start. Batches are dicts with
``observation.state`` (B, S) and, for training, ``action`` (B, k, A).

Checkpoints: ``save(path)`` writes the state dict with safetensors and the policy's kind and config
(JSON) in the metadata; ``load_policy(path)`` rebuilds the policy from the file alone.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from dataclasses import asdict
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import torch
from safetensors.torch import load_file, safe_open, save_file
from torch import Tensor, nn

from transformer_math.nn.init import no_init_draws
from transformer_math.registry import Registry
from transformer_math.robotics.policies.ensembling import ChunkQueue, Executor

POLICY_KINDS: Registry[type[nn.Module]] = Registry("policy kind")
"""Policy classes by the ``kind`` written in a saved policy folder (metadata: ``description``)."""

STATE_KEY = "observation.state"
ACTION_KEY = "action"


def register_policy(kind: str, *, description: str = ""):
    """Class decorator: make ``kind`` loadable by :func:`load_policy`."""

    def register(cls):
        cls.kind = kind
        return POLICY_KINDS.add(kind, cls, description=description or (cls.__doc__ or "").strip()
                                .split("\n")[0])

    return register


class ChunkPolicy(nn.Module, ABC):
    """Base of the continuous-action chunk policies (BC MLP, ACT)."""

    kind: ClassVar[str] = ""
    config: Any

    def __init__(self, state_dim: int, action_dim: int, chunk_size: int) -> None:
        super().__init__()
        if state_dim < 1 or action_dim < 1 or chunk_size < 1:
            raise ValueError(
                f"state_dim, action_dim, chunk_size must be >= 1, got {state_dim}, "
                f"{action_dim}, {chunk_size}"
            )
        self.state_dim, self.action_dim, self.chunk_size = state_dim, action_dim, chunk_size
        self.register_buffer("state_mean", torch.zeros(state_dim))
        self.register_buffer("state_std", torch.ones(state_dim))
        self.register_buffer("action_mean", torch.zeros(action_dim))
        self.register_buffer("action_std", torch.ones(action_dim))
        self.executor: Executor = ChunkQueue(chunk_size)

    # -- normalisation -------------------------------------------------------------------------
    def fit_normalization(self, states: np.ndarray | Tensor, actions: np.ndarray | Tensor) -> None:
        """Per-dimension mean/std of the training data (std floored at 1e-3)."""
        s = torch.as_tensor(states, dtype=torch.float32).reshape(-1, self.state_dim)
        a = torch.as_tensor(actions, dtype=torch.float32).reshape(-1, self.action_dim)
        self.state_mean.copy_(s.mean(0))
        self.state_std.copy_(s.std(0).clamp_min(1e-3))
        self.action_mean.copy_(a.mean(0))
        self.action_std.copy_(a.std(0).clamp_min(1e-3))

    def _state(self, batch: dict[str, Tensor]) -> Tensor:
        if STATE_KEY not in batch:
            raise ValueError(f"batch must contain {STATE_KEY!r}, got keys {sorted(batch)}")
        s = torch.as_tensor(batch[STATE_KEY], dtype=torch.float32)
        if s.dim() != 2 or s.shape[1] != self.state_dim:
            raise ValueError(
                f"{STATE_KEY} must have shape (batch, {self.state_dim}), got {tuple(s.shape)}"
            )
        return (s - self.state_mean) / self.state_std

    def _target(self, batch: dict[str, Tensor]) -> Tensor:
        if ACTION_KEY not in batch:
            raise ValueError(f"batch must contain {ACTION_KEY!r}, got keys {sorted(batch)}")
        a = torch.as_tensor(batch[ACTION_KEY], dtype=torch.float32)
        want = (self.chunk_size, self.action_dim)
        if a.dim() != 3 or tuple(a.shape[1:]) != want:
            raise ValueError(f"{ACTION_KEY} must have shape (batch, {want[0]}, {want[1]}), "
                             f"got {tuple(a.shape)}")
        return (a - self.action_mean) / self.action_std

    def _unnormalize(self, a: Tensor) -> Tensor:
        return a * self.action_std + self.action_mean

    # -- LeRobot-like interface ----------------------------------------------------------------
    @abstractmethod
    def predict_action_chunk(self, batch: dict[str, Tensor]) -> Tensor:
        """The next ``chunk_size`` actions, shape (batch, chunk_size, action_dim)."""

    @abstractmethod
    def forward(self, batch: dict[str, Tensor]) -> tuple[Tensor, dict[str, float]]:
        """Training loss on a batch and a dict of logged scalars."""

    def reset(self) -> None:
        self.executor.reset()

    def set_executor(self, executor: Executor) -> None:
        self.executor = executor
        executor.reset()

    @torch.no_grad()
    def select_action(self, batch: dict[str, Tensor]) -> Tensor:
        obs = batch.get(STATE_KEY)
        if obs is None:
            raise ValueError(f"batch must contain {STATE_KEY!r}, got keys {sorted(batch)}")
        return self.executor(lambda o: self.predict_action_chunk({STATE_KEY: o}), obs)

    # -- checkpoints ---------------------------------------------------------------------------
    def save(self, path: str | Path) -> None:
        save_policy(self, path)


def save_policy(policy: nn.Module, path: str | Path) -> None:
    """safetensors checkpoint with ``kind`` and ``config`` (JSON) in the metadata."""
    kind = getattr(policy, "kind", "")
    if kind not in POLICY_KINDS:
        raise TypeError(f"policy must be a registered policy kind, got {type(policy).__name__}")
    tensors = {k: v.detach().contiguous().clone() for k, v in policy.state_dict().items()}
    meta = {"kind": kind, "config": json.dumps(asdict(policy.config))}
    save_file(tensors, str(path), metadata=meta)


def load_policy(path: str | Path) -> nn.Module:
    """Rebuild a policy saved by :func:`save_policy` (kind and config read from the file)."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"checkpoint path must be an existing file, got {str(path)!r}")
    with safe_open(str(path), framework="pt") as f:
        meta = f.metadata() or {}
    kind = meta.get("kind")
    if kind not in POLICY_KINDS:
        raise ValueError(
            f"checkpoint kind must be one of {sorted(POLICY_KINDS)}, got {kind!r} in {path}"
        )
    cls = POLICY_KINDS[kind]
    config = cls.config_from_dict(json.loads(meta["config"]))  # type: ignore[attr-defined]
    with no_init_draws():  # every tensor is overwritten by the file's
        policy = cls(config)
    policy.load_state_dict(load_file(str(path)))
    policy.eval()
    return policy
