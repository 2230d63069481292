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

A second reason, speed: :data:`FLOAT32_BACKWARD` differentiate through the model (vector-
Jacobian products), and on a CPU without bfloat16 instructions torch's bfloat16 matmul backward
``grad @ W`` runs a generic kernel (measured on this project's 2-core AVX2 machine, 2026-12-04,
(64 x 4096) @ (4096 x 1024): 1.86 s in bfloat16 against 0.066 s through float32, 28x). On the
8B bfloat16 run its first backward had not finished after 12 minutes of a 10-minute budget. On
a CPU model they run on the float32 copy too (their statistics are gradient norms in a band of
10x per layer, far above bfloat16 rounding); on CUDA they stay in the model's dtype.

So :data:`NEEDS_FLOAT32` (and on CPU :data:`FLOAT32_BACKWARD`) run on a float32 copy of the
probed model (the sampled one under a budget) when that copy fits in
:data:`UPCAST_LIMIT_BYTES`; their findings say so
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
FLOAT32_BACKWARD = frozenset({"depth.gradients", "depth.residual-path"})
UPCAST_LIMIT_BYTES = 2 << 30
"""A float32 copy up to this size is always made; a larger one only while the resident set
stays within the doctor's memory goal, peak RSS <= the model's size + 2 GB (issue 36 item 2;
:func:`upcast_fits`)."""
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
    """A float32 deep copy of ``model`` (the original keeps its dtype and memory). Each floating
    parameter and buffer is converted straight into the copy (``deepcopy``'s memo), so no
    low-precision copy exists on the way; ties between weights are kept."""
    memo: dict[int, object] = {}
    for t in [*model.parameters(), *model.buffers()]:
        if id(t) in memo or not t.is_floating_point():
            continue
        data = t.detach().float()
        memo[id(t)] = (nn.Parameter(data, requires_grad=t.requires_grad)
                       if isinstance(t, nn.Parameter) else data)
    return copy.deepcopy(model, memo)


def stored_bytes(shapes: Mapping[str, tuple[int, ...]], itemsize: int) -> int:
    """Bytes of the ``shapes`` tensors at ``itemsize`` bytes per element."""
    return itemsize * sum(math.prod(s) for s in shapes.values())


def upcast_fits(need: int, model_bytes: int | None) -> bool:
    """Whether a float32 copy of ``need`` bytes may be made: always up to
    :data:`UPCAST_LIMIT_BYTES`; beyond, when the resident set after it stays within the
    memory goal, ``model_bytes`` (the whole model in its dtype) + :data:`UPCAST_LIMIT_BYTES`
    (the 8B bfloat16 run: 6.8 GB copy of the sampled model beside ~4 GB resident, 16 GB
    model)."""
    if need <= UPCAST_LIMIT_BYTES:
        return True
    rss = resident_bytes()
    return (rss is not None and model_bytes is not None
            and rss + need <= model_bytes + UPCAST_LIMIT_BYTES)


def _proc_kib(path: str, key: str) -> int | None:
    """The ``key:`` line of a ``/proc`` file given in kB, in bytes (None where there is none)."""
    try:
        with open(path) as fh:
            for line in fh:
                if line.startswith(key + ":"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def available_memory() -> int | None:
    """``MemAvailable`` of ``/proc/meminfo`` in bytes (None where there is none)."""
    return _proc_kib("/proc/meminfo", "MemAvailable")


def resident_bytes() -> int | None:
    """This process's resident set size (``VmRSS`` of ``/proc/self/status``) in bytes."""
    return _proc_kib("/proc/self/status", "VmRSS")


def load_dtype(shapes: Mapping[str, tuple[int, ...]], memory: int | None = None) -> str:
    """``"float32"`` when a float32 copy of the ``shapes`` tensors takes at most
    :data:`FLOAT32_SHARE` of ``memory`` (default :func:`available_memory`), else ``"auto"``
    (the stored dtype)."""
    memory = available_memory() if memory is None else memory
    need = stored_bytes(shapes, 4)
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


def needs_float32(check: str, device: torch.device) -> bool:
    """Whether ``check`` runs on a float32 copy of a low-precision model on ``device``."""
    return check in NEEDS_FLOAT32 or (check in FLOAT32_BACKWARD and device.type == "cpu")


def too_big_reason(check: str, need: int, dtype: torch.dtype) -> str:
    name = str(dtype).removeprefix("torch.")
    why = (f"{check} differentiates through the model, and {name} matmul backward has no fast "
           f"CPU kernel here" if check in FLOAT32_BACKWARD and check not in NEEDS_FLOAT32 else
           f"{check} compares two computations that round differently in {name}")
    return (f"needs float32 ({why}), and a float32 copy of the probed model would take "
            f"{need / 1e9:.3g} GB: more than {UPCAST_LIMIT_BYTES / 1e9:.3g} GB, and the "
            f"resident memory would pass the model's size + {UPCAST_LIMIT_BYTES / 1e9:.3g} GB")

