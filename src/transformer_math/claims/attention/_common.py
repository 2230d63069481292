"""Helpers shared by the attention claims (private to the topic).

Modules are built by ``nn.init.seeded`` from a ``ctx.generator(offset)`` (no draw from the global
RNG); attention weights are read at the module's ``hook_pattern`` (``nn.hooks.run_with_cache``),
never returned by the module.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor

from transformer_math.claims.registry import Context, Evidence
from transformer_math.diagnostics import torch_threads
from transformer_math.nn import MultiHeadAttention
from transformer_math.nn.hooks import run_with_cache
from transformer_math.nn.init import seeded

SEED_000 = "000 §8.3.1"
SEED_004 = "004 Self-Attention机制"


def single_threaded(check: Callable[..., Evidence]) -> Callable[..., Evidence]:
    """Run a check with one intra-op thread (restored afterwards).

    These checks are made of thousands of small tensor operations (Jacobians of 48 x 48 maps,
    a batched hull programme, 16 x 16 eigenproblems), where intra-op parallelism is pure
    overhead; on a busy 2-core machine two threads waiting for each other made a 0.2 s check
    take 5-20 s. One thread keeps the quick tier quick and its timing predictable.
    """

    @functools.wraps(check)
    def run(ctx: Context) -> Evidence:
        with torch_threads(1):
            return check(ctx)

    return run


def sig(x: float, digits: int = 4) -> float:
    """``x`` rounded to ``digits`` significant digits (for the table; details keep full values)."""
    if x == 0 or not math.isfinite(x):
        return x
    return round(x, digits - 1 - math.floor(math.log10(abs(x))))


def build_mha(
    embed_dim: int,
    num_heads: int,
    generator: torch.Generator,
    *,
    dtype: torch.dtype = torch.float64,
    **kwargs: Any,
) -> MultiHeadAttention:
    """A ``MultiHeadAttention`` whose parameters come from ``generator`` only (``nn.init.seeded``:
    PyTorch's default bound 1/sqrt(fan_in), no draw from the global RNG)."""
    module = seeded(lambda: MultiHeadAttention(embed_dim, num_heads, **kwargs), generator)
    return module.to(dtype).eval()


def randn(*shape: int, generator: torch.Generator, dtype: torch.dtype = torch.float64) -> Tensor:
    return torch.randn(*shape, generator=generator, dtype=dtype)


def merge_heads(x: Tensor) -> Tensor:
    """(B, H, T, d) -> (B, T, H d), the concatenation of the heads."""
    b, h, t, d = x.shape
    return x.transpose(1, 2).reshape(b, t, h * d)


def forward_with_pattern(
    module: MultiHeadAttention, *args: Any, **kwargs: Any
) -> tuple[Tensor, Tensor]:
    """(output (B, T, d), attention weights (B, H, T, S)) of one forward of ``module``; the
    weights are the tensor seen at its ``hook_pattern``."""
    output, cache = run_with_cache(module, *args, names=["hook_pattern"], **kwargs)
    return output, cache["hook_pattern"]
