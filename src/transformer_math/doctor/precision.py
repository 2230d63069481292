"""The doctor on a bfloat16 or float16 model (issue 36 item 4): which probes are meaningful in
low precision, which need a float32 upcast, and in which dtype a checkpoint is loaded.

Measured (2026-12-03, random Llama d 64 and GPT-2 d 64 from transformers, every check, the
project engine): in float32 nothing is flagged; loaded in bfloat16 the doctor flags exactly two
checks, ``cache.consistency`` (cached decode vs the full forward: max relative logit difference
2.6e-2 Llama, 2.0e-2 GPT-2, against a float32 tolerance) and ``rope.relativity`` (2.2e-2), and
in float16 ``cache.consistency`` (6.5e-3, 2.8e-3). Both compare two computations of the same
numbers that round differently (a cache concatenates keys computed in another pass; shifted
positions give other angles), so in 8 significand bits their difference is rounding, not a
bug. Every other check either computes its statistic in float32 from hooked tensors or
compares against thresholds far above the rounding.

So :data:`NEEDS_FLOAT32` run on a float32 copy of the probed model (the sampled one under a
budget) when that copy fits in :data:`UPCAST_LIMIT_BYTES`; their findings say so
(``details["upcast"]``); when it does not fit they are skipped with the reason.

Loading (:func:`load_dtype`): a checkpoint is loaded in float32 (the checks' tolerances are set
for it) unless its float32 parameters would take more than :data:`FLOAT32_SHARE` of the
memory available; then in its stored dtype (``from_pretrained(dtype="auto")``).
"""

from __future__ import annotations

import copy
import math
from collections.abc import Mapping

import torch
from torch import nn

from transformer_math.doctor.findings import Finding

NEEDS_FLOAT32 = frozenset({"cache.consistency", "rope.relativity"})
UPCAST_LIMIT_BYTES = 2 << 30
FLOAT32_SHARE = 0.5
LOW_PRECISION = (torch.bfloat16, torch.float16)


def parameter_dtype(model: nn.Module) -> torch.dtype:
    """The dtype of the model's first parameter."""
    return next(model.parameters()).dtype


def float32_bytes(model: nn.Module) -> int:
    """Bytes of a float32 copy of every distinct parameter and buffer of ``model``."""
    seen: set[int] = set()
    total = 0
    for t in [*model.parameters(), *model.buffers()]:
        if id(t) not in seen:
            seen.add(id(t))
            total += t.numel() * 4
    return total


def upcast(model: nn.Module) -> nn.Module:
    """A float32 deep copy of ``model`` (the original keeps its dtype and memory)."""
    return copy.deepcopy(model).float()


def available_memory() -> int | None:
    """``MemAvailable`` of ``/proc/meminfo`` in bytes (None where there is none)."""
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def load_dtype(shapes: Mapping[str, tuple[int, ...]], memory: int | None = None) -> str:
    """``"float32"`` when a float32 copy of the ``shapes`` tensors takes at most
    :data:`FLOAT32_SHARE` of ``memory`` (default :func:`available_memory`), else ``"auto"``
    (the stored dtype)."""
    memory = available_memory() if memory is None else memory
    need = 4 * sum(math.prod(s) for s in shapes.values())
    if memory is None or need <= FLOAT32_SHARE * memory:
        return "float32"
    return "auto"


def mark_upcast(finding: Finding, dtype: torch.dtype) -> Finding:
    """``finding`` with the statement that it was measured on a float32 copy."""
    import dataclasses

    name = str(dtype).removeprefix("torch.")
    return dataclasses.replace(
        finding, summary=f"{finding.summary} [on a float32 copy of the {name} model]",
        details={**dict(finding.details), "upcast": f"{name} -> float32"})


def too_big_reason(check: str, need: int, dtype: torch.dtype) -> str:
    name = str(dtype).removeprefix("torch.")
    return (f"needs float32 ({check} compares two computations that round differently in "
            f"{name}), and a float32 copy of the probed model would take {need / 1e9:.3g} GB "
            f"> {UPCAST_LIMIT_BYTES / 1e9:.3g} GB")

