"""``tmath approx-rate``: units needed for accuracy eps, N ~ eps^(-d/s) (000 §8.3.4).

Give ``--epsilon`` (units needed for that accuracy) or ``--units`` (accuracy those units reach),
with the input dimension ``--dim`` d and smoothness ``--smoothness`` s. Examples::

    tmath approx-rate --epsilon 0.1 --dim 10 --smoothness 2     # 1e5 (exercise 8.3.4-4)
    tmath approx-rate --epsilon 0.1 --dim 10 --smoothness 5     # 1e2
    tmath approx-rate --units 1e6 --dim 4 --smoothness 2 --json
"""

from __future__ import annotations

import math

import typer

from transformer_math.commands.args import fail, json_text, number


def approx_rate(
    epsilon: float | None = typer.Option(None, "--epsilon", help="Target accuracy, in (0, 1)."),
    units: float | None = typer.Option(None, "--units", help="Number of units N (>= 1)."),
    dim: float = typer.Option(..., "--dim", help="Input dimension d (> 0)."),
    smoothness: float = typer.Option(..., "--smoothness", help="Smoothness s (> 0)."),
    as_json: bool = typer.Option(False, "--json", help="Print machine-readable JSON."),
) -> None:
    """Approximation rate N(eps) = eps^(-d/s) (worst case, constants omitted)."""
    if (epsilon is None) == (units is None):
        fail("give exactly one of --epsilon and --units")
    dim = number("--dim", dim, low=0, low_open=True)
    smoothness = number("--smoothness", smoothness, low=0, low_open=True)
    epsilon = number("--epsilon", epsilon, low=0, high=1, low_open=True, high_open=True)
    units = number("--units", units, low=1)

    from transformer_math.theory.approximation import (
        accuracy_for_neurons,
        neurons_for_accuracy,
        rate_exponent,
    )

    try:
        exponent = rate_exponent(dim, smoothness)
        if epsilon is not None:
            n = neurons_for_accuracy(epsilon, dim, smoothness)
        else:
            assert units is not None
            eps = accuracy_for_neurons(units, dim, smoothness)
    except ValueError as exc:  # the calculators name what leaves the float range
        fail(str(exc))
    if epsilon is not None:
        result = {"epsilon": epsilon, "dim": dim, "smoothness": smoothness,
                  "exponent_d_over_s": exponent, "units": n, "log10_units": math.log10(n)}
        line = (f"N(eps={epsilon:g}) = eps^(-d/s) = {epsilon:g}^(-{exponent:.4g}) "
                f"= {n:.4g} units (10^{math.log10(n):.2f})")
    else:
        result = {"units": units, "dim": dim, "smoothness": smoothness,
                  "exponent_d_over_s": exponent, "epsilon": eps}
        line = f"eps(N={units:g}) = N^(-s/d) = {eps:.4g}"
    if as_json:
        typer.echo(json_text(result))
    else:
        typer.echo(line)
        typer.echo("(worst-case order of magnitude for smoothness s in dimension d; 000 §8.3.4)")


def register(app: typer.Typer) -> None:
    app.command("approx-rate")(approx_rate)
