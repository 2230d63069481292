"""LeRobot-like policy base: normalisation buffers, chunk execution and safetensors checkpoints.

Interface (LeRobot conventions, FACTS.md): ``forward(batch) -> (loss, info)`` for training,
``predict_action_chunk(batch) -> (B, k, A)``, ``select_action(batch) -> (B, A)`` (one action per
control step, using the policy's executor), ``reset()`` at episode start. Batches are dicts with
``observation.state`` (B, S) and, for training, ``action`` (B, k, A).

Batches: ``select_action`` takes B observations and returns B actions, one episode per batch
element run in lockstep (the executor holds a (B, k, A) queue or B ensembles); the batch size is
fixed from the first call after ``reset()`` until the next ``reset()``: another size raises
``RuntimeError``. Observations are checked at every call (shape (B, S), finite).

Normalisation: ``state_std`` and ``action_std`` must be finite and > 0, the means finite;
``fit_normalization`` floors a constant feature's std at 1e-3. Statistics outside that are
refused (``ValueError``) when the policy is used, saved or loaded.

Checkpoints: ``save(path)`` writes the state dict with safetensors and the policy's kind and config
(JSON) in the metadata; ``load_policy(path)`` rebuilds the policy from the file alone, after
checking the metadata and the tensor shapes against each other before anything is allocated
(:mod:`transformer_math.robotics.policies.files`).
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import asdict
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import torch
from safetensors.torch import load_file, save_file
from torch import Tensor, nn

from transformer_math.nn.init import no_init_draws
from transformer_math.registry import Registry
from transformer_math.robotics.policies.ensembling import ChunkQueue, Executor
from transformer_math.robotics.policies.files import read_policy_file

POLICY_KINDS: Registry[type[nn.Module]] = Registry("policy kind")
"""Policy classes by the ``kind`` written in a saved policy folder (metadata: ``description``)."""

STATE_KEY = "observation.state"
ACTION_KEY = "action"


NORM_BUFFERS = ("state_mean", "state_std", "action_mean", "action_std")


def state_batch(batch: Mapping[str, Tensor], state_dim: int) -> Tensor:
    """``batch[observation.state]`` as float32 (B, state_dim), checked: a mapping with the key,
    that shape, every entry finite (``TypeError`` / ``ValueError`` otherwise)."""
    if not isinstance(batch, Mapping):
        raise TypeError(f"batch must be a dict with {STATE_KEY!r}, got {type(batch).__name__}")
    if STATE_KEY not in batch:
        raise ValueError(f"batch must contain {STATE_KEY!r}, got keys {sorted(batch)}")
    s = torch.as_tensor(batch[STATE_KEY], dtype=torch.float32)
    if s.dim() != 2 or s.shape[1] != state_dim:
        raise ValueError(f"{STATE_KEY} must have shape (batch, {state_dim}), got {tuple(s.shape)}")
    if not bool(torch.isfinite(s).all()):
        bad = int((~torch.isfinite(s)).sum())
        raise ValueError(f"{STATE_KEY} must be finite, got {bad} NaN/inf entries")
    return s


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
        """Per-dimension mean/std of the training data (std floored at 1e-3, so a constant
        feature is normalised by 1e-3, not by 0); non-finite data raise ``ValueError``."""
        s = torch.as_tensor(states, dtype=torch.float32).reshape(-1, self.state_dim)
        a = torch.as_tensor(actions, dtype=torch.float32).reshape(-1, self.action_dim)
        for name, x in (("states", s), ("actions", a)):
            if not bool(torch.isfinite(x).all()):
                raise ValueError(f"fit_normalization: {name} must be finite, got "
                                 f"{int((~torch.isfinite(x)).sum())} NaN/inf entries")
        self.state_mean.copy_(s.mean(0))
        self.state_std.copy_(s.std(0).clamp_min(1e-3))
        self.action_mean.copy_(a.mean(0))
        self.action_std.copy_(a.std(0).clamp_min(1e-3))

    def check_normalization(self) -> None:
        """``ValueError`` unless the means are finite and the stds finite and > 0."""
        for name in NORM_BUFFERS:
            t = getattr(self, name)
            if t.device.type == "meta":
                continue
            if not bool(torch.isfinite(t).all()):
                raise ValueError(f"{name} must be finite, got {t.tolist()}")
            if name.endswith("std") and not bool((t > 0).all()):
                raise ValueError(f"{name} must be > 0 (fit_normalization floors it at 1e-3), "
                                 f"got {t.tolist()}")

    def _state(self, batch: dict[str, Tensor]) -> Tensor:
        s = state_batch(batch, self.state_dim)
        self.check_normalization()
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
        """(B, A): one action per batch element (module docstring: fixed B until ``reset()``)."""
        obs = state_batch(batch, self.state_dim)
        self.check_normalization()
        return self.executor(lambda o: self.predict_action_chunk({STATE_KEY: o}), obs)

    # -- checkpoints ---------------------------------------------------------------------------
    def save(self, path: str | Path) -> None:
        save_policy(self, path)


def save_policy(policy: nn.Module, path: str | Path) -> None:
    """safetensors checkpoint with ``kind`` and ``config`` (JSON) in the metadata."""
    kind = getattr(policy, "kind", "")
    if kind not in POLICY_KINDS:
        raise TypeError(f"policy must be a registered policy kind, got {type(policy).__name__}")
    if hasattr(policy, "check_normalization"):
        policy.check_normalization()
    tensors = {k: v.detach().contiguous().clone() for k, v in policy.state_dict().items()}
    meta = {"kind": kind, "config": json.dumps(asdict(policy.config))}
    save_file(tensors, str(path), metadata=meta)


def load_policy(path: str | Path) -> nn.Module:
    """Rebuild a policy saved by :func:`save_policy` (kind and config read from the file).

    The file is checked before anything is allocated (:func:`.files.read_policy_file`: header,
    metadata types and bounds, tensor names, shapes and dtypes against a meta-device build); then
    every tensor must be finite and the normalisation statistics valid. Refusals are
    ``ValueError`` naming the file."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"checkpoint path must be an existing file, got {str(path)!r}")
    cls, config = read_policy_file(path, POLICY_KINDS)
    where = f"policy file {str(path)!r}"
    try:
        tensors = load_file(str(path))
    except Exception as exc:  # safetensors' SafetensorError
        raise ValueError(f"{where}: cannot read its tensors: {exc}") from None
    for name, t in tensors.items():
        if t.is_floating_point() and not bool(torch.isfinite(t).all()):
            raise ValueError(f"{where}: tensor {name!r} holds NaN/inf values")
    with no_init_draws():  # every tensor is overwritten by the file's
        policy = cls(config)
    policy.load_state_dict(tensors)
    if hasattr(policy, "check_normalization"):
        try:
            policy.check_normalization()
        except ValueError as exc:
            raise ValueError(f"{where}: {exc}") from None
    policy.eval()
    return policy
