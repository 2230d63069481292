"""The report in a real browser: headless Chromium draws every character of the Chinese and the
English report with a real glyph (no boxes), and the detector itself is shown to work on a page
with characters no font has.

Without a Chromium the tests skip with the reason (they never pass silently).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from transformer_math.report import browser
from transformer_math.report.html import render_report

NO_BROWSER = ("no headless chromium found: install Debian's chromium and fonts-noto-cjk "
              "(apt-get install chromium fonts-noto-cjk) or set TMATH_BROWSER")


@pytest.fixture(scope="module")
def chromium() -> str:
    found = browser.find_browser()
    if found is None:
        pytest.skip(NO_BROWSER)
    return found


def _page(tmp_path: Path, body: str, lang: str = "en") -> Path:
    path = tmp_path / "page.html"
    path.write_text(f'<!DOCTYPE html><html lang="{lang}"><head><meta charset="utf-8"><style>'
                    'body { font-family: "Noto Sans CJK SC", sans-serif; }</style></head>'
                    f"<body>{body}</body></html>", encoding="utf-8")
    return path


def test_detector_reports_characters_no_font_has(chromium: str, tmp_path: Path) -> None:
    """Negative control: private-use code points (no installed font maps them) are reported,
    while ordinary Chinese, Latin and math characters next to them are not."""
    page = _page(tmp_path, "<p>自注意力 é ≤ √ —</p><p>\ue123 and \U000f0001</p><b>粗体</b>",
                 lang="zh-CN")
    result = browser.missing_glyphs(page)
    assert result["checked"] == 12  # 自注意力 é ≤ √ — 粗体 and the two private-use ones
    assert sorted(result["missing"]) == sorted(["\ue123", "\U000f0001"])
    assert result["lang"] == "zh-CN"
    assert any("Noto Sans CJK SC" in f for f in result["fonts"])


def test_detector_checks_bold_and_hidden_text(chromium: str, tmp_path: Path) -> None:
    """Text in a collapsed <details> and in bold counts too: a missing glyph there is found."""
    page = _page(tmp_path, "<details><summary>s</summary><b>\ue200</b></details><p>中</p>")
    result = browser.missing_glyphs(page)
    assert result["missing"] == ["\ue200"] and result["checked"] == 2


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_report_has_no_missing_glyphs(chromium: str, lang: str, tmp_path: Path,
                                      chapter_document: dict[str, Any]) -> None:
    index = render_report(chapter_document, tmp_path / lang, lang=lang)
    result = browser.missing_glyphs(index)
    assert result["missing"] == [], result["where"]
    if lang == "zh":
        assert result["lang"] == "zh-CN"
        assert result["checked"] > 100  # the page really is Chinese
    else:
        assert result["lang"] == "en"


def test_dump_dom_runs_the_report_script(chromium: str, tmp_path: Path,
                                         chapter_document: dict[str, Any]) -> None:
    """After the script ran, the filters are visible and say how many claims are shown."""
    index = render_report(chapter_document, tmp_path / "r", lang="en")
    static = index.read_text(encoding="utf-8")
    assert '<form id="filters" hidden' in static
    dom = browser.dump_dom(index)
    assert '<form id="filters" hidden' not in dom and '<form id="filters"' in dom
    n = len(chapter_document["claims"])
    assert f"{n} of {n} claims shown" in dom


def test_screenshot(chromium: str, tmp_path: Path, chapter_document: dict[str, Any]) -> None:
    index = render_report(chapter_document, tmp_path / "r", lang="zh")
    png = browser.screenshot(index, tmp_path / "shot.png", width=800, height=600)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_without_a_browser_the_error_names_the_fix(monkeypatch: pytest.MonkeyPatch,
                                                   tmp_path: Path) -> None:
    monkeypatch.setenv("TMATH_BROWSER", "no-such-browser-binary")
    assert browser.find_browser() is None
    page = _page(tmp_path, "<p>x</p>")
    with pytest.raises(browser.BrowserError, match="chromium"):
        browser.dump_dom(page)


def test_filters_work_in_the_browser(chromium: str, tmp_path: Path,
                                     chapter_document: dict[str, Any]) -> None:
    """The script applies the form's values when the page opens: a page saved with a search
    word and a verdict unticked shows only the matching claims and hides empty sections."""
    index = render_report(chapter_document, tmp_path / "r", lang="en")
    page = index.read_text(encoding="utf-8")
    page = page.replace('name="q"', 'name="q" value="ROPE rotations"')
    assert page.count('value="refuted" checked') == 1
    page = page.replace('value="refuted" checked', 'value="refuted"')
    index.write_text(page, encoding="utf-8")
    dom = browser.dump_dom(index)
    n = len(chapter_document["claims"])
    assert f"1 of {n} claims shown" in dom
    assert re.search(r'<article class="claim v-verified" id="position.later"[^>]*>', dom)
    hidden = re.findall(r'<article class="claim [^"]*" id="([^"]+)"[^>]*hidden', dom)
    assert sorted(hidden) == sorted(c["id"] for c in chapter_document["claims"]
                                    if c["id"] != "position.later")
    assert re.search(r'<section class="chapter" id="sec-8.3.1" hidden', dom)
    assert re.search(r'<li data-section="sec-8.3.1" hidden', dom)
    assert not re.search(r'<section class="chapter" id="sec-8.3.3" hidden', dom)


def test_an_anchor_jump_is_not_hidden_by_the_sticky_bar(chromium: str, tmp_path: Path,
                                                        chapter_document: dict[str, Any]
                                                        ) -> None:
    """Issue 38.3: after a jump to a section the heading sits below the sticky filter bar
    (scroll-margin-top from the bar's height). Control: without the rule it is under the bar."""
    index = render_report(chapter_document, tmp_path / "r", lang="en")
    jump = browser.anchor_jump(index, "sec-8.3.1", width=900, height=420)
    assert jump["found"] and jump["scroll_y"] > 0 and jump["bar_bottom"] > 0, jump
    assert jump["target_top"] >= jump["bar_bottom"], jump
    page = index.read_text(encoding="utf-8")
    rule = "[id] { scroll-margin-top: calc(var(--bar, 0px) + .6rem); }"
    assert rule in page
    index.write_text(page.replace(rule, ""), encoding="utf-8")
    hidden = browser.anchor_jump(index, "sec-8.3.1", width=900, height=420)
    assert hidden["target_top"] < hidden["bar_bottom"], hidden
