"""The expressivity tasks: targets and exact Bayes ceilings."""

from __future__ import annotations

import math

import pytest
import torch

from transformer_math.data.sequence_tasks import (
    TaskSpec,
    equivariant_accuracy_ceiling,
    high_count,
    lookup_table,
    make_task,
    tokenwise_accuracy_ceiling,
)


def test_tasks_targets():
    spec = TaskSpec(vocab_size=4, seq_len=6)
    g = torch.Generator().manual_seed(1)
    x, y = make_task("reverse", spec, 3, g)
    assert torch.equal(y, x.flip(-1))
    x, y = make_task("copy_first", spec, 3, g)
    assert torch.equal(y, x[:, :1].expand_as(x))
    x, y = make_task("context_lookup", spec, 3, g)
    k = high_count(x, 4)
    assert torch.equal(y, lookup_table(spec)[x, k[:, None].expand_as(x)])
    with pytest.raises(ValueError, match="task must be one of"):
        make_task("sort", spec, 3, g)
    with pytest.raises(ValueError, match="vocab_size"):
        TaskSpec(vocab_size=3)


def test_copy_first_ceiling_by_hand_for_two_tokens():
    # V = 2, n = 2: multisets {aa} (p 1/2) -> max count 2, {ab} (p 1/2) -> 1; ceiling (1 + 1/2)/2
    spec = TaskSpec(vocab_size=2, seq_len=2)
    ceiling = equivariant_accuracy_ceiling("copy_first", spec, 20000,
                                           torch.Generator().manual_seed(0))
    assert ceiling == pytest.approx(0.75, abs=0.01)


def test_reverse_ceiling_by_hand_for_two_tokens():
    # n = 2: the partner of position p is the other token; given {ab} the best guess for a is b
    # (c_b - 0 = 1 vs c_a - 1 = 0) -> always right; given {aa}: guess a (2 - 1 = 1) -> right.
    spec = TaskSpec(vocab_size=2, seq_len=2)
    assert equivariant_accuracy_ceiling("reverse", spec, 1000,
                                        torch.Generator().manual_seed(0)) == pytest.approx(1.0)
    spec4 = TaskSpec(vocab_size=8, seq_len=8)
    c = equivariant_accuracy_ceiling("reverse", spec4, 4000, torch.Generator().manual_seed(0))
    assert 1 / 8 < c < 0.5


def test_tokenwise_ceiling_matches_monte_carlo_of_the_bayes_rule():
    spec = TaskSpec(vocab_size=4, seq_len=5, num_classes=3)
    exact = tokenwise_accuracy_ceiling("context_lookup", spec)
    g = torch.Generator().manual_seed(3)
    x, y = make_task("context_lookup", spec, 40000, g)
    # empirical Bayes rule from the counts (most frequent class per own token)
    counts = torch.zeros(4, 3)
    counts.index_put_((x.flatten(), y.flatten()), torch.ones(x.numel()), accumulate=True)
    best = counts.argmax(-1)
    empirical = float((best[x] == y).double().mean())
    assert empirical == pytest.approx(exact, abs=0.01)
    assert tokenwise_accuracy_ceiling("context_free", spec) == 1.0
    assert 0 < exact < 1 and math.isfinite(exact)
