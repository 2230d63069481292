"""``tmath approx-rate``: units needed for accuracy eps, N ~ eps^(-d/s) (000 §8.3.4).

Give ``--epsilon`` (units needed for that accuracy) or ``--units`` (accuracy those units reach),
with the input dimension ``--dim`` d and smoothness ``--smoothness`` s. Examples::

    tmath approx-rate --epsilon 0.1 --dim 10 --smoothness 2     # 1e5 (exercise 8.3.4-4)
    tmath approx-rate --epsilon 0.1 --dim 10 --smoothness 5     # 1e2
    tmath approx-rate --units 1e6 --dim 4 --smoothness 2 --json
"""

from __future__ import annotations

import json
import math

import typer


def _fail(message: str) -> None:
    typer.echo(f"Error: {message}", err=True)
    raise typer.Exit(2)


def approx_rate(
    epsilon: float | None = typer.Option(None, "--epsilon", help="Target accuracy, in (0, 1)."),
    units: float | None = typer.Option(None, "--units", help="Number of units N (>= 1)."),
    dim: float = typer.Option(..., "--dim", help="Input dimension d (> 0)."),
    smoothness: float = typer.Option(..., "--smoothness", help="Smoothness s (> 0)."),
    as_json: bool = typer.Option(False, "--json", help="Print machine-readable JSON."),
) -> None:
    """Approximation rate N(eps) = eps^(-d/s) (worst case, constants omitted)."""
    if (epsilon is None) == (units is None):
        _fail("give exactly one of --epsilon and --units")
    for name, value in (("--dim", dim), ("--smoothness", smoothness)):
        if not math.isfinite(value) or value <= 0:
            _fail(f"{name} must be a positive finite number, got {value}")
    if epsilon is not None and not (math.isfinite(epsilon) and 0 < epsilon < 1):
        _fail(f"--epsilon must be in (0, 1), got {epsilon}")
    if units is not None and not (math.isfinite(units) and units >= 1):
        _fail(f"--units must be a finite number >= 1, got {units}")

    from transformer_math.theory.approximation import (
        accuracy_for_neurons,
        neurons_for_accuracy,
        rate_exponent,
    )

    exponent = rate_exponent(dim, smoothness)
    if epsilon is not None:
        n = neurons_for_accuracy(epsilon, dim, smoothness)
        result = {"epsilon": epsilon, "dim": dim, "smoothness": smoothness,
                  "exponent_d_over_s": exponent, "units": n, "log10_units": math.log10(n)}
        line = (f"N(eps={epsilon:g}) = eps^(-d/s) = {epsilon:g}^(-{exponent:.4g}) "
                f"= {n:.4g} units (10^{math.log10(n):.2f})")
    else:
        assert units is not None
        eps = accuracy_for_neurons(units, dim, smoothness)
        result = {"units": units, "dim": dim, "smoothness": smoothness,
                  "exponent_d_over_s": exponent, "epsilon": eps}
        line = f"eps(N={units:g}) = N^(-s/d) = {eps:.4g}"
    if as_json:
        typer.echo(json.dumps(result))
    else:
        typer.echo(line)
        typer.echo("(worst-case order of magnitude for smoothness s in dimension d; 000 §8.3.4)")


def register(app: typer.Typer) -> None:
    app.command("approx-rate")(approx_rate)
