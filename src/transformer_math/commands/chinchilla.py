"""``tmath chinchilla``: compute-optimal model size, tokens and FLOPs, and the inference-aware
size.

Give exactly one of ``--tokens D`` (data-limited: the model size D tokens feed optimally),
``--flops C`` (compute-limited: N and D) or ``--params N`` (tokens and FLOPs that make N optimal).
``--approach`` selects the fit (1, 2, 3 or epoch; see ``theory.scaling_laws``);
``--inference-tokens`` adds the inference-aware optimum of Sardana et al. (2024) at the same loss
(needs approach 3 or epoch). Examples::

    tmath chinchilla --tokens 1e9                  # N ~ 5e7 (20 tokens per parameter)
    tmath chinchilla --flops 1e21 --approach 3 --json
    tmath chinchilla --flops 1e21 --approach 3 --inference-tokens 1e13
"""

from __future__ import annotations

import sys

import typer

from transformer_math.commands.args import fail, finite_result, json_text, number
from transformer_math.theory.scaling_laws import (
    SCALING_FITS,
    compute_optimal,
    get_scaling_fit,
    inference_aware_optimum,
)


def _fmt(x: float | None) -> str:
    return "-" if x is None else f"{x:.4g}"


def chinchilla(
    tokens: float | None = typer.Option(None, "--tokens", help="Training tokens D available."),
    flops: float | None = typer.Option(None, "--flops", help="Training compute budget C in FLOPs."),
    params: float | None = typer.Option(None, "--params", help="Model parameters N."),
    approach: str = typer.Option("1", "--approach", help="Fit: 1, 2, 3 or epoch."),
    inference_tokens: float | None = typer.Option(
        None, "--inference-tokens", help="Tokens to be generated over the model's life."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print machine-readable JSON."),
) -> None:
    """Chinchilla compute-optimal sizing (Hoffmann et al. 2022; C = 6 N D)."""
    given = [
        n
        for n, v in (("--tokens", tokens), ("--flops", flops), ("--params", params))
        if v is not None
    ]
    if len(given) != 1:
        fail(f"give exactly one of --tokens, --flops, --params (got {', '.join(given) or 'none'})")
    tokens = number("--tokens", tokens, low=0, low_open=True)
    flops = number("--flops", flops, low=0, low_open=True)
    params = number("--params", params, low=0, low_open=True)
    inference_tokens = number("--inference-tokens", inference_tokens, low=0)
    if approach.lower() not in SCALING_FITS:
        fail(f"--approach must be one of {', '.join(sorted(SCALING_FITS))}, got {approach!r}")
    fit = get_scaling_fit(approach)
    if inference_tokens is not None and fit.loss is None:
        fail(f"--inference-tokens needs a loss surface: use --approach 3 or epoch (got {approach})")
    option = given[0]
    value = {"--tokens": tokens, "--flops": flops, "--params": params}[option]
    try:  # the calculators name what is out of range
        opt = compute_optimal(flops=flops, params=params, tokens=tokens, approach=approach)
    except ValueError as exc:
        fail(f"{option}: {exc}")
    result: dict[str, object] = opt.to_json()
    result["source"] = fit.source
    if inference_tokens is not None:
        try:
            result["inference_aware"] = inference_aware_optimum(opt, inference_tokens).to_json()
        except ValueError as exc:
            fail(f"--inference-tokens: {exc}")
    for key in ("params", "tokens", "flops", "tokens_per_param"):
        finite_result(key, float(result[key]), f"{option} {value:g}")  # type: ignore[arg-type]
    if as_json:
        typer.echo(json_text(result))
        return
    out = sys.stdout
    out.write(f"Chinchilla compute-optimal ({fit.source})\n")
    out.write(f"  params N      {_fmt(opt.params)}\n  tokens D      {_fmt(opt.tokens)}\n")
    out.write(f"  FLOPs C=6ND   {_fmt(opt.flops)}\n  tokens/param  {opt.tokens_per_param:.1f}\n")
    out.write(f"  loss          {_fmt(opt.loss)}\n")
    if inference_tokens is not None:
        ia = result["inference_aware"]
        assert isinstance(ia, dict)
        out.write(
            f"Inference-aware (Sardana et al. 2024), {inference_tokens:.3g} inference tokens\n"
        )
        out.write(f"  params N      {_fmt(ia['params'])}\n  tokens D      {_fmt(ia['tokens'])}\n")
        out.write(f"  tokens/param  {ia['tokens_per_param']:.1f}\n")
        out.write(
            f"  total FLOPs   {_fmt(ia['total_flops'])} (compute-optimal model: "
            f"{_fmt(ia['compute_optimal_total_flops'])}, saves {100 * ia['savings']:.1f} %)\n"
        )


def register(app: typer.Typer) -> None:
    """Add ``chinchilla`` to the ``tmath`` application."""
    app.command("chinchilla")(chinchilla)
