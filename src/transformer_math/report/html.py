"""The HTML report: ``DIR/index.html`` plus ``DIR/figures/*.png`` and ``DIR/results.json``.

The page is self-contained: inline CSS, no JavaScript, no web fonts, images by relative path, so
it opens from the file system and can be archived as a folder. All text coming from claims is
escaped with :func:`html.escape`. A figure that cannot be drawn is reported in the page in place
of its image; it never stops the report.
"""

from __future__ import annotations

import html
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from transformer_math.report.figures import draw_figure
from transformer_math.report.results import (
    dumps,
    summary_from_claims,
    validate_results,
    write_json,
)
from transformer_math.report.table import DASH, format_value

_CSS = """
:root { --green:#1a7f37; --red:#cf222e; --magenta:#8250df; --blue:#0969da; --grey:#57606a; }
* { box-sizing: border-box; }
body { font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Helvetica, Arial, sans-serif;
       margin: 0 auto; max-width: 1100px; padding: 1.5rem; color: #1f2328; background: #fff; }
h1 { font-size: 1.6rem; margin: 0 0 .3rem; } h2 { font-size: 1.15rem; margin: 0; }
code, pre { font: 13px/1.4 ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; }
pre { background: #f6f8fa; padding: .6rem; overflow-x: auto; white-space: pre-wrap; }
.meta { color: var(--grey); margin: 0 0 1rem; }
.cards { display: flex; flex-wrap: wrap; gap: .6rem; margin: 1rem 0; }
.card { border: 1px solid #d0d7de; border-radius: 6px; padding: .5rem .9rem; min-width: 7.5rem; }
.card b { display: block; font-size: 1.4rem; }
.badge { display: inline-block; padding: .05rem .55rem; border-radius: 1rem; color: #fff;
         font-size: .8rem; font-weight: 600; vertical-align: middle; }
.verified { background: var(--green); } .refuted { background: var(--magenta); }
.failed { background: var(--red); } .cited { background: var(--blue); }
.unknown { background: var(--grey); }
table.index { border-collapse: collapse; width: 100%; margin: 1rem 0 2rem; }
table.index th, table.index td { border-bottom: 1px solid #d0d7de; padding: .3rem .5rem;
         text-align: left; vertical-align: top; }
table.index td.num { text-align: right; white-space: nowrap; }
section.claim { border: 1px solid #d0d7de; border-left: 6px solid var(--grey); border-radius: 6px;
         padding: .8rem 1rem; margin: 0 0 1.2rem; }
section.claim.v-verified { border-left-color: var(--green); }
section.claim.v-refuted { border-left-color: var(--magenta); }
section.claim.v-failed { border-left-color: var(--red); }
section.claim.v-cited { border-left-color: var(--blue); }
dl.fields { display: grid; grid-template-columns: max-content 1fr; gap: .2rem 1rem;
            margin: .6rem 0; }
dl.fields dt { font-weight: 600; color: var(--grey); } dl.fields dd { margin: 0; }
.caught { color: var(--green); font-weight: 600; } .missed { color: var(--red); font-weight: 700; }
.problem { color: var(--red); font-weight: 600; }
figure { margin: .8rem 0; } figure img { max-width: 100%; height: auto; border: 1px solid #eee; }
figcaption { color: var(--grey); font-size: .85rem; }
.figure-error { color: var(--red); }
footer { color: var(--grey); margin-top: 2rem; font-size: .85rem; }
"""

_VERDICTS = ("verified", "refuted", "failed", "cited")


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _value(value: Any) -> str:
    return f"<code>{_e(format_value(value, max_items=16, max_chars=600))}</code>"


def _seconds(value: Any) -> str:
    try:
        return f"{float(value):.2f}"
    except (TypeError, ValueError):
        return DASH


def _badge(verdict: Any) -> str:
    word = str(verdict) if verdict in _VERDICTS else "unknown"
    return f'<span class="badge {word}">{_e(verdict if verdict is not None else DASH)}</span>'


def _caught(falsifier: Any) -> str:
    if not isinstance(falsifier, Mapping) or falsifier.get("caught") is None:
        return DASH
    if falsifier.get("caught"):
        return '<span class="caught">caught</span>'
    return '<span class="missed">NOT caught</span>'


def figure_filename(claim_id: str, index: int) -> str:
    """``attention.quadratic-cost`` figure 0 -> ``attention.quadratic-cost-1.png``."""
    slug = re.sub(r"[^a-z0-9.-]+", "-", claim_id.lower()).strip("-.") or "claim"
    return f"{slug}-{index + 1}.png"


def _figures_html(claim: Mapping[str, Any], out_dir: Path, used: set[str]) -> str:
    parts: list[str] = []
    for k, fig in enumerate(claim.get("figures") or []):
        title = (
            fig.get("title", f"figure {k + 1}") if isinstance(fig, Mapping) else f"figure {k + 1}"
        )
        name = figure_filename(str(claim.get("id")), k)
        while name in used:  # two entries with one id: keep both pictures
            name = name.removesuffix(".png") + "-b.png"
        used.add(name)
        try:
            draw_figure(fig, out_dir / "figures" / name)
        except Exception as exc:  # a broken figure is reported in the page, never fatal
            parts.append(
                f'<p class="figure-error">Figure {_e(repr(title))} could not be drawn: '
                f"{_e(type(exc).__name__)}: {_e(exc)}</p>"
            )
            continue
        parts.append(
            f'<figure><img src="figures/{_e(name)}" alt="{_e(title)}">'
            f"<figcaption>{_e(title)}</figcaption></figure>"
        )
    return "\n".join(parts)


def _claim_html(claim: Mapping[str, Any], out_dir: Path, used: set[str]) -> str:
    cid = str(claim.get("id"))
    verdict = claim.get("verdict")
    rows: list[tuple[str, str]] = [
        ("predicted", _value(claim.get("predicted"))),
        ("measured", _value(claim.get("measured"))),
        ("tolerance", _value(claim.get("tolerance"))),
        ("source", _e(claim.get("source", DASH))),
        ("statement", _e(claim.get("statement", DASH))),
        ("tier", _e(claim.get("tier", DASH))),
        ("seconds", _e(_seconds(claim.get("seconds")))),
    ]
    if claim.get("expected") is not None:
        met = claim.get("expected_met")
        rows.append(("expected", f"{_badge(claim.get('expected'))} (version "
                     f"{_e(claim.get('version', 1))})"
                     + ("" if met is not False else ' <span class="problem">not obtained</span>')))
    refs = [r for r in claim.get("seed_refs") or [] if isinstance(r, Mapping)]
    if refs:
        rows.append(("seed lines", _e(", ".join(
            f"{r.get('seed')}:{'-'.join(str(x) for x in r.get('lines') or [])}" for r in refs))))
    for r in claim.get("refutes") or []:
        if isinstance(r, Mapping):
            rows.append(("refutes", f"{_e(r.get('seed'))}:{_e(r.get('line'))} says "
                         f"<i>{_e(r.get('says'))}</i>; correct: {_e(r.get('correct'))}"))
    per_seed = claim.get("per_seed")
    if isinstance(per_seed, Mapping) and isinstance(per_seed.get("values"), Mapping):
        seeds = per_seed.get("seeds") or []
        lines = [f"{_e(name)}: " + ", ".join(_value(v) for v in values)
                 + f" (mean {_value((per_seed.get('mean') or {}).get(name))}, spread "
                 f"{_value((per_seed.get('spread') or {}).get(name))})"
                 for name, values in per_seed["values"].items()]
        rows.append((f"per seed {_e(seeds)}", "<br>".join(lines)))
    falsifier = claim.get("falsifier")
    if isinstance(falsifier, Mapping):
        description = falsifier.get("description")
        rows.append(
            (
                "falsifier",
                f"<b>{_e(falsifier.get('name'))}</b>"
                + (f" ({_e(description)})" if description else "")
                + f": {_caught(falsifier)}; its verdict {_badge(falsifier.get('verdict'))}, "
                f"measured {_value(falsifier.get('measured'))}",
            )
        )
    else:
        rows.append(("falsifier", "none"))
    if claim.get("error"):
        rows.append(("error", f'<span class="problem">{_e(claim["error"])}</span>'))
    fields = "\n".join(f"<dt>{_e(k)}</dt><dd>{v}</dd>" for k, v in rows)

    notes = [str(n) for n in claim.get("notes") or []]
    notes_html = ""
    if notes:
        items = "".join(
            f"<li><pre>{_e(n)}</pre></li>" if "\n" in n.strip() else f"<li>{_e(n)}</li>"
            for n in notes
        )
        notes_html = f"<h3>Notes</h3><ul>{items}</ul>"
    details_html = ""
    if claim.get("details"):
        details_html = (
            f"<details><summary>details</summary><pre>{_e(dumps(claim['details']))}</pre></details>"
        )
    v_class = f"v-{verdict}" if verdict in _VERDICTS else "v-unknown"
    return (
        f'<section class="claim {v_class}" id="{_e(cid)}">\n'
        f"<h2>{_e(cid)} {_badge(verdict)}</h2>\n"
        f'<dl class="fields">\n{fields}\n</dl>\n'
        f"{notes_html}\n{details_html}\n{_figures_html(claim, out_dir, used)}\n"
        f"</section>"
    )


def _summary_html(summary: Mapping[str, Any]) -> str:
    cards = [f'<div class="card"><b>{_e(summary.get("total", 0))}</b>claims</div>']
    for v in _VERDICTS:
        cards.append(f'<div class="card"><b>{_e(summary.get(v, 0))}</b>{_badge(v)}</div>')
    cards.append(
        f'<div class="card"><b>{_e(summary.get("falsifiers_caught", 0))}/'
        f"{_e(summary.get('falsifiers', 0))}</b>falsifiers caught</div>"
    )
    problems = int(summary.get("problems", 0) or 0)
    cls = ' class="problem"' if problems else ""
    cards.append(f'<div class="card"><b{cls}>{problems}</b>problems</div>')
    cards.append(
        f'<div class="card"><b>{float(summary.get("seconds", 0.0) or 0.0):.2f}</b>seconds</div>'
    )
    return '<div class="cards">' + "".join(cards) + "</div>"


def _meta_html(summary: Mapping[str, Any]) -> str:
    keys = (
        "seed",
        "tier",
        "size",
        "pattern",
        "version",
        "torch",
        "numpy",
        "python",
        "platform",
        "torch_threads",
        "timestamp",
    )
    parts = [f"{k} <b>{_e(summary[k])}</b>" for k in keys if summary.get(k) is not None]
    return '<p class="meta">' + " · ".join(parts) + "</p>" if parts else ""


def _index_html(claims: list[Mapping[str, Any]]) -> str:
    rows = []
    for c in claims:
        cid = str(c.get("id"))
        rows.append(
            f'<tr><td><a href="#{_e(cid)}">{_e(cid)}</a></td><td>{_badge(c.get("verdict"))}</td>'
            f"<td>{_value(c.get('predicted'))}</td><td>{_value(c.get('measured'))}</td>"
            f"<td>{_caught(c.get('falsifier'))}</td>"
            f'<td class="num">{_e(_seconds(c.get("seconds")))}</td></tr>'
        )
    return (
        '<table class="index"><thead><tr><th>claim</th><th>verdict</th><th>predicted</th>'
        "<th>measured</th><th>falsifier</th><th>s</th></tr></thead><tbody>"
        + "".join(rows)
        + "</tbody></table>"
    )


def render_report(results_json: dict[str, Any], out_dir: Path) -> Path:
    """Write the HTML report of a results document into ``out_dir``; return ``index.html``'s path.

    ``results_json`` is what ``tmath verify --json`` writes (see ``report/__init__.py``). Writes
    ``out_dir/index.html``, ``out_dir/figures/<claim-id>-<k>.png`` (old PNGs there are removed
    first) and ``out_dir/results.json`` (the document itself, so the folder stands alone).
    """
    validate_results(results_json)
    out_dir = Path(out_dir)
    figures_dir = out_dir / "figures"
    figures_dir.mkdir(parents=True, exist_ok=True)
    for old in figures_dir.glob("*.png"):
        old.unlink()

    claims = list(results_json["claims"])
    summary: dict[str, Any] = dict(results_json.get("summary") or {})
    for key, value in summary_from_claims(claims).items():
        summary.setdefault(key, value)

    used: set[str] = set()
    sections = "\n".join(_claim_html(c, out_dir, used) for c in claims)
    page = f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>transformer-math: claim verification</title>
<style>{_CSS}</style>
</head>
<body>
<header>
<h1>transformer-math: claim verification</h1>
{_meta_html(summary)}
</header>
{_summary_html(summary)}
<nav>{_index_html(claims)}</nav>
<main>
{sections}
</main>
<footer>Raw results: <a href="results.json">results.json</a>.
Generated by <code>tmath</code>; each claim's falsifier is its own check run with a bug planted in
the library, and it is caught when that run fails.</footer>
</body>
</html>
"""
    write_json(results_json, out_dir / "results.json")
    index = out_dir / "index.html"
    index.write_text(page, encoding="utf-8")
    return index
