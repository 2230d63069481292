"""``tmath latency``: roofline FLOPs, bytes and time of a decoder forward (``theory.latency``).

Examples::

    tmath latency --preset open-llama-3b --tokens 512 --hardware h100-sxm
    tmath latency --hidden 256 --layers 4 --heads 8 --tokens 256 --decode --hardware cpu-here
    tmath latency --preset open-llama-3b --tflops 42.5 --bandwidth 204.8 --budget-ms 20 --json
    tmath latency --preset gemma-300m --tokens 512 --figure latency.png
    tmath latency --hidden 256 --layers 4 --heads 4 --tokens 512 --measure   # vs this CPU
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator

import typer

from transformer_math.commands.args import (
    FIGURE_SUFFIXES,
    MAX_THREADS,
    fail,
    integer,
    json_text,
    number,
    output_file,
)


@contextlib.contextmanager
def _measuring_threads(threads: int, measuring: bool) -> Iterator[None]:
    """``torch_threads(threads)`` around what times this machine; nothing (and no torch
    import) when nothing is timed."""
    if not measuring:
        yield
        return
    from transformer_math.diagnostics.timing import torch_threads

    with torch_threads(threads):
        yield


def latency(
    preset: str | None = typer.Option(None, "--preset", help="A known model config."),
    hidden: int | None = typer.Option(None, "--hidden", help="Model width d."),
    layers: int | None = typer.Option(None, "--layers", help="Number of blocks L."),
    heads: int | None = typer.Option(None, "--heads", help="Query heads H."),
    kv_heads: int | None = typer.Option(None, "--kv-heads", help="Key/value heads (GQA)."),
    ffn: int | None = typer.Option(None, "--ffn", help="MLP width (default 4 d)."),
    mlp: str = typer.Option("gelu", "--mlp", help="gelu (2 matrices) or swiglu (3)."),
    vocab: int = typer.Option(0, "--vocab", help="Vocabulary (0: no unembedding)."),
    tokens: int = typer.Option(512, "--tokens", help="Tokens N (prefill) or cache length."),
    decode: bool = typer.Option(False, "--decode/--prefill",
                                help="One cached step after N tokens, or a prefill of N."),
    attention: str = typer.Option("flash", "--attention", help="standard or flash."),
    hardware: str | None = typer.Option(None, "--hardware",
                                        help="h100-sxm, a100-80gb, jetson-agx-orin-64gb, "
                                        "cpu-here (measured now)."),
    tflops: float | None = typer.Option(None, "--tflops", help="Peak TFLOP/s (custom)."),
    bandwidth: float | None = typer.Option(None, "--bandwidth", help="GB/s (custom)."),
    budget_ms: float | None = typer.Option(None, "--budget-ms",
                                           help="Also report the largest N that fits."),
    figure: str | None = typer.Option(None, "--figure", help="Write latency vs N here."),
    measure: bool = typer.Option(False, "--measure",
                                 help="Also time the project's Transformer of this shape here "
                                 "(CPU, float32) against the model on cpu-here (measured)."),
    as_json: bool = typer.Option(False, "--json", help="Print machine-readable JSON."),
    threads: int = typer.Option(1, "--threads", help="torch intra-op threads while cpu-here "
                                "and --measure time this machine (>= 1; default 1: steadier "
                                "on a shared machine)."),
) -> None:
    """Roofline latency of one forward: max(FLOPs / peak, bytes / bandwidth) per operator."""
    from transformer_math.theory import latency as lm

    integer("--tokens", tokens, low=1, high=1 << 24)
    integer("--vocab", vocab, low=0)
    for opt, v in (("--hidden", hidden), ("--layers", layers), ("--heads", heads),
                   ("--kv-heads", kv_heads), ("--ffn", ffn)):
        integer(opt, v, low=1, high=1 << 20)
    number("--budget-ms", budget_ms, low=0, low_open=True)
    number("--tflops", tflops, low=0, low_open=True)
    number("--bandwidth", bandwidth, low=0, low_open=True)
    fig_path = output_file("--figure", figure, suffixes=FIGURE_SUFFIXES)
    if attention not in lm.ATTENTION_KINDS:
        fail(f"--attention must be one of {', '.join(lm.ATTENTION_KINDS)}, got {attention!r}")
    if (tflops is None) != (bandwidth is None):
        fail("give both --tflops and --bandwidth (or neither)")
    if tflops is not None and hardware is not None:
        fail("give --hardware or --tflops/--bandwidth, not both")
    if preset is not None:
        if any(v is not None for v in (hidden, layers, heads, kv_heads, ffn)):
            fail("--preset fixes the model: drop --hidden/--layers/--heads/--kv-heads/--ffn")
        if preset not in lm.MODEL_PRESETS:
            fail(f"--preset must be one of {', '.join(sorted(lm.MODEL_PRESETS))}, "
                 f"got {preset!r}")
        shape, source = lm.MODEL_PRESETS[preset].shape, lm.MODEL_PRESETS[preset].source
    else:
        if hidden is None or layers is None or heads is None:
            fail("give --preset, or --hidden, --layers and --heads")
        try:
            shape = lm.ModelShape(hidden=hidden, layers=layers, heads=heads, kv_heads=kv_heads,
                                  ffn=ffn, mlp=mlp, vocab=vocab)
        except ValueError as exc:
            fail(str(exc))
        source = "given on the command line"
    known = sorted([*lm.HARDWARE, "cpu-here"])
    name = hardware or ("custom" if tflops is not None else "h100-sxm")
    if name != "custom" and name not in known:
        fail(f"--hardware must be one of {', '.join(known)}, got {name!r}")
    integer("--threads", threads, low=1, high=MAX_THREADS)
    with _measuring_threads(threads, measure or name == "cpu-here"):
        if name == "custom":
            assert tflops is not None and bandwidth is not None
            hw = lm.custom_hardware(tflops, bandwidth)
        else:
            hw = lm.get_hardware(name)
        mode = "decode" if decode else "prefill"
        kw = {"attention": attention}
        cost = (lm.decode_cost(shape, hw, tokens, **kw) if decode
                else lm.prefill_cost(shape, hw, tokens, **kw))
        result: dict[str, object] = {"model": shape.to_json(), "model_source": source,
                                     "hardware": hw.to_json(), "mode": mode, "tokens": tokens,
                                     "attention": attention, "cost": cost.to_json()}
        if budget_ms is not None:
            result["budget_ms"] = budget_ms
            result["max_tokens_in_budget"] = lm.max_context(shape, hw, budget_ms / 1e3, mode=mode,
                                                            **kw)
        if measure:
            from transformer_math.diagnostics import latency_probe

            if shape.weights() > latency_probe.MAX_WEIGHTS or tokens > latency_probe.MAX_TOKENS:
                fail(f"--measure builds the model here: at most {latency_probe.MAX_WEIGHTS:,} "
                     f"weights and --tokens <= {latency_probe.MAX_TOKENS}, got "
                     f"{shape.weights():,} weights and {tokens} tokens")
            result["measured"] = latency_probe.measure_against_model(shape, tokens)
    if fig_path is not None:
        _figure(lm, shape, hw, tokens, fig_path)
        result["figure"] = str(fig_path)
    if as_json:
        typer.echo(json_text(result))
        return
    out = sys.stdout
    out.write(f"{mode} of {tokens} tokens, {attention} attention, on {hw.name} "
              f"({hw.flops / 1e12:.4g} TFLOP/s, {hw.bandwidth / 1e9:.4g} GB/s)\n")
    out.write(f"  model   {shape.weights() / 1e6:.1f}M weights ({source})\n")
    out.write(f"  FLOPs   {cost.flops:.4g}\n  bytes   {cost.bytes:.4g}\n")
    out.write(f"  time    {cost.ms:.4g} ms\n")
    if budget_ms is not None:
        out.write(f"  largest N within {budget_ms:g} ms: {result['max_tokens_in_budget']}\n")
    if measure:
        m = result["measured"]
        assert isinstance(m, dict)
        out.write(f"  measured here ({m['hardware']['source']}):\n")
        for part in ("prefill", "decode"):
            r = m[part]
            out.write(f"    {part:8s} measured {r['measured_s'] * 1e3:.4g} ms, roofline "
                      f"{r['predicted_s'] * 1e3:.4g} ms, ratio {r['ratio']:.3g}\n")


def _figure(lm: object, shape: object, hw: object, tokens: int, path: object) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ns = sorted({2**k for k in range(4, 15)} | {tokens})
    fig, ax = plt.subplots(figsize=(6, 4))
    for label, fn in (
        ("prefill, standard",
         lambda n: lm.prefill_cost(shape, hw, n, attention="standard").ms),  # type: ignore[attr-defined]
        ("prefill, flash",
         lambda n: lm.prefill_cost(shape, hw, n, attention="flash").ms),  # type: ignore[attr-defined]
        ("cached step", lambda n: lm.decode_cost(shape, hw, n).ms),  # type: ignore[attr-defined]
    ):
        ax.loglog(ns, [fn(n) for n in ns], "o-", label=label, markersize=3)
    ax.set_xlabel("context N (tokens)")
    ax.set_ylabel("ms (roofline)")
    ax.set_title(f"latency on {hw.name}")  # type: ignore[attr-defined]
    ax.legend()
    fig.tight_layout()
    from transformer_math import safe_write

    safe_write.save_figure(fig, path)
    plt.close(fig)


def register(app: typer.Typer) -> None:
    """Add ``latency`` to the ``tmath`` application."""
    app.command("latency")(latency)
