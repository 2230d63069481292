"""``tmath rope``: a RoPE context-extension calculator.

For a head dim, base, scaling type (``functional/rope_scaling.py``) and lengths L_train/L_test it
prints, per rotary pair i, the frequency θ_i, the wavelength 2π/θ_i and the phase coverage (the
fraction of positions in [L_train, L_test) whose phase was never swept at positions < L_train)
before and after scaling, plus the attention factor. The pairs with unseen phases are the ones
whose wavelength exceeds L_train (low frequencies; FACTS.md, 000 §8.3.3 理论 C corrected).

Examples:
    tmath rope --head-dim 128 --train-len 4096 --seq-len 32768 --type yarn --factor 8
    tmath rope --head-dim 128 --base 500000 --type llama3 --factor 8 --original-max 8192 --json
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Annotated, Any

import typer

RopeTypeHelp = "default | linear | ntk | dynamic | yarn | llama3 | longrope"


def _float_list(text: str | None, name: str) -> list[float] | None:
    if text is None:
        return None
    try:
        return [float(v) for v in text.replace(" ", "").split(",") if v]
    except ValueError as exc:
        raise typer.BadParameter(f"{name} must be comma-separated numbers, got {text!r}") from exc


def rope_report(
    *,
    head_dim: int,
    base: float,
    rope_type: str,
    params: dict[str, Any],
    train_len: int,
    seq_len: int,
    partial_rotary_factor: float = 1.0,
) -> dict[str, Any]:
    """Everything the command prints, as JSON-ready data (raises ValueError on bad input)."""
    from transformer_math.functional.rope import unseen_phase_fraction
    from transformer_math.functional.rope_scaling import compute_rope_frequencies

    if head_dim < 2:
        raise ValueError(f"--head-dim must be >= 2, got {head_dim}")
    if not 0.0 < partial_rotary_factor <= 1.0:
        raise ValueError(f"--partial-rotary-factor must be in (0, 1], got {partial_rotary_factor}")
    rotary_dim = int(head_dim * partial_rotary_factor)
    if train_len < 1 or seq_len <= train_len:
        raise ValueError(f"need 1 <= --train-len < --seq-len, got {train_len} and {seq_len}")
    inv0, _ = compute_rope_frequencies("default", rotary_dim, base)
    inv, attention_factor = compute_rope_frequencies(rope_type, rotary_dim, base, params, seq_len)
    before = unseen_phase_fraction(inv0, train_len, seq_len)
    after = unseen_phase_fraction(inv0, train_len, seq_len, test_inv_freq=inv)
    wl0 = (2 * math.pi / inv0).tolist()
    wl = (2 * math.pi / inv).tolist()
    pairs = [
        {"pair": i, "inv_freq_before": float(inv0[i]), "inv_freq": float(inv[i]),
         "ratio": float(inv[i] / inv0[i]), "wavelength_before": wl0[i], "wavelength": wl[i],
         "unseen_before": float(before[i]), "unseen_after": float(after[i])}
        for i in range(rotary_dim // 2)
    ]
    critical = next((i for i, w in enumerate(wl0) if w > train_len), None)
    return {
        "rope_type": rope_type,
        "head_dim": head_dim,
        "rotary_dim": rotary_dim,
        "base": base,
        "params": params,
        "train_len": train_len,
        "seq_len": seq_len,
        "inv_freq": [float(v) for v in inv],
        "attention_factor": attention_factor,
        "logit_scale": attention_factor ** 2,
        "critical_pair": critical,
        "pairs_unseen_before": int((before > 0).sum()),
        "pairs_unseen_after": int((after > 0).sum()),
        "pairs": pairs,
    }


def _draw(report: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    idx = [p["pair"] for p in report["pairs"]]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4))
    ax1.semilogy(idx, [p["wavelength_before"] for p in report["pairs"]], "o-", ms=3,
                 label="default")
    ax1.semilogy(idx, [p["wavelength"] for p in report["pairs"]], "s-", ms=3,
                 label=report["rope_type"])
    ax1.axhline(report["train_len"], color="k", ls="--", lw=1, label="L_train")
    ax1.axhline(report["seq_len"], color="r", ls=":", lw=1, label="L_test")
    ax1.set_xlabel("pair i (0 = highest frequency)")
    ax1.set_ylabel("wavelength 2π/θ_i (positions)")
    ax1.legend()
    ax2.bar([i - 0.2 for i in idx], [p["unseen_before"] for p in report["pairs"]], width=0.4,
            label="default")
    ax2.bar([i + 0.2 for i in idx], [p["unseen_after"] for p in report["pairs"]], width=0.4,
            label=report["rope_type"])
    ax2.set_xlabel("pair i")
    ax2.set_ylabel("fraction of test positions with unseen phase")
    ax2.legend()
    fig.suptitle(f"RoPE {report['rope_type']}: head_dim {report['head_dim']}, base "
                 f"{report['base']:g}, L_train {report['train_len']}, L_test {report['seq_len']}")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _print_table(report: dict[str, Any]) -> None:
    from rich.table import Table

    from transformer_math.report.table import stdout_console

    console = stdout_console()
    table = Table(title=f"RoPE {report['rope_type']} (head_dim {report['head_dim']}, rotary "
                  f"{report['rotary_dim']}, base {report['base']:g}); L_train "
                  f"{report['train_len']} -> L_test {report['seq_len']}")
    for col in ("pair", "θ before", "θ after", "ratio", "λ before", "λ after",
                "unseen before", "unseen after"):
        table.add_column(col, justify="right")
    for p in report["pairs"]:
        table.add_row(str(p["pair"]), f"{p['inv_freq_before']:.4g}", f"{p['inv_freq']:.4g}",
                      f"{p['ratio']:.4f}", f"{p['wavelength_before']:.1f}",
                      f"{p['wavelength']:.1f}", f"{p['unseen_before']:.2f}",
                      f"{p['unseen_after']:.2f}")
    console.print(table)
    crit = report["critical_pair"]
    console.print(
        f"attention factor {report['attention_factor']:.4f} (logits x "
        f"{report['logit_scale']:.4f}); pairs with wavelength > L_train start at "
        f"{'none' if crit is None else crit}; pairs seeing unseen phases at L_test: "
        f"{report['pairs_unseen_before']} before, {report['pairs_unseen_after']} after scaling"
    )


def register(app: typer.Typer) -> None:
    """Add the ``rope`` command to ``app``."""

    @app.command("rope")
    def rope(
        head_dim: Annotated[int, typer.Option(help="per-head width d_k")] = 128,
        base: Annotated[float, typer.Option(help="rope_theta b")] = 10000.0,
        rope_type: Annotated[str, typer.Option("--type", help=RopeTypeHelp)] = "default",
        factor: Annotated[float | None, typer.Option(help="scaling factor s")] = None,
        original_max: Annotated[int | None, typer.Option(
            "--original-max", help="original_max_position_embeddings L0 (default L_train)")] = None,
        train_len: Annotated[int | None, typer.Option(
            help="L_train (default --original-max, else 4096)")] = None,
        seq_len: Annotated[int | None, typer.Option(
            help="L_test (default L_train * factor, else 2 L_train)")] = None,
        beta_fast: Annotated[float | None, typer.Option(help="yarn beta_fast (32)")] = None,
        beta_slow: Annotated[float | None, typer.Option(help="yarn beta_slow (1)")] = None,
        attention_factor: Annotated[float | None, typer.Option(
            help="yarn/longrope attention factor override")] = None,
        low_freq_factor: Annotated[float | None, typer.Option(help="llama3 (1)")] = None,
        high_freq_factor: Annotated[float | None, typer.Option(help="llama3 (4)")] = None,
        short_factor: Annotated[str | None, typer.Option(
            help="longrope: comma-separated per-pair factors")] = None,
        long_factor: Annotated[str | None, typer.Option(
            help="longrope: comma-separated per-pair factors")] = None,
        partial_rotary_factor: Annotated[float, typer.Option(
            help="fraction of head_dim rotated")] = 1.0,
        figure: Annotated[Path | None, typer.Option(help="write a PNG figure here")] = None,
        as_json: Annotated[bool, typer.Option("--json", help="print JSON")] = False,
    ) -> None:
        """Per-pair frequency, wavelength and phase coverage before/after RoPE scaling."""
        L_train = train_len if train_len is not None else (original_max or 4096)
        L0 = original_max if original_max is not None else L_train
        L_test = seq_len if seq_len is not None else int(L_train * (factor or 2.0))
        params: dict[str, Any] = {}
        if rope_type != "default" and factor is not None:
            params["factor"] = factor
        if rope_type in ("dynamic", "yarn", "llama3", "longrope"):
            params["original_max_position_embeddings"] = L0
        if rope_type == "dynamic" and "factor" not in params:
            params["factor"] = 1.0
        if rope_type == "llama3":
            params["low_freq_factor"] = 1.0 if low_freq_factor is None else low_freq_factor
            params["high_freq_factor"] = 4.0 if high_freq_factor is None else high_freq_factor
        optional = {"beta_fast": beta_fast, "beta_slow": beta_slow,
                    "attention_factor": attention_factor,
                    "short_factor": _float_list(short_factor, "--short-factor"),
                    "long_factor": _float_list(long_factor, "--long-factor")}
        for key, value in optional.items():
            if value is not None:
                params[key] = value
        if rope_type == "longrope" and factor is None:
            params["factor"] = L_test / L0 if L_test > L0 else 1.0
        try:
            report = rope_report(head_dim=head_dim, base=base, rope_type=rope_type,
                                 params=params, train_len=L_train, seq_len=L_test,
                                 partial_rotary_factor=partial_rotary_factor)
        except (ValueError, TypeError) as exc:
            typer.echo(f"error: {exc}", err=True)
            raise typer.Exit(2) from None
        if figure is not None:
            _draw(report, figure)
            report["figure"] = str(figure)
        if as_json:
            typer.echo(json.dumps(report))
        else:
            _print_table(report)
            if figure is not None:
                typer.echo(f"figure written to {figure}")
