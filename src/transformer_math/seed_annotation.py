"""A seed document, annotated with the claims that check it: the textbook, machine-checked.

``tmath annotate SEED_FILE --report DIR`` reads the user's own copy of a seed (the seeds are not
shipped with the project) and writes ``DIR/<seed>.html``: every line of the text, numbered, and
each line range a claim checks (its ``seed_refs``) marked with that claim's verdict and linked
to its evidence in the report; a line a refuted claim shows wrong carries what the seed says and
what is correct (``refutes``), a line a primary source contradicts the cited correction
(``corrections``).

Which seed a file is, is decided by its SHA-256 (:data:`transformer_math.chapters.SEED_FILES`):
the claims' line numbers refer to those copies. A different file can still be annotated when
the caller names the seed, with a warning in the page that its lines may not match.

The verdicts come from a results document (``tmath verify --json``) when one is given, else
from the claims' declared ``expected`` verdicts, labelled as such (nothing was run).
"""

from __future__ import annotations

import hashlib
import html
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from transformer_math import chapters, i18n
from transformer_math.html_style import ROOT_COLOURS

#: Largest seed file read (the seeds are 10-140 KB; this refuses a wrong file early).
MAX_SEED_BYTES = 8 * 1024 * 1024

#: Which verdict colours a line covered by several claims: the most alarming one.
_SEVERITY = {"failed": 4, "refuted": 3, "inconclusive": 2, "verified": 2, "cited": 1, None: 0}

_LABELS: dict[str, dict[str, str]] = {
    "title": {"en": "Seed {seed}, annotated with its claims",
              "zh": "种子文档 {seed}：逐行标注其论断的验证结论"},
    "identified": {"en": "File recognised by its SHA-256 as the seed {seed} the claims cite.",
                   "zh": "按 SHA-256 识别为论断所引用的种子文档 {seed}。"},
    "unidentified": {"en": "Warning: this file's SHA-256 differs from the copy of seed {seed} the "
                           "claims cite ({lines} lines); the marked line numbers may not match.",
                     "zh": "警告：此文件的 SHA-256 与论断所引用的种子文档 {seed}（{lines} 行）"
                           "不同，标注的行号可能对不上。"},
    "from_results": {"en": "Verdicts from the results of a run: {origin}.",
                     "zh": "结论来自一次运行的结果：{origin}。"},
    "from_expected": {"en": "Verdicts are the claims' declared expected verdicts; nothing was run "
                            "(pass --results to show a run's).",
                      "zh": "结论为论断声明的预期结论，未实际运行（用 --results 显示运行结果）。"},
    "summary": {"en": "{claims} claims check {lines} of {total} lines; {refuted} refuted "
                      "statements, {corrections} cited corrections.",
                "zh": "{claims} 条论断检查了 {total} 行中的 {lines} 行；驳斥 {refuted} 处陈述，"
                      "引用更正 {corrections} 处。"},
    "contents": {"en": "Contents", "zh": "目录"},
    "says": {"en": "the seed says", "zh": "原文"},
    "correct": {"en": "correct", "zh": "正确说法"},
    "refuted_here": {"en": "refuted here by", "zh": "此处被驳斥："},
    "corrected_here": {"en": "cited correction by", "zh": "引用更正："},
    "source": {"en": "source", "zh": "出处"},
    "expected": {"en": "expected", "zh": "预期"},
    "top": {"en": "back to top", "zh": "返回顶部"},
}


def _t(key: str, lang: str, **values: Any) -> str:
    entry = _LABELS[key]
    return entry.get(lang, entry["en"]).format(**values)


@dataclass(frozen=True)
class Mark:
    """One claim's mark on lines ``start..end`` of a seed.

    ``kind`` is ``"checks"`` (a ``seed_refs`` range), ``"refutes"`` (one line a refuted claim
    shows wrong) or ``"corrects"`` (one line a primary source contradicts).
    """

    claim_id: str
    verdict: str | None
    start: int
    end: int
    kind: str
    says: str = ""
    correct: str = ""
    source: str = ""


def seed_of_bytes(data: bytes) -> str | None:
    """The seed (``"000"``, ``"003"``, ``"004"``) whose cited copy has these bytes, else None."""
    digest = hashlib.sha256(data).hexdigest()
    for seed, info in chapters.SEED_FILES.items():
        if info["sha256"] == digest:
            return seed
    return None


def read_seed(path: str | Path, seed: str | None = None) -> tuple[str, str, bool]:
    """Read a user's seed file: ``(seed, text, identified)``.

    ``identified`` is True when the file's SHA-256 is the cited copy's. An unrecognised file
    needs ``seed``; a ``ValueError`` names what is wrong (missing file, too large, not UTF-8,
    unknown seed).
    """
    p = Path(path)
    if not p.is_file():
        raise ValueError(f"SEED_FILE {str(p)!r} is not an existing file")
    size = p.stat().st_size
    if size > MAX_SEED_BYTES:
        raise ValueError(f"SEED_FILE {str(p)!r} has {size} bytes, more than the maximum "
                         f"{MAX_SEED_BYTES}: not a seed document")
    data = p.read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"SEED_FILE {str(p)!r} is not UTF-8 text: {exc}") from None
    known = seed_of_bytes(data)
    if seed is not None and seed not in chapters.SEED_FILES:
        raise ValueError(f"--seed must be one of {sorted(chapters.SEED_FILES)}, got {seed!r}")
    if known is not None and seed is not None and seed != known:
        raise ValueError(f"--seed {seed} contradicts the file: its SHA-256 is that of seed "
                         f"{known}")
    if known is None and seed is None:
        raise ValueError(f"SEED_FILE {str(p)!r} is not one of the seed copies the claims cite "
                         f"(SHA-256 differs); name the seed with --seed "
                         f"{'|'.join(sorted(chapters.SEED_FILES))} to annotate it anyway")
    return (known or seed), text, known is not None  # type: ignore[return-value]


_CLAIM_ID = re.compile(r"[a-z]+\.[a-z0-9-]+")
_VERDICT_WORDS = frozenset({"verified", "refuted", "failed", "cited", "inconclusive"})


def _line_no(value: Any, where: str, n_lines: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{where} must be a line number, got {value!r}")
    if not 1 <= value <= max(n_lines, 1):
        raise ValueError(f"{where} = {value} is outside the seed's lines 1..{n_lines}")
    return value


def check_claims(claims: Any, n_lines: dict[str, int]) -> list[Mapping[str, Any]]:
    """The claims of a results document, checked field by field before anything is drawn or
    allocated (issues 39 and 40): ids, verdicts, and every seed line inside the seed file's
    ``n_lines[seed]`` lines. A ``ValueError`` names the first bad field."""
    if not isinstance(claims, list):
        raise ValueError(f"claims must be a list, got {type(claims).__name__}")
    for i, c in enumerate(claims):
        where = f"claims[{i}]"
        if not isinstance(c, Mapping):
            raise ValueError(f"{where} must be an object, got {type(c).__name__}")
        if not isinstance(c.get("id"), str) or not _CLAIM_ID.fullmatch(c["id"]):
            raise ValueError(f"{where}.id must look like 'topic.slug', got {c.get('id')!r}")
        for key in ("verdict", "expected"):
            v = c.get(key)
            if v is not None and (not isinstance(v, str) or v not in _VERDICT_WORDS):
                raise ValueError(f"{where}.{key} must be one of {sorted(_VERDICT_WORDS)}, "
                                 f"got {v!r}")
        for key in ("seed_refs", "refutes", "corrections"):
            items = c.get(key) or []
            if not isinstance(items, list):
                raise ValueError(f"{where}.{key} must be a list")
            for j, r in enumerate(items):
                at = f"{where}.{key}[{j}]"
                if not isinstance(r, Mapping) or r.get("seed") not in chapters.SEED_FILES:
                    raise ValueError(f"{at} must be an object with a seed of "
                                     f"{sorted(chapters.SEED_FILES)}")
                total = n_lines.get(str(r["seed"]), 0)
                if key == "seed_refs":
                    lines = r.get("lines")
                    if not isinstance(lines, list) or len(lines) != 2:
                        raise ValueError(f"{at}.lines must be [start, end]")
                    start = _line_no(lines[0], f"{at}.lines[0]", total)
                    if _line_no(lines[1], f"{at}.lines[1]", total) < start:
                        raise ValueError(f"{at}.lines must have start <= end")
                    continue
                _line_no(r.get("line"), f"{at}.line", total)
                if r.get("to_line") is not None:
                    _line_no(r.get("to_line"), f"{at}.to_line", total)
                for k, other in enumerate(r.get("also") or []):
                    if not (isinstance(other, list) and len(other) == 2
                            and other[0] in chapters.SEED_FILES):
                        raise ValueError(f"{at}.also[{k}] must be [seed, line]")
                    _line_no(other[1], f"{at}.also[{k}][1]", n_lines.get(other[0], 0))
                for text_key in ("says", "correct", "quote", "source"):
                    if not isinstance(r.get(text_key, ""), str):
                        raise ValueError(f"{at}.{text_key} must be a string")
    return claims


def safe_href(path: str) -> str:
    """A relative link built from percent-encoded path components (issue 40): a folder named
    ``javascript:...`` becomes ``./javascript%3A...``, never a scheme."""
    parts = [quote(part, safe="") for part in Path(path).parts]
    return "./" + "/".join(parts) if parts and parts[0] != ".." else "/".join(parts)


def marks(seed: str, claims: Iterable[Mapping[str, Any]]) -> list[Mark]:
    """The marks the claims (their JSON: ``claim_json`` or a results entry) put on ``seed``.

    A results entry carries its ``verdict``; a bare claim its ``expected`` verdict.
    """
    out: list[Mark] = []
    for c in claims:
        cid = str(c.get("id"))
        verdict = c.get("verdict") or c.get("expected")
        for ref in c.get("seed_refs") or []:
            if ref.get("seed") == seed:
                start, end = (int(x) for x in ref["lines"])
                out.append(Mark(cid, verdict, start, end, "checks"))
        for r in c.get("refutes") or []:
            says = str(r.get("quote") or r.get("says", ""))
            if r.get("seed") == seed:
                end = r.get("to_line") if isinstance(r.get("to_line"), int) else int(r["line"])
                out.append(Mark(cid, verdict, int(r["line"]), max(int(r["line"]), end),
                                "refutes", says, str(r.get("correct", ""))))
            for other in r.get("also") or []:  # the same error repeated elsewhere (issue 31)
                if (isinstance(other, list | tuple) and len(other) == 2 and other[0] == seed
                        and isinstance(other[1], int)):
                    out.append(Mark(cid, verdict, other[1], other[1], "refutes",
                                    f"(same error as {r.get('seed')}:{r.get('line')}) "
                                    + str(r.get("says", "")), str(r.get("correct", ""))))
        for r in c.get("corrections") or []:
            if r.get("seed") == seed:
                out.append(Mark(cid, verdict, int(r["line"]), int(r["line"]), "corrects",
                                str(r.get("says", "")), str(r.get("correct", "")),
                                str(r.get("source", ""))))
    return sorted(out, key=lambda m: (m.start, m.end, m.claim_id, m.kind))


# the verdict colours of every HTML page (html_style.ROOT_COLOURS): refuted is teal there too,
# a finding about the seed, not the purple that readers took for a failure (issue 38.3)
_CSS = ROOT_COLOURS + """
body { font: 15px/1.6 system-ui, -apple-system, "Segoe UI", "Noto Sans CJK SC",
       "Source Han Sans SC", "PingFang SC", "Microsoft YaHei", "WenQuanYi Micro Hei",
       "Noto Color Emoji", sans-serif;
       margin: 0 auto; max-width: 1150px; padding: 1.2rem; color: #1f2328; }
h1 { font-size: 1.4rem; margin: 0 0 .4rem; } .meta { color: var(--grey); margin: .2rem 0; }
.warn { color: var(--red); font-weight: 600; }
nav.toc { columns: 2; font-size: .9rem; margin: .8rem 0 1.2rem; }
.ln { display: grid; grid-template-columns: 3.6rem 1fr; border-left: 5px solid transparent;
      padding: 0 .4rem; white-space: pre-wrap; word-break: break-word; }
.ln .no { color: var(--grey); text-align: right; padding-right: .7rem; text-decoration: none;
          font: 12px/1.9 ui-monospace, monospace; }
.ln.v-verified { border-left-color: var(--green); background: #f3faf4; }
.ln.v-refuted { border-left-color: var(--teal); background: #e6f6f5; }
.ln.v-failed { border-left-color: var(--red); background: #fdf2f2; }
.ln.v-cited { border-left-color: var(--blue); background: #f2f7fd; }
.ln.v-inconclusive { border-left-color: var(--yellow); background: #fdf8ec; }
.badges { grid-column: 2; margin: .1rem 0 .2rem; }
.badge { display: inline-block; padding: 0 .5rem; margin: 0 .3rem .1rem 0; border-radius: 1rem;
         color: #fff; font-size: .78rem; text-decoration: none; }
.b-verified { background: var(--green); } .b-refuted { background: var(--teal); }
.b-failed { background: var(--red); } .b-cited { background: var(--blue); }
.b-none { background: var(--grey); } .b-inconclusive { background: var(--yellow); }
.note { grid-column: 2; border: 1px solid #d0d7de; border-radius: 6px; padding: .3rem .6rem;
        margin: .2rem 0 .4rem; font-size: .9rem; white-space: normal; background: #fff; }
.note.refutes { border-color: var(--teal); } .note.corrects { border-color: var(--blue); }
.top { font-size: .8rem; }
"""


def _e(x: Any) -> str:
    return html.escape(str(x), quote=True)


def _badge(m: Mark, href: str | None, expected: bool, lang: str) -> str:
    label = m.verdict if m.verdict else "?"
    if expected:
        label = f"{_t('expected', lang)}: {label}"
    cls = f"b-{m.verdict}" if m.verdict in _SEVERITY and m.verdict else "b-none"
    inner = f"{_e(m.claim_id)} · {_e(i18n.text(label, lang))}"
    if href and _CLAIM_ID.fullmatch(m.claim_id):
        return (f'<a class="badge {cls}" href="{_e(href)}#{quote(m.claim_id, safe="")}">'
                f"{inner}</a>")
    return f'<span class="badge {cls}">{inner}</span>'


def render_annotation(text: str, seed: str, claims: Iterable[Mapping[str, Any]], *,
                      lang: str = "en", identified: bool = True,
                      evidence_href: str | None = None, origin: str | None = None) -> str:
    """The annotated seed as one self-contained HTML page (inline CSS, no script).

    ``evidence_href`` is the report page the badges link to (``.../index.html``; anchors are
    claim ids); ``origin`` names the results document the verdicts come from (None: expected
    verdicts).
    """
    i18n.check_lang(lang)
    claims = list(claims)
    lines = text.split("\n")  # numbered as the claims number them: by newline only
    if lines and lines[-1] == "":
        lines.pop()
    lines = [ln[:-1] if ln.endswith("\r") else ln for ln in lines]
    all_marks = marks(seed, claims)
    by_line: dict[int, list[Mark]] = {}
    starts: dict[int, list[Mark]] = {}
    notes: dict[int, list[Mark]] = {}
    for m in all_marks:
        if m.kind == "checks":
            starts.setdefault(m.start, []).append(m)
            for n in range(m.start, min(m.end, len(lines)) + 1):
                by_line.setdefault(n, []).append(m)
        else:
            notes.setdefault(m.start, []).append(m)
            by_line.setdefault(m.start, []).append(m)
    expected = origin is None
    covered = sum(1 for n in by_line if n <= len(lines))
    claim_ids = {m.claim_id for m in all_marks}
    n_ref = sum(1 for m in all_marks if m.kind == "refutes"  # distinct errors, not repeats
                and not m.says.startswith("(same error as "))
    n_cor = sum(1 for m in all_marks if m.kind == "corrects")
    info = chapters.SEED_FILES[seed]
    summary = _t("summary", lang, claims=len(claim_ids), lines=covered, total=len(lines),
                 refuted=n_ref, corrections=n_cor)
    head = [
        f'<h1 id="top">{_e(_t("title", lang, seed=seed))}</h1>',
        f'<p class="meta">{_e(_t("identified", lang, seed=seed))}</p>' if identified else
        f'<p class="warn">{_e(_t("unidentified", lang, seed=seed, lines=info["lines"]))}</p>',
        f'<p class="meta">{_e(_t("from_results", lang, origin=origin))}</p>' if origin else
        f'<p class="meta">{_e(_t("from_expected", lang))}</p>',
        f'<p class="meta">{_e(summary)}</p>',
    ]
    toc = [f'<nav class="toc"><b>{_e(_t("contents", lang))}</b><br>']
    for s in chapters.sections(seed):
        if s.start <= len(lines):
            count = len({m.claim_id for m in all_marks if s.contains(m.start)})
            toc.append(f'<a href="#L{s.start}">{_e(s.title(lang))}</a> ({count})<br>')
    toc.append("</nav>")
    body: list[str] = []
    section_starts = {s.start for s in chapters.sections(seed)}
    for n, line in enumerate(lines, start=1):
        here = by_line.get(n, [])
        worst = max((m.verdict for m in here), key=lambda v: _SEVERITY.get(v, 0), default=None)
        cls = f" v-{worst}" if worst in _SEVERITY and worst else ""
        if n in section_starts and n > 1:
            body.append(f'<div class="top"><a href="#top">↑ {_e(_t("top", lang))}</a></div>')
        body.append(f'<div class="ln{cls}" id="L{n}"><a class="no" href="#L{n}">{n}</a>'
                    f'<span>{_e(line)}</span>')
        if n in starts:
            badges = "".join(_badge(m, evidence_href, expected, lang) for m in starts[n])
            body.append(f'<div class="badges">{badges}</div>')
        for m in notes.get(n, []):
            key = "refuted_here" if m.kind == "refutes" else "corrected_here"
            src = (f'<br><i>{_e(_t("source", lang))}</i>: {_e(m.source)}' if m.source else "")
            body.append(f'<div class="note {m.kind}">{_e(_t(key, lang))} '
                        f'{_badge(m, evidence_href, expected, lang)}<br>'
                        f'<i>{_e(_t("says", lang))}</i>: {_e(m.says)}<br>'
                        f'<i>{_e(_t("correct", lang))}</i>: {_e(m.correct)}{src}</div>')
        body.append("</div>")
    html_lang = "zh-CN" if lang == "zh" else "en"
    return (f'<!DOCTYPE html>\n<html lang="{html_lang}"><head><meta charset="utf-8">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">'
            f'<title>{_e(_t("title", lang, seed=seed))}</title><style>{_CSS}</style></head>'
            f'<body>{"".join(head)}{"".join(toc)}<main>{"".join(body)}</main></body></html>\n')


def annotate(seed_file: str | Path, out_dir: str | Path, *,
             results: Mapping[str, Any] | None = None, results_origin: str | None = None,
             report_page: str | Path | None = None, lang: str = "en",
             seed: str | None = None) -> Path:
    """Write ``out_dir/<seed>.html`` (``<seed>.zh.html`` in Chinese) for a user's seed file and
    return its path.

    ``results`` is a results document (``tmath verify --json``); without it every registered
    claim is shown with its expected verdict. ``report_page`` is the report's ``index.html``
    the badges link to.
    """
    i18n.check_lang(lang)
    seed_id, text, identified = read_seed(seed_file, seed)
    if results is not None:
        lines = {seed_id: len(text.splitlines())}
        claims: list[Mapping[str, Any]] = check_claims(
            results.get("claims", []), {s: lines.get(s, 10**6) for s in chapters.SEED_FILES})
    else:
        from transformer_math.claims.registry import all_claims, claim_json

        claims = [claim_json(c) for c in all_claims()]
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    href = None
    if report_page is not None:
        href = safe_href(os.path.relpath(Path(report_page).resolve(), out.resolve()))
    page = render_annotation(text, seed_id, claims, lang=lang, identified=identified,
                             evidence_href=href, origin=results_origin if results else None)
    path = out / (f"{seed_id}.zh.html" if lang == "zh" else f"{seed_id}.html")
    from transformer_math import safe_write

    return safe_write.write_text(path, page)
