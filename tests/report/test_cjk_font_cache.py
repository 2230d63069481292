"""A CJK font installed after matplotlib wrote its font cache is found (issue 38.3): before,
Chinese figure labels stayed English until the cache was deleted by hand."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from transformer_math.report import figures


def test_a_font_missing_from_matplotlibs_cache_is_registered_from_fontconfig(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from matplotlib import font_manager

    if not figures.fontconfig_files(figures.CJK_FAMILIES):
        pytest.skip("fontconfig lists no CJK font here (apt-get install fonts-noto-cjk)")
    stale = copy.copy(font_manager.fontManager)  # what a cache written before the install holds
    stale.ttflist = [f for f in stale.ttflist if f.name not in figures.CJK_FAMILIES]
    monkeypatch.setattr(font_manager, "fontManager", stale)
    writes: list[object] = []
    monkeypatch.setattr(font_manager, "json_dump", lambda *a, **k: writes.append(a))
    figures._font_file.cache_clear()
    try:
        family = figures.cjk_font()
        assert family in figures.CJK_FAMILIES
        assert figures.missing_chars(["注意力 variance"], [family, figures.LATIN_FAMILY]) == []
        png = figures.draw_figure({"title": "方差", "xlabel": "d_k", "ylabel": "方差",
                                   "series": [{"label": "测得", "x": [1, 2], "y": [1.0, 1.0]}]},
                                  tmp_path / "zh.png", font_family=[family, "DejaVu Sans"])
        assert png.read_bytes()[:4] == b"\x89PNG"
        assert writes == []  # matplotlib's cache file was not rewritten
    finally:
        figures._font_file.cache_clear()


def test_without_fontconfig_nothing_is_registered(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(figures.shutil, "which", lambda name: None)
    assert figures.fontconfig_files(figures.CJK_FAMILIES) == []
    assert figures._register_fontconfig_fonts(figures.CJK_FAMILIES) is False
