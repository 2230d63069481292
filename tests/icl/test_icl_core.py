"""Core ICL pieces: the GD construction, Neumann sums, baselines, scores, data."""

from __future__ import annotations

import pytest
import torch

from transformer_math.data.induction import repeated_random_sequence, repeated_segment_batch
from transformer_math.data.regression import make_task_pool, sample_regression
from transformer_math.diagnostics.icl_scores import (
    in_context_learning_score,
    induction_score,
    previous_token_score,
)
from transformer_math.nn.icl_gpt import (
    ICLGPT,
    AttentionOnlyConfig,
    AttentionOnlyTransformer,
    ICLGPTConfig,
    _apply_rotary,
)
from transformer_math.nn.init import seeded
from transformer_math.nn.linear_self_attention import LinearSelfAttention, regression_tokens
from transformer_math.theory.icl_baselines import (
    averaging_predict,
    dmmse_posterior,
    dmmse_predict,
    knn_predict,
    line_search_gd_eta,
    ols_predict,
    prefix_predictions,
    ridge_predict,
)
from transformer_math.theory.icl_construction import (
    ahn_gamma,
    gd_iterates,
    least_squares_terms,
    neumann_partial_sums,
    newton_schulz_inverse,
    one_step_gd_weights,
    stacked_gd_weights,
)


def _gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def _construct_model(dim: int, eta: float, n: int, layers: int, sign: float = -1.0):
    model = LinearSelfAttention(dim + 1, layers, dtype=torch.float64)
    if sign == -1.0:
        weights = stacked_gd_weights(dim, eta, n, layers)
    else:
        weights = [one_step_gd_weights(dim, eta, n, value_label_sign=sign)] * layers
    for layer, w in zip(model.layers, weights, strict=True):
        layer.load_weights(*w.as_tuple())
    return model


@pytest.mark.parametrize(("dim", "n"), [(1, 1), (3, 8), (10, 10), (7, 25)])
def test_construction_equals_one_gd_step(dim: int, n: int) -> None:
    g = _gen(dim * 100 + n)
    x = torch.randn(16, n, dim, generator=g, dtype=torch.float64)
    y = torch.randn(16, n, generator=g, dtype=torch.float64)
    xq = torch.randn(16, dim, generator=g, dtype=torch.float64)
    eta = 0.7
    model = _construct_model(dim, eta, n, 1)
    with torch.no_grad():
        pred = model.predict(regression_tokens(x, y, xq))
    w1 = gd_iterates(x, y, eta, 1)[1]
    expected = (xq * w1).sum(-1)
    assert torch.max(torch.abs(pred - expected)) < 1e-10
    # and it is the seed's formula eta/N x_q^T X^T y
    direct = eta / n * torch.einsum("bd,bnd,bn->b", xq, x, y)
    assert torch.max(torch.abs(pred - direct)) < 1e-10


@pytest.mark.parametrize("layers", [2, 3, 5])
def test_stacked_layers_equal_gd_steps(layers: int) -> None:
    g = _gen(layers)
    dim, n, eta = 4, 12, 0.5
    x = torch.randn(8, n, dim, generator=g, dtype=torch.float64)
    y = torch.randn(8, n, generator=g, dtype=torch.float64)
    xq = torch.randn(8, dim, generator=g, dtype=torch.float64)
    model = _construct_model(dim, eta, n, layers)
    with torch.no_grad():
        pred = model.predict(regression_tokens(x, y, xq))
    w_l = gd_iterates(x, y, eta, layers)[layers]
    assert torch.max(torch.abs(pred - (xq * w_l).sum(-1))) < 1e-10


def test_dropping_the_minus_one_breaks_the_construction() -> None:
    g = _gen(5)
    x = torch.randn(8, 6, 3, generator=g, dtype=torch.float64)
    y = torch.randn(8, 6, generator=g, dtype=torch.float64)
    xq = torch.randn(8, 3, generator=g, dtype=torch.float64)
    model = _construct_model(3, 0.5, 6, 1, sign=+1.0)
    with torch.no_grad():
        pred = model.predict(regression_tokens(x, y, xq))
    expected = (xq * gd_iterates(x, y, 0.5, 1)[1]).sum(-1)
    assert torch.max(torch.abs(pred - expected)) > 1e-3
    assert torch.allclose(pred, -expected)


def test_neumann_worked_example_and_ols_limit() -> None:
    h = torch.tensor([[1.0]], dtype=torch.float64)
    b = torch.tensor([2.0], dtype=torch.float64)
    sums = neumann_partial_sums(h, b, 0.5, 4)[:, 0]
    assert torch.allclose(sums, torch.tensor([0.0, 1.0, 1.5, 1.75, 1.875], dtype=torch.float64))
    g = _gen(1)
    x = torch.randn(30, 4, generator=g, dtype=torch.float64)
    y = torch.randn(30, generator=g, dtype=torch.float64)
    hess, bb = least_squares_terms(x, y)
    eta = 1.0 / float(torch.linalg.eigvalsh(hess).max())
    w = neumann_partial_sums(hess, bb, eta, 400)[-1]
    assert torch.allclose(w, torch.linalg.lstsq(x, y).solution, atol=1e-8)
    # divergence beyond 2 / lambda_max
    w_bad = neumann_partial_sums(hess, bb, 2.2 / float(torch.linalg.eigvalsh(hess).max()), 200)[-1]
    assert torch.linalg.vector_norm(w_bad) > 1e3


def test_newton_schulz_squares_the_residual() -> None:
    g = _gen(2)
    m = torch.randn(5, 5, generator=g, dtype=torch.float64) + 5 * torch.eye(5, dtype=torch.float64)
    its = newton_schulz_inverse(m, 8)
    eye = torch.eye(5, dtype=torch.float64)
    r = [eye - m @ a for a in its]
    for t in range(4):
        assert torch.allclose(r[t + 1], r[t] @ r[t], atol=1e-12)
    assert torch.allclose(its[-1], torch.linalg.inv(m), atol=1e-10)


def test_ridge_tends_to_ols_and_baselines() -> None:
    g = _gen(3)
    x = torch.randn(6, 10, 4, generator=g, dtype=torch.float64)
    y = torch.randn(6, 10, generator=g, dtype=torch.float64)
    xq = torch.randn(6, 4, generator=g, dtype=torch.float64)
    assert torch.allclose(ridge_predict(x, y, xq, 1e-10), ols_predict(x, y, xq), atol=1e-7)
    # k-NN with k = 1 returns the label of the closest point
    pred = knn_predict(x, y, x[:, 3], k=1)
    assert torch.allclose(pred, y[:, 3])
    assert torch.allclose(averaging_predict(x, y, xq), torch.einsum("bd,bnd,bn->b", xq, x, y) / 10)
    with pytest.raises(ValueError, match="lam"):
        ridge_predict(x, y, xq, 0.0)
    with pytest.raises(ValueError, match="x_query"):
        ols_predict(x, y, xq[:, :3])


def test_dmmse_single_task_returns_that_task() -> None:
    g = _gen(4)
    pool = make_task_pool(1, 3, generator=g, dtype=torch.float64)
    batch = sample_regression(
        5, 6, 3, generator=g, task_pool=pool, noise_var=0.25, dtype=torch.float64
    )
    x, y, xq, _ = batch.split_query()
    assert torch.allclose(dmmse_predict(x, y, xq, pool, 0.25), xq @ pool[0])
    pool8 = make_task_pool(8, 3, generator=g, dtype=torch.float64)
    post = dmmse_posterior(x, y, pool8, 0.25, max_elements=7)  # forces chunking
    assert torch.allclose(post, dmmse_posterior(x, y, pool8, 0.25))
    assert torch.allclose(post.sum(-1), torch.ones(5, dtype=torch.float64))


def test_prefix_predictions_and_line_search() -> None:
    g = _gen(6)
    batch = sample_regression(64, 8, 3, generator=g, dtype=torch.float64)
    preds = prefix_predictions(lambda a, b, c: ridge_predict(a, b, c, 0.25), batch.x, batch.y)
    assert preds.shape == (64, 8)
    assert torch.all(preds[:, 0] == 0)
    x, y, xq, yq = batch.split_query()
    eta = line_search_gd_eta(x, y, xq, yq)
    s = averaging_predict(x, y, xq)
    losses = [((e * s - yq) ** 2).mean() for e in (0.9 * eta, eta, 1.1 * eta)]
    assert losses[1] <= min(losses[0], losses[2])


def test_ahn_gamma_isotropic() -> None:
    gamma = ahn_gamma(torch.eye(3, dtype=torch.float64), 10)
    assert torch.allclose(torch.linalg.inv(gamma), 10 / 14 * torch.eye(3, dtype=torch.float64))


def test_induction_and_previous_token_scores() -> None:
    half = 6
    t = 2 * half
    ideal = torch.zeros(2, t, t)
    ideal[0, 0, 0] = 1.0
    ideal[0, torch.arange(1, t), torch.arange(0, t - 1)] = 1.0  # head 0: previous token
    for s in range(t):  # head 1: induction (attend to s - L + 1 in the second copy)
        ideal[1, s, s - half + 1 if s >= half else 0] = 1.0
    prev, ind = previous_token_score(ideal), induction_score(ideal, half)
    assert prev[0] == 1.0 and ind[1] == 1.0
    assert ind[0] < 0.01 and prev[1] < 0.2
    uniform = torch.tril(torch.ones(t, t)) / torch.arange(1, t + 1).unsqueeze(1)
    u = induction_score(uniform.expand(3, t, t), half)
    expected = torch.tensor([1.0 / (s + 1) for s in range(half, t)]).mean()
    assert torch.allclose(u, expected.expand(3))
    assert float(u.max()) < 0.15
    assert in_context_learning_score(torch.tensor([3.0, 2.0, 1.0]), 0, 2) == -2.0
    with pytest.raises(ValueError, match="half_len"):
        induction_score(ideal, 7)


def test_data_generators() -> None:
    tok = repeated_segment_batch(
        4, 50, 30, generator=_gen(0), max_prefix=2, min_segment=3, max_segment=5
    )
    assert tok.shape == (4, 50) and tok.dtype == torch.long
    seq = repeated_random_sequence(3, 5, 10, generator=_gen(0))
    assert torch.equal(seq[:, :5], seq[:, 5:])
    sigma = torch.tensor([[2.0, 0.5], [0.5, 1.0]])
    batch = sample_regression(20000, 1, 2, generator=_gen(1), sigma=sigma)
    cov = batch.x[:, 0].T @ batch.x[:, 0] / 20000
    assert torch.allclose(cov, sigma, atol=0.08)
    with pytest.raises(ValueError, match="x_distribution"):
        sample_regression(2, 2, 2, generator=_gen(0), x_distribution="cauchy")  # type: ignore[arg-type]


def test_models_shapes_and_causality() -> None:
    gpt = seeded(lambda: ICLGPT(ICLGPTConfig(x_dim=3, max_points=5)), _gen(0))
    batch = sample_regression(2, 5, 3, generator=_gen(1))
    out = gpt(batch.x, batch.y)
    assert out.shape == (2, 5)
    y2 = batch.y.clone()
    y2[:, 2] += 10.0  # changing y_3 must not change the prediction of y_1..y_3
    out2 = gpt(batch.x, y2)
    assert torch.allclose(out[:, :3], out2[:, :3]) and not torch.allclose(out[:, 3:], out2[:, 3:])
    model = seeded(
        lambda: AttentionOnlyTransformer(AttentionOnlyConfig(vocab_size=16, d_model=16,
                                                             num_heads=2)), _gen(0)
    )
    logits, weights = model(torch.randint(16, (2, 10), generator=_gen(2)))
    assert logits.shape == (2, 10, 16) and len(weights) == 2 and weights[0].shape == (2, 2, 10, 10)
    # RoPE: <R_m q, R_n k> depends on n - m only
    q = torch.randn(1, 1, 1, 8, generator=_gen(3)).expand(1, 1, 12, 8)
    rq = _apply_rotary(q, 10000.0)[0, 0]
    assert torch.allclose(rq.norm(dim=-1), q[0, 0].norm(dim=-1), atol=1e-5)
    assert torch.allclose((rq[2] * rq[5]).sum(), (rq[6] * rq[9]).sum(), atol=1e-5)


def test_label_preconditioner_of_the_construction() -> None:
    model = _construct_model(3, 0.6, 12, 1)
    expected = 0.6 / 12 * torch.eye(3, dtype=torch.float64)
    assert torch.allclose(model.label_preconditioner(), expected)
    # a random layer: A predicts the part of y_hat linear in the labels
    g = _gen(9)
    rnd = LinearSelfAttention(4, 1, init_std=0.5, generator=g, dtype=torch.float64)
    x = torch.randn(1, 5, 3, generator=g, dtype=torch.float64)
    y = torch.randn(1, 5, generator=g, dtype=torch.float64)
    xq = torch.randn(1, 3, generator=g, dtype=torch.float64)
    with torch.no_grad():
        f = [rnd.predict(regression_tokens(x, s * y, xq)) for s in (-1.0, 0.0, 1.0)]
    linear_part = (f[2] - f[0]) / 2  # odd part in y: the quadratic-in-y terms cancel
    bilinear = xq[0] @ rnd.label_preconditioner() @ (x[0].T @ y[0])
    # y enters at most quadratically in one layer's read-out, so the odd part is exactly linear
    assert torch.allclose(linear_part[0], bilinear)
