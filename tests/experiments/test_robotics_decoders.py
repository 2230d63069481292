"""The decoder study (issue 20): each decoder is trained by its own memoised call, so a bug in
one decoder's sampler retrains nothing and a bug in one decoder's training retrains only it;
results are deterministic given the seed; configs are checked."""

from __future__ import annotations

import dataclasses

import pytest

from transformer_math import bugs
from transformer_math.experiments import memo, robotics_decoders
from transformer_math.experiments.robotics_decoders import DecoderStudyConfig

SMALL = DecoderStudyConfig(num_demos=10, num_test=8, train_steps=15, track_demos=4,
                           track_test=4, track_horizon=24, track_steps=15, dim=16,
                           step_sweep=(1, 2), timing_repeats=1)


def _trainings(monkeypatch) -> list[tuple[str, str]]:
    calls: list[tuple[str, str]] = []
    real = robotics_decoders.train_decoder

    def counting(key, progress=None):
        calls.append((key[1], key[2]))
        return real(key, progress)

    counting.__module__, counting.__qualname__ = real.__module__, real.__qualname__
    monkeypatch.setattr(robotics_decoders, "train_decoder", counting)
    return calls


def test_sampler_bugs_retrain_nothing_and_training_bugs_retrain_one_decoder(monkeypatch):
    memo.clear()
    calls = _trainings(monkeypatch)
    first = robotics_decoders.run(SMALL)
    assert sorted(calls) == sorted((t, d) for t in ("bimodal", "point_mass")
                                   for d in robotics_decoders.DECODERS)
    calls.clear()
    with bugs.plant("robotics.ddim-timesteps-truncated"):
        robotics_decoders.run(SMALL)
    assert calls == []
    with bugs.plant("robotics.flow-target-reversed"):
        robotics_decoders.run(SMALL)
    assert sorted(calls) == [("bimodal", "flow_matching"), ("point_mass", "flow_matching")]
    calls.clear()
    again = robotics_decoders.run(SMALL)  # a study of a subset reuses the same trainings
    sub = robotics_decoders.run(dataclasses.replace(SMALL, decoders=("diffusion",),
                                                    tasks=("bimodal",)))
    assert calls == []
    assert again.bimodal["diffusion"] == first.bimodal["diffusion"] == sub.bimodal["diffusion"]
    assert again.tracking == first.tracking
    memo.clear()


def test_flops_per_chunk_are_linear_in_the_steps():
    memo.clear()
    res = robotics_decoders.run(dataclasses.replace(SMALL, decoders=("flow_matching",),
                                                    tasks=("bimodal",)))
    flops = res.flops_per_chunk["flow_matching"]
    assert flops[2] == 2 * flops[1] and flops[0] == 10 * flops[1]  # config K = 10
    memo.clear()


def test_configs_are_checked():
    for kw in ({"decoders": ()}, {"decoders": ("gan",)}, {"tasks": ("maze",)},
               {"step_sweep": (0,)}, {"step_sweep": (101,)}):
        with pytest.raises(ValueError):
            DecoderStudyConfig(**kw)
