"""The HTML report: ``DIR/index.html`` plus ``DIR/figures/*.png`` and ``DIR/results.json``.

The page reads like the chapter it checks. Claims are grouped by the section of the seed text
they are read in (:data:`transformer_math.chapters.SECTIONS` order: the front matter and
§8.3.1-§8.3.8 of 000, then the chapters of 004, then the concept page 003), and within a
section by their first seed line there, so that the report can be read next to the text. Each
section lists its claims with:

- the statement (in the page's language), source, seed lines, tier, expected verdict, version;
- the pass conditions as a table of named quantities (``quantity | predicted | measured |
  condition tested | slack | holds``) from the evidence's ``margins``: the quantity's own
  predicted and measured values, and the inequality tested with the number it compares (a
  deviation ``|measured - predicted|`` is named as one, never shown as the quantity); for a
  refuted claim the seed's own version computed on the same measurement (``seed_margins``);
- the predicted and measured values by name (their keys, not bare vectors), the per-seed values
  and the ``details`` (collapsed);
- the falsifier: a caught one is good news and is shown as such ("falsifier caught: planted bug
  X made the check fail", in green) with the pass conditions that failed under the bug
  (``falsifier.failed_conditions``); only an uncaught one is red;
- the seed statements the claim refutes (seed line, what it says, what is correct) and the cited
  corrections (a seed statement a primary source contradicts, marked "cited correction");
- notes and figures.

Above the sections: the claims the run left out (``summary.left_out``, e.g. the quick tier's
training claims), a summary (counts per verdict, a legend of the verdicts, kinds, "falsifier"
and the two meanings of "seed", and per section: statements checked, seed statements refuted,
cited corrections), a table of contents with the verdict counts of each
section, and filters (verdict, topic, free-text search). The filters are a small inline script
with no network access; without JavaScript they stay hidden and the whole page is shown. Every
section ends with a back-to-top link.

Languages (``lang="en"`` or ``"zh"``): headings and labels come from
:func:`transformer_math.i18n.ui`, statements from :func:`transformer_math.i18n.statement`,
notes, margin names and figure text from :func:`transformer_math.i18n.text` (text without a
translation stays English). A Chinese page is ``<html lang="zh-CN">`` with a CJK font stack;
its figures are drawn with an installed CJK font (:func:`~transformer_math.report.figures.
cjk_font`), or, when there is none, with their English labels and a sentence saying so.

The page is self-contained: inline CSS and script, no web fonts, images by relative path, so it
opens from the file system and can be archived as a folder. All text coming from claims is
escaped with :func:`html.escape`. A figure that cannot be drawn is reported in the page in place
of its image; it never stops the report.
"""

from __future__ import annotations

import html
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

from transformer_math import chapters, i18n, safe_write
from transformer_math.html_style import page_css
from transformer_math.report.figures import (
    LATIN_FAMILY,
    cjk_font,
    draw_figure,
    figure_texts,
    missing_chars,
)
from transformer_math.report.left_out import left_out_text
from transformer_math.report.results import (
    dumps,
    summary_from_claims,
    validate_results,
    write_json,
)
from transformer_math.report.table import DASH, format_value

_CSS = """
h2 { font-size: 1.3rem; margin: 2rem 0 .4rem; padding-bottom: .2rem;
     border-bottom: 2px solid #d0d7de; }
h3 { font-size: 1.05rem; margin: 0 0 .3rem; } h4 { font-size: .95rem; margin: .8rem 0 .3rem; }
.verified { background: var(--green); } .refuted { background: var(--teal); }
.failed { background: var(--red); } .cited { background: var(--blue); }
.inconclusive { background: #9a6700; } .kindtag { background: #6e7781; }
.module { background: #6e7781; }
[hidden] { display: none !important; }
[id] { scroll-margin-top: calc(var(--bar, 0px) + .6rem); }
input, select, button { font: inherit; }
.intro { max-width: 60rem; }
table.grid { border-collapse: collapse; margin: .4rem 0 .8rem; }
table.grid th, table.grid td { border-bottom: 1px solid #d0d7de; padding: .25rem .55rem;
         text-align: left; vertical-align: top; }
table.grid th { background: #f6f8fa; font-weight: 600; }
table.grid td.num { text-align: right; white-space: nowrap; }
table.grid th.num { text-align: right; }
table.by-section { width: 100%; } table.by-section th.num { width: 8%; }
table.grid tr.total td { font-weight: 700; }
table.wide { width: 100%; }
td.yes { color: var(--green); font-weight: 600; } td.no { color: var(--red); font-weight: 700; }
td.seed-no { color: var(--teal); font-weight: 700; }
nav#toc ol { padding-left: 1.4rem; } nav#toc li { margin: .15rem 0; }
nav#toc .counts { margin-left: .4rem; }
nav#toc .counts .badge { font-size: .72rem; }
form#filters { display: flex; flex-wrap: wrap; gap: .8rem 1.4rem; align-items: center;
         border: 1px solid #d0d7de; border-radius: 6px; padding: .6rem .9rem; margin: 1rem 0;
         position: sticky; top: 0; background: #fff; z-index: 1; }
form#filters fieldset { border: 0; margin: 0; padding: 0; display: flex; gap: .6rem;
         flex-wrap: wrap; align-items: center; }
form#filters legend { float: left; font-weight: 600; margin-right: .3rem; }
form#filters input[type=search] { min-width: 16rem; padding: .2rem .4rem; }
#filter-shown { color: var(--grey); }
.noscript { color: var(--grey); }
section.chapter > .count { color: var(--grey); margin: 0 0 .8rem; }
article.claim { border: 1px solid #d0d7de; border-left: 6px solid var(--grey);
         border-radius: 6px; padding: .8rem 1rem; margin: 0 0 1.2rem; }
article.claim.v-verified { border-left-color: var(--green); }
article.claim.v-refuted { border-left-color: var(--teal); }
article.claim.v-failed { border-left-color: var(--red); }
article.claim.v-cited { border-left-color: var(--blue); }
article.claim.v-inconclusive { border-left-color: #9a6700; }
.quote { font-family: "Noto Serif CJK SC", "Noto Sans CJK SC", serif; }
dl.legend { display: grid; grid-template-columns: max-content 1fr; gap: .2rem 1rem; }
article.claim .statement { font-size: 1.02rem; margin: .3rem 0 .5rem; }
.falsifier { border-radius: 6px; padding: .45rem .7rem; margin: .6rem 0; }
.falsifier.caught { background: #dafbe1; border: 1px solid #aceebb; }
.falsifier.missed { background: #ffebe9; border: 1px solid #ff8182; color: #82071e; }
.falsifier.none { background: #f6f8fa; border: 1px solid #d0d7de; color: var(--grey); }
.falsifier .headline { font-weight: 600; }
.falsifier.caught .headline::before { content: "\\2713\\00a0"; color: var(--green); }
.falsifier.missed .headline::before { content: "\\2717\\00a0"; }
.refutation, .correction { border-radius: 6px; padding: .45rem .7rem; margin: .6rem 0; }
.refutation { background: #e6f6f5; border: 1px solid #8fd3cd; }
.correction { background: #ddf4ff; border: 1px solid #80ccff; }
.refutation .kind, .correction .kind { font-weight: 700; font-size: .85rem;
         text-transform: uppercase; letter-spacing: .03em; }
.refutation .kind { color: var(--teal); } .correction .kind { color: var(--blue); }
.says { font-style: italic; }
a.top { display: inline-block; margin: .2rem 0 1rem; font-size: .9rem; }
details { margin: .5rem 0; } summary { cursor: pointer; color: var(--grey); }
.note { color: var(--grey); }
"""

_VERDICTS = ("verified", "refuted", "failed", "cited", "inconclusive")
_KINDS = ("measurement", "construction", "code-audit", "model", "cited")

# Filters: shown by the script (hidden without it), applied on every input; a claim is shown
# when its verdict is ticked, its topic chosen (or all) and its text holds the search words.
_SCRIPT = """
(function () {
  var form = document.getElementById("filters");
  if (!form) return;
  form.hidden = false;
  // An anchor jump stops below the sticky bar: every target's scroll-margin-top is the bar's
  // height (CSS --bar), measured now and whenever the bar wraps differently.
  function bar() {
    document.documentElement.style.setProperty("--bar", form.offsetHeight + "px");
  }
  bar();
  window.addEventListener("resize", bar);
  window.addEventListener("load", function () {
    var id = decodeURIComponent(location.hash.slice(1));
    var target = id && document.getElementById(id);
    if (target) target.scrollIntoView();  // the first jump ran before the bar was shown
  });
  var claims = Array.prototype.slice.call(document.querySelectorAll("article.claim"));
  var texts = claims.map(function (c) { return c.textContent.toLowerCase(); });
  var shown = document.getElementById("filter-shown");
  function apply() {
    var verdicts = {};
    form.querySelectorAll("input[name=verdict]").forEach(function (box) {
      verdicts[box.value] = box.checked;
    });
    var topic = form.elements.topic.value;
    var words = form.elements.q.value.toLowerCase().split(/\\s+/).filter(Boolean);
    var n = 0;
    claims.forEach(function (c, i) {
      var ok = verdicts[c.dataset.verdict] !== false
        && (!topic || c.dataset.topic === topic)
        && words.every(function (w) { return texts[i].indexOf(w) >= 0; });
      c.hidden = !ok;
      if (ok) n++;
    });
    document.querySelectorAll("section.chapter").forEach(function (s) {
      var visible = s.querySelectorAll("article.claim:not([hidden])").length;
      s.hidden = visible === 0;
      var entry = document.querySelector('nav#toc li[data-section="' + s.id + '"]');
      if (entry) entry.hidden = visible === 0;
    });
    shown.textContent = shown.dataset.template
      .replace("{shown}", n).replace("{total}", claims.length);
  }
  form.addEventListener("input", apply);
  form.addEventListener("change", apply);
  form.addEventListener("submit", function (e) { e.preventDefault(); });
  apply();
})();
"""


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _fmt(value: Any, *, items: int = 8, chars: int = 200) -> str:
    return _e(format_value(value, max_items=items, max_chars=chars))


def _value(value: Any) -> str:
    return f"<code>{_fmt(value, items=16, chars=600)}</code>"


def _seconds(value: Any) -> str:
    try:
        return f"{float(value):.2f}"
    except (TypeError, ValueError):
        return DASH


@dataclass
class _Page:
    """What rendering one page needs: its language, folder and the figure font decision."""

    lang: str
    out_dir: Path
    used: set[str] = field(default_factory=set)
    font: list[str] | None = None  # families for figure text; None: matplotlib's default
    figures_english: bool = False  # a zh page whose figures keep English labels (no CJK font)
    review_base: str = ""  # relative link to docs/reviews/ from the page; "" when not found

    def ui(self, key: str, **values: Any) -> str:
        return i18n.ui(key, self.lang, **values)

    def text(self, s: Any) -> str:
        return i18n.text(str(s), self.lang)


def _verdict_word(verdict: Any, lang: str) -> str:
    if verdict in _VERDICTS:
        return i18n.ui(f"verdict.{verdict}", lang)
    return str(verdict) if verdict is not None else DASH


def _badge(verdict: Any, lang: str, extra: str = "") -> str:
    word = str(verdict) if verdict in _VERDICTS else "unknown"
    return (f'<span class="badge {word}">{_e(_verdict_word(verdict, lang))}'
            f"{_e(extra)}</span>")


def figure_filename(claim_id: str, index: int) -> str:
    """``attention.quadratic-cost`` figure 0 -> ``attention.quadratic-cost-1.png``."""
    slug = re.sub(r"[^a-z0-9.-]+", "-", claim_id.lower()).strip("-.") or "claim"
    return f"{slug}-{index + 1}.png"


# --- sections --------------------------------------------------------------------------------


def _refs(claim: Mapping[str, Any]) -> list[tuple[str, int, int]]:
    """The claim's seed lines as ``(seed, start, end)``."""
    out: list[tuple[str, int, int]] = []
    for r in claim.get("seed_refs") or []:
        if not isinstance(r, Mapping):
            continue
        lines = [x for x in r.get("lines") or [] if isinstance(x, int)]
        if lines:
            out.append((str(r.get("seed")), lines[0], lines[-1]))
    return out


def section_key(claim: Mapping[str, Any]) -> str | None:
    """The section a claim is read in: its ``section`` field, else that of its first seed line
    (documents written before claims knew their section)."""
    key = claim.get("section")
    if isinstance(key, str) and key:
        return key
    for seed, start, _end in _refs(claim):
        s = chapters.section_of(seed, start)
        if s is not None:
            return s.key
    return None


def _first_line(claim: Mapping[str, Any], section: chapters.Section | None) -> int:
    """The claim's first seed line inside ``section`` (its place in the text's order)."""
    if section is None:
        return 0
    starts = [start for seed, start, end in _refs(claim)
              if seed == section.seed and (section.contains(start) or section.contains(end))]
    return min(starts) if starts else section.end + 1


def group_by_section(
    claims: Sequence[Mapping[str, Any]],
) -> list[tuple[chapters.Section | None, list[Mapping[str, Any]]]]:
    """The claims by section in reading order, each section's claims by their first seed line
    there (then by id); claims without a known section come last, under ``None``."""
    by_key: dict[str | None, list[Mapping[str, Any]]] = {}
    for c in claims:
        key = section_key(c)
        if key is not None and all(s.key != key for s in chapters.SECTIONS):
            key = None
        by_key.setdefault(key, []).append(c)
    out: list[tuple[chapters.Section | None, list[Mapping[str, Any]]]] = []
    for s in chapters.SECTIONS:
        if s.key in by_key:
            group = sorted(by_key[s.key], key=lambda c, s=s: (_first_line(c, s), str(c.get("id"))))
            out.append((s, group))
    if None in by_key:
        out.append((None, sorted(by_key[None], key=lambda c: str(c.get("id")))))
    return out


def _section_id(section: chapters.Section | None) -> str:
    return "sec-" + (section.key if section is not None else "other")


def _section_title(section: chapters.Section | None, page: _Page) -> str:
    return section.title(page.lang) if section is not None else page.ui("report.other_section")


def _counts(claims: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    return {v: sum(1 for c in claims if c.get("verdict") == v) for v in _VERDICTS}


def _count_badges(claims: Sequence[Mapping[str, Any]], lang: str) -> str:
    counts = _counts(claims)
    return " ".join(_badge(v, lang, f" {counts[v]}") for v in _VERDICTS if counts[v])


# --- one claim -------------------------------------------------------------------------------


def _number(value: Any) -> str:
    return _fmt(value, items=4, chars=60)


def _holds(margin: Mapping[str, Any]) -> bool | None:
    slack = margin.get("slack")
    if isinstance(slack, int | float):
        return slack >= 0
    if isinstance(slack, str):  # "NaN" / "-Infinity" as written by to_jsonable
        return slack == "Infinity"
    return None


def _kind_html(kind: Any, page: _Page) -> str:
    word = page.ui(f"kind.{kind}") if kind in _KINDS else str(kind)
    return f'<span class="badge kindtag">{_e(word)}</span>'


def _margins_table(margins: Sequence[Any], page: _Page, *, seed: bool,
                   decisive: bool = False, heading: str = "") -> str:
    rows = []
    for m in margins:
        if not isinstance(m, Mapping):
            continue
        holds = _holds(m)
        sense = {"<=": "≤", ">=": "≥"}.get(str(m.get("sense")), str(m.get("sense", "")))
        if holds is None:
            cell = f"<td>{DASH}</td>"
        elif holds:
            cell = f'<td class="yes">{_e(page.ui("report.holds.yes"))}</td>'
        elif seed:
            cell = f'<td class="seed-no">{_e(page.ui("report.holds.seed_fails"))}</td>'
        else:
            cell = f'<td class="no">{_e(page.ui("report.holds.no"))}</td>'
        rows.append(
            f"<tr><td>{_e(page.text(m.get('name', DASH)))}</td>"
            f'<td class="num">{_number(m.get("predicted"))}</td>'
            f'<td class="num">{_number(_measured(m))}</td>'
            f"<td>{_condition(m, sense)}</td>"
            f'<td class="num">{_number(m.get("slack"))}</td>{cell}</tr>')
    if not rows:
        return ""
    heading = heading or page.ui("report.seed_conditions" if seed else
                                 "report.decisive_conditions" if decisive else
                                 "report.conditions")
    head = "".join(f"<th>{_e(page.ui(k))}</th>" for k in (
        "report.col.quantity", "report.col.predicted", "report.col.measured",
        "report.col.condition", "report.col.slack", "report.col.holds"))
    cls = "seed-margins" if seed else "margins"
    return (f"<h4>{_e(heading)}</h4><table class=\"grid wide {cls}\"><thead><tr>{head}</tr>"
            f"</thead><tbody>{''.join(rows)}</tbody></table>")


def _measured(margin: Mapping[str, Any]) -> Any:
    """The measured quantity: ``measured`` (issue 38.3), else the value of an older document."""
    return margin["measured"] if "test" in margin else margin.get("value")


def _condition(margin: Mapping[str, Any], sense: str) -> str:
    """The inequality tested, and the number it compares when that is not the measured quantity
    (a deviation ``|measured - predicted|``, a logarithm)."""
    test = margin.get("test")
    bound = f"{_e(sense)} {_number(margin.get('threshold'))}"
    if not isinstance(test, str) or not test:
        return bound  # an older document: the threshold alone
    shown = _e(test.replace("<=", "≤").replace(">=", "≥"))
    value = margin.get("value")
    if value is not None and value == margin.get("measured"):
        return shown  # "measured >= 0.5": the measured column holds the number
    return f'{shown}: <span class="num">{_number(value)} {bound}</span>'


def _keyed_table(columns: Sequence[tuple[str, Any]], page: _Page, cls: str) -> str:
    """A table of named values: one row per key when the values are objects (keys in order of
    first appearance), else one row of the values themselves."""
    values = [v for _, v in columns]
    if all(v is None for v in values):
        return ""
    head = f"<th>{_e(page.ui('report.col.quantity'))}</th>" + "".join(
        f"<th>{_e(name)}</th>" for name, _ in columns)
    rows: list[str] = []
    if all(isinstance(v, Mapping) or v is None for v in values):
        keys: list[str] = []
        for v in values:
            for k in v or {}:
                if k not in keys:
                    keys.append(k)
        for k in keys:
            cells = "".join(f"<td>{_value((v or {}).get(k))}</td>" for v in values)
            rows.append(f"<tr><td>{_e(page.text(k))}</td>{cells}</tr>")
    else:
        cells = "".join(f"<td>{_value(v)}</td>" for v in values)
        rows.append(f"<tr><td>{_e(page.ui('report.col.value'))}</td>{cells}</tr>")
    return (f'<table class="grid wide {cls}"><thead><tr>{head}</tr></thead>'
            f"<tbody>{''.join(rows)}</tbody></table>")


def _per_seed_table(per_seed: Any, page: _Page) -> str:
    if not isinstance(per_seed, Mapping) or not isinstance(per_seed.get("values"), Mapping):
        return ""
    seeds = list(per_seed.get("seeds") or [])
    head = (f"<th>{_e(page.ui('report.col.quantity'))}</th>"
            + "".join(f'<th class="num">{_e(page.ui("report.col.seed", s=s))}</th>'
                      for s in seeds)
            + f'<th class="num">{_e(page.ui("report.col.mean"))}</th>'
            f'<th class="num">{_e(page.ui("report.col.spread"))}</th>')
    rows = []
    for name, vals in per_seed["values"].items():
        vals = list(vals) if isinstance(vals, list) else [vals]
        cells = "".join(f'<td class="num">{_number(v)}</td>' for v in vals)
        cells += "".join("<td></td>" for _ in range(len(seeds) - len(vals)))
        rows.append(
            f"<tr><td>{_e(page.text(name))}</td>{cells}"
            f'<td class="num">{_number((per_seed.get("mean") or {}).get(name))}</td>'
            f'<td class="num">{_number((per_seed.get("spread") or {}).get(name))}</td></tr>')
    return (f"<h4>{_e(page.ui('report.per_seed'))}</h4><table class=\"grid per-seed\"><thead>"
            f"<tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>")


def _details_html(details: Any, page: _Page) -> str:
    if not details:
        return ""
    if isinstance(details, Mapping):
        rows = "".join(f"<tr><td>{_e(page.text(k))}</td><td>{_value(v)}</td></tr>"
                       for k, v in details.items())
        table = (f'<table class="grid wide details"><thead><tr>'
                 f"<th>{_e(page.ui('report.col.quantity'))}</th>"
                 f"<th>{_e(page.ui('report.col.value'))}</th></tr></thead>"
                 f"<tbody>{rows}</tbody></table>")
    else:
        table = f"<p>{_value(details)}</p>"
    return (f"<details><summary>{_e(page.ui('report.details'))}</summary>{table}"
            f"<details><summary>{_e(page.ui('report.raw_json'))}</summary>"
            f"<pre>{_e(dumps(details))}</pre></details></details>")


def _falsifier_html(claim: Mapping[str, Any], page: _Page) -> str:
    falsifier = claim.get("falsifier")
    if not isinstance(falsifier, Mapping):
        return f'<div class="falsifier none">{_e(page.ui("report.falsifier.none"))}</div>'
    name = str(falsifier.get("name") or falsifier.get("bug") or DASH)
    description = falsifier.get("description")
    caught = falsifier.get("caught")
    if caught is True:
        cls, headline = "caught", page.ui("report.falsifier.caught", name=name)
    elif caught is False:
        cls = "missed"
        headline = page.ui("report.falsifier.missed", name=name,
                           verdict=_verdict_word(falsifier.get("verdict"), page.lang))
    else:
        cls, headline = "none", page.ui("report.falsifier.not_run", name=name)
    body = f'<div class="headline">{_e(headline)}</div>'
    if description:
        body += f"<div>{_e(page.text(description))}</div>"
    failed = falsifier.get("failed_conditions")
    if caught is True and isinstance(failed, Sequence) and failed:
        body += _margins_table(failed, page, seed=False,
                               heading=page.ui("report.falsifier.failed_conditions"))
    if falsifier.get("measured") is not None:
        body += _keyed_table([(page.ui("report.falsifier.correct_code"), claim.get("measured")),
                              (page.ui("report.falsifier.with_bug"), falsifier.get("measured"))],
                             page, "falsifier-values")
    return f'<div class="falsifier {cls}">{body}</div>'


def _seed_statement_html(kind: str, label: str, item: Mapping[str, Any], page: _Page,
                         source: bool) -> str:
    seed = item.get("seed", DASH)
    line, to_line = item.get("line", DASH), item.get("to_line")
    where = f"{seed}:{line}" + (f"-{to_line}" if isinstance(to_line, int) and to_line != line
                                else "")
    parts = [f'<span class="kind">{_e(label)}</span>']
    if item.get("quote"):
        parts.append(f"<div><b>{_e(page.ui('report.quote', where=where))}:</b> "
                     f'<span class="quote">「{_e(item.get("quote"))}」</span></div>')
    parts += [f"<div><b>{_e(page.ui('report.says', where=where))}:</b> "
              f'<span class="says">{_e(page.text(item.get("says", DASH)))}</span></div>']
    if item.get("reading"):
        parts.append(f"<div><b>{_e(page.ui('report.reading'))}:</b> "
                     f"{_e(page.text(item.get('reading')))}</div>")
    parts.append(f"<div><b>{_e(page.ui('report.correct'))}:</b> "
                 f"{_e(page.text(item.get('correct', DASH)))}</div>")
    also = [a for a in item.get("also") or [] if isinstance(a, list | tuple) and len(a) == 2]
    if also:
        parts.append(f"<div><b>{_e(page.ui('report.also_at'))}:</b> "
                     + _e(", ".join(f"{a[0]}:{a[1]}" for a in also)) + "</div>")
    if source and item.get("source"):
        parts.append(f"<div><b>{_e(page.ui('report.correction_source'))}:</b> "
                     f"{_e(item.get('source'))}</div>")
    return f'<div class="{kind}">{"".join(parts)}</div>'


def _figures_html(claim: Mapping[str, Any], page: _Page) -> str:
    parts: list[str] = []
    for k, fig in enumerate(claim.get("figures") or []):
        fallback = page.ui("report.figure", k=k + 1)
        data = dict(fig) if isinstance(fig, Mapping) else None
        title = str(data.get("title", fallback)) if data is not None else fallback
        if data is not None and page.font is not None and page.lang != "en":
            data = _translate_figure(data, page)
            title = str(data.get("title", fallback))
        name = figure_filename(str(claim.get("id")), k)
        while name in page.used:  # two entries with one id: keep both pictures
            name = name.removesuffix(".png") + "-b.png"
        page.used.add(name)
        try:
            draw_figure(data if data is not None else fig, page.out_dir / "figures" / name,
                        font_family=page.font)
        except Exception as exc:  # a broken figure is reported in the page, never fatal
            error = f"{type(exc).__name__}: {exc}"
            parts.append(f'<p class="figure-error">'
                         f"{_e(page.ui('report.figure_error', title=repr(title), error=error))}"
                         "</p>")
            continue
        caption = _e(title)
        if data is not None and page.font is not None:
            lost = missing_chars(figure_texts(data), page.font)
            if lost:
                caption += (' <span class="problem">'
                            + _e(page.ui("report.figure_missing_glyphs", chars=" ".join(lost)))
                            + "</span>")
        parts.append(f'<figure><img src="figures/{_e(name)}" alt="{_e(title)}">'
                     f"<figcaption>{caption}</figcaption></figure>")
    return "\n".join(parts)


def _translate_figure(data: dict[str, Any], page: _Page) -> dict[str, Any]:
    out = dict(data)
    for key in ("title", "xlabel", "ylabel"):
        if key in out:
            out[key] = page.text(out[key])
    out["series"] = [
        {**s, "label": page.text(s.get("label") or "")} if isinstance(s, Mapping) else s
        for s in out.get("series") or []]
    for key in ("hlines", "vlines"):
        out[key] = [[line[0], page.text(line[1]), *line[2:]] if len(line) > 1 else line
                    for line in out.get(key) or []]
    return out


def _claim_html(claim: Mapping[str, Any], page: _Page) -> str:
    claim = i18n.revive(claim)  # notes and figure texts made as messages translate by catalog
    cid = str(claim.get("id"))
    verdict = claim.get("verdict")
    lang = page.lang
    rows: list[tuple[str, str]] = [
        (page.ui("report.field.source"), _e(claim.get("source", DASH))),
    ]
    refs = _refs(claim)
    if refs:
        shown = []
        for seed, start, end in refs:
            where = f"{seed}:{start}" + (f"-{end}" if end != start else "")
            part = _part_title(seed, start) if lang == "zh" else None
            shown.append(_e(where) + (f" ({_e(part)})" if part else ""))
        rows.append((page.ui("report.field.seed_lines"), ", ".join(shown)))
    others = [k for k in claim.get("sections") or [] if k != section_key(claim)]
    if others:
        links = ", ".join(f'<a href="#sec-{_e(k)}">{_e(k)}</a>' for k in others)
        rows.append((page.ui("report.field.also_in"), links))
    if claim.get("module"):
        rows.append((page.ui("report.field.module"), _e(claim["module"])))
    expected = ""
    if claim.get("expected") is not None:
        expected = f"{_badge(claim.get('expected'), lang)} "
        if claim.get("expected_met") is False:
            expected += f'<span class="problem">{_e(page.ui("report.field.not_obtained"))}</span> '
    rows.append((page.ui("report.field.expected"),
                 expected + _e(page.ui("report.field.version", v=claim.get("version", 1)))))
    rows.append((page.ui("report.field.tier"), _e(claim.get("tier", DASH))))
    if claim.get("kind"):
        rows.append((page.ui("report.field.kind"), _kind_html(claim.get("kind"), page)))
    if claim.get("audit"):
        rows.append((page.ui("report.field.audit"), _e(claim.get("audit"))))
    review = f"docs/reviews/{cid}.md"
    if page.review_base and re.fullmatch(r"[a-z]+\.[a-z0-9-]+", cid):
        rows.append((page.ui("report.field.review"),
                     f'<a href="{_e(page.review_base + cid)}.md">{_e(review)}</a>'))
    else:
        rows.append((page.ui("report.field.review"), _e(review)))
    rows.append((page.ui("report.field.seconds"), _e(_seconds(claim.get("seconds")))))
    tolerance = claim.get("tolerance")
    if tolerance is not None:
        shown_tol = _e(page.text(tolerance)) if isinstance(tolerance, str) else _value(tolerance)
        rows.append((page.ui("report.field.tolerance"), shown_tol))
    if claim.get("error"):
        rows.append((page.ui("report.field.error"),
                     f'<span class="problem">{_e(claim["error"])}</span>'))
    fields = "\n".join(f"<dt>{_e(k)}</dt><dd>{v}</dd>" for k, v in rows)

    values = _keyed_table([(page.ui("report.col.predicted"), claim.get("predicted")),
                           (page.ui("report.col.measured"), claim.get("measured"))],
                          page, "values")
    if values:
        values = f"<h4>{_e(page.ui('report.values'))}</h4>{values}"
    refutations = "".join(
        _seed_statement_html("refutation", page.ui("report.refutes"), r, page, source=False)
        for r in claim.get("refutes") or [] if isinstance(r, Mapping))
    corrections = "".join(
        _seed_statement_html("correction", page.ui("report.correction"), r, page, source=True)
        for r in claim.get("corrections") or [] if isinstance(r, Mapping))
    notes = [page.text(n) for n in claim.get("notes") or []]
    notes_html = ""
    if notes:
        items = "".join(
            f"<li><pre>{_e(n)}</pre></li>" if "\n" in n.strip() else f"<li>{_e(n)}</li>"
            for n in notes)
        notes_html = f"<h4>{_e(page.ui('report.notes'))}</h4><ul>{items}</ul>"
    module = (f' <span class="badge module">{_e(claim["module"])}</span>'
              if claim.get("module") else "")
    v_class = f"v-{verdict}" if verdict in _VERDICTS else "v-unknown"
    data_verdict = verdict if verdict in _VERDICTS else "unknown"
    return (
        f'<article class="claim {v_class}" id="{_e(cid)}" data-verdict="{_e(data_verdict)}" '
        f'data-topic="{_e(claim.get("topic", ""))}">\n'
        f"<h3>{_e(cid)} {_badge(verdict, lang)}{module}</h3>\n"
        f'<p class="statement">{_e(i18n.statement(claim, lang))}</p>\n'
        f"{refutations}{corrections}"
        f'<dl class="fields">\n{fields}\n</dl>\n'
        f"{_margins_table(claim.get('margins') or [], page, seed=False)}"
        f"{_margins_table(claim.get('seed_margins') or [], page, seed=True)}"
        f"{_margins_table(claim.get('decisive') or [], page, seed=False, decisive=True)}"
        f"{values}{_per_seed_table(claim.get('per_seed'), page)}"
        f"{_falsifier_html(claim, page)}"
        f"{notes_html}{_details_html(claim.get('details'), page)}\n"
        f"{_figures_html(claim, page)}\n"
        f"</article>"
    )


def _part_title(seed: str, line: int) -> str | None:
    """The subsection (``Section.parts``, Chinese titles) holding ``line``."""
    section = chapters.section_of(seed, line)
    if section is None:
        return None
    title = None
    for start, name in section.parts:
        if start <= line:
            title = name
    return title


# --- page parts ------------------------------------------------------------------------------


def _cards_html(summary: Mapping[str, Any], page: _Page) -> str:
    cards = [f'<div class="card"><b>{_e(summary.get("total", 0))}</b>'
             f"{_e(page.ui('report.claims'))}</div>"]
    for v in _VERDICTS:
        cards.append(f'<div class="card"><b>{_e(summary.get(v, 0))}</b>'
                     f"{_badge(v, page.lang)}</div>")
    errors = summary.get("distinct_errors")
    if isinstance(errors, Mapping):
        cards.append(f'<div class="card"><b>{_e(errors.get("measured", 0))}</b>'
                     f"{_e(page.ui('report.distinct_errors'))}</div>")
        if errors.get("modelled"):
            cards.append(f'<div class="card"><b>{_e(errors.get("modelled", 0))}</b>'
                         f"{_e(page.ui('report.modelled_errors'))}</div>")
    cards.append(
        f'<div class="card"><b>{_e(summary.get("falsifiers_caught", 0))}/'
        f"{_e(summary.get('falsifiers', 0))}</b>{_e(page.ui('report.falsifiers_caught'))}</div>")
    problems = int(summary.get("problems", 0) or 0)
    cls = ' class="problem"' if problems else ""
    cards.append(f'<div class="card"><b{cls}>{problems}</b>{_e(page.ui("report.problems"))}</div>')
    cards.append(f'<div class="card"><b>{float(summary.get("seconds", 0.0) or 0.0):.2f}</b>'
                 f"{_e(page.ui('report.seconds'))}</div>")
    return '<div class="cards">' + "".join(cards) + "</div>"


def _section_summary_html(groups: Sequence[tuple[Any, list[Mapping[str, Any]]]],
                          page: _Page) -> str:
    head = (f"<th>{_e(page.ui('report.col.section'))}</th>"
            f'<th class="num">{_e(page.ui("report.col.checked"))}</th>'
            + "".join(f'<th class="num">{_badge(v, page.lang)}</th>' for v in _VERDICTS)
            + f'<th class="num">{_e(page.ui("report.col.refutes"))}</th>'
            f'<th class="num">{_e(page.ui("report.col.corrections"))}</th>')

    from transformer_math.claims import counts as claim_counts

    everything = [c for _, group in groups for c in group]

    def row(title: str, claims: Sequence[Mapping[str, Any]], cls: str = "",
            section: Any = "total") -> str:
        """A section's claims by verdict, then the distinct errors shown by running code and
        the cited corrections whose quoted line lies in it, wherever the claim is read (one
        definition with ``tmath chapters``: ``claims.counts``); "total": the whole run."""
        counts = _counts(claims)
        if section == "total":
            refutes = claim_counts.distinct_errors(everything)["measured"]
            corrections = sum(len(c.get("corrections") or []) for c in everything)
        else:
            found = claim_counts.section_row(everything, None if section == "other" else section)
            refutes, corrections = found["distinct_errors"], found["corrections"]
        cells = "".join(f'<td class="num">{counts[v]}</td>' for v in _VERDICTS)
        return (f"<tr{cls}><td>{title}</td><td class=\"num\">{len(claims)}</td>{cells}"
                f'<td class="num">{refutes}</td><td class="num">{corrections}</td></tr>')

    read = {s.key if s is not None else None: group for s, group in groups}
    rows = []
    for s in (*chapters.SECTIONS, None):
        key = s.key if s is not None else None
        if key in read:
            title = f'<a href="#{_e(_section_id(s))}">{_e(_section_title(s, page))}</a>'
            rows.append(row(title, read[key], section=s if s is not None else "other"))
        elif s is not None:  # no claim read here, but errors or corrections on its lines
            found = claim_counts.section_row(everything, s)
            if found["distinct_errors"] or found["corrections"]:
                rows.append(row(_e(_section_title(s, page)), [], section=s))
    rows.append(row(_e(page.ui("report.total")), everything, ' class="total"'))
    return (f"<h3>{_e(page.ui('report.summary_by_section'))}</h3>"
            f'<table class="grid by-section"><thead><tr>{head}</tr></thead>'
            f"<tbody>{''.join(rows)}</tbody></table>")


def _legend_html(page: _Page) -> str:
    """What the verdicts, the kinds, a falsifier and the two meanings of "seed" mean."""
    items = [(_badge(v, page.lang), page.ui(f"legend.verdict.{v}")) for v in _VERDICTS]
    items += [(_kind_html(k, page), page.ui(f"legend.kind.{k}")) for k in _KINDS]
    items += [(_e(page.ui("legend.falsifier.term")), page.ui("legend.falsifier")),
              (_e(page.ui("legend.seed.term")), page.ui("legend.seed"))]
    body = "".join(f"<dt>{term}</dt><dd>{_e(text)}</dd>" for term, text in items)
    return (f'<details class="legend" open><summary>{_e(page.ui("legend.title"))}</summary>'
            f'<dl class="legend">{body}</dl></details>')


def _toc_html(groups: Sequence[tuple[Any, list[Mapping[str, Any]]]], page: _Page) -> str:
    items = []
    for s, group in groups:
        sid = _section_id(s)
        items.append(f'<li data-section="{_e(sid)}"><a href="#{_e(sid)}">'
                     f"{_e(_section_title(s, page))}</a>"
                     f'<span class="counts">{_count_badges(group, page.lang)}</span></li>')
    return (f'<nav id="toc"><h2>{_e(page.ui("report.toc"))}</h2><ol>{"".join(items)}</ol>'
            "</nav>")


def _filters_html(claims: Sequence[Mapping[str, Any]], page: _Page) -> str:
    present = [v for v in (*_VERDICTS, "unknown")
               if any((c.get("verdict") if c.get("verdict") in _VERDICTS else "unknown") == v
                      for c in claims)]
    boxes = "".join(
        f'<label><input type="checkbox" name="verdict" value="{v}" checked> '
        f"{_badge(v if v != 'unknown' else None, page.lang)}</label>" for v in present)
    topics = sorted({str(c.get("topic")) for c in claims if c.get("topic")})
    options = f'<option value="">{_e(page.ui("report.filter.all_topics"))}</option>' + "".join(
        f'<option value="{_e(t)}">{_e(t)}</option>' for t in topics)
    template = page.ui("report.filter.shown", shown="{shown}", total="{total}")
    return (
        f'<form id="filters" hidden aria-label="{_e(page.ui("report.filters"))}">'
        f'<fieldset><legend>{_e(page.ui("report.filter.verdict"))}</legend>{boxes}</fieldset>'
        f'<label>{_e(page.ui("report.filter.topic"))} <select name="topic">{options}</select>'
        "</label>"
        f'<label>{_e(page.ui("report.filter.search"))} <input type="search" name="q" '
        f'placeholder="{_e(page.ui("report.filter.placeholder"))}"></label>'
        f'<output id="filter-shown" data-template="{_e(template)}"></output></form>'
        f'<noscript><p class="noscript">{_e(page.ui("report.filter.noscript"))}</p></noscript>')


def _meta_html(summary: Mapping[str, Any]) -> str:
    keys = ("seed", "tier", "size", "pattern", "version", "torch", "numpy", "python",
            "platform", "torch_threads", "timestamp")
    parts = [f"{k} <b>{_e(summary[k])}</b>" for k in keys if summary.get(k) is not None]
    return '<p class="meta">' + " · ".join(parts) + "</p>" if parts else ""


def _sections_html(groups: Sequence[tuple[Any, list[Mapping[str, Any]]]], page: _Page) -> str:
    out = []
    for s, group in groups:
        claims = "\n".join(_claim_html(c, page) for c in group)
        out.append(
            f'<section class="chapter" id="{_e(_section_id(s))}">\n'
            f"<h2>{_e(_section_title(s, page))}</h2>\n"
            f'<p class="count">{_e(page.ui("report.section_count", n=len(group)))} '
            f"{_count_badges(group, page.lang)}</p>\n{claims}\n"
            f'<a class="top" href="#top">↑ {_e(page.ui("report.back_to_top"))}</a>\n'
            "</section>")
    return "\n".join(out)


def _review_base(out_dir: Path) -> str:
    """The relative link from ``out_dir`` to the checkout's ``docs/reviews/`` (issue 31: the
    report links each claim's review), or "" when the package does not sit in a checkout."""
    import os

    reviews = Path(__file__).resolve().parents[3] / "docs" / "reviews"
    if not reviews.is_dir():
        return ""
    try:
        rel = os.path.relpath(reviews, Path(out_dir).resolve())
    except ValueError:  # another drive
        return ""
    return "/".join(quote(part) for part in Path(rel).parts) + "/"


def render_report(results_json: dict[str, Any], out_dir: Path, *, lang: str = "en") -> Path:
    """Write the HTML report of a results document into ``out_dir``; return ``index.html``'s path.

    ``results_json`` is what ``tmath verify --json`` writes (see ``report/__init__.py``);
    ``lang`` is ``"en"`` or ``"zh"`` (anything else is a ``ValueError``). Writes
    ``out_dir/index.html``, ``out_dir/figures/<claim-id>-<k>.png`` (old PNGs there are removed
    first) and ``out_dir/results.json`` (the document itself, so the folder stands alone).
    """
    i18n.check_lang(lang)
    validate_results(results_json)
    out_dir = Path(out_dir)
    figures_dir = safe_write.real_dir(out_dir / "figures")  # a link there is replaced
    safe_write.remove_own_files(figures_dir, keep=lambda p: p.suffix != ".png")

    claims = list(results_json["claims"])
    summary: dict[str, Any] = dict(results_json.get("summary") or {})
    for key, value in summary_from_claims(claims).items():
        summary.setdefault(key, value)

    page = _Page(lang=lang, out_dir=out_dir, review_base=_review_base(out_dir))
    has_figures = any(c.get("figures") for c in claims)
    if lang == "zh" and has_figures:
        family = cjk_font()
        if family is None:
            page.figures_english = True
        else:
            page.font = [family, LATIN_FAMILY]
    groups = group_by_section(claims)
    notes = []
    if lang != "en":
        n = sum(1 for c in claims if i18n.has_statement(c, lang))
        notes.append(page.ui("report.statements_translated", n=n, total=len(claims)))
    if page.figures_english:
        notes.append(page.ui("report.figure_no_cjk"))
    notes.append(left_out_text(summary.get("left_out"), page.ui))
    notes_html = "".join(f'<p class="note">{_e(n)}</p>' for n in notes if n)
    body = _sections_html(groups, page)
    html_lang = "zh-CN" if lang == "zh" else "en"
    link = '<a href="results.json">results.json</a>'
    footer = _e(page.ui("report.footer", link="\x00")).replace("\x00", link)
    page_html = f"""<!DOCTYPE html>
<html lang="{html_lang}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{_e(page.ui("report.title"))}</title>
<style>{page_css(lang=lang)}{_CSS}</style>
</head>
<body>
<header id="top">
<h1>{_e(page.ui("report.title"))}</h1>
{_meta_html(summary)}
<p class="intro">{_e(page.ui("report.intro"))}</p>
{notes_html}
</header>
<section id="summary">
<h2>{_e(page.ui("report.summary"))}</h2>
{_cards_html(summary, page)}
{_legend_html(page)}
{_section_summary_html(groups, page)}
</section>
{_toc_html(groups, page)}
{_filters_html(claims, page)}
<main>
{body}
</main>
<footer>{footer}</footer>
<script>{_SCRIPT}</script>
</body>
</html>
"""
    write_json(results_json, out_dir / "results.json")
    return safe_write.write_text(out_dir / "index.html", page_html)

