"""The doctor's HTML report: ``DIR/index.html``, ``DIR/figures/*.png``, ``DIR/diagnosis.json``.

Built like the claims report (``report/html.py``): inline CSS, no JavaScript, no web fonts,
figures as PNG files by relative path (matplotlib's object-oriented API on an Agg canvas, as
``report/figures.py`` draws), every text escaped. The page holds the summary, the findings
table (severity colours), what each flagged finding means / how to fix it / its source, the
skipped checks, the seconds per check, and the figures whose data the checks handed over
(``Subject.figure``):

- ``attention.logit_spread``, ``attention.entropy``: ``{"values": [[per head] per layer],
  "layers": L, "heads": H}``, drawn as layer x head heatmaps;
- ``rope.wavelengths``: ``{"wavelengths": [per pair], "trained_length": int, "context": int}``,
  wavelength 2 pi / theta_i per rotary pair on a log scale with the trained length and the
  target context as horizontal lines (pairs above a line never complete a turn within it);
- ``depth.gradients``: ``{"norms": [per layer 0..L]}`` and ``depth.jacobian``:
  ``{"norms": [per layer]}``, norm against layer on a log scale.

A figure whose data is malformed is replaced by a note saying why; it never stops the report.
Figures with other names are listed with their raw data.
"""

from __future__ import annotations

import html
import math
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from transformer_math import safe_write
from transformer_math.html_style import page_css

_CSS = page_css(max_width="1200px") + """
h2 { font-size: 1.2rem; margin: 1.5rem 0 .5rem; }
.ok { background: var(--green); } .info { background: var(--blue); }
.warning { background: var(--yellow); } .error { background: var(--red); }
table.findings { border-collapse: collapse; width: 100%; margin: .5rem 0 1.5rem; }
table.findings th, table.findings td { border-bottom: 1px solid #d0d7de; padding: .3rem .5rem;
         text-align: left; vertical-align: top; }
table.findings td.num { text-align: right; white-space: nowrap; }
tr.s-warning { background: #fff8c5; } tr.s-error { background: #ffebe9; }
section.flag { border: 1px solid #d0d7de; border-left: 6px solid var(--yellow);
         border-radius: 6px; padding: .6rem 1rem; margin: 0 0 1rem; }
section.flag.s-error { border-left-color: var(--red); }
.healthy { color: var(--green); font-weight: 700; }
"""

SEVERITIES = ("ok", "info", "warning", "error")
DASH = "—"


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _num(value: Any) -> str:
    if value is None:
        return DASH
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def _float(value: Any) -> float:
    """A number of the figure data (``"nan"``/``"inf"`` strings as JSON writes them)."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise TypeError(f"expected a number, got {value!r}"[:200])
    return float(value)


def _vector(data: Mapping[str, Any], key: str) -> list[float]:
    values = data.get(key)
    if not isinstance(values, Sequence) or isinstance(values, str) or not values:
        raise ValueError(f"{key!r} must be a non-empty list of numbers")
    return [_float(v) for v in values]


def _matrix(data: Mapping[str, Any]) -> list[list[float]]:
    rows = data.get("values")
    if not isinstance(rows, Sequence) or isinstance(rows, str) or not rows:
        raise ValueError("'values' must be a non-empty list (layers) of lists (heads)")
    matrix = []
    for i, row in enumerate(rows):
        if not isinstance(row, Sequence) or isinstance(row, str) or not row:
            raise ValueError(f"'values' row {i} must be a non-empty list of numbers")
        matrix.append([_float(v) for v in row])
    if len({len(r) for r in matrix}) != 1:
        raise ValueError(f"'values' rows have different lengths {sorted({len(r) for r in matrix})}")
    for key, size in (("layers", len(matrix)), ("heads", len(matrix[0]))):
        given = data.get(key)
        if given is not None and given != size:
            raise ValueError(f"{key!r} is {given!r} but 'values' has {size}")
    return matrix


def _canvas(width: float = 6.4, height: float = 4.0) -> tuple[Any, Any]:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=100, layout="constrained")
    FigureCanvasAgg(fig)
    return fig, fig.add_subplot()


def _heatmap(data: Mapping[str, Any], title: str, label: str) -> Any:
    matrix = _matrix(data)
    layers, heads = len(matrix), len(matrix[0])
    fig, ax = _canvas(max(4.0, min(12.0, 1.5 + 0.45 * heads)),
                      max(3.0, min(10.0, 1.5 + 0.35 * layers)))
    finite = [v for row in matrix for v in row if math.isfinite(v)]
    image = ax.imshow(matrix, aspect="auto", origin="lower", cmap="viridis",
                      vmin=min(finite) if finite else None, vmax=max(finite) if finite else None)
    fig.colorbar(image, ax=ax, label=label)
    ax.set_xlabel("head")
    ax.set_ylabel("layer")
    ax.set_xticks(range(heads) if heads <= 32 else range(0, heads, max(1, heads // 16)))
    ax.set_yticks(range(layers) if layers <= 32 else range(0, layers, max(1, layers // 16)))
    ax.set_title(title, fontsize="medium")
    return fig


def _logit_spread(data: Mapping[str, Any]) -> Any:
    return _heatmap(data, "attention logit spread (max - min per row)",
                    "logit spread")


def _entropy(data: Mapping[str, Any]) -> Any:
    return _heatmap(data, "attention entropy (1 = uniform)", "entropy")


def _wavelengths(data: Mapping[str, Any]) -> Any:
    waves = _vector(data, "wavelengths")
    fig, ax = _canvas()
    ax.plot(range(len(waves)), waves, "o-", markersize=3, label="wavelength 2π/θ_i")
    lines = []
    for key, label, style in (("trained_length", "trained length", "--"),
                              ("context", "target context", ":")):
        value = data.get(key)
        if value is not None:
            lines.append((_float(value), label, style))
    for j, (value, label, style) in enumerate(lines):
        ax.axhline(value, linestyle=style, linewidth=1.2, color=f"C{j + 1}",
                   label=f"{label} {value:g}")
    if all(w > 0 for w in waves if math.isfinite(w)):
        ax.set_yscale("log")
    ax.set_xlabel("rotary pair i")
    ax.set_ylabel("wavelength (positions)")
    ax.set_title("RoPE wavelength per rotary pair")
    ax.xaxis.get_major_locator().set_params(integer=True)
    ax.grid(True, alpha=0.3, which="both")
    ax.legend(fontsize="small")
    return fig


def _norms(data: Mapping[str, Any], title: str, ylabel: str, first: int) -> Any:
    norms = _vector(data, "norms")
    fig, ax = _canvas()
    ax.plot(range(first, first + len(norms)), norms, "o-", markersize=4)
    if all(v > 0 for v in norms if math.isfinite(v)) and any(math.isfinite(v) for v in norms):
        ax.set_yscale("log")
    ax.set_xlabel("layer")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.xaxis.get_major_locator().set_params(integer=True)
    ax.grid(True, alpha=0.3, which="both")
    return fig


def _gradients(data: Mapping[str, Any]) -> Any:
    return _norms(data, "gradient norm per layer (0 = embedding output)",
                  "‖∂loss/∂h_l‖", 0)


def _jacobian(data: Mapping[str, Any]) -> Any:
    return _norms(data, "Jacobian norm per layer", "Jacobian norm", 0)


FIGURES: dict[str, tuple[str, Callable[[Mapping[str, Any]], Any]]] = {
    "attention.logit_spread": ("attention logit spread (layer × head)", _logit_spread),
    "attention.entropy": ("attention entropy (layer × head)", _entropy),
    "rope.wavelengths": ("RoPE wavelengths against trained length and target context",
                         _wavelengths),
    "depth.gradients": ("gradient norm per layer", _gradients),
    "depth.jacobian": ("Jacobian norm per layer", _jacobian),
}
"""The figures the report knows: figure name -> (caption, draw(data) -> matplotlib Figure)."""


def figure_filename(name: str) -> str:
    """``attention.logit_spread`` -> ``attention.logit_spread.png``."""
    return (re.sub(r"[^a-zA-Z0-9._-]+", "-", name).strip("-.") or "figure") + ".png"


def draw_figures(figures: Mapping[str, Any], folder: Path) -> list[dict[str, str]]:
    """Draw every known figure of ``figures`` into ``folder``; one entry per figure with
    ``name``, ``caption`` and either ``file`` (relative to the report) or ``error``."""
    drawn: list[dict[str, str]] = []
    for name, (caption, draw) in FIGURES.items():
        if name not in figures:
            continue
        data = figures[name]
        try:
            if not isinstance(data, Mapping):
                raise TypeError(f"figure data must be an object, got {type(data).__name__}")
            fig = draw(data)
            file = figure_filename(name)
            safe_write.save_figure(fig, safe_write.real_dir(folder) / file, format="png")
        except Exception as exc:  # a malformed figure is a note in the page, never fatal
            drawn.append({"name": name, "caption": caption,
                          "error": f"{type(exc).__name__}: {exc}"})
        else:
            drawn.append({"name": name, "caption": caption, "file": f"figures/{file}"})
    return drawn


def _as_document(diagnosis: Any) -> dict[str, Any]:
    if isinstance(diagnosis, Mapping):
        return dict(diagnosis)
    to_json = getattr(diagnosis, "to_json", None)
    if callable(to_json):
        return to_json()
    raise TypeError(f"write_report takes a Diagnosis or its JSON form, got "
                    f"{type(diagnosis).__name__}")


def _badge(severity: Any) -> str:
    word = str(severity) if severity in SEVERITIES else "unknown"
    return f'<span class="badge {word}">{_e(severity)}</span>'


def _threshold(f: Mapping[str, Any]) -> str:
    if f.get("threshold") is None:
        return DASH
    side = {"above": "&gt; ", "below": "&lt; "}.get(str(f.get("comparison")), "")
    return side + _e(_num(f.get("threshold")))


def _findings_table(findings: list[Mapping[str, Any]]) -> str:
    if not findings:
        return "<p>No findings (no check ran).</p>"
    rows = []
    for f in findings:
        sev = str(f.get("severity"))
        rows.append(
            f'<tr class="s-{_e(sev)}"><td><code>{_e(f.get("check"))}</code></td>'
            f"<td>{_badge(sev)}</td><td>{_e(f.get('subject') or '')}</td>"
            f'<td class="num">{_e(_num(f.get("measured")))}</td>'
            f'<td class="num">{_threshold(f)}</td><td>{_e(f.get("summary", ""))}</td></tr>')
    return ('<table class="findings"><thead><tr><th>check</th><th>severity</th><th>subject</th>'
            "<th>measured</th><th>flagged when</th><th>summary</th></tr></thead><tbody>"
            + "".join(rows) + "</tbody></table>")


def _flag_sections(findings: list[Mapping[str, Any]]) -> str:
    parts = []
    for f in findings:
        sev = str(f.get("severity"))
        if sev not in ("warning", "error"):
            continue
        fields = "".join(f"<dt>{k}</dt><dd>{_e(f.get(k))}</dd>"
                         for k in ("summary", "meaning", "fix", "source") if f.get(k))
        subject = f" ({_e(f['subject'])})" if f.get("subject") else ""
        parts.append(f'<section class="flag s-{_e(sev)}"><b><code>{_e(f.get("check"))}</code>'
                     f"</b>{subject} {_badge(sev)}<dl class=\"fields\">{fields}</dl></section>")
    return "\n".join(parts)


def _cards(doc: Mapping[str, Any], findings: list[Mapping[str, Any]]) -> str:
    counts = {s: sum(1 for f in findings if f.get("severity") == s) for s in SEVERITIES}
    seconds = doc.get("seconds") or {}
    total = sum(float(v) for v in seconds.values() if isinstance(v, int | float))
    cards = [f'<div class="card"><b>{len(seconds) - len(doc.get("skipped") or {})}</b>'
             "checks run</div>",
             f'<div class="card"><b>{len(doc.get("skipped") or {})}</b>skipped</div>']
    cards += [f'<div class="card"><b>{counts[s]}</b>{_badge(s)}</div>'
              for s in reversed(SEVERITIES)]
    cards.append(f'<div class="card"><b>{total:.2f}</b>seconds</div>')
    return '<div class="cards">' + "".join(cards) + "</div>"


def _figures_html(drawn: list[dict[str, str]], figures: Mapping[str, Any]) -> str:
    parts = []
    for d in drawn:
        if "error" in d:
            parts.append(f'<p class="figure-error">Figure <code>{_e(d["name"])}</code> could not '
                         f"be drawn: {_e(d['error'])}</p>")
        else:
            parts.append(f'<figure><img src="{_e(d["file"])}" alt="{_e(d["caption"])}">'
                         f"<figcaption><code>{_e(d['name'])}</code>: {_e(d['caption'])}"
                         "</figcaption></figure>")
    unknown = [n for n in figures if n not in FIGURES]
    if unknown:
        parts.append("<p>Figure data the report does not draw: "
                     + ", ".join(f"<code>{_e(n)}</code>" for n in unknown)
                     + " (see diagnosis.json).</p>")
    return "\n".join(parts) if parts else "<p>No figure data in this diagnosis.</p>"


def write_report(diagnosis: Any, out_dir: str | Path) -> Path:
    """Write the report of ``diagnosis`` (a :class:`~transformer_math.doctor.findings.Diagnosis`
    or its JSON form) into ``out_dir``: ``index.html``, ``figures/<name>.png`` (old PNGs there
    are removed first) and ``diagnosis.json``; return the path of ``index.html``."""
    from transformer_math.typed_json import write_json

    doc = _as_document(diagnosis)
    out = Path(out_dir)
    folder = safe_write.real_dir(out / "figures")  # a link there is replaced, never followed
    safe_write.remove_own_files(folder, keep=lambda p: p.suffix != ".png")
    findings = [f for f in doc.get("findings") or [] if isinstance(f, Mapping)]
    figures = doc.get("figures") or {}
    if not isinstance(figures, Mapping):
        figures = {}
    drawn = draw_figures(figures, folder)
    flagged = any(f.get("severity") in ("warning", "error") for f in findings)
    verdict = ('<p class="problem">Problems found (exit 1): see the flagged findings below.</p>'
               if flagged else '<p class="healthy">Nothing at warning level or above (exit 0).'
               "</p>")
    options = doc.get("options") or {}
    meta = " · ".join(f"{_e(k)} <b>{_e(v)}</b>" for k, v in
                      [("target", doc.get("target")), ("engine", doc.get("engine")),
                       *options.items()] if v is not None)
    skipped = doc.get("skipped") or {}
    skipped_html = ("<ul>" + "".join(f"<li><code>{_e(k)}</code>: {_e(v)}</li>"
                                     for k, v in skipped.items()) + "</ul>"
                    if skipped else "<p>None.</p>")
    seconds = doc.get("seconds") or {}
    seconds_html = ('<table class="findings"><thead><tr><th>check</th><th>seconds</th></tr>'
                    "</thead><tbody>" + "".join(
                        f'<tr><td><code>{_e(k)}</code></td><td class="num">{_e(_num(v))}</td>'
                        "</tr>" for k, v in seconds.items()) + "</tbody></table>")
    flags = _flag_sections(findings)
    page = f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>tmath doctor: {_e(doc.get("target", ""))}</title>
<style>{_CSS}</style>
</head>
<body>
<header>
<h1>tmath doctor</h1>
<p class="meta">{meta}</p>
</header>
{verdict}
{_cards(doc, findings)}
<h2>Findings</h2>
{_findings_table(findings)}
{"<h2>Flagged: meaning, fix, source</h2>" + flags if flags else ""}
<h2>Figures</h2>
{_figures_html(drawn, figures)}
<h2>Skipped checks</h2>
{skipped_html}
<h2>Seconds per check</h2>
{seconds_html}
<footer>Raw diagnosis: <a href="diagnosis.json">diagnosis.json</a>. Generated by
<code>tmath doctor</code>; each finding carries the measured number and the threshold it was
judged against, so it can be re-judged.</footer>
</body>
</html>
"""
    write_json(doc, out / "diagnosis.json")
    return safe_write.write_text(out / "index.html", page)
