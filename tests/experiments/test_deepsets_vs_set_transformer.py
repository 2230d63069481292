"""experiments.deepsets_vs_set_transformer: data, balance, chunked evaluation, determinism."""

from dataclasses import replace

import pytest
import torch

from transformer_math.experiments import deepsets_vs_set_transformer as exp
from transformer_math.nn.init import seeded
from transformer_math.nn.sets import SetTransformer


def _small(seed: int = 0) -> exp.DeepSetsVsSetTransformerConfig:
    return replace(exp.DeepSetsVsSetTransformerConfig.tiny(), seed=seed, train_steps=4,
                   batch_size=16, eval_sets=300, calibration_sets=1024, eval_every=2,
                   deepsets_hidden=16, set_transformer_dim=8, set_transformer_heads=2)


def test_sets_are_labelled_by_the_closest_pair_outside_the_band():
    g = torch.Generator().manual_seed(0)
    x, y = exp.sample_sets(200, 4, 0.2, 1.5, g)
    d = exp.min_pairwise_distance(x)
    assert torch.equal(y, (d < 0.2).float())
    assert bool(((d < 0.2 / 1.5) | (d > 0.2 * 1.5)).all())


def test_chunked_accuracy_equals_one_pass():
    model = seeded(lambda: SetTransformer(2, 8, 1, num_heads=2, num_sab=1), 0).eval()
    g = torch.Generator().manual_seed(1)
    x, y = exp.sample_sets(exp.EVAL_CHUNK + 37, 4, 0.2, 1.5, g)
    with torch.no_grad():
        direct = float(((model(x).squeeze(-1) > 0).float() == y).float().mean())
    assert exp._accuracy(model, x, y) == pytest.approx(direct, abs=1e-6)  # float32 mean


@pytest.mark.slow  # the first Adam step imports torch._dynamo (~20 s on a loaded machine)
def test_run_is_deterministic_given_the_seed():
    a, b = exp.run(_small(3)), exp.run(_small(3))
    assert a.accuracy == b.accuracy and a.radius == b.radius
    assert set(a.accuracy) == {"deepsets", "set_transformer"}
    assert a.positive_fraction == pytest.approx(0.5, abs=0.1)
