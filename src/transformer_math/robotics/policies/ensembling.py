"""Executing action chunks: open loop, receding horizon, or temporal ensembling.

A chunk policy predicts k actions a_{t|t}, ..., a_{t+k-1|t} from the observation at t.
- ``ChunkQueue(n_action_steps)``: query, execute the first ``n_action_steps`` actions, re-query
  (MPC control horizon T_a; T_a = k is open loop, T_a = 1 replans every step). 000 §8.3.8 "与 MPC
  的同构".
- ``TemporalEnsembler``: query every step and execute a weighted mean of all predictions for the
  current step (ACT, Zhao et al. 2023). With the n predictions for step t ordered OLDEST first,
  i = 0..n-1, ACT's weights are w_i = exp(-m i) / sum_j exp(-m j), m = 0.01 (older predictions
  weigh more; FACTS.md). The "newest_first" variant uses w = exp(-m * age) with age = 0 for the
  newest prediction, so the executed action follows fresh observations. The seed writes the
  ensemble as a_bar_t = sum_j w_j a_{t|t-j} / Z with w_j = exp(-beta j) (j = age): that is the
  newest-first variant; ACT's released code weighs the oldest most.
Ensembling is a causal FIR low-pass filter over the stream of chunks (seed: "低通滤波").

Batches: an executor runs B episodes in lockstep, observation (B, ...) -> actions (B, A), each
batch element with its own queue / ensemble. B is fixed by the first call after ``reset()``;
another B raises ``RuntimeError`` (call ``reset()``), and the chunk function must return
(B, k, A) chunks (``ValueError`` otherwise).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch import Tensor

from transformer_math.bugs import declare_bug, planted

ENSEMBLE_ORDERS = ("oldest_first", "newest_first")

ENSEMBLE_WEIGHTS_REVERSED = declare_bug(
    "robotics.ensemble-weights-reversed",
    "ACT temporal ensembling weighs the NEWEST prediction most (w = exp(-m * age)) instead of "
    "the oldest (w_i = exp(-m i), i = 0 the oldest)",
    module=__name__,
    test="tests/robotics/test_mechanics_checks.py::"
    "test_act_ensembler_is_the_oldest_first_weighted_mean",
    seen_in="the order of ACT's weights is easy to flip: the seed (000 line 1269) and several "
    "re-implementations index the predictions by age, Zhao et al.'s code by arrival")
CHUNK_INDEX_FROZEN = declare_bug(
    "robotics.chunk-index-frozen",
    "the receding-horizon queue never advances inside a chunk: it executes the chunk's first "
    "action a_{s|s} for all T_a steps",
    module=__name__,
    test="tests/robotics/test_mechanics_checks.py::"
    "test_receding_horizon_executes_the_chunk_and_requeries_every_t_a_steps",
    seen_in="an action-queue read at a fixed index (queue[0] without popping), a classic slip "
    "of hand-written chunk executors")
CHUNK_REQUERY_EVERY_STEP = declare_bug(
    "robotics.chunk-requery-every-step",
    "the receding-horizon queue re-queries the policy at every step and executes only the "
    "first action, whatever n_action_steps (open-loop chunks silently become replanning)",
    module=__name__,
    test="tests/robotics/test_mechanics_checks.py::"
    "test_receding_horizon_executes_the_chunk_and_requeries_every_t_a_steps",
    seen_in="a queue that is refilled when empty but cleared by reset() every step; LeRobot "
    "reports n_action_steps mismatches between training and deployment")


def temporal_ensemble_weights(num_predictions: int, decay: float,
                              order: str = "oldest_first") -> Tensor:
    """Normalised weights of ``num_predictions`` predictions listed OLDEST FIRST.

    ``oldest_first`` (ACT): w_i = exp(-decay * i), i = 0 the oldest.
    ``newest_first``: w_i = exp(-decay * (n - 1 - i)), the newest (i = n - 1) has age 0.
    """
    if num_predictions < 1:
        raise ValueError(f"num_predictions must be >= 1, got {num_predictions}")
    if not math.isfinite(decay) or decay < 0:
        raise ValueError(f"decay must be finite and >= 0, got {decay}")
    if order not in ENSEMBLE_ORDERS:
        raise ValueError(f"order must be one of {ENSEMBLE_ORDERS}, got {order!r}")
    i = torch.arange(num_predictions, dtype=torch.float64)
    oldest_first = order == "oldest_first"
    if oldest_first and planted(ENSEMBLE_WEIGHTS_REVERSED):  # planted bug (zoo)
        oldest_first = False
    exponent = i if oldest_first else (num_predictions - 1 - i)
    w = torch.exp(-decay * exponent)
    return (w / w.sum()).to(torch.float32)


ChunkFn = Callable[[Tensor], Tensor]  # observation (B, S) -> chunk (B, k, A)


class _BatchGuard:
    """The batch size of the running episodes (module docstring "Batches")."""

    def __init__(self) -> None:
        self.size: int | None = None

    def check(self, observation: Tensor) -> int:
        """The batch size of ``observation``, which must be the running one (if any); the
        caller commits it (``size = b``) once its step succeeded."""
        shape = getattr(observation, "shape", ())
        if len(shape) < 1:
            raise ValueError(f"observation must be batched (batch, ...), got shape {tuple(shape)}")
        b = int(shape[0])
        if self.size is not None and b != self.size:
            raise RuntimeError(f"the executor is running a batch of {self.size} episodes, got a "
                               f"batch of {b} observations: call reset() to start new episodes "
                               f"with another batch size")
        return b

    @staticmethod
    def chunk(chunk: Tensor, b: int) -> Tensor:
        if chunk.dim() != 3 or chunk.shape[0] != b:
            raise ValueError(f"chunk_fn must return a chunk of shape ({b}, k, action_dim), got "
                             f"{tuple(chunk.shape)}")
        return chunk


class ChunkQueue:
    """Receding-horizon execution: re-query after ``n_action_steps`` executed actions."""

    def __init__(self, n_action_steps: int) -> None:
        if n_action_steps < 1:
            raise ValueError(f"n_action_steps must be >= 1, got {n_action_steps}")
        self.n_action_steps = n_action_steps
        self.reset()

    def reset(self) -> None:
        self._queue: Tensor | None = None
        self._pos = 0
        self._batch = _BatchGuard()

    def __call__(self, chunk_fn: ChunkFn, observation: Tensor) -> Tensor:
        b = self._batch.check(observation)
        if planted(CHUNK_REQUERY_EVERY_STEP):  # planted bug: falsifier of chunking-tradeoff
            self._queue = None
        if self._queue is None or self._pos >= self._queue.shape[1]:
            chunk = _BatchGuard.chunk(chunk_fn(observation), b)  # (B, k, A)
            if chunk.shape[1] < self.n_action_steps:
                raise ValueError(
                    f"n_action_steps ({self.n_action_steps}) exceeds the chunk size "
                    f"({chunk.shape[1]})"
                )
            self._queue, self._pos = chunk[:, : self.n_action_steps], 0
        # planted bug (falsifier of robotics.compounding-error): the index never advances
        action = self._queue[:, 0 if planted(CHUNK_INDEX_FROZEN) else self._pos]
        self._pos += 1
        self._batch.size = b
        return action


class TemporalEnsembler:
    """Query every step; average all still-valid predictions for the current step."""

    def __init__(self, decay: float = 0.01, order: str = "oldest_first") -> None:
        temporal_ensemble_weights(1, decay, order)  # validates decay and order
        self.decay, self.order = decay, order
        self.reset()

    def reset(self) -> None:
        self._chunks: list[tuple[int, Tensor]] = []  # (issue step, chunk (B, k, A)), oldest first
        self._step = 0
        self._batch = _BatchGuard()

    def __call__(self, chunk_fn: ChunkFn, observation: Tensor) -> Tensor:
        b = self._batch.check(observation)
        self._chunks.append((self._step, _BatchGuard.chunk(chunk_fn(observation), b)))
        self._batch.size = b
        t = self._step
        self._chunks = [(s, c) for s, c in self._chunks if t - s < c.shape[1]]
        preds = torch.stack([c[:, t - s] for s, c in self._chunks], dim=0)  # (n, B, A)
        w = temporal_ensemble_weights(preds.shape[0], self.decay, self.order).to(preds)
        self._step += 1
        return torch.einsum("n,nba->ba", w, preds)


Executor = ChunkQueue | TemporalEnsembler


def make_executor(mode: str, chunk_size: int, *, decay: float | None = None) -> Executor:
    """``open_loop`` | ``replan`` | ``act_ensemble`` (oldest first, m = 0.01 by default) |
    ``newest_ensemble`` (newest first, decay 0.1 by default)."""
    if mode == "open_loop":
        return ChunkQueue(chunk_size)
    if mode == "replan":
        return ChunkQueue(1)
    if mode == "act_ensemble":
        return TemporalEnsembler(0.01 if decay is None else decay, "oldest_first")
    if mode == "newest_ensemble":
        return TemporalEnsembler(0.1 if decay is None else decay, "newest_first")
    raise ValueError(
        "mode must be one of 'open_loop', 'replan', 'act_ensemble', 'newest_ensemble', "
        f"got {mode!r}"
    )
