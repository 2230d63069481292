"""The decoding table of 000:1304-1308 rebuilt from measured numbers (issue 20).

The seed's table compares autoregressive 256-bin tokens, diffusion (K ~ 50), flow matching
(K ~ 10) and a CVAE on multimodality ("多峰能力") and latency ("推理延迟"). :func:`decoder_table`
reads a results document (``tmath verify --json``) holding the decoder claims
(``robotics.diffusion-decoder``, ``robotics.flow-matching-decoder``, ``robotics.ar-bins-decoder``,
``robotics.decoder-steps`` and, when present, ``robotics.multimodal-actions`` for ACT's CVAE) and
writes the same table with the project's numbers: mean over the seeds and the range, for the
bimodal obstacle task (collision rate, the rarer side's share, goal reached) and point-mass
tracking (error / the noisy expert's), with the forwards, FLOPs and wall-clock per chunk.

    python -m transformer_math.report.decoder_table results.json
"""

from __future__ import annotations

import math
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from transformer_math.report.results import read_results

SEED_TABLE = {
    "ar": ("弱 (易 mode collapse)", "O(d_a H) steps"),
    "diffusion": ("强", "O(K T_head), K ~ 50"),
    "flow": ("强", "O(K T_head), K ~ 10"),
    "cvae": ("中", "one forward"),
}


def _claims(document: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    claims = document.get("claims") if isinstance(document, Mapping) else None
    if not isinstance(claims, list):
        raise ValueError("results document must hold a 'claims' list (tmath verify --json)")
    return {c["id"]: c for c in claims if isinstance(c, Mapping) and "id" in c}


def _stat(claim: Mapping[str, Any] | None, key: str, digits: int = 2) -> str:
    """'mean (min-max)' of a measured per-seed value, '-' when absent."""
    if claim is None:
        return "-"
    entry = (claim.get("measured") or {}).get(key)
    if not isinstance(entry, Mapping):
        return "-"
    vals = [entry.get(k) for k in ("mean", "min", "max")]
    if not all(isinstance(v, int | float) and math.isfinite(v) for v in vals):
        return "-"
    mean, lo, hi = vals
    if lo == hi:
        return f"{mean:.{digits}f}"
    return f"{mean:.{digits}f} ({lo:.{digits}f}-{hi:.{digits}f})"


#: the claims the table reads (full tier: each trains a policy)
DECODER_CLAIMS = ("robotics.diffusion-decoder", "robotics.flow-matching-decoder",
                  "robotics.ar-bins-decoder", "robotics.decoder-steps",
                  "robotics.multimodal-actions")


def decoder_table(document: Mapping[str, Any]) -> str:
    """Markdown: one row per decoder, the seed's two columns beside the measured ones.

    A document holding none of :data:`DECODER_CLAIMS` (a quick run) is refused with a
    ``ValueError`` saying how to make one, instead of a table of dashes; a claim missing from a
    document holding others is named under the table, its cells dashes."""
    by_id = _claims(document)
    present = [c for c in DECODER_CLAIMS if c in by_id]
    if not present:
        raise ValueError(
            "the results document holds none of the decoder claims "
            f"({', '.join(DECODER_CLAIMS)}); they are of tier full: run "
            "tmath verify --tier full -k 'decoder|multimodal-actions' --json FILE")
    diff = by_id.get("robotics.diffusion-decoder")
    flow = by_id.get("robotics.flow-matching-decoder")
    ar = by_id.get("robotics.ar-bins-decoder")
    steps = by_id.get("robotics.decoder-steps")
    act = by_id.get("robotics.multimodal-actions")
    mse_source = diff or flow or ar
    head = ("| decoder | seed: multimodality | seed: latency | collisions | rarer side | "
            "goal reached | tracking / expert | ms per chunk (this CPU) | verdict |")
    rows = [head, "|" + "---|" * 9]

    def verdict(c: Mapping[str, Any] | None) -> str:
        return "-" if c is None else f"{c.get('id')}: {c.get('verdict')}"

    rows.append(f"| MSE chunk MLP (conditional mean) | - | one forward | "
                f"{_stat(mse_source, 'mse_collision')} | - | - | - | - | - |")
    for name, c, key in (("diffusion, DDIM K = 10", diff, "diffusion"),
                         ("flow matching, Euler K = 10", flow, "flow"),
                         ("AR 256-bin, sampled (T = 1)", ar, "ar")):
        m, lat = SEED_TABLE[key]
        rows.append(f"| {name} | {m} | {lat} | {_stat(c, 'collision')} | "
                    f"{_stat(c, 'minority_side')} | {_stat(c, 'success')} | "
                    f"{_stat(c, 'tracking_ratio')} | {_stat(c, 'ms_per_chunk', 1)} | "
                    f"{verdict(c)} |")
    rows.append(f"| AR 256-bin, greedy (argmax) | - | - | {_stat(ar, 'greedy_collision')} | "
                f"{_stat(ar, 'greedy_minority_side')} | - | "
                f"{_stat(ar, 'greedy_tracking_ratio')} | - | - |")
    m, lat = SEED_TABLE["cvae"]
    rows.append(f"| CVAE (ACT), z sampled per episode | {m} | {lat} | "
                f"{_stat(act, 'cvae_collision')} | - | - | - | - | {verdict(act)} |")
    if steps is not None:
        rows += ["", "| sampler steps K | diffusion collisions | flow collisions | diffusion ms "
                 "| flow ms |", "|---|---|---|---|---|"]
        for k in (1, 2, 5, 10, 50):
            cells = [_stat(steps, f"diffusion_collision_k{k}"),
                     _stat(steps, f"flow_collision_k{k}"),
                     _stat(steps, f"diffusion_ms_k{k}", 1), _stat(steps, f"flow_ms_k{k}", 1)]
            if any(c != "-" for c in cells):
                rows.append(f"| {k} | " + " | ".join(cells) + " |")
        rows.append(f"\n{verdict(steps)}")
    absent = [c for c in DECODER_CLAIMS if c not in by_id]
    if absent:
        rows.append(f"\nnot in this results document (its cells are '-'): {', '.join(absent)}")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m transformer_math.report.decoder_table RESULTS.json",
              file=sys.stderr)
        return 2
    try:
        document = read_results(Path(args[0]))
        print(decoder_table(document))
    except (OSError, ValueError) as exc:
        print(f"decoder_table: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
