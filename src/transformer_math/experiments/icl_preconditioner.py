"""Trained one-layer linear attention under non-isotropic inputs vs Ahn et al.'s Gamma^{-1}.

Setup (Ahn et al. 2023, arXiv 2306.00297, Thm. 1; FACTS.md): x ~ N(0, Sigma), w* ~ N(0, I), no
noise, n context pairs. The global optimum of one-layer linear self-attention predicts
y_hat = x_q^T Gamma^{-1} (1/n) sum_i y_i x_i with Gamma = ((n+1)/n) Sigma + (tr Sigma / n) I, and
its risk is tr(Sigma) - tr(Sigma Gamma^{-1} Sigma). Sigma = U diag(spectrum) U^T with U a random
rotation drawn from the seed. The layer is trained with Adam and a cosine learning-rate decay to 0
(decay removes the SGD noise floor from the learned matrices); the measured preconditioner is
n A, with A read from the trained weights (``LinearSelfAttention.label_preconditioner``).

Training the product of four matrices sometimes stops at a saddle where A has rank 1 (the label
reaches the query only through the y-row of W_K^T W_Q; observed for some initialisations). The
theorem is about the global optimum, so ``restarts`` independent initialisations are trained and
the one with the lowest risk on a held-out batch is kept; every restart's risk is reported.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass

import torch

from transformer_math.data.regression import sample_regression
from transformer_math.nn.init import seeded
from transformer_math.nn.linear_self_attention import LinearSelfAttention, regression_tokens
from transformer_math.theory.icl_construction import ahn_optimal_preconditioner


@dataclass(frozen=True)
class ICLPreconditionerConfig:
    dim: int = 4
    num_context: int = 10
    spectrum: tuple[float, ...] = (0.25, 0.5, 1.0, 2.0)
    batch_size: int = 2048
    steps: int = 3000
    lr: float = 3e-3
    init_std: float = 0.1
    eval_batch: int = 16384
    restarts: int = 3
    seed: int = 0

    def __post_init__(self) -> None:
        if len(self.spectrum) != self.dim or min(self.spectrum) <= 0:
            raise ValueError(
                f"spectrum must hold dim={self.dim} positive eigenvalues, got {self.spectrum}"
            )

    @staticmethod
    def tiny(seed: int = 0) -> ICLPreconditionerConfig:
        return ICLPreconditionerConfig(
            dim=2, spectrum=(0.4, 2.0), batch_size=256, steps=800, eval_batch=4096, seed=seed
        )

    @staticmethod
    def default(seed: int = 0) -> ICLPreconditionerConfig:
        return ICLPreconditionerConfig(seed=seed)

    @staticmethod
    def large(seed: int = 0) -> ICLPreconditionerConfig:
        return ICLPreconditionerConfig(
            dim=8,
            num_context=20,
            spectrum=(0.1, 0.2, 0.4, 0.7, 1.0, 1.5, 2.5, 4.0),
            steps=20000,
            batch_size=8192,
            seed=seed,
        )


@dataclass(frozen=True)
class ICLPreconditionerResult:
    config: ICLPreconditionerConfig
    sigma: list[list[float]]
    learned: list[list[float]]  # n A from the trained weights
    gamma_inverse: list[list[float]]  # Ahn et al.'s prediction
    relative_error: float  # |n A - Gamma^{-1}|_F / |Gamma^{-1}|_F
    relative_error_vs_sigma_inverse: float  # the naive whitening reading Sigma^{-1}
    model_risk: float  # E (y_hat - y_q)^2 on fresh prompts
    optimal_risk: float  # tr(Sigma) - tr(Sigma Gamma^{-1} Sigma)
    loss_curve: list[float]
    restart_risks: list[float]  # held-out risk of every restart; the best one is reported
    seconds: float


def random_covariance(spectrum: tuple[float, ...], generator: torch.Generator) -> torch.Tensor:
    """U diag(spectrum) U^T with U from the QR decomposition of a Gaussian matrix."""
    d = len(spectrum)
    q, r = torch.linalg.qr(torch.randn(d, d, generator=generator, dtype=torch.float64))
    q = q * torch.sign(torch.diagonal(r))
    return q @ torch.diag(torch.tensor(spectrum, dtype=torch.float64)) @ q.T


def _train(
    config: ICLPreconditionerConfig,
    sigma32: torch.Tensor,
    g: torch.Generator,
    progress: Callable[[float], None] | None,
    restart: int,
) -> tuple[LinearSelfAttention, list[float]]:
    n = config.num_context
    model = seeded(lambda: LinearSelfAttention(config.dim + 1, 1, init_std=config.init_std), g)
    opt = torch.optim.Adam(model.parameters(), lr=config.lr)
    warmup = max(1, config.steps // 20)

    def lr_at(step: int) -> float:
        if step < warmup:
            return config.lr * (step + 1) / warmup
        progress_frac = (step - warmup) / max(1, config.steps - warmup)
        return config.lr * 0.5 * (1 + math.cos(math.pi * progress_frac))

    curve = []
    for step in range(config.steps):
        for group in opt.param_groups:
            group["lr"] = lr_at(step)
        x, y, xq, yq = sample_regression(
            config.batch_size, n + 1, config.dim, generator=g, sigma=sigma32
        ).split_query()
        loss = ((model.predict(regression_tokens(x, y, xq)) - yq) ** 2).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if (step + 1) % max(1, config.steps // 40) == 0:
            curve.append(float(loss.detach()))
            if progress is not None:
                progress((restart + (step + 1) / config.steps) / config.restarts)
    return model, curve


def run(
    config: ICLPreconditionerConfig, progress: Callable[[float], None] | None = None
) -> ICLPreconditionerResult:
    start = time.perf_counter()
    g = torch.Generator().manual_seed(config.seed)
    sigma = random_covariance(config.spectrum, g)
    sigma32 = sigma.float()
    n = config.num_context
    x_val, y_val, xq_val, yq_val = sample_regression(
        config.eval_batch, n + 1, config.dim, generator=g, sigma=sigma32
    ).split_query()
    best: tuple[float, LinearSelfAttention, list[float]] | None = None
    risks = []
    for restart in range(config.restarts):
        model, curve = _train(config, sigma32, g, progress, restart)
        with torch.no_grad():
            risk = float(
                ((model.predict(regression_tokens(x_val, y_val, xq_val)) - yq_val) ** 2).mean()
            )
        risks.append(risk)
        if best is None or risk < best[0]:
            best = (risk, model, curve)
    assert best is not None
    _, model, curve = best
    x, y, xq, yq = sample_regression(
        config.eval_batch, n + 1, config.dim, generator=g, sigma=sigma32
    ).split_query()
    with torch.no_grad():
        risk = float(((model.predict(regression_tokens(x, y, xq)) - yq) ** 2).mean())
    learned = n * model.label_preconditioner().double()
    gamma_inv = ahn_optimal_preconditioner(sigma, n)
    sigma_inv = torch.linalg.inv(sigma)
    rel = float(torch.linalg.norm(learned - gamma_inv) / torch.linalg.norm(gamma_inv))
    rel_sigma = float(torch.linalg.norm(learned - sigma_inv) / torch.linalg.norm(sigma_inv))
    optimal_risk = float(torch.trace(sigma) - torch.trace(sigma @ gamma_inv @ sigma))
    return ICLPreconditionerResult(
        config,
        sigma.tolist(),
        learned.tolist(),
        gamma_inv.tolist(),
        rel,
        rel_sigma,
        risk,
        optimal_risk,
        curve,
        risks,
        time.perf_counter() - start,
    )
