"""The model-side bugs of the trained icl claims (issue 31), each killed without training:

- ``data.regression-uniform-not-centred`` (falsifier of icl.trained-matches-gd): uniform prompts
  are centred, x ~ U(-a, a)^d;
- ``icl.precond-training-isotropic`` (falsifier of icl.preconditioned-optimum): every training
  batch of the preconditioner run is drawn with the covariance Sigma;
- ``icl.next-token-labels-unshifted`` (falsifier of icl.induction-heads): the next-token loss
  pairs the logits at t with token t + 1;
- ``data.regression-cholesky-transposed`` (falsifier of icl.ahn-gamma-moment): the Gaussian
  prompts have covariance Sigma.
"""

from __future__ import annotations

import torch

from transformer_math.bugs import plant
from transformer_math.data.regression import sample_regression
from transformer_math.experiments import icl_preconditioner
from transformer_math.experiments.induction_heads import next_token_loss


def _uniform_moments() -> tuple[float, float]:
    g = torch.Generator().manual_seed(0)
    x = sample_regression(4096, 8, 3, generator=g, x_distribution="uniform", x_range=2.0,
                          dtype=torch.float64).x
    return float(x.mean().abs()), float(x.min())


def test_uniform_prompts_are_centred() -> None:
    mean, low = _uniform_moments()
    assert mean < 0.02 and low < -1.9  # U(-2, 2): mean 0 (SE ~ 0.007), reaches -2
    with plant("data.regression-uniform-not-centred"):
        mean, low = _uniform_moments()
    assert mean > 0.9 and low >= 0.0  # U(0, 2): mean 1


def test_gaussian_prompts_have_covariance_sigma() -> None:
    g = torch.Generator().manual_seed(1)
    q, _ = torch.linalg.qr(torch.randn(3, 3, generator=g, dtype=torch.float64))
    sigma = q @ torch.diag(torch.tensor([0.25, 1.0, 2.5], dtype=torch.float64)) @ q.T

    def covariance_error() -> float:
        x = sample_regression(20000, 10, 3, generator=torch.Generator().manual_seed(2),
                              sigma=sigma, dtype=torch.float64).x.reshape(-1, 3)
        return float((x.T @ x / x.shape[0] - sigma).abs().max())

    assert covariance_error() < 0.05  # 200000 rows: entrywise SE ~ 0.006
    with plant("data.regression-cholesky-transposed"):
        assert covariance_error() > 0.2


def _training_sigmas(monkeypatch) -> list[bool]:
    """Whether each sample_regression call of a 3-step preconditioner run got a covariance."""
    seen: list[bool] = []
    real = icl_preconditioner.sample_regression

    def spy(*args, **kwargs):
        seen.append(kwargs.get("sigma") is not None)
        return real(*args, **kwargs)

    monkeypatch.setattr(icl_preconditioner, "sample_regression", spy)
    config = icl_preconditioner.ICLPreconditionerConfig(
        dim=2, spectrum=(0.4, 2.0), batch_size=8, steps=3, eval_batch=8, restarts=1)
    icl_preconditioner.train(config)
    return seen


def test_preconditioner_trains_on_sigma(monkeypatch) -> None:
    assert len(_training_sigmas(monkeypatch)) == 5  # validation, 3 training batches, held-out
    assert all(_training_sigmas(monkeypatch))
    with plant("icl.precond-training-isotropic"):
        seen = _training_sigmas(monkeypatch)
    assert seen[0] and seen[-1] and not any(seen[1:-1])  # evaluation keeps Sigma, training not


def test_next_token_loss_shifts_the_labels() -> None:
    g = torch.Generator().manual_seed(3)
    tokens = torch.randint(16, (4, 12), generator=g)
    # logits that put all their mass on the NEXT token
    logits = 30.0 * torch.nn.functional.one_hot(tokens.roll(-1, dims=1), 16).float()
    assert float(next_token_loss(logits, tokens).max()) < 1e-6
    with plant("icl.next-token-labels-unshifted"):
        assert float(next_token_loss(logits, tokens).mean()) > 10.0
