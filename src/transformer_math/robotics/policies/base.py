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

Batches use LeRobot's keys: ``observation.state``, ``action`` and, for training, the optional
``action_is_pad`` (B, k) bool (True = a padded step past the end of the episode: the loss ignores
it, whatever action it holds). ``observation.images.<camera>`` keys are refused with a clear
error unless the policy's config names that camera (ACT with ``cameras``: a small convolutional
encoder, :mod:`.vision`); camera images are never silently ignored.

Device and dtype: every tensor a policy creates follows its parameters' (``policy.double()``,
``policy.to(device)``); inputs are converted to them.

Checkpoints, LeRobot layout: ``save_pretrained(dir)`` writes ``config.json`` (``type``, the
config's fields, ``input_features`` / ``output_features`` with shapes, ``normalization_mapping``,
the executor's ``n_action_steps`` / ``temporal_ensemble_coeff`` / ``temporal_ensemble_order``)
and ``model.safetensors`` (the state dict, normalisation statistics included);
``Policy.from_pretrained(dir)`` and ``load_policy(dir)`` rebuild it in any process: the policy
types are a static table (:data:`POLICY_TYPES`, kind -> ``"module:Class"``) resolved lazily, so
nothing has to be imported first. The older single-file format (``save(path)``: safetensors with
kind and config in the metadata) still loads. Both readers check everything before anything is
allocated (:mod:`transformer_math.robotics.policies.files`).
"""

from __future__ import annotations

import importlib
import json
from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping
from dataclasses import asdict
from pathlib import Path
from types import MappingProxyType
from typing import Any, ClassVar, TypeVar

import numpy as np
import torch
from safetensors.torch import load_file, save_file
from torch import Tensor, nn

from transformer_math.nn.init import no_init_draws
from transformer_math.robotics.policies.ensembling import (
    ChunkQueue,
    Executor,
    TemporalEnsembler,
)
from transformer_math.robotics.policies.files import (
    CONFIG_NAME,
    WEIGHTS_NAME,
    read_policy_file,
    read_policy_folder,
)

POLICY_TYPES: Mapping[str, str] = MappingProxyType({
    "act": "transformer_math.robotics.policies.act:ACTPolicy",
    "act_lerobot": "transformer_math.robotics.policies.act_lerobot:LeRobotACTPolicy",
    "ar_bins": "transformer_math.robotics.policies.ar_bins:ARBinsPolicy",
    "bc_mlp": "transformer_math.robotics.policies.bc:BCPolicy",
    "decision_transformer":
        "transformer_math.robotics.policies.decision_transformer:DecisionTransformer",
    "diffusion": "transformer_math.robotics.policies.diffusion:DiffusionPolicy",
    "flow_matching": "transformer_math.robotics.policies.flow_matching:FlowMatchingPolicy",
    "vla": "transformer_math.robotics.policies.vla:VLAPolicy",
})
"""Every policy type by the ``type`` / ``kind`` written in its checkpoint -> ``"module:Class"``.
Static: a fresh process knows every policy without importing its module first."""


class _PolicyKinds(Mapping[str, type]):
    """:data:`POLICY_TYPES` as a read-only mapping kind -> class, each imported on first use."""

    def __getitem__(self, kind: str) -> type:
        target = POLICY_TYPES[kind]  # KeyError for an unknown kind (Mapping protocol)
        module, _, name = target.partition(":")
        cls = getattr(importlib.import_module(module), name)
        if getattr(cls, "kind", None) != kind:  # library bug: the table and the class disagree
            raise TypeError(f"POLICY_TYPES[{kind!r}] = {target!r} is not registered as {kind!r}")
        return cls

    def __iter__(self) -> Iterator[str]:
        return iter(POLICY_TYPES)

    def __len__(self) -> int:
        return len(POLICY_TYPES)

    def __contains__(self, kind: object) -> bool:
        return kind in POLICY_TYPES


POLICY_KINDS: Mapping[str, type] = _PolicyKinds()
"""Policy classes by kind (lazy view of :data:`POLICY_TYPES`)."""

STATE_KEY = "observation.state"
ACTION_KEY = "action"
ACTION_IS_PAD_KEY = "action_is_pad"
IMAGES_PREFIX = "observation.images."


NORM_BUFFERS = ("state_mean", "state_std", "action_mean", "action_std")

#: Range where the arithmetic of a policy stays finite in float32 (issue 40.5): a std below
#: STD_MIN makes (s - mean) / std overflow for ordinary states (1e-45 gives inf), a mean or std
#: beyond NORM_MAX, or a stored weight beyond WEIGHT_MAX, overflows the first matrix product
#: (3.4e38 is float32's largest value; a 1e15 weight times a 1e6 input summed over 1e4 inputs
#: is still 1e25).
STD_MIN = 1e-6
NORM_MAX = 1e12
WEIGHT_MAX = 1e15


def check_no_images(batch: Mapping[str, Any], policy: str, allowed: tuple[str, ...] = ()) -> None:
    """``ValueError`` when ``batch`` carries camera images (``observation.images.*``) other than
    the ``allowed`` keys (those the policy's config names): an ignored camera would be silently
    wrong."""
    images = sorted(k for k in batch if isinstance(k, str) and k.startswith(IMAGES_PREFIX)
                    and k not in allowed)
    if images:
        named = f"names only {list(allowed)}" if allowed else "names no image features"
        raise ValueError(f"batch carries image feature(s) {images} but this {policy!r} policy's "
                         f"config {named}; drop them or configure a policy that takes them")


def state_batch(batch: Mapping[str, Tensor], state_dim: int, like: Tensor | None = None,
                policy: str = "policy", images: tuple[str, ...] = ()) -> Tensor:
    """``batch[observation.state]`` as (B, state_dim) in ``like``'s dtype and device (float32 on
    the CPU without ``like``), checked: a mapping with the key and no image keys, that shape,
    every entry finite (``TypeError`` / ``ValueError`` otherwise)."""
    if not isinstance(batch, Mapping):
        raise TypeError(f"batch must be a dict with {STATE_KEY!r}, got {type(batch).__name__}")
    if STATE_KEY not in batch:
        raise ValueError(f"batch must contain {STATE_KEY!r}, got keys {sorted(batch)}")
    check_no_images(batch, policy, images)
    dtype, device = (torch.float32, None) if like is None else (like.dtype, like.device)
    s = torch.as_tensor(batch[STATE_KEY], dtype=dtype, device=device)
    if s.dim() != 2 or s.shape[1] != state_dim:
        raise ValueError(f"{STATE_KEY} must have shape (batch, {state_dim}), got {tuple(s.shape)}")
    if s.device.type != "meta" and not bool(torch.isfinite(s).all()):
        bad = int((~torch.isfinite(s)).sum())
        raise ValueError(f"{STATE_KEY} must be finite, got {bad} NaN/inf entries")
    return s


def action_padding(batch: Mapping[str, Any], shape: tuple[int, int], like: Tensor) -> Tensor | None:
    """``batch[action_is_pad]`` as a (B, k) bool tensor on ``like``'s device, or None when the
    batch has none; ``ValueError`` unless it is boolean of that shape and leaves a valid step."""
    if ACTION_IS_PAD_KEY not in batch:
        return None
    pad = torch.as_tensor(batch[ACTION_IS_PAD_KEY], device=like.device)
    if pad.dtype != torch.bool or tuple(pad.shape) != shape:
        raise ValueError(f"{ACTION_IS_PAD_KEY} must be a bool tensor of shape {shape} (True = "
                         f"padded step), got {pad.dtype} {tuple(pad.shape)}")
    if pad.device.type != "meta" and bool(pad.all()):
        raise ValueError(f"{ACTION_IS_PAD_KEY} marks every action as padding: nothing to learn")
    return pad


def masked_mean(per_element: Tensor, pad: Tensor | None) -> Tensor:
    """Mean of ``per_element`` (B, k, A) over the steps that are not padding (``pad`` (B, k));
    the plain mean without ``pad``. Padded entries are replaced (``torch.where``), never
    multiplied by 0, so NaN/inf in padded actions cannot leak in."""
    if pad is None:
        return per_element.mean()
    kept = torch.where(pad[..., None], torch.zeros_like(per_element), per_element)
    return kept.sum() / ((~pad).sum() * per_element.shape[-1])


def logged(t: Tensor) -> float:
    """A loss term as a Python float for the ``info`` dict (NaN for a meta-device tensor, which
    has no value: a shape-only dry run)."""
    return float("nan") if t.device.type == "meta" else float(t.detach())


P = TypeVar("P", bound=nn.Module)


def register_policy(kind: str, *, description: str = ""):
    """Class decorator: name the class's ``kind``; ``kind`` must be in :data:`POLICY_TYPES`
    (the static table that makes it loadable without importing its module first)."""

    def register(cls):
        if kind not in POLICY_TYPES:
            raise ValueError(f"policy kind {kind!r} must be added to POLICY_TYPES "
                             f"({sorted(POLICY_TYPES)})")
        cls.kind = kind
        cls.description = description or (cls.__doc__ or "").strip().split("\n")[0]
        return cls

    return register


class PretrainedMixin:
    """``save_pretrained(dir)`` / ``from_pretrained(dir)`` in the LeRobot layout (module
    docstring); ``save(path)`` writes the older single file."""

    kind: ClassVar[str] = ""
    has_executor: ClassVar[bool] = False
    normalization_mapping: ClassVar[dict[str, str]] = {}

    @classmethod
    def normalization(cls, config: Any) -> dict[str, str]:
        """The ``normalization_mapping`` written in ``config.json`` for ``config``."""
        return dict(cls.normalization_mapping)

    @classmethod
    def features(cls, config: Any) -> tuple[dict[str, Any], dict[str, Any]]:
        """(input_features, output_features) of ``config`` as written in ``config.json``."""
        return ({STATE_KEY: {"type": "STATE", "shape": [config.state_dim]}},
                {ACTION_KEY: {"type": "ACTION", "shape": [config.action_dim]}})

    def executor_config(self) -> dict[str, Any]:
        """The executor settings written in ``config.json`` (none for a policy without one)."""
        return {}

    def apply_executor_config(self, settings: Mapping[str, Any]) -> None:
        """Install the executor that ``settings`` (checked by the reader) describe."""

    def save(self, path: str | Path) -> None:
        """The single-file format at ``path``; an existing folder gets the folder layout."""
        if Path(path).is_dir():
            save_pretrained(self, path)
        else:
            save_policy(self, path)

    def save_pretrained(self, directory: str | Path) -> None:
        save_pretrained(self, directory)

    @classmethod
    def from_pretrained(cls: type[P], directory: str | Path) -> P:
        """The policy saved in ``directory`` (or an old single file), which must be a ``cls``."""
        policy = load_policy(directory)
        if not isinstance(policy, cls):
            raise TypeError(f"{str(directory)!r} holds a {getattr(policy, 'kind', '?')!r} "
                            f"policy, not a {cls.kind or cls.__name__!r} one")
        return policy


class ChunkPolicy(PretrainedMixin, nn.Module, ABC):
    """Base of the continuous-action chunk policies (BC MLP, ACT, diffusion, flow matching,
    binned autoregressive)."""

    config: Any
    has_executor: ClassVar[bool] = True
    normalization_mapping: ClassVar[dict[str, str]] = {"STATE": "MEAN_STD",
                                                       "ACTION": "MEAN_STD"}

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
            if name.endswith("std") and not bool((t >= STD_MIN).all()):
                raise ValueError(f"{name} must be >= {STD_MIN} (fit_normalization floors it at "
                                 f"1e-3), got {t.tolist()}")
            if not bool((t.abs() <= NORM_MAX).all()):
                raise ValueError(f"{name} must be at most {NORM_MAX:g} in magnitude, got "
                                 f"{t.tolist()}")

    image_keys: tuple[str, ...] = ()
    """The ``observation.images.*`` keys the policy takes (none by default)."""

    def _state(self, batch: dict[str, Tensor]) -> Tensor:
        s = state_batch(batch, self.state_dim, self.state_mean, self.kind, self.image_keys)
        self.check_normalization()
        return (s - self.state_mean) / self.state_std

    def _target(self, batch: dict[str, Tensor]) -> tuple[Tensor, Tensor | None]:
        """(normalised action chunk (B, k, A), padding (B, k) or None); padded actions are
        replaced by 0 so that nothing downstream depends on them."""
        if ACTION_KEY not in batch:
            raise ValueError(f"batch must contain {ACTION_KEY!r}, got keys {sorted(batch)}")
        like = self.action_mean
        a = torch.as_tensor(batch[ACTION_KEY], dtype=like.dtype, device=like.device)
        want = (self.chunk_size, self.action_dim)
        if a.dim() != 3 or tuple(a.shape[1:]) != want:
            raise ValueError(f"{ACTION_KEY} must have shape (batch, {want[0]}, {want[1]}), "
                             f"got {tuple(a.shape)}")
        pad = action_padding(batch, (a.shape[0], self.chunk_size), like)
        real = a if pad is None else a.masked_fill(pad[..., None], 0.0)
        if a.device.type != "meta" and not bool(torch.isfinite(real).all()):
            bad = int((~torch.isfinite(real)).sum())
            raise ValueError(f"{ACTION_KEY} must be finite where it is not padding, got {bad} "
                             "NaN/inf entries (the loss would be NaN)")
        target = (a - self.action_mean) / self.action_std
        if pad is not None:
            target = target.masked_fill(pad[..., None], 0.0)
        return target, pad

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
        obs = state_batch(batch, self.state_dim, self.state_mean, self.kind, self.image_keys)
        self.check_normalization()
        return self.executor(lambda o: self.predict_action_chunk({**batch, STATE_KEY: o}), obs)

    # -- checkpoints ---------------------------------------------------------------------------
    def executor_config(self) -> dict[str, Any]:
        """LeRobot's ``n_action_steps`` / ``temporal_ensemble_coeff`` (+ the ensemble order)."""
        ex = self.executor
        if isinstance(ex, TemporalEnsembler):
            return {"n_action_steps": 1, "temporal_ensemble_coeff": ex.decay,
                    "temporal_ensemble_order": ex.order}
        return {"n_action_steps": ex.n_action_steps, "temporal_ensemble_coeff": None,
                "temporal_ensemble_order": None}

    def apply_executor_config(self, settings: Mapping[str, Any]) -> None:
        if settings["temporal_ensemble_coeff"] is None:
            self.set_executor(ChunkQueue(settings["n_action_steps"]))
        else:
            self.set_executor(TemporalEnsembler(settings["temporal_ensemble_coeff"],
                                                settings["temporal_ensemble_order"]))


def _checked_state(policy: nn.Module) -> dict[str, Tensor]:
    kind = getattr(policy, "kind", "")
    if kind not in POLICY_KINDS or not isinstance(policy, POLICY_KINDS[kind]):
        raise TypeError(f"policy must be a registered policy kind, got {type(policy).__name__}")
    if hasattr(policy, "check_normalization"):
        policy.check_normalization()
    return {k: v.detach().contiguous().clone().cpu() for k, v in policy.state_dict().items()}


def save_policy(policy: nn.Module, path: str | Path) -> None:
    """safetensors checkpoint with ``kind`` and ``config`` (JSON) in the metadata (one file)."""
    tensors = _checked_state(policy)
    meta = {"kind": policy.kind, "config": json.dumps(asdict(policy.config))}
    from safetensors.torch import save as save_bytes

    from transformer_math import safe_write

    safe_write.write_bytes(path, save_bytes(tensors, metadata=meta))


def policy_config_json(policy: nn.Module) -> dict[str, Any]:
    """The ``config.json`` object of ``policy`` (module docstring "Checkpoints")."""
    inputs, outputs = policy.features(policy.config)
    return {"type": policy.kind, **asdict(policy.config), "input_features": inputs,
            "output_features": outputs,
            "normalization_mapping": policy.normalization(policy.config),
            **policy.executor_config()}


def save_pretrained(policy: nn.Module, directory: str | Path) -> None:
    """Write ``directory/config.json`` and ``directory/model.safetensors`` (LeRobot layout);
    the folder is created if needed, an existing non-folder path is refused."""
    directory = Path(directory)
    if directory.exists() and not directory.is_dir():
        raise ValueError(f"save_pretrained needs a folder, got the existing file "
                         f"{str(directory)!r}")
    tensors = _checked_state(policy)
    text = json.dumps(policy_config_json(policy), indent=2, allow_nan=False)
    from transformer_math import safe_write

    # Written into a temporary sibling and swapped in whole: a save killed half-way leaves the
    # old policy intact, and links in the folder are replaced, never followed.
    with safe_write.replacing_folder(
            directory, carry=lambda e: e.name not in (WEIGHTS_NAME, CONFIG_NAME)) as root:
        save_file(tensors, str(root / WEIGHTS_NAME), metadata={"format": "pt"})
        (root / CONFIG_NAME).write_text(text + "\n", encoding="utf-8")


def load_policy(path: str | Path) -> nn.Module:
    """Rebuild a policy from a LeRobot-style folder (:func:`save_pretrained`) or from an older
    single file (:func:`save_policy`), in any process (types from :data:`POLICY_TYPES`).

    Everything is checked before anything is allocated (:mod:`.files`: folder files resolved
    inside the folder, ``config.json`` or the metadata type-checked key by key and bounded,
    tensor names, shapes and dtypes compared with a meta-device build); then every tensor must
    be finite and the normalisation statistics valid. Refusals are ``ValueError`` naming the
    file."""
    path = Path(path)
    settings: Mapping[str, Any] = {}
    if path.is_dir():
        cls, config, settings, weights = read_policy_folder(path, POLICY_KINDS)
    elif path.is_file():
        cls, config = read_policy_file(path, POLICY_KINDS)
        weights = path
    else:
        raise ValueError(f"checkpoint path must be an existing policy folder or file, got "
                         f"{str(path)!r}")
    where = f"policy file {str(weights)!r}"
    try:
        tensors = load_file(str(weights))
    except Exception as exc:  # safetensors' SafetensorError
        raise ValueError(f"{where}: cannot read its tensors: {exc}") from None
    for name, t in tensors.items():
        if t.is_floating_point() and not bool(torch.isfinite(t).all()):
            raise ValueError(f"{where}: tensor {name!r} holds NaN/inf values")
        if t.is_floating_point() and t.numel() and float(t.abs().max()) > WEIGHT_MAX:
            raise ValueError(f"{where}: tensor {name!r} holds values beyond {WEIGHT_MAX:g} in "
                             "magnitude (its products overflow float32)")
    with no_init_draws():  # every tensor is overwritten by the file's
        policy = cls(config)
    policy.load_state_dict(tensors)
    if hasattr(policy, "check_normalization"):
        try:
            policy.check_normalization()
        except ValueError as exc:
            raise ValueError(f"{where}: {exc}") from None
    if settings:
        policy.apply_executor_config(settings)
    policy.eval()
    return policy
