"""Temporal-ensemble weights and ordering on hand examples; chunk queues."""

from __future__ import annotations

import math

import pytest
import torch

from transformer_math.robotics.policies.ensembling import (
    ChunkQueue,
    TemporalEnsembler,
    make_executor,
    temporal_ensemble_weights,
)


def test_act_weights_oldest_first():
    w = temporal_ensemble_weights(3, math.log(2.0), "oldest_first")
    torch.testing.assert_close(w, torch.tensor([4.0, 2.0, 1.0]) / 7.0)
    w = temporal_ensemble_weights(3, math.log(2.0), "newest_first")
    torch.testing.assert_close(w, torch.tensor([1.0, 2.0, 4.0]) / 7.0)
    w = temporal_ensemble_weights(5, 0.01)
    assert w[0] > w[-1] and abs(float(w.sum()) - 1.0) < 1e-6


def test_weights_reject_bad_arguments():
    with pytest.raises(ValueError, match="num_predictions"):
        temporal_ensemble_weights(0, 0.1)
    with pytest.raises(ValueError, match="order"):
        temporal_ensemble_weights(2, 0.1, "middle")
    with pytest.raises(ValueError, match="decay"):
        temporal_ensemble_weights(2, -1.0)


def _chunks():
    # chunk issued at step s predicts s-th block: values (10^s) * (1, 2, 3) for steps s, s+1, s+2
    return iter([torch.tensor([[[1.0], [2.0], [3.0]]]),
                 torch.tensor([[[10.0], [20.0], [30.0]]]),
                 torch.tensor([[[100.0], [200.0], [300.0]]])])


@pytest.mark.parametrize(("order", "expected"), [
    ("oldest_first", (4 * 3 + 2 * 20 + 1 * 100) / 7),
    ("newest_first", (1 * 3 + 2 * 20 + 4 * 100) / 7),
])
def test_temporal_ensembler_hand_example(order, expected):
    ens = TemporalEnsembler(math.log(2.0), order)
    chunks = _chunks()
    obs = torch.zeros(1, 1)
    a0 = ens(lambda o: next(chunks), obs)
    assert float(a0) == 1.0  # one prediction for step 0
    a1 = ens(lambda o: next(chunks), obs)
    w = temporal_ensemble_weights(2, math.log(2.0), order)
    assert float(a1) == pytest.approx(float(w[0] * 2 + w[1] * 10))
    a2 = ens(lambda o: next(chunks), obs)  # predictions 3 (oldest), 20, 100 (newest)
    assert float(a2) == pytest.approx(expected)


def test_chunk_queue_open_loop_and_replan():
    calls = []

    def chunk_fn(o):
        calls.append(1)
        return torch.arange(4.0).view(1, 4, 1) + 10 * len(calls)

    q = ChunkQueue(4)
    got = [float(q(chunk_fn, torch.zeros(1, 1))) for _ in range(6)]
    assert got == [10, 11, 12, 13, 20, 21] and len(calls) == 2
    calls.clear()
    r = make_executor("replan", 4)
    got = [float(r(chunk_fn, torch.zeros(1, 1))) for _ in range(3)]
    assert got == [10, 20, 30]
    with pytest.raises(ValueError, match="mode"):
        make_executor("sometimes", 4)


# ---------------------------------------------------------------------------- planted bugs
def test_bug_ensemble_weights_reversed():
    from transformer_math.bugs import plant

    right = temporal_ensemble_weights(3, math.log(2.0), "oldest_first")
    torch.testing.assert_close(right, torch.tensor([4.0, 2.0, 1.0]) / 7.0)  # oldest most
    with plant("robotics.ensemble-weights-reversed"):
        wrong = temporal_ensemble_weights(3, math.log(2.0), "oldest_first")
        newest = temporal_ensemble_weights(3, math.log(2.0), "newest_first")
    torch.testing.assert_close(wrong, torch.tensor([1.0, 2.0, 4.0]) / 7.0)  # newest most
    torch.testing.assert_close(newest, torch.tensor([1.0, 2.0, 4.0]) / 7.0)  # unaffected


def _stream(steps: int, k: int) -> list[torch.Tensor]:
    # chunk issued at s: entry j is 10 s + j, so the executed value names (s, j)
    return [torch.tensor([[[10.0 * s + j] for j in range(k)]]) for s in range(steps)]


def _run(executor, chunks):
    executor.reset()
    queried, out = [], []
    for t, c in enumerate(chunks):
        out.append(float(executor(lambda o, t=t, c=c: (queried.append(t), c)[1],
                                  torch.zeros(1, 1))[0, 0]))
    return queried, out


def test_bug_chunk_index_frozen():
    from transformer_math.bugs import plant

    chunks = _stream(6, 3)
    assert _run(ChunkQueue(3), chunks) == ([0, 3], [0.0, 1.0, 2.0, 30.0, 31.0, 32.0])
    with plant("robotics.chunk-index-frozen"):
        assert _run(ChunkQueue(3), chunks) == ([0, 3], [0.0, 0.0, 0.0, 30.0, 30.0, 30.0])
        assert _run(ChunkQueue(1), chunks)[1] == [0.0, 10.0, 20.0, 30.0, 40.0, 50.0]


def test_bug_chunk_requery_every_step():
    from transformer_math.bugs import plant

    chunks = _stream(4, 2)
    assert _run(ChunkQueue(2), chunks) == ([0, 2], [0.0, 1.0, 20.0, 21.0])
    with plant("robotics.chunk-requery-every-step"):
        assert _run(ChunkQueue(2), chunks) == ([0, 1, 2, 3], [0.0, 10.0, 20.0, 30.0])
