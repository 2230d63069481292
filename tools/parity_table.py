"""The checkpoint parity table of issue 33 ("Done when"): per family and dtype of the real-config
corpus, how close a loaded checkpoint is to ``transformers`` on the same folder.

For each config of ``tests/checkpoints/real_configs.py`` (written by that module's ``write``:
the published ``config.json`` scaled in width and depth, weights re-drawn so logits are peaked,
saved by transformers in float32 and bfloat16, sharded) and each dtype:

- **short**: max |ours - transformers| of the logits of a (2, 24) input at positions 0..23;
- **far**: the same for a (2, 16) input placed by ``position_ids`` at offset 4100 and at the end
  of the config's reach, ``min(max_position_embeddings, 131072) - 16`` (GPT-2: its learned table);
- **gen**: token agreement of a 100-token cached greedy generation (``generate`` vs
  transformers' ``generate``, both without eos so both run 100 steps), written as the number of
  leading new tokens that are equal out of 100. Configs with a runtime switch get a prompt that
  ends 6 tokens before it, so the generation crosses it: LongRoPE's
  ``original_max_position_embeddings`` (Phi-3/3.5/4-mini, 4096; transformers rebuilds its cache
  there, so does ``generate``), Mistral-7B's sliding window (4096) and dynamic NTK RoPE (the
  extra row ``vicuna-7b-16k-dynamic``: Vicuna's config with ``{"type": "dynamic", "factor": 4.0}``
  instead of its linear block, switching at ``max_position_embeddings`` = 4096); the others
  get an 8-token prompt.

float32 compares with transformers' float32 (eager attention). bfloat16 compares our bfloat16
with transformers' bfloat16 on the bfloat16 folder, and prints as reference ``ref``, the error
of transformers' bfloat16 against its own float32 on the same (bfloat16-rounded) weights: a
bfloat16 error is only meaningful relative to that. bfloat16 generations agree as long as the
two bfloat16 computations do not meet a near-tie (``ref gen`` is transformers' bfloat16 vs its
own float32 generation).

Usage (numbers in docs/runs/parity_table.md come from the first line)::

    nice python tools/parity_table.py --out docs/runs/parity_table.md
    python tools/parity_table.py --names gpt2 --dtypes float32 --new 10   # a quick check

Needs ``transformers`` (the project's ``[checkpoints]`` extra); no network.
"""

from __future__ import annotations

import argparse
import copy
import datetime as dt
import importlib.util
import os
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "tests" / "checkpoints" / "real_configs.py"
REACH_CAP = 131_072
SHORT_T, FAR_T, BATCH = 24, 16, 2
DYNAMIC = "vicuna-7b-16k-dynamic"


def corpus_module() -> Any:
    """``tests/checkpoints/real_configs.py`` loaded by path (the builders are not copied), with
    the dynamic-RoPE row added to its ``PUBLISHED`` table."""
    spec = importlib.util.spec_from_file_location("real_configs", CORPUS)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    dynamic = copy.deepcopy(module.PUBLISHED["vicuna-7b-16k"])
    dynamic["rope_scaling"] = {"factor": 4.0, "type": "dynamic"}
    module.PUBLISHED[DYNAMIC] = dynamic
    return module


def switch_of(cfg: dict[str, Any]) -> tuple[str, int] | None:
    """The runtime switch a 100-token generation should cross, as (what, position), or None."""
    scaling = cfg.get("rope_scaling") or {}
    kind = scaling.get("type", scaling.get("rope_type"))
    if kind == "longrope":
        return "LongRoPE original_max_position_embeddings", int(
            cfg["original_max_position_embeddings"])
    if kind == "dynamic":
        return "dynamic RoPE at max_position_embeddings", int(cfg["max_position_embeddings"])
    if cfg.get("sliding_window") and cfg["model_type"] == "mistral":
        return "sliding window", int(cfg["sliding_window"])
    return None


def reach(cfg: dict[str, Any]) -> int:
    return min(int(cfg.get("max_position_embeddings", cfg.get("n_positions", 0))), REACH_CAP)


def _ids(torch: Any, vocab: int, batch: int, length: int, seed: int) -> Any:
    g = torch.Generator().manual_seed(seed)
    return torch.randint(3, vocab - 4, (batch, length), generator=g)  # no special ids


def _err(a: Any, b: Any) -> float:
    return float((a.float() - b.float()).abs().max())


def _prefix(a: Any, b: Any, start: int) -> int:
    """Leading positions from ``start`` where the two (1, T) generations are equal."""
    x, y = a[0, start:].tolist(), b[0, start:].tolist()
    n = 0
    for u, v in zip(x, y, strict=False):
        if u != v:
            break
        n += 1
    return n


def measure(rc: Any, name: str, root: Path, dtypes: list[str], new: int,
            rope_precision: str = "library") -> list[dict[str, Any]]:
    """One config: the rows (one per dtype) of the table. ``rope_precision`` is set on the loaded
    model's rotary embedding (``"library"`` is what ``from_pretrained`` sets)."""
    import torch
    import transformers

    from transformer_math.checkpoints.io import from_pretrained

    cfg = rc.scaled(name)
    folders = rc.write(name, root / name)
    kw: dict[str, Any] = {"local_files_only": True, "attn_implementation": "eager"}
    auto = transformers.AutoModelForCausalLM
    switch = switch_of(cfg)
    far = sorted({min(4100, reach(cfg) - FAR_T), reach(cfg) - FAR_T})
    prompt_len = switch[1] - 6 if switch else 8
    prompt = _ids(torch, rc.VOCAB, 1, prompt_len, seed=3)
    pad = cfg.get("pad_token_id")
    pad = pad if isinstance(pad, int) else cfg.get("eos_token_id")
    pad = pad if isinstance(pad, int) else 0

    def hf_gen(model: Any) -> Any:
        model.generation_config.eos_token_id = None
        with torch.no_grad():
            return model.generate(prompt, attention_mask=torch.ones_like(prompt),
                                  do_sample=False, max_new_tokens=new, pad_token_id=pad)

    def logits(model: Any, ids: Any, **extra: Any) -> Any:
        with torch.no_grad():
            return model(ids, **extra).logits

    rows = []
    hf32_gen = None
    for tag in dtypes:
        folder = folders["fp32" if tag == "float32" else "bf16"]
        hf = auto.from_pretrained(folder, dtype="auto", **kw).eval()
        ours = from_pretrained(folder, dtype="auto")
        if ours.rotary is not None:
            ours.rotary.set_precision(rope_precision)
        exact = (auto.from_pretrained(folder, dtype=torch.float32, **kw).eval()
                 if tag == "bfloat16" else None)
        row: dict[str, Any] = {"name": name, "dtype": tag, "switch": switch}
        short = _ids(torch, rc.VOCAB, BATCH, SHORT_T, seed=1)
        row["short"] = _err(logits(ours, short), logits(hf, short))
        if exact is not None:
            row["short_ref"] = _err(logits(hf, short), logits(exact, short))
        ids = _ids(torch, rc.VOCAB, BATCH, FAR_T, seed=5)
        row["far"], row["far_ref"] = [], []
        for offset in far:
            pos = torch.arange(offset, offset + FAR_T).expand(BATCH, -1)
            row["far"].append((offset, _err(logits(ours, ids, position_ids=pos),
                                            logits(hf, ids, position_ids=pos))))
            if exact is not None:
                row["far_ref"].append((offset, _err(logits(hf, ids, position_ids=pos),
                                                    logits(exact, ids, position_ids=pos))))
        t0 = time.perf_counter()
        got = ours.generate(prompt, new, do_sample=False, eos_token_id=None, pad_token_id=pad)
        t1 = time.perf_counter()
        expected = hf_gen(hf)
        t2 = time.perf_counter()
        row["gen"] = _prefix(got, expected, prompt_len)
        row["gen_len"] = min(got.shape[1], expected.shape[1]) - prompt_len
        row["seconds"] = (t1 - t0, t2 - t1)
        if tag == "float32":
            hf32_gen = expected
        elif exact is not None:
            ref = hf32_gen if hf32_gen is not None else hf_gen(exact)
            row["gen_ref"] = _prefix(expected, ref, prompt_len)
        rows.append(row)
        print(format_row(row), flush=True)
    return rows


def format_row(row: dict[str, Any]) -> str:
    far = ", ".join(f"{o}: {e:.2e}" for o, e in row["far"])
    short = f"{row['short']:.2e}"
    if "short_ref" in row:
        short += f" (ref {row['short_ref']:.2e})"
        far += " (ref " + ", ".join(f"{e:.2e}" for _, e in row["far_ref"]) + ")"
    switch = f"{row['switch'][0]} {row['switch'][1]}" if row["switch"] else "none (8-token prompt)"
    gen = f"{row['gen']}/{row['gen_len']}"
    if "gen_ref" in row:
        gen += f" (ref {row['gen_ref']}/{row['gen_len']})"
    ours_s, theirs_s = row["seconds"]
    return (f"| {row['name']} | {row['dtype']} | {short} | {far} | {switch} | {gen} | "
            f"{ours_s:.1f} / {theirs_s:.1f} |")


HEADER = ("| config | dtype | short logits | far logits (offset: error) "
          "| switch crossed (position) | 100-token cached greedy: equal prefix "
          "| gen s ours / transformers |\n"
          "|---|---|---|---|---|---|---|")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--names", nargs="*", default=None,
                        help="configs of the corpus (default: all, plus the dynamic-RoPE row)")
    parser.add_argument("--dtypes", nargs="*", default=["float32", "bfloat16"],
                        choices=["float32", "bfloat16"])
    parser.add_argument("--new", type=int, default=100, help="new tokens per generation")
    parser.add_argument("--rope-precision", choices=["library", "float64"], default="library",
                        help="RoPE inv_freq precision of our model (from_pretrained: library)")
    parser.add_argument("--out", type=Path, default=None, help="markdown file to write")
    args = parser.parse_args(argv)
    try:
        import torch
    except ImportError:  # pragma: no cover
        print("error: torch is required", file=sys.stderr)
        return 2
    rc = corpus_module()
    names = args.names if args.names else sorted(rc.PUBLISHED)
    unknown = [n for n in names if n not in rc.PUBLISHED]
    if unknown:
        print(f"error: --names: unknown config(s) {unknown}; known: {sorted(rc.PUBLISHED)}",
              file=sys.stderr)
        return 2
    if args.new < 1:
        print(f"error: --new must be >= 1, got {args.new}", file=sys.stderr)
        return 2
    torch.set_num_threads(1)
    started = time.perf_counter()
    print(HEADER, flush=True)
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            rows.extend(measure(rc, name, Path(tmp), args.dtypes, args.new,
                                 args.rope_precision))
    elapsed = time.perf_counter() - started
    if args.out is not None:
        import transformers

        from transformer_math import safe_write

        command = "python tools/parity_table.py " + " ".join(
            a for a in (argv if argv is not None else sys.argv[1:]))
        text = "\n".join([
            "# Checkpoint parity table (issue 33, Done when)",
            "",
            f"RoPE precision of our models: `{args.rope_precision}`.",
            "",
            f"Command: `nice {command.strip()}` (torch threads 1)  ",
            f"Machine: {platform.platform()}, {os.cpu_count()} CPUs, Python "
            f"{platform.python_version()}, torch {torch.__version__}, transformers "
            f"{transformers.__version__}  ",
            f"Date: {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC; "
            f"run time {elapsed:.0f} s  ",
            "",
            "What each column is: see the docstring of tools/parity_table.py. Errors are max "
            "|ours - transformers| of the logits (std ~4) on the same folder; bfloat16 rows "
            "compare bfloat16 with transformers' bfloat16 and give as `ref` transformers' own "
            "bfloat16-vs-float32 error (and generation agreement) on the same weights.",
            "",
            HEADER,
            *(format_row(r) for r in rows),
            "",
        ])
        safe_write.write_text(args.out, text)
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
