"""Train a project ACT policy on a LeRobot dataset folder.

The policy's normalisation is the folder's ``meta/stats.json`` (mean and std of
``observation.state`` and ``action``; std floored at 1e-3 as ``ChunkPolicy.fit_normalization``
floors it), its state and action sizes and cameras come from ``meta/info.json``, and the
mini-batches are frames drawn uniformly from every frame with their action chunk and
``action_is_pad`` (:meth:`.lerobot_format.LeRobotFolder.sampler`), so chunks that run past an
episode's end are trained on with the padded steps left out of the loss, as LeRobot trains
ACT (``delta_timestamps`` over ``chunk_size`` steps). The loop is
:func:`transformer_math.robotics.training.train_policy` (AdamW, warm-up then cosine).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import torch

from transformer_math.robotics.datasets.lerobot_format import (
    LeRobotFolder,
    LeRobotFolderError,
    open_lerobot_folder,
)
from transformer_math.robotics.policies.act import ACTConfig, ACTPolicy
from transformer_math.robotics.policies.base import ACTION_KEY, IMAGES_PREFIX, STATE_KEY
from transformer_math.robotics.training import build_seeded, train_policy

STD_FLOOR = 1e-3


def _vector_size(folder: LeRobotFolder, key: str) -> int:
    spec = folder.features.get(key)
    if spec is None:
        raise LeRobotFolderError(f"{folder.root}: no feature {key!r} to train on; features: "
                                 f"{sorted(folder.features)}")
    if len(spec["shape"]) != 1:
        raise LeRobotFolderError(f"{folder.root}: feature {key!r} must be a vector, got shape "
                                 f"{spec['shape']}")
    return int(spec["shape"][0])


def act_config_for(folder: LeRobotFolder, *, cameras: bool = False, **settings: Any
                   ) -> ACTConfig:
    """An ``ACTConfig`` with the folder's state and action sizes (and, with ``cameras``, its
    decodable cameras and their image size); ``settings`` set any other field."""
    fields: dict[str, Any] = {"state_dim": _vector_size(folder, STATE_KEY),
                              "action_dim": _vector_size(folder, ACTION_KEY)}
    if cameras:
        keys = folder.decodable_image_keys()
        if keys:
            shapes = {tuple(folder.features[k]["shape"]) for k in keys}
            if len(shapes) != 1:
                raise LeRobotFolderError(f"{folder.root}: cameras of different sizes {shapes}")
            h, w, c = shapes.pop()
            fields |= {"cameras": ",".join(k[len(IMAGES_PREFIX):] for k in keys),
                       "image_height": h, "image_width": w, "image_channels": c}
    return ACTConfig(**(fields | settings))


def set_normalization_from_stats(policy: ACTPolicy, folder: LeRobotFolder) -> None:
    """Copy ``meta/stats.json``'s mean and std of state and action into the policy."""
    for key, prefix in ((STATE_KEY, "state"), (ACTION_KEY, "action")):
        stats = folder.normalization_stats(key)
        mean = torch.as_tensor(np.asarray(stats["mean"]).reshape(-1), dtype=torch.float32)
        std = torch.as_tensor(np.asarray(stats["std"]).reshape(-1), dtype=torch.float32)
        getattr(policy, f"{prefix}_mean").copy_(mean)
        getattr(policy, f"{prefix}_std").copy_(std.clamp_min(STD_FLOOR))
    policy.check_normalization()


def train_act_on_folder(root: str | Path, *, steps: int, seed: int = 0, lr: float = 1e-3,
                        batch_size: int = 64, cameras: bool = False, **settings: Any
                        ) -> tuple[ACTPolicy, list[float]]:
    """Train an ACT policy on the LeRobot folder ``root``; returns (policy, losses).

    Weights from ``seed`` (``build_seeded``), batches from ``torch.Generator().manual_seed(
    seed)``; ``settings`` are ``ACTConfig`` fields (``chunk_size``, ``dim``, ...). Save the
    result with ``policy.save_pretrained(dir)``; ``tmath rollout ENV --policy dir`` runs it."""
    folder = open_lerobot_folder(root)
    config = act_config_for(folder, cameras=cameras, seed=seed, **settings)
    policy = build_seeded(lambda: ACTPolicy(config), seed)
    assert isinstance(policy, ACTPolicy)
    set_normalization_from_stats(policy, folder)
    camera_keys = [IMAGES_PREFIX + c for c in config.camera_names]
    sampler = folder.sampler(config.chunk_size, batch_size, cameras=camera_keys)
    losses = train_policy(policy, sampler, steps=steps, lr=lr,
                          generator=torch.Generator().manual_seed(seed))
    return policy, losses

