"""``tmath rope``: a RoPE context-extension calculator.

For a head dim, base, scaling type (``functional/rope_scaling.py``) and lengths L_train/L_test it
prints, per rotary pair i, the frequency θ_i, the wavelength 2π/θ_i and the phase coverage (the
fraction of positions in [L_train, L_test) whose phase was never swept at positions < L_train)
before and after scaling, plus the attention factor. The pairs with unseen phases are the ones
whose wavelength exceeds L_train (low frequencies; FACTS.md, 000 §8.3.3 理论 C corrected).

The scaling types and their parameters are read from ``ROPE_SCALING_FUNCTIONS`` (names, required
and optional parameters, defaults, length dependence, descriptions): registering a type with
``functional.rope_scaling.register_rope_scaling`` makes it a valid ``--type``, listed in
``tmath rope --help``; parameters without an option of their own go in ``--param NAME=VALUE``.

Sizes are bounded before anything is computed: ``--head-dim`` <= ``MAX_HEAD_DIM`` (65536), the
lengths <= ``MAX_POSITIONS`` (2^24) and rotary pairs x L_test <= ``MAX_PAIR_POSITIONS`` (2^23,
under 1 GB of coverage tables); every float option must be finite.

Examples:
    tmath rope --head-dim 128 --train-len 4096 --seq-len 32768 --type yarn --factor 8
    tmath rope --head-dim 128 --base 500000 --type llama3 --factor 8 --original-max 8192 --json
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Annotated, Any

import typer
from typer.core import TyperCommand

from transformer_math.commands.args import (
    FIGURE_SUFFIXES,
    fail,
    integer,
    json_text,
    number,
    output_file,
)

MAX_HEAD_DIM = 2**16
"""Largest ``--head-dim`` the calculator accepts."""
MAX_POSITIONS = 2**24  # = nn.position.MAX_ROPE_POSITIONS (not imported: --help stays torch-free)
"""Largest ``--train-len``, ``--seq-len`` and ``--original-max`` (16.8 M positions)."""
MAX_PAIR_POSITIONS = 2**23
"""Largest (rotary pairs) x L_test: the phase-coverage tables hold a few float64 values per
pair and position, so this bounds the command's memory (about 0.8 GB at the maximum; head dim
128 reaches L_test = 131072, Llama 3.1's context). Checked before anything is computed."""

PARAMETER_OPTIONS = {
    "factor": "--factor",
    "original_max_position_embeddings": "--original-max",
    "beta_fast": "--beta-fast",
    "beta_slow": "--beta-slow",
    "attention_factor": "--attention-factor",
    "low_freq_factor": "--low-freq-factor",
    "high_freq_factor": "--high-freq-factor",
    "short_factor": "--short-factor",
    "long_factor": "--long-factor",
}
"""RoPE scaling parameters that have an option of their own; any other parameter of a
registered type is given as ``--param NAME=VALUE``."""


def _float_list(text: str | None, name: str) -> list[float] | None:
    if text is None:
        return None
    try:
        values = [float(v) for v in text.replace(" ", "").split(",") if v]
    except ValueError as exc:
        raise typer.BadParameter(f"{name} must be comma-separated numbers, got {text!r}") from exc
    if not all(math.isfinite(v) for v in values):
        raise typer.BadParameter(f"{name} must be comma-separated finite numbers, got {text!r}")
    if len(values) > MAX_HEAD_DIM // 2:
        raise typer.BadParameter(f"{name} has more than {MAX_HEAD_DIM // 2} entries")
    return values


def _param_value(text: str) -> Any:
    """``true``/``false`` -> bool, ``a,b,...`` -> list of floats, else a float."""
    low = text.strip().lower()
    if low in ("true", "false"):
        return low == "true"
    if "," in text:
        return _float_list(text, "--param")
    try:
        value = float(text)
    except ValueError as exc:
        raise typer.BadParameter(f"--param values must be numbers, lists or true/false, "
                                 f"got {text!r}") from exc
    if not math.isfinite(value):
        raise typer.BadParameter(f"--param values must be finite, got {text!r}")
    return value


def parse_params(pairs: list[str]) -> dict[str, Any]:
    """``["beta_fast=16", "truncate=false"]`` -> ``{"beta_fast": 16.0, "truncate": False}``."""
    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise typer.BadParameter(f"--param must be NAME=VALUE, got {pair!r}")
        out[key.strip()] = _param_value(value)
    return out


def rope_parameters(rope_type: str, given: dict[str, Any], *, original_max: int,
                    seq_len: int, fallbacks: dict[str, Any] | None = None) -> dict[str, Any]:
    """The parameters passed to ``rope_type``: what the user gave, then, for every parameter the
    type's registration lists (``ROPE_SCALING_FUNCTIONS.metadata``) and the user left out, the
    command's geometry (``original_max_position_embeddings`` = L0, ``factor`` = L_test / L0,
    the extension asked about), else the registered default, else ``fallbacks`` (option values
    such as Llama 3.1's band factors). Parameters the type does not accept are kept, so that
    ``compute_rope_frequencies`` names them in its error. An unknown type raises ValueError
    naming the registered ones."""
    from transformer_math.functional.rope_scaling import ROPE_SCALING_FUNCTIONS

    meta = ROPE_SCALING_FUNCTIONS.metadata(rope_type)
    geometry = {"original_max_position_embeddings": original_max,
                "factor": max(1.0, seq_len / original_max)}
    params = dict(given)
    for key in (*meta["required"], *meta["optional"]):
        if key in params:
            continue
        if key in geometry:
            params[key] = geometry[key]
        elif key in meta["defaults"]:
            params[key] = meta["defaults"][key]
        elif fallbacks and fallbacks.get(key) is not None:
            params[key] = fallbacks[key]
    return params


def rope_types_help() -> str:
    """One paragraph per registered RoPE type: description, parameters, defaults (read from
    ``ROPE_SCALING_FUNCTIONS`` when the help is shown, so a new registration appears here)."""
    from transformer_math.functional.rope_scaling import ROPE_SCALING_FUNCTIONS

    paragraphs = ["RoPE types (--type), from functional.rope_scaling.ROPE_SCALING_FUNCTIONS:"]
    for name in ROPE_SCALING_FUNCTIONS.names():
        meta = ROPE_SCALING_FUNCTIONS.metadata(name)
        optional = [f"{k}={meta['defaults'][k]}" if k in meta["defaults"] else k
                    for k in meta["optional"]]
        text = f"{name}: {meta['description'] or '(no description)'}"
        if meta["required"]:
            text += f"; required {', '.join(meta['required'])}"
        if optional:
            text += f"; optional {', '.join(optional)}"
        if meta["length_dependent"]:
            text += "; depends on the sequence length (evaluated at L_test)"
        paragraphs.append(text)
    return "\n\n".join(paragraphs)


class _RopeCommand(TyperCommand):
    """The ``rope`` command, whose epilog lists the RoPE types registered when help is shown."""

    @property  # type: ignore[override]
    def epilog(self) -> str:
        return rope_types_help()

    @epilog.setter
    def epilog(self, value: str | None) -> None:  # click sets it in __init__; ignored
        pass


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
    from transformer_math.functional.rope_scaling import (
        ROPE_SCALING_FUNCTIONS,
        compute_rope_frequencies,
    )

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
    meta = ROPE_SCALING_FUNCTIONS.metadata(rope_type)
    return {
        "rope_type": rope_type,
        "description": meta["description"],
        "length_dependent": bool(meta["length_dependent"]),
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
    from transformer_math import safe_write

    safe_write.save_figure(fig, path, dpi=120)
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


def _check_sizes(*, head_dim: int, partial_rotary_factor: float, train_len: int | None,
                 seq_len: int | None, original_max: int | None) -> None:
    """The sizes of ``tmath rope``, checked against the documented maxima before any work."""
    integer("--head-dim", head_dim, low=2, high=MAX_HEAD_DIM)
    number("--partial-rotary-factor", partial_rotary_factor, low=0, high=1, low_open=True)
    if int(head_dim * partial_rotary_factor) < 2:
        fail(f"--partial-rotary-factor {partial_rotary_factor:g} rotates "
             f"{int(head_dim * partial_rotary_factor)} of --head-dim {head_dim} dims; need >= 2")
    for option, value in (("--train-len", train_len), ("--seq-len", seq_len),
                          ("--original-max", original_max)):
        integer(option, value, low=1, high=MAX_POSITIONS)


def register(app: typer.Typer) -> None:
    """Add the ``rope`` command to ``app``."""

    @app.command("rope", cls=_RopeCommand)
    def rope(
        head_dim: Annotated[int, typer.Option(help="per-head width d_k")] = 128,
        base: Annotated[float, typer.Option(help="rope_theta b")] = 10000.0,
        rope_type: Annotated[str, typer.Option(
            "--type", help="a registered RoPE scaling type (listed below)")] = "default",
        factor: Annotated[float | None, typer.Option(
            help="scaling factor s (default L_test / L0 for the types that take one)")] = None,
        original_max: Annotated[int | None, typer.Option(
            "--original-max", help="original_max_position_embeddings L0 (default L_train)")] = None,
        train_len: Annotated[int | None, typer.Option(
            help="L_train (default --original-max, else 4096)")] = None,
        seq_len: Annotated[int | None, typer.Option(
            help="L_test (default L_train * factor, else 2 L_train)")] = None,
        beta_fast: Annotated[float | None, typer.Option(help="beta_fast (yarn)")] = None,
        beta_slow: Annotated[float | None, typer.Option(help="beta_slow (yarn)")] = None,
        attention_factor: Annotated[float | None, typer.Option(
            help="attention factor override (yarn, longrope)")] = None,
        low_freq_factor: Annotated[float, typer.Option(
            help="low_freq_factor, for the types that take it (Llama 3.1: 1)")] = 1.0,
        high_freq_factor: Annotated[float, typer.Option(
            help="high_freq_factor, for the types that take it (Llama 3.1: 4)")] = 4.0,
        short_factor: Annotated[str | None, typer.Option(
            help="short_factor: comma-separated per-pair factors (longrope)")] = None,
        long_factor: Annotated[str | None, typer.Option(
            help="long_factor: comma-separated per-pair factors (longrope)")] = None,
        param: Annotated[list[str] | None, typer.Option(
            help="any other parameter of the type, NAME=VALUE (repeatable)")] = None,
        partial_rotary_factor: Annotated[float, typer.Option(
            help="fraction of head_dim rotated")] = 1.0,
        figure: Annotated[Path | None, typer.Option(help="write a PNG figure here")] = None,
        as_json: Annotated[bool, typer.Option("--json", help="print JSON")] = False,
    ) -> None:
        """Per-pair frequency, wavelength and phase coverage before/after RoPE scaling."""
        _check_sizes(head_dim=head_dim, partial_rotary_factor=partial_rotary_factor,
                     train_len=train_len, seq_len=seq_len, original_max=original_max)
        base = number("--base", base, low=1, low_open=True)
        factor = number("--factor", factor, low=0, low_open=True)
        for option, value in (("--beta-fast", beta_fast), ("--beta-slow", beta_slow),
                              ("--attention-factor", attention_factor),
                              ("--low-freq-factor", low_freq_factor),
                              ("--high-freq-factor", high_freq_factor)):
            number(option, value)
        output_file("--figure", figure, suffixes=FIGURE_SUFFIXES)
        L_train = train_len if train_len is not None else (original_max or 4096)
        L0 = original_max if original_max is not None else L_train
        if seq_len is None and L_train * (factor or 2.0) > MAX_POSITIONS:
            fail(f"--factor {factor:g} gives L_test = L_train * factor = "
                 f"{L_train * (factor or 2.0):.4g} positions, more than the maximum "
                 f"{MAX_POSITIONS}")
        L_test = seq_len if seq_len is not None else int(L_train * (factor or 2.0))
        pairs = max(int(head_dim * partial_rotary_factor) // 2, 1)
        if pairs * L_test > MAX_PAIR_POSITIONS:
            fail(f"{pairs} rotary pairs x L_test {L_test} = {pairs * L_test} exceeds the "
                 f"maximum {MAX_PAIR_POSITIONS} pair-positions of the coverage tables "
                 f"(lower --seq-len, --factor or --head-dim)")
        given: dict[str, Any] = {
            "factor": factor, "beta_fast": beta_fast, "beta_slow": beta_slow,
            "attention_factor": attention_factor,
            "short_factor": _float_list(short_factor, "--short-factor"),
            "long_factor": _float_list(long_factor, "--long-factor"),
            **({} if original_max is None else {"original_max_position_embeddings": L0}),
        }
        given = {k: v for k, v in given.items() if v is not None}
        given.update(parse_params(param or []))
        try:
            params = rope_parameters(
                rope_type, given, original_max=L0, seq_len=L_test,
                fallbacks={"low_freq_factor": low_freq_factor,
                           "high_freq_factor": high_freq_factor})
            report = rope_report(head_dim=head_dim, base=base, rope_type=rope_type,
                                 params=params, train_len=L_train, seq_len=L_test,
                                 partial_rotary_factor=partial_rotary_factor)
        except (ValueError, TypeError) as exc:  # rope_scaling names the parameter
            fail(str(exc))
        text = json_text(report) if as_json else None  # refuses a non-finite result
        if figure is not None:
            _draw(report, figure)
            report["figure"] = str(figure)
        if text is not None:
            typer.echo(json_text(report))
        else:
            _print_table(report)
            if figure is not None:
                typer.echo(f"figure written to {figure}")
