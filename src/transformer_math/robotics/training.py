"""A small, deterministic training loop shared by the robotics experiments.

AdamW (Loshchilov & Hutter 2019), linear warm-up over the first 5 % of steps then cosine decay to
10 % of the peak learning rate, gradient clipping at norm 1. Mini-batches come from
``sample_batch(generator)`` and dropout masks from a forked global RNG seeded by the same
generator, so all randomness flows through one explicit torch.Generator.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch import Tensor, nn

from transformer_math.nn.init import private_rng, seeded

Batch = dict[str, Tensor]


def train_policy(
    policy: nn.Module,
    sample_batch: Callable[[torch.Generator], Batch],
    *,
    steps: int,
    lr: float,
    generator: torch.Generator,
    weight_decay: float = 1e-4,
    grad_clip: float = 1.0,
    progress: Callable[[float], None] | None = None,
) -> list[float]:
    """Train ``policy`` (its ``forward(batch)`` returns ``(loss, info)``); returns the losses."""
    if steps < 1 or lr <= 0:
        raise ValueError(f"need steps >= 1 and lr > 0, got {steps}, {lr}")
    opt = torch.optim.AdamW(policy.parameters(), lr=lr, weight_decay=weight_decay)
    warmup = max(1, steps // 20)

    def schedule(step: int) -> float:
        if step < warmup:
            return (step + 1) / warmup
        frac = (step - warmup) / max(1, steps - warmup)
        return 0.1 + 0.9 * 0.5 * (1.0 + math.cos(math.pi * frac))

    sched = torch.optim.lr_scheduler.LambdaLR(opt, schedule)
    policy.train()
    losses: list[float] = []
    # Dropout draws from torch's global RNG: fork it and seed it from ``generator`` so that
    # training is deterministic given the generator and the caller's global state is untouched.
    dropout_seed = generator.initial_seed() + 1  # does not advance the batch generator
    with private_rng(dropout_seed):
        for step in range(steps):
            loss, _ = policy(sample_batch(generator))
            opt.zero_grad(set_to_none=True)
            loss.backward()
            nn.utils.clip_grad_norm_(policy.parameters(), grad_clip)
            opt.step()
            sched.step()
            losses.append(float(loss.detach()))
            if progress is not None and (step % 50 == 0 or step == steps - 1):
                progress((step + 1) / steps)
    policy.eval()
    return losses


def chunk_sampler(observations: Tensor, actions: Tensor, chunk_size: int,
                  batch_size: int) -> Callable[[torch.Generator], Batch]:
    """Mini-batches {observation.state (B, S), action (B, k, A)} from episodes (N, T, .),
    using only start steps t <= T - k so that every chunk lies inside its episode."""
    n, t = observations.shape[:2]
    if chunk_size > t:
        raise ValueError(f"chunk_size must be <= episode length {t}, got {chunk_size}")
    starts = t - chunk_size + 1
    offsets = torch.arange(chunk_size)

    def sample(g: torch.Generator) -> Batch:
        ep = torch.randint(0, n, (batch_size,), generator=g)
        st = torch.randint(0, starts, (batch_size,), generator=g)
        return {
            "observation.state": observations[ep, st],
            "action": actions[ep[:, None], st[:, None] + offsets],  # (B, k, A)
        }

    return sample


def build_seeded(factory: Callable[[], nn.Module], seed: int) -> nn.Module:
    """Construct a module with every parameter drawn from a generator seeded with ``seed``
    (``nn.init.seeded``: the global RNG is neither read nor advanced)."""
    return seeded(factory, seed)
