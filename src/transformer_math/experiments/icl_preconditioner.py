"""Trained one-layer linear attention under non-isotropic inputs vs Ahn et al.'s Gamma^{-1}.

Setup (Ahn et al. 2023, arXiv 2306.00297, Thm. 1; FACTS.md): x ~ N(0, Sigma), w* ~ N(0, I), no
noise, n context pairs. The global optimum of one-layer linear self-attention predicts
y_hat = x_q^T Gamma^{-1} (1/n) sum_i y_i x_i with Gamma = ((n+1)/n) Sigma + (tr Sigma / n) I, and
its risk is tr(Sigma) - tr(Sigma Gamma^{-1} Sigma). Sigma = U diag(spectrum) U^T with U a random
rotation drawn from the seed. The layer is trained with Adam and a cosine learning-rate decay to 0
(decay removes the SGD noise floor from the learned matrices); the measured preconditioner is
n A, with A read from the trained weights (``LinearSelfAttention.label_preconditioner``).

Training the product of four matrices sometimes stops at a saddle where A has rank 1 (the label
reaches the query only through the y-row of W_K^T W_Q: u_y ~ 0, A ~ -(u_x B_yx)^T). The theorem
is about the global optimum, so ``restarts`` independent initialisations are trained for the
first ``screen_steps`` steps of the schedule, the one with the lowest risk on a held-out batch
(no theory involved) is kept and trained to ``steps``; every restart's held-out risk is reported.
Issue 19: at default size the rank-1 state is reached by step 200 and kept for all 3000 steps
(held-out risk 2.22 vs the optimum 1.15), while a run that escapes it is below 1.35 at step 300
and converged (1.16) by step 500; with seed 1's Sigma half the initialisations stop there
(3 of 6 over 3000 steps; 21 of 60 screened restarts of seeds 0-4 stopped there), so the default
screens 12 initialisations for 200 steps (stuck >= 2.14, escaping <= 1.52 in that sweep) and
trains the best to 1500.
With ``screen_steps = 0`` (tiny, large) every restart is trained to the end, as before.

:func:`train` (memoised) never calls the theory; :func:`run` compares its result with Gamma^{-1},
so a falsifier planted in the theory reuses the trained model.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass

import torch

from transformer_math.bugs import declare_bug, planted
from transformer_math.data.regression import sample_regression
from transformer_math.experiments.memo import memoized
from transformer_math.nn.init import seeded
from transformer_math.nn.linear_self_attention import LinearSelfAttention, regression_tokens
from transformer_math.theory.icl_construction import ahn_optimal_preconditioner

TRAIN_ISOTROPIC = declare_bug(
    "icl.precond-training-isotropic",
    "the training batches are drawn without the covariance (sample_regression(..., sigma=...) "
    "left out of the training loop), so the layer trains on x ~ N(0, I) while the held-out "
    "batches use N(0, Sigma): it learns the isotropic optimum n / (n + d + 1) I",
    module=__name__,
    seen_in="a keyword argument passed to the evaluation's sampler and forgotten in the "
    "training loop's",
    test="tests/claims/icl/test_trained_bugs.py::test_preconditioner_trains_on_sigma")


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
    #: steps every restart trains before the best (held-out risk) is kept; 0: all ``steps``
    screen_steps: int = 0

    def __post_init__(self) -> None:
        if not 0 <= self.screen_steps <= self.steps:
            raise ValueError(f"screen_steps must be in [0, steps={self.steps}], got "
                             f"{self.screen_steps}")
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
        """12 initialisations screened for 200 steps, the best trained to 1500 (issue 19).

        3700 steps in all instead of 3 x 3000: the rank-1 saddle is decided by step 200 and a
        run that escapes it has converged by step 500 (module docstring).
        """
        return ICLPreconditionerConfig(steps=1500, restarts=12, screen_steps=200, seed=seed)

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
    restart_risks: list[float]  # held-out risk of every restart after screening; best kept
    seconds: float


def random_covariance(spectrum: tuple[float, ...], generator: torch.Generator) -> torch.Tensor:
    """U diag(spectrum) U^T with U from the QR decomposition of a Gaussian matrix."""
    d = len(spectrum)
    q, r = torch.linalg.qr(torch.randn(d, d, generator=generator, dtype=torch.float64))
    q = q * torch.sign(torch.diagonal(r))
    return q @ torch.diag(torch.tensor(spectrum, dtype=torch.float64)) @ q.T


class _Run:
    """One initialisation with its optimiser, trained along the warmup + cosine schedule."""

    def __init__(self, config: ICLPreconditionerConfig, g: torch.Generator) -> None:
        self.config = config
        self.model = seeded(
            lambda: LinearSelfAttention(config.dim + 1, 1, init_std=config.init_std), g)
        self.opt = torch.optim.Adam(self.model.parameters(), lr=config.lr)
        self.step = 0
        self.curve: list[float] = []

    def lr_at(self, step: int) -> float:
        config = self.config
        warmup = max(1, config.steps // 20)
        if step < warmup:
            return config.lr * (step + 1) / warmup
        progress_frac = (step - warmup) / max(1, config.steps - warmup)
        return config.lr * 0.5 * (1 + math.cos(math.pi * progress_frac))

    def train_to(self, stop: int, sigma32: torch.Tensor, g: torch.Generator,
                 progress: Callable[[int], None] | None) -> None:
        """Steps ``self.step`` .. ``stop - 1`` on fresh batches from ``g``."""
        config, n = self.config, self.config.num_context
        for step in range(self.step, stop):
            for group in self.opt.param_groups:
                group["lr"] = self.lr_at(step)
            sigma = None if planted(TRAIN_ISOTROPIC) else sigma32  # planted bug: falsifier
            x, y, xq, yq = sample_regression(  # of icl.preconditioned-optimum
                config.batch_size, n + 1, config.dim, generator=g, sigma=sigma
            ).split_query()
            loss = ((self.model.predict(regression_tokens(x, y, xq)) - yq) ** 2).mean()
            self.opt.zero_grad(set_to_none=True)
            loss.backward()
            self.opt.step()
            if (step + 1) % max(1, config.steps // 40) == 0:
                self.curve.append(float(loss.detach()))
                if progress is not None:
                    progress(step + 1)
        self.step = stop


@dataclass(frozen=True)
class ICLPreconditionerTraining:
    """What training produces, free of the theory (no ``ahn_optimal_preconditioner``).

    Memoised and shared (``experiments.memo``): a bug planted in the theory does not retrain
    the model. Never mutate it (its tensors are copied by :func:`run`).
    """

    config: ICLPreconditionerConfig
    sigma: torch.Tensor  # (d, d) float64
    learned: torch.Tensor  # n A of the kept restart, (d, d) float64
    model_risk: float  # E (y_hat - y_q)^2 on fresh prompts
    loss_curve: list[float]
    restart_risks: list[float]
    seconds: float


def train(config: ICLPreconditionerConfig, progress: Callable[[float], None] | None = None
          ) -> ICLPreconditionerTraining:
    """Draw Sigma, screen every restart, train the lowest held-out risk on, measure n A, risk.

    Deterministic given ``config.seed`` (no global RNG is touched). The selection uses only the
    held-out risk (no theory), so the comparison with Gamma^{-1} in :func:`run` is not circular.
    """
    start = time.perf_counter()
    g = torch.Generator().manual_seed(config.seed)
    sigma = random_covariance(config.spectrum, g)
    sigma32 = sigma.float()
    n = config.num_context
    x_val, y_val, xq_val, yq_val = sample_regression(
        config.eval_batch, n + 1, config.dim, generator=g, sigma=sigma32
    ).split_query()
    screen = config.screen_steps or config.steps
    total = config.restarts * screen + config.steps - screen
    best: tuple[float, _Run] | None = None
    risks = []
    for restart in range(config.restarts):
        candidate = _Run(config, g)
        done = restart * screen
        candidate.train_to(screen, sigma32, g, None if progress is None
                           else lambda s, done=done: progress((done + s) / total))
        with torch.no_grad():
            risk = float(((candidate.model.predict(regression_tokens(x_val, y_val, xq_val))
                           - yq_val) ** 2).mean())
        risks.append(risk)
        if best is None or risk < best[0]:
            best = (risk, candidate)
    assert best is not None
    kept = best[1]
    done = config.restarts * screen - screen
    kept.train_to(config.steps, sigma32, g,
                  None if progress is None else lambda s: progress((done + s) / total))
    model, curve = kept.model, kept.curve
    x, y, xq, yq = sample_regression(
        config.eval_batch, n + 1, config.dim, generator=g, sigma=sigma32
    ).split_query()
    with torch.no_grad():
        risk = float(((model.predict(regression_tokens(x, y, xq)) - yq) ** 2).mean())
    learned = (n * model.label_preconditioner().double()).detach()
    return ICLPreconditionerTraining(config, sigma, learned, risk, curve, risks,
                                     time.perf_counter() - start)


def run(
    config: ICLPreconditionerConfig, progress: Callable[[float], None] | None = None
) -> ICLPreconditionerResult:
    """The memoised :func:`train`, then the comparison with Ahn et al.'s Gamma^{-1}.

    ``seconds`` is the training's time (as first measured, also on a memo hit) plus this
    comparison's.
    """
    trained = memoized(train, config, progress)
    start = time.perf_counter()
    sigma, learned, n = trained.sigma.clone(), trained.learned.clone(), config.num_context
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
        trained.model_risk,
        optimal_risk,
        list(trained.loss_curve),
        list(trained.restart_risks),
        trained.seconds + time.perf_counter() - start,
    )
