"""Outer-product memory crosstalk (003 concept page, associative-memory view; Kohonen 1972).

``memory.outer-product-crosstalk``: W = sum_i v_i k_i^T with N random unit keys in d dimensions
returns v_i + crosstalk of mean square (N-1)/d when queried with k_i (each k_j^T k_i, j != i, has
variance 1/d), so crosstalk equals the signal at N = d + 1: the capacity threshold of the
tutorial 003 cites ("以干扰与信号等大为阈值", 003:52). That threshold is a definition, not the
point where retrieval fails: decoding by the nearest stored value stays correct at N = d, with an
error rate below the Gaussian-crosstalk estimate of ``theory.associative_memory``.

Retired half (issue 14): the claim used to compare with a "gated MLP memory of the same size";
that memory (``GatedMLPMemory``) is a hand-set lookup table with one hidden unit per stored key
(w_in = K), not a learned MLP, so its retrieval was fixed by construction. A fair test of "MLP
gating reduces interference" (003:48) needs a trained MLP against a trained linear memory (whose
least-squares solution W = V^T K^+ has no crosstalk at all for N <= d); it is not made here.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import torch

from transformer_math.claims.registry import (
    Context,
    Evidence,
    Figure,
    Series,
    Size,
    at_least,
    at_most,
    claim,
    decide,
)
from transformer_math.theory.associative_memory import (
    OuterProductMemory,
    predicted_cosine,
    predicted_nearest_error,
    random_unit_vectors,
    retrieval_stats,
)

RATIOS = [1 / 16, 1 / 8, 1 / 4, 1 / 2, 1.0, 2.0, 4.0]  # N / d


@dataclass
class _Sweep:
    """Per (d, N): crosstalk and nearest-value retrieval, measured and predicted."""

    rows: list[dict[str, float | int | bool]] = field(default_factory=list)


def _sweep(dims: list[int], trials: int, g: torch.Generator,
           progress: Callable[[float], None]) -> _Sweep:
    """``trials`` independent memories per (d, N/d in RATIOS), each queried with its keys."""
    out = _Sweep()
    for di, d in enumerate(dims):
        for r in RATIOS:
            n = max(2, round(r * d))
            ms, cs, accs = [], [], []
            for _ in range(trials):
                keys = random_unit_vectors(n, d, generator=g)
                values = random_unit_vectors(n, d, generator=g)
                stats = retrieval_stats(OuterProductMemory(keys, values), keys, values)
                ms.append(stats.mean_square_crosstalk)
                cs.append(stats.mean_cosine)
                accs.append(stats.nearest_value_accuracy)
            mean = sum(ms) / trials
            se = math.sqrt(sum((m - mean) ** 2 for m in ms) / (trials - 1) / trials)
            pred = (n - 1) / d
            queries = trials * n
            out.rows.append({
                "d": d, "N": n, "pred": pred, "measured": mean, "se": se,
                "z": abs(mean - pred) / max(se, 1e-300),
                "cosine": sum(cs) / trials, "cosine_pred": predicted_cosine(n, d),
                "nearest_error": 1.0 - sum(accs) / trials,
                "nearest_error_pred": predicted_nearest_error(n, d), "queries": queries,
            })
        progress((di + 1) / len(dims))
    return out


def _retrieval_figure(sweep: _Sweep, d: int) -> Figure:
    rows = [r for r in sweep.rows if r["d"] == d]
    xs = [float(r["N"]) / d for r in rows]
    return Figure(
        title=f"Outer-product memory, d = {d}: retrieval vs N/d",
        xlabel="N / d (pairs per dimension)",
        ylabel="cosine / nearest-value accuracy",
        series=[
            Series("cosine(W k_i, v_i), measured", xs, [float(r["cosine"]) for r in rows],
                   style="o-"),
            Series("1/sqrt(1 + (N-1)/d)", xs, [float(r["cosine_pred"]) for r in rows],
                   style="--"),
            Series("nearest-value accuracy, measured", xs,
                   [1.0 - float(r["nearest_error"]) for r in rows], style="s-"),
            Series("Gaussian-crosstalk estimate", xs,
                   [1.0 - float(r["nearest_error_pred"]) for r in rows], style=":"),
        ],
        logx=True,
        vlines=[(1.0, "N = d: crosstalk = signal")],
    )


def _slack(p: float, queries: int) -> float:
    """Three binomial standard errors of an error rate p over ``queries`` queries, plus 3/M
    (the rate of three stray errors, so that a model error of ~0 is not a zero tolerance)."""
    return 3.0 * math.sqrt(p * (1.0 - p) / queries) + 3.0 / queries


@claim(
    "memory.outer-product-crosstalk",
    source="003 concept page (联想记忆视角) and the tutorial it cites; Kohonen 1972",
    statement="""An outer-product memory W = sum v_i k_i^T with N random unit keys in d dimensions
    returns v_i plus crosstalk of mean square (N-1)/d, so crosstalk equals the signal at
    N = d + 1 (the tutorial's capacity threshold). That threshold is not where retrieval fails:
    nearest-value decoding is still >= 99% correct at N = d, and its error rate stays below the
    Gaussian-crosstalk estimate up to N = 4d.""",
    falsifier="memory.outer-product-transposed",
    expected="verified",
    version=2,
    seed_refs=[("003", 46, 52)],
)
def check_outer_product_crosstalk(ctx: Context) -> Evidence:
    """Three margins on one sweep of random memories (24 per cell).

    - crosstalk: max over (d, N) of |mean-square crosstalk - (N-1)/d| / SE <= 5;
    - the threshold is not a failure: nearest-value accuracy at N = d >= 0.99 for every d (the
      Gaussian estimate gives <= 2e-3 errors at d >= 64);
    - error rate <= Gaussian-crosstalk estimate + 3 binomial SE + 3/M in every cell (the
      estimate over-states the tails: bounded inner products have lighter tails than Gaussians).

    Version 2 (issue 14): the review found that "fails" meant cosine < 0.9 while nearest-value
    retrieval was 100% correct at N = d; nearest-value accuracy is now measured against a
    derived prediction, N/d runs to 4, the gated-MLP half is retired (module docstring), and
    the falsifier is the planted bug memory.outer-product-transposed (was correlated keys, a
    change of the data).
    """
    tiny = ctx.size is Size.TINY
    dims = [64, 128] if tiny else [64, 256]
    trials = 24
    sweep = _sweep(dims, trials, ctx.generator(8), ctx.report_progress)
    rows = sweep.rows
    z_tol = 5.0
    worst_z = max(float(r["z"]) for r in rows)
    at_d = [r for r in rows if r["N"] == r["d"]]
    excess = max(float(r["nearest_error"]) - float(r["nearest_error_pred"])
                 - _slack(float(r["nearest_error_pred"]), int(r["queries"])) for r in rows)
    margins = [
        at_most("max |z| of the mean-square crosstalk over (d, N)", worst_z, z_tol),
        at_least("min nearest-value accuracy at N = d",
                 min(1.0 - float(r["nearest_error"]) for r in at_d), 0.99),
        at_most("max (error rate - Gaussian estimate - 3 SE - 3/M) over (d, N)", excess, 0.0),
    ]
    return Evidence(
        predicted={"mean_square_crosstalk": "(N-1)/d", "accuracy_at_N_eq_d": ">= 0.99",
                   "nearest_error": "<= Gaussian-crosstalk estimate"},
        measured={
            "worst_z": round(worst_z, 2),
            "at_N_eq_d": {str(r["d"]): {"crosstalk": round(float(r["measured"]), 4),
                                        "cosine": round(float(r["cosine"]), 4),
                                        "nearest_accuracy": 1.0 - float(r["nearest_error"])}
                          for r in at_d},
            "max_error_excess": excess,
        },
        tolerance={"crosstalk": "5 standard errors over trials",
                   "nearest_error": "3 binomial SE + 3/M above the estimate"},
        verdict=decide(margins),
        margins=margins,
        notes=[
            f"Unit keys and values uniform on the sphere, d in {dims}, N/d in {RATIOS}, "
            f"{trials} independent memories each; each memory is queried with all its keys; "
            "nearest-value decoding = argmax_j v_j^T W k_i.",
            f"Crosstalk tolerance: {z_tol:g} standard errors of the mean over {trials} "
            f"independent trials (a t-test with {trials - 1} degrees of freedom, two-sided "
            "p < 1e-4 per cell); the margin is the worst cell.",
            "At N = d the crosstalk equals the signal (mean square (d-1)/d, cosine ~0.71) and "
            "yet nearest-value decoding is right for >= 99% of the queries: 'interference "
            "equals signal' (003:52) is a conservative capacity threshold; decoding fails only "
            "when sqrt(2/d + N/d^2) nears 1/sqrt(2 ln N), N of order d^2/(2 ln N).",
            "Error-rate model (theory.associative_memory.predicted_nearest_error): independent "
            "Gaussian scores, right value N(1, (N-1)/d^2), wrong ones variance 2/d + (N-2)/d^2; "
            "it over-states the error (measured 2-4x lower in the tails), so the margin is one-"
            "sided.",
            "Retired (issue 14): the gated-MLP comparison (a hand-set lookup table, not a "
            "learned MLP; see the module docstring). Boundary (003:52): random keys queried "
            "with stored keys; not a bound on what a trained model memorises.",
        ],
        figures=[_retrieval_figure(sweep, dims[-1])],
        details={"rows": rows},
    )
