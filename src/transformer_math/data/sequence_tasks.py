"""Synthetic sequence-to-sequence tasks for the expressivity experiments (000 §8.3.4).

Every task returns ``(inputs, targets)``, both (batch, seq_len) long tensors: one target class
per position. Tasks are registered by name in ``SEQUENCE_TASKS`` (same signature each).

* ``reverse``: y_i = x_{n-1-i}. Not permutation equivariant.
* ``copy_first``: y_i = x_0 at every position. Not permutation equivariant.
* ``context_lookup``: y_i = T[x_i, k(x)] with k(x) = #{j : x_j >= V/2} the number of "high" tokens
  in the whole sequence and T a fixed random table (V, n+1) -> {0..C-1}. It needs *context*
  (k is a property of the whole sequence) and a *nonlinearity* (an arbitrary table in (x_i, k)):
  the division of labour of Yun et al. (ICLR 2020): attention computes k, the FFN looks T up.
  It is permutation equivariant, so no position code is needed.
* ``context_free``: y_i = T[x_i, 0]; the same table with the context removed (a control).

Bayes ceilings (exact given the multiset of tokens; only the multiset is sampled):
* an equivariant model (no positions) gives equal tokens equal outputs, so its output at i is a
  function f(x_i, M) of the own token and the multiset M. For ``copy_first`` the best such f
  reaches E[max_t c_t] / n; for ``reverse`` (n even) E[sum_a c_a max_t (c_t - [t=a])] / (n(n-1)),
  c_t = count of token t in M (derivation in :func:`equivariant_accuracy_ceiling`).
* a token-wise model (FFN only) sees x_i alone; for ``context_lookup`` its best accuracy is
  mean_x max_c sum_k P(k | x) [T[x, k] = c] with k - [x high] ~ Binomial(n-1, 1/2).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import Tensor


@dataclass(frozen=True)
class TaskSpec:
    """Sizes of a task: vocabulary V, sequence length n, number of target classes C, table seed."""

    vocab_size: int = 8
    seq_len: int = 8
    num_classes: int = 4
    table_seed: int = 1234

    def __post_init__(self) -> None:
        if self.vocab_size < 2 or self.vocab_size % 2:
            raise ValueError(f"vocab_size must be an even integer >= 2, got {self.vocab_size}")
        if self.seq_len < 2:
            raise ValueError(f"seq_len must be >= 2, got {self.seq_len}")
        if self.num_classes < 2:
            raise ValueError(f"num_classes must be >= 2, got {self.num_classes}")


def lookup_table(spec: TaskSpec) -> Tensor:
    """The fixed random table T of ``context_lookup``: (V, n+1) long in [0, C)."""
    g = torch.Generator().manual_seed(spec.table_seed)
    return torch.randint(0, spec.num_classes, (spec.vocab_size, spec.seq_len + 1), generator=g)


def _tokens(spec: TaskSpec, batch: int, generator: torch.Generator) -> Tensor:
    if batch <= 0:
        raise ValueError(f"batch must be positive, got {batch}")
    return torch.randint(0, spec.vocab_size, (batch, spec.seq_len), generator=generator)


def reverse_task(spec: TaskSpec, batch: int, generator: torch.Generator) -> tuple[Tensor, Tensor]:
    x = _tokens(spec, batch, generator)
    return x, x.flip(-1)


def copy_first_task(
    spec: TaskSpec, batch: int, generator: torch.Generator
) -> tuple[Tensor, Tensor]:
    x = _tokens(spec, batch, generator)
    return x, x[:, :1].expand_as(x).clone()


def high_count(x: Tensor, vocab_size: int) -> Tensor:
    """k(x) = number of tokens >= V/2 in each row, shape (batch,)."""
    return (x >= vocab_size // 2).sum(dim=-1)


def context_lookup_task(
    spec: TaskSpec, batch: int, generator: torch.Generator
) -> tuple[Tensor, Tensor]:
    x = _tokens(spec, batch, generator)
    table = lookup_table(spec)
    k = high_count(x, spec.vocab_size)[:, None].expand_as(x)
    return x, table[x, k]


def context_free_task(
    spec: TaskSpec, batch: int, generator: torch.Generator
) -> tuple[Tensor, Tensor]:
    x = _tokens(spec, batch, generator)
    return x, lookup_table(spec)[x, torch.zeros_like(x)]


TaskFn = Callable[[TaskSpec, int, torch.Generator], tuple[Tensor, Tensor]]
SEQUENCE_TASKS: dict[str, TaskFn] = {
    "reverse": reverse_task,
    "copy_first": copy_first_task,
    "context_lookup": context_lookup_task,
    "context_free": context_free_task,
}


def make_task(name: str, spec: TaskSpec, batch: int, generator: torch.Generator):
    """Sample ``batch`` examples of the task ``name``: ``(inputs, targets)``."""
    if name not in SEQUENCE_TASKS:
        raise ValueError(f"task must be one of {sorted(SEQUENCE_TASKS)}, got {name!r}")
    return SEQUENCE_TASKS[name](spec, batch, generator)


def equivariant_accuracy_ceiling(
    task: str, spec: TaskSpec, num_sequences: int, generator: torch.Generator
) -> float:
    """Best per-position accuracy of ANY model whose output at i depends only on (x_i, multiset).

    Given the multiset M (counts c_t), the sequence is a uniformly random arrangement of M.
    copy_first: accuracy = (1/n) sum_p [f(x_p, M) = x_0]; x_0 ~ c/n independently of which token
    value a is asked about, so E[. | M] = (1/n) sum_a c_a c_{f(a)} / n <= max_t c_t / n.
    reverse (n even, no fixed point): P(x_p = a, x_{n-1-p} = t | M) = c_a (c_t - [t=a]) / (n(n-1)),
    so E[. | M] = sum_a c_a max_t (c_t - [t=a]) / (n(n-1)) for the best f. The expectation over
    M is estimated from ``num_sequences`` sampled sequences (exact given each M).
    """
    if task not in ("reverse", "copy_first"):
        raise ValueError(f"task must be 'reverse' or 'copy_first', got {task!r}")
    if task == "reverse" and spec.seq_len % 2:
        raise ValueError(f"the reverse ceiling needs an even seq_len, got {spec.seq_len}")
    x = _tokens(spec, num_sequences, generator)
    n = spec.seq_len
    counts = torch.nn.functional.one_hot(x, spec.vocab_size).sum(dim=1).double()  # (B, V)
    if task == "copy_first":
        return float((counts.max(dim=-1).values / n).mean())
    eye = torch.eye(spec.vocab_size, dtype=torch.float64)
    reduced = counts[:, None, :] - eye[None]  # (B, a, t): c_t - [t = a]
    best = reduced.max(dim=-1).values  # (B, a)
    return float(((counts * best).sum(dim=-1) / (n * (n - 1))).mean())


def tokenwise_accuracy_ceiling(task: str, spec: TaskSpec) -> float:
    """Exact best accuracy of a model that sees only its own token (an FFN-only model).

    For ``context_lookup``: k = [x >= V/2] + Binomial(n-1, 1/2), so the best guess for token x is
    argmax_c sum_k P(k | x) [T[x, k] = c]; ``context_free`` is fully token-wise (ceiling 1).
    """
    if task == "context_free":
        return 1.0
    if task != "context_lookup":
        raise ValueError(f"task must be 'context_lookup' or 'context_free', got {task!r}")
    table = lookup_table(spec)
    n = spec.seq_len
    binom = [math.comb(n - 1, j) / 2 ** (n - 1) for j in range(n)]
    total = 0.0
    for x in range(spec.vocab_size):
        offset = int(x >= spec.vocab_size // 2)
        mass = [0.0] * spec.num_classes
        for j, pj in enumerate(binom):
            mass[int(table[x, j + offset])] += pj
        total += max(mass)
    return total / spec.vocab_size
