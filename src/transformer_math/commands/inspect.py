"""``tmath inspect PATH``: what a Llama- or GPT-2-format checkpoint directory contains.

Prints, without loading the weights (safetensors headers only; the stored names and shapes are
validated against the family's name table on a meta-device model):
- the architecture from ``config.json`` (family, layers, width, heads / KV heads, head dim, FFN
  width, vocabulary, positions, RoPE type and theta, norm eps, tied head);
- the parameter count by part (embedding, positions, attention, feed-forward, norms, head):
  ``Transformer.parameter_breakdown()`` of the checked architecture;
- for RoPE models, the wavelength 2 pi / theta_i of every rotary pair against the context length
  L: pairs with wavelength > L never complete a rotation within the context, so those
  low-frequency pairs are the ones that see unseen phases past L (FACTS.md, "RoPE and context
  extension"; 000 §8.3.3);
- the Chinchilla view (Hoffmann et al. 2022, Approach 1; ``theory/scaling_laws.py``): the
  tokens D and FLOPs C = 6 N D for which this N is compute-optimal (~20 tokens per parameter),
  and the Approach-3 parametric loss L(N, D) there.

A checkpoint is validated exactly as ``checkpoints.io.from_pretrained`` validates it (files
confined to the folder, typed config values, checked safetensors headers, layer count, names,
shapes and dtypes against the headers) without allocating a weight; one that cannot load is a
one-line error (``tmath inspect: error: ...``) and exit 2.

Examples::

    tmath inspect ./my-llama
    tmath inspect ./gpt2 --json
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from transformer_math.commands.args import fail, json_text, terminal_safe

if TYPE_CHECKING:  # torch and the backbone are imported when the command runs (fast --help)
    import torch

    from transformer_math.nn.config import TransformerConfig


def rope_wavelengths(config: TransformerConfig) -> torch.Tensor | None:
    """Wavelengths 2 pi / theta_i (float64, in positions) of the RoPE pairs; None without RoPE.

    Length-dependent scaling types are evaluated at ``max_seq_len``.
    """
    import torch

    from transformer_math.functional.rope_scaling import compute_rope_frequencies

    if config.position != "rope":
        return None
    scaling = dict(config.rope_scaling or {"rope_type": "default"})
    rope_type = scaling.pop("rope_type")
    rotary_dim = int(config.dim_per_head * config.partial_rotary_factor)
    inv, _ = compute_rope_frequencies(rope_type, rotary_dim, config.rope_theta, scaling,
                                      config.max_seq_len)
    return 2 * math.pi / inv.to(torch.float64)


def inspect_checkpoint(path: str | Path) -> dict[str, Any]:
    """The report of ``tmath inspect`` as a JSON-ready dict (raises on a bad checkpoint)."""
    from transformer_math.checkpoints.io import parameter_breakdown, read_config
    from transformer_math.theory.scaling_laws import compute_optimal

    raw = read_config(path)
    c, info, params = parameter_breakdown(path)
    arch: dict[str, Any] = {
        "family": info.family, "architectures": raw.get("architectures"),
        "num_layers": c.num_layers, "hidden_size": c.hidden_size, "num_heads": c.num_heads,
        "num_kv_heads": c.kv_heads, "head_dim": c.dim_per_head,
        "intermediate_size": c.ffn_size, "vocab_size": c.vocab_size,
        "max_position_embeddings": c.max_seq_len, "norm": c.norm, "norm_eps": c.eps,
        "feedforward": c.feedforward, "position": c.position,
        "tie_word_embeddings": c.tie_embeddings, "dtype": info.dtype,
    }
    report: dict[str, Any] = {"path": str(path), "architecture": arch, "parameters": params}
    waves = rope_wavelengths(c)
    if waves is not None:
        context = c.max_seq_len
        scaling = c.rope_scaling or {}
        train = int(scaling.get("original_max_position_embeddings", context))
        arch.update(rope_theta=c.rope_theta, rope_type=scaling.get("rope_type", "default"),
                    rope_scaling=c.rope_scaling or None)
        wl = [float(w) for w in waves]
        report["rope"] = {
            "context_length": context,
            "original_context_length": train,
            "wavelengths": wl,
            "min_wavelength": min(wl),
            "max_wavelength": max(wl),
            "pairs": len(wl),
            "pairs_longer_than_context": sum(w > context for w in wl),
            "pairs_longer_than_original_context": sum(w > train for w in wl),
        }
    n = float(params["total"])
    optimum = compute_optimal(params=n, approach="1")
    loss3 = compute_optimal(params=n, approach="3")
    report["chinchilla"] = {
        "params": n,
        "optimal_tokens": optimum.tokens,
        "optimal_flops": optimum.flops,
        "tokens_per_param": optimum.tokens_per_param,
        "approach": optimum.approach,
        "approach3_tokens": loss3.tokens,
        "approach3_loss": loss3.loss,
    }
    return report


def _fmt(x: float) -> str:
    return f"{x:.4g}"


def _text(report: dict[str, Any]) -> str:
    a, p = report["architecture"], report["parameters"]
    lines = [f"{report['path']}: {a['family']} ({', '.join(a['architectures'] or [])})",
             f"  layers {a['num_layers']}, width {a['hidden_size']}, heads {a['num_heads']} "
             f"(kv {a['num_kv_heads']}, head dim {a['head_dim']}), ffn {a['intermediate_size']}, "
             f"vocab {a['vocab_size']}, positions {a['max_position_embeddings']}, "
             f"{a['norm']} eps {a['norm_eps']}, {a['feedforward']}, "
             f"tied head {a['tie_word_embeddings']}"]
    if "rope" in report:
        lines.append(f"  rope {a['rope_type']} theta {a['rope_theta']:g} {a['rope_scaling'] or ''}")
    lines.append("  parameters:")
    for key in ("embedding", "positions", "attention", "feedforward", "norms", "lm_head",
                "non_embedding", "total"):
        share = p[key] / p["total"] if p["total"] else math.nan
        lines.append(f"    {key:<14}{p[key]:>16,}  {share:6.1%}")
    if "rope" in report:
        r = report["rope"]
        lines.append(
            f"  rope wavelengths: {_fmt(r['min_wavelength'])} .. {_fmt(r['max_wavelength'])} "
            f"positions over {r['pairs']} pairs; {r['pairs_longer_than_context']} pair(s) longer "
            f"than the context {r['context_length']} (never a full turn: the pairs that see "
            f"unseen phases beyond it)")
        if r["original_context_length"] != r["context_length"]:
            lines.append(f"    {r['pairs_longer_than_original_context']} pair(s) longer than "
                         f"the original context {r['original_context_length']}")
    ch = report["chinchilla"]
    lines.append(
        f"  chinchilla (approach {ch['approach']}): N = {_fmt(ch['params'])} is compute-optimal "
        f"for D = {_fmt(ch['optimal_tokens'])} tokens ({ch['tokens_per_param']:.1f}/param), "
        f"C = 6ND = {_fmt(ch['optimal_flops'])} FLOPs; approach-3 loss there "
        f"{_fmt(ch['approach3_loss'])}")
    return "\n".join(lines)


def inspect(
    path: Annotated[Path, typer.Argument(help="Checkpoint directory (config.json + weights).")],
    as_json: Annotated[bool, typer.Option("--json", help="Print machine-readable JSON.")] = False,
) -> None:
    """Architecture, parameters by part, RoPE wavelengths, Chinchilla view of a checkpoint.

    A checkpoint that cannot load (checked exactly as ``from_pretrained`` checks it, headers
    only) prints one line, ``tmath inspect: error: ...``, and exits 2.
    """
    try:
        report = inspect_checkpoint(path)
    except (OSError, ValueError, TypeError) as err:
        fail(str(err))
    typer.echo(json_text(report, indent=2) if as_json else terminal_safe(_text(report)))


def register(app: typer.Typer) -> None:
    """Add ``inspect`` to the ``tmath`` application."""
    app.command("inspect")(inspect)
