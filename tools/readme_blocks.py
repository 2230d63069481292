"""Rewrite the generated blocks of README.md: no count or timing in the README is typed by hand
(issue 38, item 2).

A block is the text between ``<!-- generated:NAME -->`` and ``<!-- /generated:NAME -->``. Each
is made from what the project itself reports:

- ``catalogue``: the claims by tier, kind and expected verdict, the distinct seed errors and the
  lines they touch, the cited corrections and the planted bugs: what ``tmath list --json``
  prints, counted by ``transformer_math.claims.counts`` (the definitions the report and
  ``tmath chapters`` use);
- ``chapters``: the table of ``tmath chapters --json`` (``commands.chapters.section_counts``);
- ``quick-run`` and ``full-run``: a recorded run, ``docs/runs/quick.json`` and
  ``docs/runs/full.json``, which hold the command, commit, machine, date, timing and the run's
  summary (``record`` below writes one from a ``tmath verify --json`` document).

Usage::

    python tools/readme_blocks.py            # rewrite README.md (atomically)
    python tools/readme_blocks.py --check    # exit 1 naming every stale block
    python tools/readme_blocks.py record quick --results /tmp/q.json --command "..." \\
        --started 2026-12-03T14:20:00Z --ended 2026-12-03T14:25:00Z --note "..."

``tests/examples/test_readme_blocks.py`` fails when a block is stale.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
RUNS = ROOT / "docs" / "runs"
BLOCK = re.compile(r"(<!-- generated:(?P<name>[a-z-]+) -->\n)(?P<body>.*?)"
                   r"(<!-- /generated:(?P=name) -->)", re.S)


def catalogue_entries() -> list[dict[str, Any]]:
    """The catalogue as ``tmath list --json`` prints it (``{"claims": [...]}``'s list)."""
    from transformer_math.claims.registry import all_claims
    from transformer_math.report.results import claim_to_json

    return [claim_to_json(c) for c in all_claims()]


def _join(parts: Mapping[str, int], order: tuple[str, ...]) -> str:
    return ", ".join(f"{parts[k]} {k}" for k in order if parts.get(k))


def catalogue_block() -> str:
    from transformer_math.claims import counts

    c = counts.catalogue(catalogue_entries())
    errors = c["distinct_errors"]
    return (
        f"- **{c['total']} claims**: {_join(c['by_tier'], ('quick', 'full'))}; by kind "
        f"{_join(c['kinds'], counts.KINDS)}.\n"
        f"- Expected verdicts: {_join(c['by_verdict'], counts.VERDICTS)}.\n"
        f"- **{errors['measured'] + errors['modelled']} distinct seed errors** at "
        f"{errors['lines']} seed lines: {errors['measured']} shown by running code "
        f"(measurement, construction, code-audit), {errors['modelled']} by an analytic model; "
        f"beside them {c['corrections']} cited corrections (a wrong author, year, venue or "
        f"reading of a paper, never a verdict).\n"
        f"- **{counts.bugs_declared()} planted bugs** declared in the library (`tmath mutants` "
        f"plants each in turn and runs the claims that reach it).\n"
    )


def chapters_block() -> str:
    from transformer_math.commands.chapters import section_counts

    keys = ("claims", "distinct_errors", "modelled_errors", "corrections")
    rows: list[dict[str, Any]] = []
    for r in section_counts():
        if not any(r[k] for k in keys):
            continue
        if r["seed"] == "000":
            rows.append(r)
            continue
        # the other seeds' chapters in one row per seed
        title = f"seed {r['seed']}, every chapter"
        if not rows or rows[-1]["title_en"] != title:
            rows.append({"title_en": title, "claims": [], "distinct_errors": 0,
                         "modelled_errors": 0, "corrections": 0})
        last = rows[-1]
        last["claims"] = [*last["claims"], *r["claims"]]
        for k in keys[1:]:
            last[k] += r[k]
    lines = ["| section | claims read there | seed errors (code) | (model) | cited corrections |",
             "|---|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r['title_en']} | {len(r['claims'])} | {r['distinct_errors']} | "
                     f"{r['modelled_errors']} | {r['corrections']} |")
    total = {k: sum(r[k] if isinstance(r[k], int) else len(r[k]) for r in rows) for k in keys}
    lines.append(f"| **total** | {total['claims']} | {total['distinct_errors']} | "
                 f"{total['modelled_errors']} | {total['corrections']} |")
    return "\n".join(lines) + "\n"


def read_run(name: str) -> dict[str, Any]:
    path = RUNS / f"{name}.json"
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise SystemExit(f"readme_blocks: cannot read {path}: {exc}") from None


def _minutes(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.0f} min"


def run_block(name: str) -> str:
    run = read_run(name)
    s = run["summary"]
    errors = s["distinct_errors"]
    verdicts = ", ".join(f"{s[v]} {v}" for v in
                         ("verified", "refuted", "failed", "cited", "inconclusive") if s.get(v)
                         or v == "failed")
    undecided = f" ({', '.join(run['inconclusive'])})" if run.get("inconclusive") else ""
    rerun = ("" if run.get("this_session", True)
             else f" Recorded at commit {run['commit']} and not re-run since.")
    return (
        f"`{run['command']}` on {run['machine']}, {run['date']}: **{s['total']} claims**, "
        f"{verdicts}{undecided}; falsifiers caught {s['falsifiers_caught']}/{s['falsifiers']}; "
        f"{errors['measured'] + errors['modelled']} distinct seed errors shown "
        f"({errors['measured']} by running code, {errors['modelled']} by a model). "
        f"Wall time {_minutes(run['wall_s'])}, {run['cpu_s']:.0f} CPU-s of tasks. "
        f"{run['note']}{rerun}\n"
    )


BLOCKS: dict[str, Callable[[], str]] = {
    "catalogue": catalogue_block,
    "chapters": chapters_block,
    "quick-run": lambda: run_block("quick"),
    "full-run": lambda: run_block("full"),
}


def render(text: str) -> tuple[str, list[str]]:
    """``text`` with every generated block rewritten, and the names of those that changed."""
    stale: list[str] = []
    made: dict[str, str] = {}

    def replace(m: re.Match[str]) -> str:
        name = m.group("name")
        if name not in BLOCKS:
            raise SystemExit(f"readme_blocks: unknown block {name!r} (known: {sorted(BLOCKS)})")
        body = made.setdefault(name, BLOCKS[name]())
        if body != m.group("body"):
            stale.append(name)
        return m.group(1) + body + m.group(4)

    return BLOCK.sub(replace, text), stale


def record(args: argparse.Namespace) -> None:
    """Write ``docs/runs/NAME.json`` from a ``tmath verify --json`` document and the facts of
    the run that the document does not hold (command, start and end, machine, a note)."""
    from transformer_math import safe_write

    doc = json.loads(Path(args.results).read_text(encoding="utf-8"))
    summary = doc["summary"]
    keys = ("total", "verified", "refuted", "failed", "cited", "inconclusive", "falsifiers",
            "falsifiers_caught", "by_kind", "distinct_errors", "tier", "size", "seeds", "torch",
            "python", "platform", "torch_threads", "version")
    run = doc.get("run") or {}
    cpu = sum(float((c.get("timing") or {}).get("tasks_cpu_s") or 0.0) for c in doc["claims"])
    out = {
        "command": args.command,
        "commit": args.commit,
        "date": args.started[:10],
        "started_utc": args.started,
        "ended_utc": args.ended,
        "wall_s": round(float(args.wall or run.get("wall_seconds") or 0.0), 1),
        "cpu_s": round(cpu, 1),
        "workers": run.get("workers"),
        "machine": args.machine,
        "note": args.note,
        "this_session": True,
        "inconclusive": sorted(c["id"] for c in doc["claims"]
                               if c.get("verdict") == "inconclusive"),
        "summary": {k: summary[k] for k in keys if k in summary},
    }
    path = RUNS / f"{args.name}.json"
    safe_write.write_text(path, json.dumps(out, indent=2, ensure_ascii=False) + "\n")
    print(f"wrote {path}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if a block is stale")
    sub = parser.add_subparsers(dest="action")
    rec = sub.add_parser("record", help="write docs/runs/NAME.json from a verify --json file")
    rec.add_argument("name", choices=["quick", "full"])
    for flag in ("--results", "--command", "--started", "--ended", "--machine", "--note",
                 "--commit"):
        rec.add_argument(flag, required=True)
    rec.add_argument("--wall", type=float, default=None)
    args = parser.parse_args(argv)
    if args.action == "record":
        record(args)
        return 0
    text = README.read_text(encoding="utf-8")
    new, stale = render(text)
    if args.check:
        for name in stale:
            print(f"README.md: block {name!r} is stale; run python tools/readme_blocks.py")
        return 1 if stale else 0
    if new != text:
        from transformer_math import safe_write

        safe_write.write_text(README, new)
    print(f"README.md: {len(stale)} block(s) rewritten" + (f": {', '.join(stale)}" if stale
                                                             else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
