"""nn.linear_self_attention: the label preconditioner A read from the weights."""

from __future__ import annotations

import pytest
import torch

from transformer_math.bugs import plant
from transformer_math.nn.linear_self_attention import LinearSelfAttention, regression_tokens
from transformer_math.theory.icl_construction import one_step_gd_weights


def test_label_preconditioner_of_the_construction_and_a_random_layer() -> None:
    model = LinearSelfAttention(4, 1, generator=torch.Generator(), dtype=torch.float64)
    model.layers[0].load_weights(*one_step_gd_weights(3, 0.6, 12).as_tuple())
    expected = 0.6 / 12 * torch.eye(3, dtype=torch.float64)
    assert torch.allclose(model.label_preconditioner(), expected)
    g = torch.Generator().manual_seed(9)
    rnd = LinearSelfAttention(4, 1, init_std=0.5, generator=g, dtype=torch.float64)
    x = torch.randn(1, 5, 3, generator=g, dtype=torch.float64)
    y = torch.randn(1, 5, generator=g, dtype=torch.float64)
    xq = torch.randn(1, 3, generator=g, dtype=torch.float64)
    with torch.no_grad():
        f = [rnd.predict(regression_tokens(x, s * y, xq)) for s in (-1.0, 0.0, 1.0)]
    linear_part = (f[2] - f[0]) / 2  # odd part in y: the quadratic-in-y terms cancel
    bilinear = xq[0] @ rnd.label_preconditioner() @ (x[0].T @ y[0])
    assert torch.allclose(linear_part[0], bilinear)
    with pytest.raises(ValueError, match="one layer"):
        LinearSelfAttention(4, 2).label_preconditioner()


def test_the_query_is_never_a_key() -> None:
    g = torch.Generator().manual_seed(1)
    model = LinearSelfAttention(3, 1, init_std=0.5, generator=g)
    tokens = torch.randn(2, 6, 3, generator=g)
    moved = tokens.clone()
    moved[:, -1] += 5.0  # the query changes only its own row
    assert torch.allclose(model(tokens)[:, :-1], model(moved)[:, :-1])


def test_planted_query_as_key_changes_the_context_rows_only_from_layer_two() -> None:
    g = torch.Generator().manual_seed(2)
    x = torch.randn(3, 5, 2, generator=g, dtype=torch.float64)
    y = torch.randn(3, 5, generator=g, dtype=torch.float64)
    xq = torch.randn(3, 2, generator=g, dtype=torch.float64)
    tokens = regression_tokens(x, y, xq)
    model = LinearSelfAttention(3, 2, dtype=torch.float64)
    for layer in model.layers:
        layer.load_weights(*one_step_gd_weights(2, 0.5, 5).as_tuple())
    with torch.no_grad():
        one, two = model.layers[0](tokens), model(tokens)
        with plant("icl.lsa-query-as-key"):
            one_bug, two_bug = model.layers[0](tokens), model(tokens)
    assert torch.allclose(one, one_bug)  # the query's label slot is 0: no effect in layer 1
    assert not torch.allclose(two, two_bug)  # from layer 2 on -x_q^T w_1 leaks in
    moved = tokens.clone()
    moved[:, -1, -1] += 1.0
    with torch.no_grad():
        assert torch.allclose(model(tokens)[:, :-1], model(moved)[:, :-1])  # correct: no leak
        with plant("icl.lsa-query-as-key"):
            assert not torch.allclose(model(tokens)[:, :-1], model(moved)[:, :-1])
