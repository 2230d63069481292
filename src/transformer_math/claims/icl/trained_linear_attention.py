"""Trained one-layer linear self-attention: one GD step (von Oswald et al. 2023) and, under
non-isotropic inputs, GD preconditioned by Gamma^{-1} (Ahn et al. 2023, Thm. 1); 000 §8.3.6.

The runs are ``experiments.icl_gd`` and ``experiments.icl_preconditioner``, memoised so that a
claim and its falsifier train once.
"""

from __future__ import annotations

from transformer_math.claims.icl._shared import SOURCE, preset, run_experiment
from transformer_math.claims.registry import (
    Context,
    Evidence,
    Falsifier,
    Figure,
    Series,
    Tier,
    agreement,
    all_hold,
    at_least,
    at_most,
    claim,
)
from transformer_math.experiments import icl_gd, icl_preconditioner


def gd_figure(r: icl_gd.ICLGDResult) -> Figure:
    steps = [float(s) for s in r.steps]
    return Figure(
        title="Trained linear self-attention vs one GD step",
        xlabel="training step",
        ylabel="value",
        series=[
            Series("cosine of d y_hat / d x_q", steps, r.cosine),
            Series("model loss", steps, r.model_loss),
            Series("GD loss (line-searched eta)", steps, [r.gd_loss] * len(steps), "line", "--"),
        ],
        hlines=[(0.99, "0.99")],
    )


@claim(
    "icl.trained-matches-gd",
    source=f"{SOURCE}; von Oswald et al. 2023, §4 (d = 10, N = 10, x ~ U(-1, 1)^d)",
    statement="""A one-layer linear self-attention model trained on in-context linear regression
    agrees with one step of line-searched GD: the cosine of d(y_hat)/d(x_q) between the two is
    >= 0.99.""",
    tier=Tier.FULL,
    falsifier=Falsifier(
        "untrained model",
        {"checkpoint": "init"},
        "the same comparison at initialisation must not pass",
    ),
)
def check_trained_matches_gd(ctx: Context, checkpoint: str = "final") -> Evidence:
    config = preset(icl_gd.ICLGDConfig, ctx)
    r = run_experiment(icl_gd, config, ctx)
    index = -1 if checkpoint == "final" else 0
    cosine = r.cosine[index]
    margins = [at_least("cosine of d(y_hat)/d(x_q), model vs one GD step", cosine, 0.99)]
    return Evidence(
        predicted="cosine >= 0.99 (the trained layer implements one GD step)",
        measured=round(cosine, 5),
        tolerance="0.99 (the issue's threshold; von Oswald et al. report ~0.99+)",
        verdict=agreement(all_hold(margins)),
        margins=margins,
        notes=[
            f"config {config}",
            f"run time {r.seconds:.1f} s",
            f"eta (line search) {r.eta_gd:.4f} vs learned eta {r.eta_model[index]:.4f}",
            f"loss model {r.model_loss[index]:.4f} vs GD {r.gd_loss:.4f}",
            *r.notes,
            "issue 12: tiny trains 3 initialisations and keeps the best on a validation batch "
            "(seed 4 stayed at a saddle with one: cosine 0.485); see ICLGDConfig.tiny",
        ],
        figures=[gd_figure(r)],
        details={
            "sensitivity_l2": r.sensitivity_l2[index],
            "prediction_rms": r.prediction_rms[index],
            "checkpoint": checkpoint,
        },
    )


def preconditioner_figure(r: icl_preconditioner.ICLPreconditionerResult) -> Figure:
    learned = [v for row in r.learned for v in row]
    predicted = [v for row in r.gamma_inverse for v in row]
    ends = [min(predicted), max(predicted)]
    return Figure(
        title="Learned preconditioner n A vs Gamma^{-1} (entries)",
        xlabel="Gamma^{-1} entry",
        ylabel="learned entry",
        series=[
            Series("entries", predicted, learned, "scatter", "o"),
            Series("y = x", ends, ends, "line", "--"),
        ],
    )


@claim(
    "icl.preconditioned-optimum",
    source="Ahn et al. 2023 (arXiv 2306.00297), Thm. 1; " + SOURCE,
    statement="""With x ~ N(0, Sigma), w* ~ N(0, I), the trained one-layer linear attention performs
    one step of GD preconditioned by Gamma^{-1}, Gamma = ((n+1)/n) Sigma + (tr Sigma / n) I
    (within 15 % relative Frobenius error).""",
    tier=Tier.FULL,
    falsifier=Falsifier(
        "naive whitening Sigma^{-1}",
        {"prediction": "sigma_inverse"},
        "the seed's reading 'the preconditioner approximates Sigma^{-1}'",
    ),
)
def check_preconditioned_optimum(ctx: Context, prediction: str = "gamma_inverse") -> Evidence:
    config = preset(icl_preconditioner.ICLPreconditionerConfig, ctx)
    r = run_experiment(icl_preconditioner, config, ctx)
    rel = r.relative_error if prediction == "gamma_inverse" else r.relative_error_vs_sigma_inverse
    margins = [at_most("|n A - prediction|_F / |prediction|_F", rel, 0.15)]
    return Evidence(
        predicted=f"n A = {prediction.replace('_', ' ')}",
        measured=f"relative Frobenius error {rel:.4f}",
        tolerance="0.15 (the claim's; finite training and SGD noise)",
        verdict=agreement(all_hold(margins)),
        margins=margins,
        notes=[
            f"config {config}",
            f"run time {r.seconds:.1f} s",
            f"risk trained {r.model_risk:.4f} vs optimum tr(S) - tr(S G^-1 S) = "
            f"{r.optimal_risk:.4f}",
            f"restart risks {[round(v, 4) for v in r.restart_risks]} (best kept)",
            f"error vs Sigma^-1 would be {r.relative_error_vs_sigma_inverse:.3f}",
        ],
        figures=[preconditioner_figure(r)],
        details={"learned": r.learned, "gamma_inverse": r.gamma_inverse, "sigma": r.sigma},
    )
