"""Attention localisation and the W_QK eigenspectrum (004 ch. 12-13; Bao et al., ICML 2024).

``spectrum.qk-localization``: at a fixed nonzero mean of the eigenvalues of W_QK = W_Q W_K^T,
the attention entropy on random inputs falls as their variance shrinks (attention localises).
Measured on one ``MultiHeadAttention`` head whose W_QK = P diag(lambda) P^-1 is built with a
prescribed spectrum; the weights are read through the head's ``hook_pattern``. The third seed's
monitor (eigvalsh on the non-symmetric W_QK, kappa = lambda_1 / sum lambda) is refuted.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import torch

from transformer_math.claims.registry import (
    Context,
    Correction,
    Evidence,
    Figure,
    Refutation,
    Series,
    Size,
    at_least,
    at_most,
    claim,
    close_to,
    decide,
)
from transformer_math.diagnostics import QKSpectrumMonitor, head_qk_matrices, qk_spectrum
from transformer_math.diagnostics.attention_stats import mean_attention_entropy
from transformer_math.i18n.message import msg
from transformer_math.nn.attention import MultiHeadAttention
from transformer_math.nn.hooks import run_with_cache
from transformer_math.nn.init import no_init_draws, seeded

F64 = torch.float64
BAO = "Bao, Hataya & Karakida, ICML 2024 (PMLR 235), arXiv 2402.02098"


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


def _rank_one_head(d: int, lam: float, u: torch.Tensor) -> MultiHeadAttention:
    """One head (d_k = d) with W_QK = lam u u^T (|u| = 1): one nonzero eigenvalue, so the
    seed's kappa = lambda_1 / sum lambda is exactly 1 whatever lam; W_K = W_V = W_O = I."""
    with no_init_draws():  # every weight is set below
        mha = MultiHeadAttention(d, 1, bias=False, backend="reference").to(F64)
    with torch.no_grad():
        mha.q_proj.weight.copy_((lam * torch.outer(u, u)).T)
        for proj in (mha.k_proj, mha.v_proj, mha.out_proj):
            proj.weight.copy_(torch.eye(d, dtype=F64))
    return mha


def _row_entropies(mha: MultiHeadAttention, x: torch.Tensor) -> torch.Tensor:
    """Row entropies (B, n) of the head's weights, read at its ``hook_pattern``."""
    with torch.no_grad():
        _, cache = run_with_cache(mha, x, names=["hook_pattern"])
    w = cache["hook_pattern"][:, 0]
    return -(w * torch.log(w.clamp_min(1e-300))).sum(-1)


def _kappa(w_qk: torch.Tensor) -> float:
    """The seed's kappa = max |lambda| / sum |lambda| (004:779, its monitor's normalisation),
    from the library's spectrum (general eigen-solver, ``qk_spectrum``)."""
    eig = qk_spectrum(w_qk).eigenvalues
    assert eig is not None
    mags = eig.abs()
    return float(mags.max() / mags.sum())


#: eigenvalue sweep of the rank-1 heads (kappa = 1 on every point): from logits far below 1
#: (near-uniform rows) to logits far above it (hard selection)
RANK_ONE_LAMBDAS = [0.5, 2.0, 8.0, 32.0, 128.0, 512.0]


def _rank_one_sweep(d: int, x: torch.Tensor, g: torch.Generator) -> dict[str, Any]:
    """kappa, mean row entropy and its standard error (over sequences) per lam."""
    u = torch.randn(d, generator=g, dtype=F64)
    u = u / u.norm()
    kappas, entropies, ses = [], [], []
    for lam in RANK_ONE_LAMBDAS:
        mha = _rank_one_head(d, lam, u)
        kappas.append(_kappa(head_qk_matrices(mha)[0]))
        per_sequence = _row_entropies(mha, x).mean(-1)  # (B,): rows of a sequence share keys
        entropies.append(float(per_sequence.mean()))
        ses.append(float(per_sequence.std() / math.sqrt(per_sequence.numel())))
    return {"lambda": RANK_ONE_LAMBDAS, "kappa": kappas, "entropy": entropies, "se": ses}


def _pattern_entropy(mha: MultiHeadAttention, x: torch.Tensor) -> float:
    """Mean row entropy of the attention weights, read at the head's ``hook_pattern``."""
    with torch.no_grad():
        _, cache = run_with_cache(mha, x, names=["hook_pattern"])
    return mean_attention_entropy(cache["hook_pattern"])


def _seed_monitor_refutation(d: int, g: torch.Generator) -> dict[str, Any]:
    """The seed's eigvalsh monitor against the correct spectra on a random head (d_k = d / 4)."""
    real = seeded(lambda: MultiHeadAttention(d, 4), g).to(F64)
    w = head_qk_matrices(real)[0]
    correct = qk_spectrum(w)
    assert correct.eigenvalues is not None and correct.symmetric_eigenvalues is not None
    seed_eig, seed_kappa = _seed_kappa_monitor_eigvalsh_on_nonsymmetric(w)
    lower = torch.tril(w) + torch.tril(w, -1).T
    return {
        "correct": correct,
        "seed_eig": seed_eig,
        "seed_kappa": seed_kappa,
        "reads_one_triangle": float((seed_eig - torch.linalg.eigvalsh(lower)).abs().max()),
        "nonzero_true": int((correct.eigenvalues.abs() > 1e-9).sum()),
        "nonzero_seed": int((seed_eig.abs() > 1e-9).sum()),
        "sym_dev": float((seed_eig - correct.symmetric_eigenvalues).abs().max()),
    }


def _pearson(a: list[float], b: list[float]) -> float:
    """Pearson correlation of two equally long lists (nan when one is constant)."""
    ta, tb = torch.tensor(a, dtype=F64), torch.tensor(b, dtype=F64)
    ta, tb = ta - ta.mean(), tb - tb.mean()
    return float((ta * tb).sum() / (ta.norm() * tb.norm()))


def _notes(d: int, eig_mean: float, stds: list[float], batch: int, n: int, draws: int,
           var_err: float, ref: dict[str, Any]) -> list[str]:
    return [
        msg("One head with d_k = d = {d} whose W_QK = P diag(lambda) P^-1 (non-symmetric, real "
            "eigenvalues of mean {eig_mean} and standard deviation in {stds}); entropy of "
            "MultiHeadAttention weights (hook_pattern) on {batch} x {n} Gaussian tokens, {draws} "
            "draws each.", d=d, eig_mean=eig_mean, stds=stds, batch=batch, n=n, draws=draws),
        msg("Changed for issue 12: every standard deviation uses the same draws of P and of the "
        "shape of the spectrum (common random numbers, so a step compares the same heads), "
        "and 8 x 8 (was 4 x 2) inputs x draws at size tiny: the smallest step (0.02 at "
        "seed 0) was within the draw-to-draw noise of fresh heads."),
        msg("The monitor (torch.linalg.eigvals on the module's weights) recovers the constructed "
            "mean and variance to {var_err:.1e}.", var_err=var_err),
        msg("Range: std <= |mean|. For std >> |mean| the mean no longer matters and the entropy "
        "falls again with growing logit scale (as it does at mean 0)."),
        msg("Refuted (004 ch. 12): on a random head (d = {d}, d_k = 8) W_QK has rank <= 8 "
            "({nonzero_true} nonzero eigenvalues, complex pairs up to |Im| = {max_imag:.3f}); the "
            "seed's eigvalsh returns {nonzero_seed} nonzero real values, identical to eigvalsh of "
            "the lower triangle mirrored ({reads_one_triangle:.1e}) and different from the "
            "symmetric part's spectrum (max dev {sym_dev:.3f}); its kappa = {seed_kappa:.3f}. Bao "
            "et al. use the mean and variance of the spectrum, not kappa.", d=d,
            nonzero_true=ref['nonzero_true'], max_imag=ref['correct'].max_imag,
            nonzero_seed=ref['nonzero_seed'], reads_one_triangle=ref['reads_one_triangle'],
            sym_dev=ref['sym_dev'], seed_kappa=ref['seed_kappa']),
    ]


@claim(
    "spectrum.qk-localization",
    source="004 ch. 12-13; Bao, Hataya, Karakida, ICML 2024, arXiv 2402.02098 (FACTS.md)",
    statement="""At a fixed nonzero mean of the W_QK eigenspectrum, for eigenvalue standard
    deviations up to |mean| (the range measured; beyond it the entropy falls again as the
    variance grows), attention entropy on random inputs falls as the eigenvalue variance shrinks
    (attention localises), and a monitor with the
    general eigen-solver recovers that mean and variance from the weights. The third seed's
    monitor is refuted on the same heads: eigvalsh on the non-symmetric W_Q W_K^T (reading one
    triangle) does not recover the spectrum. Its localisation condition "kappa = lambda_1 /
    sum lambda -> 1 reduces attention to a hard selection of a few tokens" is refuted at
    kappa = 1 itself: a rank-1 W_QK = lambda u u^T has kappa = 1 for every lambda, and its
    attention goes from near-uniform (entropy log n - lambda^2 (n-1)(n+2)/(2 n^2 d)) to hard
    selection
    as lambda grows: kappa, which ignores the scale, does not decide localisation.""",
    statement_zh="""在 W_QK 特征谱均值固定且非零时，在特征值标准差不超过 |均值| 的范围内（所测范围；
    超出后熵随方差增大又会下降），随机输入上的注意力熵随特征值方差减小而下降
    （注意力局部化），用通用特征值求解器的监控器能从权重中恢复该均值与方差。第三份种子的监控器
    在同样的头上被驳斥：对非对称的 W_Q W_K^T 调用 eigvalsh（只读一个三角）恢复不了谱。其局部化
    条件"kappa = lambda_1 / sum lambda -> 1 时注意力退化为少数 token 的 hard selection"在
    kappa = 1 处即被驳斥：秩 1 的 W_QK = lambda u u^T 对任何 lambda 都有 kappa = 1，而其注意力
    随 lambda 增大从近乎均匀（熵 log n - lambda^2 (n-1)(n+2)/(2 n^2 d)）变为 hard selection：
    与尺度无关的 kappa 决定不了局部化。""",
    falsifier="spectrum.eigvalsh-nonsymmetric",
    expected="refuted",
    version=4,
    kind="measurement",
    seed_refs=[("004", 757, 866), ("004", 950, 960), ("004", 1099, 1099)],
    corrections=[
        Correction(
            seed="004", line=757,
            says="chapter 12: 'QK eigenspectrum localisation theory (ICLR 2026)'; Bao, Hataya "
            "and Karakida 'publish at ICLR 2026' (004:761)",
            correct="'Self-attention Networks Localize When QK-eigenspectrum Concentrates' "
            "appeared at ICML 2024 (PMLR 235), arXiv 2402.02098 (February 2024)",
            source=BAO),
        Correction(
            seed="004", line=785,
            says="Theorem 1 (necessary condition): localisation with |supp(a_i)| <= C implies "
            "kappa(W_QK) >= 1 - O(C/d)",
            correct="no such theorem is in the paper: it characterises localisation by the "
            "mean and variance of the W_QK eigenspectrum (small variance, nonzero mean) via a "
            "signal-propagation analysis, and does not use kappa = lambda_1 / sum lambda",
            source=f"{BAO}, sections 3-4"),
        Correction(
            seed="004", line=789,
            says="Theorem 2 (sufficient condition): kappa(W_QK) >= 1 - eps implies "
            "rank_eff(A) <= d / log(1/eps)",
            correct="not in the paper (see 004:785); its results concern the eigenspectrum's "
            "mean and variance, rank collapse and entropy collapse, and the LocAteR "
            "regulariser",
            source=f"{BAO}, sections 3-5"),
        Correction(
            seed="004", line=1099,
            says="footnote 11: Bao, H., Hataya, R., Karakida, R. (2026) ... ICLR 2026, "
            "OpenReview aRZjRj41WQ",
            correct="Bao, Hataya & Karakida (2024), ICML 2024 (PMLR 235), arXiv 2402.02098",
            source=BAO),
    ],
    refutes=[
        Refutation(
            seed="004", line=846, quote="eigenvalues = torch.linalg.eigvalsh(W_qk)",
            says="the monitor's eigenvalues of W_QK = W_q @ W_k.T (004:845) by "
            "torch.linalg.eigvalsh",
            reading="the seed's monitor code run on the heads' W_QK: it must recover the "
            "spectrum (mean and variance within 1e-8, at most d_k nonzero eigenvalues of a "
            "rank-d_k W_QK)",
            correct="W_QK is not symmetric: eigvalsh reads one triangle; use the general "
            "solver (torch.linalg.eigvals), whose spectrum is complex in general"),
        Refutation(
            seed="004", line=781, also=(960,),
            quote=r"当 $\kappa ({\mathbf{W}}_{QK})\to 1$ 时，attention 矩阵 $\mathbf{A}$ "
            r"退化为少数 token 的 hard selection",
            says="when kappa(W_QK) = lambda_1 / sum lambda -> 1 the attention matrix reduces "
            "to a hard selection of a few tokens; repeated at 004:960 (kappa -> 1 => entropy "
            "-> 0, 'fully consistent with chapter 12')",
            reading="a sufficient condition, tested in its limit: at kappa = 1 exactly "
            "(rank-1 W_QK, every eigenvalue scale on the sweep) the rows concentrate on fewer "
            "than half the tokens, exp(mean entropy) <= n/2 (far more generous than 'a few')",
            correct="kappa is scale-free, localisation is not: at kappa = 1 the entropy runs "
            "from log n - lambda^2 (n-1)(n+2)/(2 n^2 d) (near-uniform) to hard selection as lambda "
            "grows; Bao et al. tie localisation to a small variance around a nonzero mean of "
            "the spectrum, where kappa is near its minimum 1/d"),
    ],
    audit="""Issue 31 review: 004:846 (eigvalsh on a non-symmetric matrix) is a real seed-code
    bug, kept (code-audit inside this measurement). 004:781 was refuted in version 2 by a
    correlation over kappa <= 0.09, nowhere near kappa -> 1 (agreed: weak). Version 3 tests it
    at kappa = 1: rank-1 W_QK = lambda u u^T over lambda = 0.5 ... 512 (monitor's kappa = 1 on
    every point); near-uniform at small lambda (the seed's reading fails there), hard selection
    at large lambda (the reviewer's point: a large eigenvalue does localise, which is the scale,
    not kappa). 004:960 repeats 004:781 and is booked here once (also=). Bands: the small-lambda
    deficit against its second-order expansion within 5 SE (over sequences) + the fourth-order
    term (3 lambda^2/d relative); 'hard selection' = mean entropy <= log 2 at the largest
    lambda; the seed's 'a few tokens' read generously as n/2. The monitor (diagnostics.qk_spectrum,
    where the falsifier sits) is exported by transformer_math.diagnostics. On issue 31's rule
    that sufficient conditions are not refutable: that rule forbids reading one as necessary
    (testing the converse); 004:781 is tested as the sufficient condition it is, by a case
    that meets the condition (kappa = 1 exactly) and misses the conclusion (near-uniform rows),
    which is what refutes an 'if P then Q'. kappa is scale-free (lambda W and W share it) and
    localisation is not, so no fixed size makes this inconclusive. Version 4: the small-lambda
    prediction first omitted the query's own key, (n-1)/(2 n d) instead of (n-1)(n+2)/(2 n^2 d),
    a 3 % bias that put one seed 4.5 SE off (the seed-firmness rule caught it): the derivation
    was corrected, the band kept; the correct statement is restricted to std <= |mean| (R2
    review of version 3).""",
)
def check_qk_localization(ctx: Context) -> Evidence:
    """One head per (variance, draw) with a prescribed W_QK spectrum (``_head_with_spectrum``):
    entropy of its weights (``hook_pattern``), its spectrum by the library monitor
    (``QKSpectrumMonitor``, general eigen-solver), and the seed's monitor (eigvalsh, kappa) on
    the same W_QK; plus one randomly initialised head (d_k = d/4) for the rank bound.

    Pass conditions (the correct statement): the mean entropy rises with every step of the
    variance at mean 1 (common random numbers: every variance uses the same P and shape of the
    spectrum); the monitor recovers the constructed mean and variance within 1e-8 (float64
    eigensolver rounding on 32 x 32 matrices of condition number ~3 is ~1e-13); the random
    head's W_QK has at most d_k nonzero eigenvalues (|lambda| > 1e-9; rank W_Q W_K^T <= d_k).
    The seed's version, computed on the same heads (``seed_margins``): its eigvalsh monitor
    recovers the mean and variance within the same 1e-8 and finds at most d_k nonzero
    eigenvalues of the random head (004:846).

    kappa -> 1 (004:781, 004:960), at kappa = 1: rank-1 heads W_QK = lambda u u^T
    (``_rank_one_sweep``) on inputs of their own (more sequences than the variance sweep, so
    that the standard error is well estimated), lambda in ``RANK_ONE_LAMBDAS``. Prediction: the
    logits lambda a_i a_j / sqrt(d) (a = x u ~ N(0, 1)); H = log n - m2/2 + O(s^3), m2 the
    variance of row i's logits over its n keys, lambda^2 a_i^2 / d times the sample variance of
    the a_j. The query is one of its own keys, so E[a_i^2 m2(a)] = (n-1)(n+2)/n^2 (not
    (n-1)/n: the j = i term adds E a^4 = 3) and E[log n - H] = lambda^2 (n-1)(n+2)/(2 n^2 d) at
    small lambda (band: 5 standard errors over sequences plus the next orders, bounded by
    3 lambda^2 / d of the leading one since E a^4 = 3); the entropy falls at every step of
    lambda and reaches hard selection (mean entropy <= log 2) at the largest. The library's
    kappa (general solver) is 1 on every point (1e-9). Seed's version: kappa = 1 gives a hard
    selection of a few tokens at every lambda: exp(mean entropy) <= n/2.

    Version 4 (issue 31, after the R2 review of version 3): the correct statement is restricted
    to the range measured (eigenvalue std <= |mean|, as the notes already said), and the rank-1
    arm's small-lambda prediction is corrected (below) and drawn on its own 128-256 sequences.

    Version 3 (issue 31): the kappa -> 1 refutation is measured at kappa = 1 (the rank-1 sweep)
    instead of by a correlation over kappa <= 0.09 (version 2's Pearson margin is dropped);
    004:960 is booked on the same record. (While it was written, the small-lambda prediction
    first read lambda^2 (n-1)/(2 n d), missing the query's own key; measured on 4,000 sequences
    it was 3 % = (n+2)/n - 1 low, 5 standard errors: the derivation was corrected, the band was
    not widened.)

    Version 2 (issue 14): the refutation is measured (``seed_margins`` on the sweep's own heads)
    instead of ``refutes_seed=True``; the falsifier is the planted bug
    ``spectrum.eigvalsh-nonsymmetric`` in the library monitor, no longer a sweep at mean 0.
    """
    d, n = 32, 64
    tiny = ctx.size is Size.TINY
    batch, draws = (8, 8) if tiny else (16, 16)
    eig_mean = 1.0
    stds = [0.0, 0.25, 0.5, 0.75, 1.0]  # in [0, |mean|]: the regime where the mean dominates
    g = ctx.generator(7)
    x = torch.randn(batch, n, d, generator=g, dtype=F64)
    entropies, seed_kappas, var_err, seed_var_err = [], [], 0.0, 0.0
    for si, std in enumerate(stds):
        ent, kap = [], []
        for j in range(draws):
            # common random numbers: draw j uses the same P and shape of the spectrum for every
            # std, so a step of the curve compares the same heads, not fresh ones
            mha = _head_with_spectrum(d, eig_mean, std, ctx.generator(100 + j))
            row = QKSpectrumMonitor(mha).measure()[0]  # measured from the module's weights
            var_err = max(
                var_err, abs(row["eig_variance"] - std**2), abs(row["eig_mean"] - eig_mean)
            )
            seed_eig, seed_kappa = _seed_kappa_monitor_eigvalsh_on_nonsymmetric(
                head_qk_matrices(mha)[0])
            seed_var = float(((seed_eig - seed_eig.mean()) ** 2).mean())
            seed_var_err = max(seed_var_err, abs(seed_var - std**2),
                               abs(float(seed_eig.mean()) - eig_mean))
            kap.append(seed_kappa)
            ent.append(_pattern_entropy(mha, x))
        entropies.append(sum(ent) / len(ent))
        seed_kappas.append(sum(kap) / len(kap))
        ctx.report_progress((si + 1) / len(stds))
    ref = _seed_monitor_refutation(d, ctx.generator(0))
    d_k = d // 4
    x_rank_one = torch.randn(ctx.pick(128, 256, 512), n, d, generator=ctx.generator(12),
                             dtype=F64)
    rank_one = _rank_one_sweep(d, x_rank_one, ctx.generator(11))
    lam0, h = rank_one["lambda"][0], rank_one["entropy"]
    deficit0 = math.log(n) - h[0]
    predicted0 = lam0**2 * (n - 1) * (n + 2) / (2 * n * n * d)
    band0 = 5.0 * rank_one["se"][0] + 3.0 * lam0**2 / d * predicted0
    margins = [
        at_least("min entropy step between successive variances",
                 min(b - a for a, b in itertools.pairwise(entropies)), 0.0),
        at_most("monitor error on the spectrum mean and variance", var_err, 1e-8),
        at_most("random head: nonzero eigenvalues of W_QK - d_k (integers: < 1/2 is <=)",
                ref["nonzero_true"] - d_k, 0.5),
        at_least("rank-1 heads: min kappa over the lambda sweep (kappa = 1)",
                 min(rank_one["kappa"]), 1.0 - 1e-9),
        close_to(f"rank-1, lambda = {lam0:g}: entropy deficit - lambda^2 (n-1)(n+2)/(2 n^2 d)",
                 deficit0, predicted0, abs_=band0),
        at_most("rank-1: max entropy step along the lambda sweep (falls at every step)",
                max(b - a for a, b in itertools.pairwise(h)), 0.0),
        at_most(f"rank-1, lambda = {rank_one['lambda'][-1]:g}: mean entropy (hard selection: "
                "<= log 2)", h[-1], math.log(2.0)),
    ]
    seed_margins = [
        at_most("seed's eigvalsh monitor: error on the spectrum mean and variance",
                seed_var_err, 1e-8),
        at_most("seed's eigvalsh: nonzero eigenvalues of the random head's W_QK - d_k",
                ref["nonzero_seed"] - d_k, 0.5),
        at_most("004:781 kappa -> 1 gives a hard selection of a few tokens: max over lambda "
                "of exp(mean entropy) at kappa = 1 (<= n/2)", math.exp(max(h)), n / 2),
    ]
    fig = Figure(
        title=msg("Attention entropy vs W_QK eigenvalue variance (mean {eig_mean}, d = {d}, n = "
                  "{n})", eig_mean=eig_mean, d=d, n=n),
        xlabel=msg("eigenvalue variance of W_QK (measured by the monitor)"),
        ylabel=msg("mean attention entropy (nats)"),
        series=[Series(msg("measured"), [s**2 for s in stds], entropies, style="o-")],
        hlines=[(math.log(n), msg("log n (uniform)"))],
    )
    return Evidence(
        predicted="entropy increases with the eigenvalue variance at fixed mean",
        measured={"variance": [s**2 for s in stds], "entropy": [round(e, 4) for e in entropies],
                  "seed_kappa": [round(k, 4) for k in seed_kappas],
                  "rank-1 (kappa = 1) entropy by lambda": [round(e, 4) for e in h]},
        tolerance={"monotone": "each step >= 0", "monitor": 1e-8, "rank": "exact"},
        verdict=decide(margins, seed_margins),
        margins=margins,
        seed_margins=seed_margins,
        notes=[
            *_notes(d, eig_mean, stds, batch, n, draws, var_err, ref),
            f"Seed's monitor on the same heads: its eigvalsh misses the constructed "
            f"mean/variance by up to {seed_var_err:.3f}; its kappa goes "
            f"{seed_kappas[0]:.4f} -> {seed_kappas[-1]:.4f} over the variance sweep, far from 1 "
            "(reported; not a margin since version 3).",
            f"kappa = 1 (rank-1 W_QK = lambda u u^T, lambda = {rank_one['lambda']}): mean "
            f"entropy {[round(e, 3) for e in h]} (log n = {math.log(n):.3f}); at lambda = "
            f"{lam0:g} the deficit is {deficit0:.2e} (predicted {predicted0:.2e}), i.e. "
            f"exp(entropy) = {math.exp(h[0]):.1f} of {n} tokens: kappa = 1 and near-uniform. "
            "Localisation follows the scale lambda, which kappa ignores (004:781, 004:960).",
        ],
        figures=[fig],
        details={
            "seed_kappa": seed_kappas, "kappa_entropy_correlation": _pearson(seed_kappas,
                                                                             entropies),
            "rank_one": rank_one,
            "monitor_error": var_err, "seed_monitor_error": seed_var_err,
            "true_eigenvalues_re": ref["correct"].eigenvalues.real.tolist(),
            "true_eigenvalues_im": ref["correct"].eigenvalues.imag.tolist(),
            "seed_eigvalsh": ref["seed_eig"].tolist(),
        },
    )
