"""``tmath margins``: run claims over several seeds and ask whether every pass condition's slack
is at least FACTOR times its spread between seeds (exit 1 when a claim is not firm).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated

import typer

from transformer_math.commands.args import (
    MAX_SEED,
    MAX_SEEDS,
    MAX_THREADS,
    integer,
    internal_work,
    number,
    output_file,
)
from transformer_math.commands.options import (
    SIZES,
    TIERS,
    PatternOption,
    SizeOption,
    ThreadsOption,
    TierOption,
    UsageError,
    choice,
    json_file_option,
    regex,
)
from transformer_math.commands.output import emit_json, stderr, stdout, to_stdout

HELP_ORDER = 3
"""Place in ``tmath --help`` (``cli.register_extra_commands``)."""


def _seed_list(text: str) -> list[int]:
    """``"0-4"`` -> [0, 1, 2, 3, 4]; ``"0,3,7"`` -> [0, 3, 7]."""
    seeds: list[int] = []
    for part in text.split(","):
        m = re.fullmatch(r"\s*(\d{1,20})\s*(?:-\s*(\d{1,20})\s*)?", part)
        if m is None or (m.group(2) is not None and int(m.group(2)) < int(m.group(1))):
            raise UsageError(f"--seeds must look like '0-4' or '0,3,7', got {text!r}")
        lo, hi = int(m.group(1)), int(m.group(2) or m.group(1))
        if hi > MAX_SEED or len(seeds) + hi - lo + 1 > MAX_SEEDS:
            raise UsageError(f"--seeds must name at most {MAX_SEEDS} seeds, each <= {MAX_SEED}, "
                             f"got {text!r}")
        seeds.extend(range(lo, hi + 1))
    if len(seeds) < 2 or len(set(seeds)) != len(seeds):
        raise UsageError(f"--seeds must name at least two distinct seeds, got {text!r}")
    return seeds


def margins(
    tier: TierOption = "quick",
    pattern: PatternOption = None,
    seeds: Annotated[
        str, typer.Option("--seeds", help="Seeds to sweep, e.g. 0-4 or 0,3,7.")
    ] = "0-4",
    size: SizeOption = "tiny",
    factor: Annotated[
        float, typer.Option("--factor", help="Required min slack / spread between seeds.")
    ] = 3.0,
    json_file: Annotated[Path | None, json_file_option("the sweep as JSON")] = None,
    threads: ThreadsOption = 1,
) -> None:
    """Run claims for several seeds; is every pass condition's slack >= FACTOR x its spread?

    Exits 0 when every claim is firm, 1 otherwise.
    """
    tier = choice(tier, TIERS, "--tier")
    size = choice(size, SIZES, "--size")
    pattern = regex(pattern)
    seed_list = _seed_list(seeds)
    factor = number("--factor", factor, low=0, low_open=True)
    integer("--threads", threads, low=1, high=MAX_THREADS)
    if not to_stdout(json_file):
        output_file("--json", json_file)  # before the sweep runs

    from transformer_math.claims.margins import sweep
    from transformer_math.claims.registry import Size, all_claims, select_claims
    from transformer_math.diagnostics.timing import torch_threads

    claims = select_claims(all_claims(), tier=tier, pattern=pattern)
    if not claims:
        raise UsageError(f"no claim of tier {tier!r} matches -k {pattern!r} (see 'tmath list')")
    out = stderr() if to_stdout(json_file) else stdout()
    with internal_work(), torch_threads(threads):
        spreads = sweep(claims, seed_list, size=Size(size))
    for sp in spreads:
        out.print(f"{'firm ' if sp.firm(factor) else 'WEAK '} {sp.claim_id}  "
                  f"verdicts {','.join(sorted(set(sp.verdicts)))}"
                  + ("" if not sp.problems else f"  problems: {'; '.join(sp.problems)}"),
                  highlight=False)
        for m in sp.margins:
            ratio = "inf" if m.spread == 0 else f"{m.min_slack / m.spread:.3g}"
            out.print(f"    {'ok ' if m.firm(factor) else 'NO '} {m.name}: {m.sense} "
                      f"{m.threshold:.4g}; values {[float(f'{v:.4g}') for v in m.values]}; "
                      f"min slack {m.min_slack:.4g}, spread {m.spread:.3g}, ratio {ratio}",
                      highlight=False)
    weak = [sp.claim_id for sp in spreads if not sp.firm(factor)]
    out.print(f"{len(spreads) - len(weak)}/{len(spreads)} claims firm over seeds {seeds} "
              f"(size {size}, factor {factor:g})", highlight=False)
    if json_file is not None:
        doc = {"seeds": seed_list, "size": size, "factor": factor,
               "claims": [sp.to_json(factor) for sp in spreads]}
        emit_json(json_file, doc, out)
    if weak:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    """Add ``tmath margins`` to ``app``."""
    app.command("margins")(margins)
