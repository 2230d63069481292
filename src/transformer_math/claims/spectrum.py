"""Claim of 004 ch. 12-13: attention localisation and the W_QK eigenspectrum (Bao et al. 2024)."""

from __future__ import annotations

import itertools
import math

import torch

from transformer_math.claims.registry import (
    Context,
    Evidence,
    Falsifier,
    Figure,
    Series,
    Size,
    agreement,
    all_hold,
    at_least,
    at_most,
    claim,
)
from transformer_math.diagnostics.attention_stats import mean_attention_entropy
from transformer_math.diagnostics.qk_spectrum import (
    QKSpectrumMonitor,
    head_qk_matrices,
    qk_spectrum,
)
from transformer_math.nn.attention import MultiHeadAttention
from transformer_math.nn.init import no_init_draws, seeded

F64 = torch.float64


def _seed_kappa_monitor_eigvalsh_on_nonsymmetric(w_qk: torch.Tensor) -> tuple[torch.Tensor, float]:
    """REFUTATION DEMO ONLY: the third seed's QKSpectrumMonitor (004 ch. 12), which calls
    ``torch.linalg.eigvalsh`` on the NON-symmetric W_Q W_K^T (eigvalsh reads only the lower
    triangle) and reports kappa = max|lambda| / sum|lambda|. Never use this as a measurement."""
    eig = torch.linalg.eigvalsh(w_qk)  # deliberately wrong: w_qk is not symmetric
    mags = eig.abs()
    return eig, float(mags.max() / mags.sum())


def _head_with_spectrum(d: int, mean: float, std: float, g: torch.Generator) -> MultiHeadAttention:
    """One head (d_k = d) whose W_QK = P diag(lambda) P^{-1} is non-symmetric with real eigenvalues
    of exact mean ``mean`` and variance ``std**2``; W_K = W_V = W_O = I."""
    eps = torch.randn(d, generator=g, dtype=F64)
    eps = (eps - eps.mean()) / eps.std(correction=0)
    lam = mean + std * eps
    p = torch.eye(d, dtype=F64) + 0.3 * torch.randn(d, d, generator=g, dtype=F64) / math.sqrt(d)
    w_qk = p @ torch.diag(lam) @ torch.linalg.inv(p)
    with no_init_draws():  # every weight is set below: nothing is drawn from the global RNG
        mha = MultiHeadAttention(d, 1, bias=False, backend="reference").to(F64)
    with torch.no_grad():
        mha.q_proj.weight.copy_(w_qk.T)  # q = x W_QK  (nn.Linear stores the transpose)
        for proj in (mha.k_proj, mha.v_proj, mha.out_proj):
            proj.weight.copy_(torch.eye(d, dtype=F64))
    return mha


@claim(
    "spectrum.qk-localization",
    source="004 ch. 12-13; Bao, Hataya, Karakida, ICML 2024, arXiv 2402.02098 (FACTS.md)",
    statement="""At a fixed nonzero mean of the W_QK eigenspectrum, attention entropy on random
    inputs falls as the eigenvalue variance shrinks (attention localises). The third seed's
    monitor is refuted: it applies eigvalsh to the non-symmetric W_Q W_K^T (reading one
    triangle) and its kappa = lambda_1 / sum lambda is not the paper's quantity.""",
    falsifier=Falsifier(
        "zero eigenvalue mean",
        {"eig_mean": 0.0},
        "the same sweep with spectrum mean 0: shrinking the variance now spreads attention",
    ),
)
def check_qk_localization(ctx: Context, eig_mean: float = 1.0) -> Evidence:
    d, n = 32, 64
    tiny = ctx.size is Size.TINY
    batch, draws = (8, 8) if tiny else (16, 16)
    stds = [0.0, 0.25, 0.5, 0.75, 1.0]  # in [0, |mean|]: the regime where the mean dominates
    g = ctx.generator(7)
    x = torch.randn(batch, n, d, generator=g, dtype=F64)
    entropies, var_err = [], 0.0
    for si, std in enumerate(stds):
        ent = []
        for j in range(draws):
            # common random numbers: draw j uses the same P and shape of the spectrum for every
            # std, so a step of the curve compares the same heads, not fresh ones
            mha = _head_with_spectrum(d, eig_mean, std, ctx.generator(100 + j))
            row = QKSpectrumMonitor(mha).measure()[0]  # measured from the module's weights
            var_err = max(
                var_err, abs(row["eig_variance"] - std**2), abs(row["eig_mean"] - eig_mean)
            )
            with torch.no_grad():
                weights = mha(x, return_weights=True).weights
            assert weights is not None
            ent.append(mean_attention_entropy(weights))
        entropies.append(sum(ent) / len(ent))
        ctx.report_progress((si + 1) / len(stds))
    margins = [
        at_least("min entropy step between successive variances",
                 min(b - a for a, b in itertools.pairwise(entropies)), 0.0),
        at_most("monitor error on the spectrum mean and variance", var_err, 1e-8),
    ]

    # Refutation of the seed's monitor on a real (random) head: d = 32, d_k = 8.
    real = seeded(lambda: MultiHeadAttention(d, 4), ctx.generator(0)).to(F64)
    w = head_qk_matrices(real)[0]
    correct = qk_spectrum(w)
    assert correct.eigenvalues is not None and correct.symmetric_eigenvalues is not None
    seed_eig, seed_kappa = _seed_kappa_monitor_eigvalsh_on_nonsymmetric(w)
    lower = torch.tril(w) + torch.tril(w, -1).T
    reads_one_triangle = float((seed_eig - torch.linalg.eigvalsh(lower)).abs().max())
    nonzero_true = int((correct.eigenvalues.abs() > 1e-9).sum())
    nonzero_seed = int((seed_eig.abs() > 1e-9).sum())
    sym_dev = float((seed_eig - correct.symmetric_eigenvalues).abs().max())
    fig = Figure(
        title=f"Attention entropy vs W_QK eigenvalue variance (mean {eig_mean}, d = {d}, n = {n})",
        xlabel="eigenvalue variance of W_QK (measured by the monitor)",
        ylabel="mean attention entropy (nats)",
        series=[Series("measured", [s**2 for s in stds], entropies, style="o-")],
        hlines=[(math.log(n), "log n (uniform)")],
    )
    return Evidence(
        predicted="entropy increases with the eigenvalue variance at fixed mean",
        measured={"variance": [s**2 for s in stds], "entropy": [round(e, 4) for e in entropies]},
        tolerance={"monotone": "strict", "monitor_variance": 1e-8},
        verdict=agreement(all_hold(margins), refutes_seed=True),
        margins=margins,
        notes=[
            f"One head with d_k = d = {d} whose W_QK = P diag(lambda) P^-1 (non-symmetric, real "
            f"eigenvalues of mean {eig_mean} and standard deviation in {stds}); entropy of "
            f"MultiHeadAttention weights on {batch} x {n} Gaussian tokens, {draws} draws each.",
            "Changed for issue 12: every standard deviation uses the same draws of P and of the "
            "shape of the spectrum (common random numbers, so a step compares the same heads), "
            "and 8 x 8 (was 4 x 2) inputs x draws at size tiny: the smallest step (0.02 at "
            "seed 0) was within the draw-to-draw noise of fresh heads.",
            f"The monitor (torch.linalg.eigvals on the module's weights) recovers the constructed "
            f"mean and variance to {var_err:.1e}.",
            "Range: std <= |mean|. For std >> |mean| the mean no longer matters and the entropy "
            "falls again with growing logit scale (the zero-mean behaviour of the falsifier).",
            f"Refuted (004 ch. 12): on a random head (d = {d}, d_k = 8) W_QK has rank <= 8 "
            f"({nonzero_true} nonzero eigenvalues, complex pairs up to |Im| = "
            f"{correct.max_imag:.3f}); the seed's eigvalsh returns {nonzero_seed} nonzero real "
            f"values, identical to eigvalsh of the lower triangle mirrored "
            f"({reads_one_triangle:.1e}) and different from the symmetric part's spectrum (max "
            f"dev {sym_dev:.3f}); its kappa = {seed_kappa:.3f}. Bao et al. use the mean and "
            "variance of the spectrum, not kappa.",
        ],
        figures=[fig],
        details={
            "true_eigenvalues_re": correct.eigenvalues.real.tolist(),
            "true_eigenvalues_im": correct.eigenvalues.imag.tolist(),
            "seed_eigvalsh": seed_eig.tolist(),
        },
    )
