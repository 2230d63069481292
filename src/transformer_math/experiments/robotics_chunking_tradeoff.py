"""Chunking vs reactivity under pushes (000 §8.3.8 "chunking 的两难", "与 MPC 的同构").

The sweep of ``robotics_compounding`` with random velocity pushes in the demonstrations and at
test time, every chunk size executed four ways: open loop (T_a = k), replanning every step
(MPC control horizon T_a = 1), ACT's temporal ensembling (oldest first, exp(-0.01 i)) and
newest-first ensembling (exp(-0.1 age)). Also records the executed-action spectrum.
"""

from __future__ import annotations

from dataclasses import dataclass

from transformer_math.experiments.robotics_compounding import (
    ChunkSweepConfig,
    ChunkSweepResult,
    Progress,
    run_chunk_sweep,
)

ALL_MODES = ("open_loop", "replan", "act_ensemble", "newest_ensemble")


@dataclass(frozen=True)
class TradeoffConfig(ChunkSweepConfig):
    push_prob: float = 0.01
    push_speed: float = 1.0
    modes: tuple[str, ...] = ALL_MODES
    chunk_sizes: tuple[int, ...] = (1, 4, 16, 32)

    @classmethod
    def tiny(cls, seed: int = 0) -> TradeoffConfig:
        # Issue 12: 60 steps on 12 demonstrations with pushes every 20 steps (push_prob 0.05)
        # left single-step BC at success 0.125 on 16 paths, so no success could fall with k.
        # 2500 steps on 100 demonstrations, horizon 200, the default push rate 0.01, 400 test
        # paths and k in (1, 16): success falls by 0.30-0.38 from k = 1 to k = 16 open loop
        # (seeds 0-4). With 1500 steps, 50 demonstrations and 200 paths the drop varied
        # 0.23-0.40 (spread 0.07 against a slack of 0.13), mostly through the k = 1 policy.
        return cls(seed=seed, num_demos=100, num_test_paths=400, horizon=200,
                   chunk_sizes=(1, 16), train_steps=2500, batch_size=128, horizons=(100, 200),
                   push_prob=0.01)

    @classmethod
    def default(cls, seed: int = 0) -> TradeoffConfig:
        return cls(seed=seed)

    @classmethod
    def large(cls, seed: int = 0) -> TradeoffConfig:
        return cls(seed=seed, chunk_sizes=(1, 2, 4, 8, 16, 32, 64), num_test_paths=500,
                   train_steps=4000, hidden=256)


def run(config: TradeoffConfig, progress: Progress = None) -> ChunkSweepResult:
    return run_chunk_sweep(config, progress)
