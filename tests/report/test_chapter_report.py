"""The HTML report follows the chapter: sections in the text's order, claims by seed line,
contents, summary per section, filters, back-to-top links; falsifiers, refutations and cited
corrections shown for what they are; Chinese and English pages.

The results document is written by hand (``conftest.py``); nothing is run.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from transformer_math import chapters, i18n
from transformer_math.report import html as report_html
from transformer_math.report.html import group_by_section, render_report, section_key


def _render(document: dict[str, Any], tmp_path: Path, lang: str = "en") -> str:
    return render_report(document, tmp_path / lang, lang=lang).read_text(encoding="utf-8")


def _article(page: str, cid: str) -> str:
    m = re.search(rf'<article class="claim[^"]*" id="{re.escape(cid)}".*?</article>', page,
                  flags=re.S)
    assert m is not None, cid
    return m.group(0)


def _section(page: str, key: str) -> str:
    m = re.search(rf'<section class="chapter" id="sec-{re.escape(key)}">.*?</section>', page,
                  flags=re.S)
    assert m is not None, key
    return m.group(0)


def test_sections_follow_the_chapter(chapter_document: dict[str, Any], tmp_path: Path) -> None:
    page = _render(chapter_document, tmp_path)
    ids = re.findall(r'<section class="chapter" id="sec-([^"]+)">', page)
    assert ids == ["8.3.1", "8.3.3", "8.3.5", "004.heads", "003", "other"]
    # chapters.SECTIONS order, the unplaced claim last
    order = [chapters.section_index(k) for k in ids[:-1]]
    assert order == sorted(order)
    # within 8.3.3 the claim at line 564 comes before the one at 626 (listed the other way)
    s833 = _section(page, "8.3.3")
    assert s833.index('id="position.earlier"') < s833.index('id="position.later"')
    # headings are the sections' titles
    assert f"<h2>{chapters.SECTIONS[chapters.section_index('8.3.3')].title_en}</h2>" in s833


def test_group_by_section_uses_seed_lines_when_section_is_missing(
        chapter_document: dict[str, Any]) -> None:
    claims = chapter_document["claims"]
    for c in claims:
        c.pop("section")
    assert section_key(next(c for c in claims if c["id"] == "heads.failed")) == "004.heads"
    groups = group_by_section(claims)
    assert [s.key if s else None for s, _ in groups] == ["8.3.1", "8.3.3", "8.3.5",
                                                          "004.heads", "003", None]
    assert [c["id"] for c in groups[1][1]] == ["position.earlier", "position.later"]


def test_contents_summary_and_back_to_top(chapter_document: dict[str, Any],
                                          tmp_path: Path) -> None:
    page = _render(chapter_document, tmp_path)
    assert '<header id="top">' in page
    toc = re.search(r'<nav id="toc">.*?</nav>', page, flags=re.S).group(0)
    for key in ("8.3.1", "8.3.3", "8.3.5", "004.heads", "003", "other"):
        assert f'href="#sec-{key}"' in toc
    # per-verdict counts in the contents: 8.3.3 has one verified and one refuted claim
    entry = re.search(r'<li data-section="sec-8.3.3">.*?</li>', toc).group(0)
    assert "verified 1" in entry and "refuted 1" in entry and "failed" not in entry
    # one back-to-top link per section
    assert page.count('<a class="top" href="#top">') == 6
    for key in ("8.3.1", "8.3.3", "004.heads", "other"):
        assert '<a class="top" href="#top">' in _section(page, key)
    # the summary per section: statements checked, verdicts (verified, refuted, failed, cited,
    # inconclusive), distinct seed errors at their quoted line, cited corrections
    table = re.search(r'<table class="grid by-section">.*?</table>', page, flags=re.S).group(0)
    row = re.search(r'<tr><td><a href="#sec-8.3.3">.*?</tr>', table).group(0)
    assert re.findall(r'<td class="num">(\d+)</td>', row) == ["2", "1", "1", "0", "0", "0", "1",
                                                              "0"]
    row = re.search(r'<tr><td><a href="#sec-8.3.5">.*?</tr>', table).group(0)
    assert re.findall(r'<td class="num">(\d+)</td>', row) == ["1", "0", "0", "0", "1", "0", "0",
                                                              "1"]
    total = re.search(r'<tr class="total">.*?</tr>', table).group(0)
    assert re.findall(r'<td class="num">(\d+)</td>', total) == ["8", "5", "1", "1", "1", "0",
                                                                 "1", "1"]


def test_filters_are_present_and_hidden_without_script(chapter_document: dict[str, Any],
                                                        tmp_path: Path) -> None:
    page = _render(chapter_document, tmp_path)
    form = re.search(r'<form id="filters" hidden.*?</form>', page, flags=re.S).group(0)
    for verdict in ("verified", "refuted", "failed", "cited"):
        assert f'name="verdict" value="{verdict}" checked' in form
    assert '<select name="topic">' in form
    for topic in ("attention", "position", "heads", "history", "memory", "loose"):
        assert f'<option value="{topic}">' in form
    assert '<input type="search" name="q"' in form
    assert "<noscript>" in page
    # every claim carries what the filters read
    assert 'data-verdict="refuted" data-topic="position"' in _article(page, "position.earlier")
    # one inline script, nothing loaded from anywhere
    assert page.count("<script") == 1 and "<script>" in page
    assert "http://" not in page and "https://" not in page and "@import" not in page


def test_caught_falsifier_is_not_shown_as_failed(chapter_document: dict[str, Any],
                                                 tmp_path: Path) -> None:
    page = _render(chapter_document, tmp_path)
    art = _article(page, "position.later")
    box = re.search(r'<div class="falsifier caught">.*?</table></div>', art, flags=re.S).group(0)
    assert ("falsifier caught: planted bug position.rope-skew made the check fail") in box
    assert "badge failed" not in art and ">failed<" not in art
    assert "max_norm_change" in box  # the values with the bug, by name
    # an uncaught falsifier stays red
    missed = _article(page, "attention.uncaught")
    assert '<div class="falsifier missed">' in missed
    assert "falsifier NOT caught: with planted bug attention.no-effect" in missed
    # a failed claim is failed
    assert 'class="badge failed"' in _article(page, "heads.failed")


def test_quantities_refutations_and_corrections(chapter_document: dict[str, Any],
                                                tmp_path: Path) -> None:
    page = _render(chapter_document, tmp_path)
    art = _article(page, "position.earlier")
    margins = re.search(r'<table class="grid wide margins">.*?</table>', art, flags=re.S).group(0)
    assert ("<th>quantity</th><th>predicted</th><th>measured</th><th>condition tested</th>"
            in margins)
    assert "shift map error" in margins and "≤ 1e-05" in margins
    assert '<td class="yes">yes</td>' in margins
    seed = re.search(r'<table class="grid wide seed-margins">.*?</table>', art,
                     flags=re.S).group(0)
    assert "seed&#x27;s shift map error" in seed and "no: refutes the seed" in seed
    values = re.search(r'<table class="grid wide values">.*?</table>', art, flags=re.S).group(0)
    assert "<td>shift_error</td>" in values and "<td>seed_error</td>" in values
    refutation = re.search(r'<div class="refutation">.*?</div></div>', art, flags=re.S).group(0)
    assert "000:570 says" in refutation and "PE(p+k) = PE(p) + PE(k)" in refutation
    assert "PE(p+k) = M_k PE(p), a rotation" in refutation
    assert 'href="#sec-004.position"' in art  # also read in 004's positional encodings
    cited = _article(page, "history.cited")
    correction = re.search(r'<div class="correction">.*?</div></div>', cited,
                           flags=re.S).group(0)
    assert "cited correction" in correction and "000:815 says" in correction
    assert "Pérez, Marinković and Barceló, ICLR 2019" in correction
    assert "arXiv:1901.03429" in correction
    per_seed = _article(page, "attention.scale")
    assert '<table class="grid per-seed">' in per_seed and "seed 2" in per_seed
    assert '<span class="badge module">M1</span>' in per_seed
    # the figure is drawn, with its title
    assert 'src="figures/attention.scale-1.png"' in per_seed
    assert (tmp_path / "en" / "figures" / "attention.scale-1.png").is_file()


def test_chinese_page(chapter_document: dict[str, Any], tmp_path: Path) -> None:
    page = _render(chapter_document, tmp_path, lang="zh")
    assert '<html lang="zh-CN">' in page
    assert '"Noto Sans CJK SC"' in page and '"Microsoft YaHei"' in page
    assert f"<h2>{i18n.ui('report.toc', 'zh')}</h2>" in page
    assert "<h2>§8.3.3 位置编码理论：正弦编码与 RoPE 群论</h2>" in page
    assert "<h2>003 概念页：Transformer</h2>" in page
    assert "返回顶部" in page and "back to top" not in page
    art = _article(page, "position.later")
    assert "RoPE 旋转是正交变换" in art  # statement_zh
    assert "证伪器已捕获：植入的缺陷 position.rope-skew 使检查失败" in art
    assert i18n.ui("verdict.verified", "zh") in art
    # a statement without Chinese stays English (and the page says how many are translated)
    assert "statement of loose.unplaced" in page or "loose.unplaced" in i18n.ZH_STATEMENTS
    assert "中文陈述" in page
    # the subsection of a seed line is named
    assert "理论 A：正弦位置编码" in _article(page, "position.earlier")
    # the English page has none of the Chinese interface
    english = _render(chapter_document, tmp_path, lang="en")
    assert '<html lang="en">' in english and "返回顶部" not in english and "目录" not in english


def test_chinese_figures_use_a_cjk_font_or_say_why_not(
        chapter_document: dict[str, Any], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[Any] = []
    real = report_html.draw_figure

    def spy(figure: Any, path: Path, **kw: Any) -> Path:
        calls.append(kw.get("font_family"))
        return real(figure, path, **kw)

    monkeypatch.setattr(report_html, "draw_figure", spy)
    monkeypatch.setattr(report_html, "cjk_font", lambda: "Noto Sans CJK SC")
    page = _render(chapter_document, tmp_path, lang="zh")
    assert calls == [["Noto Sans CJK SC", "DejaVu Sans"]]
    assert i18n.ui("report.figure_no_cjk", "zh") not in page

    calls.clear()
    monkeypatch.setattr(report_html, "cjk_font", lambda: None)
    page = _render(chapter_document, tmp_path, lang="zh")
    assert calls == [None]  # English labels, matplotlib's own font
    assert i18n.ui("report.figure_no_cjk", "zh") in page
    assert "<figcaption>variance against d_k" in page  # the English title


def test_bad_language_is_refused(chapter_document: dict[str, Any], tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="lang must be one of"):
        render_report(chapter_document, tmp_path, lang="fr")
    assert not (tmp_path / "index.html").exists()


def test_every_interface_key_has_both_languages() -> None:
    from transformer_math.i18n.ui import UI

    for key, entry in UI.items():
        assert set(entry) == {"en", "zh"}, key
        fields_en = set(re.findall(r"{(\w+)}", entry["en"]))
        assert fields_en == set(re.findall(r"{(\w+)}", entry["zh"])), key
