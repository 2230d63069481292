"""Tiny configurations of every robotics experiment, the theory calculator, and the claims."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from transformer_math.experiments import (
    robotics_chunking_tradeoff,
    robotics_compounding,
    robotics_dt,
    robotics_multimodal,
)
from transformer_math.theory.compounding_error import (
    bc_regret_bound,
    dagger_regret_bound,
    seed_chunked_bound,
    substituted_bound,
    worst_case_expected_cost,
)

torch.set_num_threads(1)


def test_worked_example_numbers():
    assert bc_regret_bound(400, 0.01) == pytest.approx(1600.0)
    assert seed_chunked_bound(400, 0.01, 90) == pytest.approx(17.78, abs=0.01)
    assert substituted_bound(400, 0.01, 90) == pytest.approx(0.1975, abs=1e-4)
    assert dagger_regret_bound(400, 0.01) == pytest.approx(4.0)
    # exact worst case: sum_t (1 - (1 - eps)^t) for k = 1
    exact = sum(1 - 0.99**t for t in range(1, 401))
    assert worst_case_expected_cost(400, 0.01) == pytest.approx(exact)
    assert worst_case_expected_cost(400, 0.01, 90) <= seed_chunked_bound(400, 0.01, 90)
    assert worst_case_expected_cost(400, 0.01, 90, per_step_error=True) > 300
    with pytest.raises(ValueError, match="eps"):
        bc_regret_bound(10, 1.5)
    with pytest.raises(ValueError, match="chunk"):
        seed_chunked_bound(10, 0.1, 0)


def test_high_frequency_fraction():
    t = np.arange(200) * 0.05
    slow = np.sin(2 * np.pi * 0.5 * t)[None, :, None]
    fast = np.sin(2 * np.pi * 5.0 * t)[None, :, None]
    hf = robotics_compounding.high_frequency_fraction
    assert hf(slow, 0.05, 2.0) < 0.01 and hf(fast, 0.05, 2.0) > 0.99


@pytest.mark.slow
def test_compounding_tiny_is_deterministic_and_complete():
    cfg = robotics_compounding.CompoundingConfig.tiny()
    a = robotics_compounding.run(cfg)
    trained = robotics_compounding.train_chunk_policies(cfg)
    b = robotics_compounding.evaluate_chunk_policies(cfg, trained)
    assert a.get(8, "open_loop").error_curve == b.get(8, "open_loop").error_curve
    assert {(r.chunk_size, r.mode) for r in a.runs} == {(1, "open_loop"), (8, "open_loop"),
                                                        (8, "replan")}
    assert a.expert.mean_error > 0 and set(trained.policies) == {1, 8}


@pytest.mark.slow
def test_tradeoff_tiny_runs_every_mode():
    res = robotics_chunking_tradeoff.run(robotics_chunking_tradeoff.TradeoffConfig.tiny())
    modes = {r.mode for r in res.runs if r.chunk_size == 8}
    assert modes == set(robotics_chunking_tradeoff.ALL_MODES)
    assert all(0.0 <= r.high_freq_fraction <= 1.0 for r in res.runs)


@pytest.mark.slow
def test_multimodal_tiny():
    res = robotics_multimodal.run(robotics_multimodal.MultimodalConfig.tiny())
    assert set(res.outcomes) == {"mse", "act_sampled", "act_zero"}
    for o in res.outcomes.values():
        assert 0.0 <= o.collision_rate <= 1.0 and len(o.paths) == 2


@pytest.mark.slow
def test_dt_tiny_studies():
    st = robotics_dt.run_stitching(robotics_dt.StitchingConfig.tiny())
    assert st.q_learning.reached == "C" and st.q_learning.ret == 4.0
    assert st.data_returns_at_a == [2.0, 3.0]
    reach = robotics_dt.run_reachability(robotics_dt.ReachabilityConfig.tiny())
    assert len(reach.achieved) == 4 and all(math.isfinite(x) for x in reach.achieved)
    assert reach.data_max < 0.4 * 40


def test_configs_reject_bad_values():
    with pytest.raises(ValueError, match="chunk"):
        robotics_compounding.CompoundingConfig(chunk_sizes=(1, 500))
    with pytest.raises(ValueError, match="noise_tau"):
        robotics_compounding.CompoundingConfig(noise_tau=0.0)
