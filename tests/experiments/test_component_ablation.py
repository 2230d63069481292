"""Component ablation: exact evaluation helpers, and the tiny run (slow)."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from transformer_math.data.sequence_tasks import (
    TaskSpec,
    equivariant_accuracy_ceiling,
    make_task,
    tokenwise_accuracy_ceiling,
)
from transformer_math.experiments import component_ablation


@pytest.mark.slow
def test_component_ablation_tiny_runs_and_is_deterministic():
    cfg = component_ablation.ComponentAblationConfig.tiny(seed=0)
    seen: list[float] = []
    a = component_ablation.run(cfg, progress=seen.append)
    b = component_ablation.run(dataclasses.replace(cfg, variants=(("full", 1, "layernorm"),)))
    assert set(a.results) == {"ffn_only/2L", "attention_only/1L", "attention_only/2L",
                              "attention_only/2L/no-norm", "full/1L"}
    assert a.results["full/1L"].eval_loss == b.results["full/1L"].eval_loss
    assert a.exact_eval and 0 < a.tokenwise_ceiling < 1
    # exact evaluation: FFN-only can never beat the token-wise ceiling (float rounding only)
    assert a.results["ffn_only/2L"].eval_accuracy <= a.tokenwise_ceiling + 1e-9
    assert a.results["full/1L"].eval_accuracy >= 0.9
    assert seen and seen[-1] == pytest.approx(1.0)


def test_all_sequences_and_targets_match_the_sampled_tasks():
    spec = TaskSpec(vocab_size=4, seq_len=3, num_classes=3)
    x = component_ablation.all_sequences(spec)
    assert x.shape == (64, 3) and len({tuple(r) for r in x.tolist()}) == 64
    g = torch.Generator().manual_seed(0)
    for task in ("reverse", "copy_first", "context_lookup", "context_free"):
        inputs, targets = make_task(task, spec, 50, g)
        assert torch.equal(component_ablation.task_targets(task, spec, inputs), targets)
    with pytest.raises(ValueError, match="EXACT_EVAL_LIMIT"):
        component_ablation.all_sequences(TaskSpec(vocab_size=8, seq_len=8))


def test_brute_force_ceilings_equal_the_closed_forms():
    spec = TaskSpec(vocab_size=4, seq_len=4, num_classes=4)
    x = component_ablation.all_sequences(spec)
    y = component_ablation.task_targets("context_lookup", spec, x)
    brute = component_ablation.best_constant_accuracy(x.reshape(-1), y.reshape(-1))
    assert brute == pytest.approx(tokenwise_accuracy_ceiling("context_lookup", spec), abs=1e-12)
    for task in ("reverse", "copy_first"):
        y = component_ablation.task_targets(task, spec, x)
        keys = component_ablation.multiset_keys(x, spec.vocab_size)
        brute = component_ablation.best_constant_accuracy(keys, y.reshape(-1))
        gen = torch.Generator().manual_seed(1)
        sampled = equivariant_accuracy_ceiling(task, spec, 100_000, gen)
        assert brute == pytest.approx(sampled, abs=0.005)
    # by hand: V = 2, n = 2, reverse: the partner is the other token; (a, b) and (b, a) share
    # the key (own token, multiset) only when a = b, so every key has one target: ceiling 1
    tiny = TaskSpec(vocab_size=2, seq_len=2)
    x = component_ablation.all_sequences(tiny)
    keys = component_ablation.multiset_keys(x, 2)
    y = component_ablation.task_targets("reverse", tiny, x).reshape(-1)
    assert component_ablation.best_constant_accuracy(keys, y) == 1.0


def test_train_settings_validation():
    with pytest.raises(ValueError, match="steps"):
        component_ablation.TrainSettings(steps=0)
