"""``tmath annotate``: a seed file as HTML with each checked range marked by its claims' verdicts.

The seeds are not shipped, so most tests write a synthetic seed; the real copies are used when
the checkout has them next to it (``../shared/seeds``).
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from transformer_math import chapters, seed_annotation
from transformer_math.cli import app

SEEDS_DIR = Path(__file__).resolve().parents[2] / "shared" / "seeds"


def _synthetic(tmp_path: Path, n: int = 1715) -> Path:
    path = tmp_path / "my_copy.txt"
    path.write_text("\n".join(f"第 {i} 行 line {i}：自注意力、位置编码与上下文学习 ≈ √d_k"
                               for i in range(1, n + 1)), encoding="utf-8")
    return path


def _results(tmp_path: Path) -> Path:
    claims = [
        {"id": "demo.good", "verdict": "verified",
         "seed_refs": [{"seed": "000", "lines": [10, 12]}],
         "refutes": [], "corrections": []},
        {"id": "demo.wrong", "verdict": "refuted",
         "seed_refs": [{"seed": "000", "lines": [11, 11]}],
         "refutes": [{"seed": "000", "line": 11, "says": "seed says <x>", "correct": "x is y"}],
         "corrections": [{"seed": "000", "line": 20, "says": "MIT", "correct": "Stanford",
                          "source": "the paper's title page"}]},
        {"id": "demo.other-seed", "verdict": "failed",
         "seed_refs": [{"seed": "004", "lines": [1, 3]}], "refutes": [], "corrections": []},
    ]
    folder = tmp_path / "report"
    folder.mkdir()
    (folder / "results.json").write_text(json.dumps({"claims": claims}), encoding="utf-8")
    (folder / "index.html").write_text("<html></html>", encoding="utf-8")
    return folder


def test_marks_follow_seed_refs_refutes_and_corrections(tmp_path: Path) -> None:
    doc = json.loads((_results(tmp_path) / "results.json").read_text())
    marks = seed_annotation.marks("000", doc["claims"])
    assert [(m.claim_id, m.kind, m.start, m.end) for m in marks] == [
        ("demo.good", "checks", 10, 12), ("demo.wrong", "checks", 11, 11),
        ("demo.wrong", "refutes", 11, 11), ("demo.wrong", "corrects", 20, 20)]
    assert seed_annotation.marks("003", doc["claims"]) == []


def test_annotate_with_results_marks_lines_and_links_evidence(tmp_path: Path) -> None:
    seed, report = _synthetic(tmp_path), _results(tmp_path)
    out = tmp_path / "out"
    result = CliRunner().invoke(app, ["annotate", str(seed), "--report", str(out), "--seed",
                                      "000", "--results", str(report)])
    assert result.exit_code == 0, result.output
    page = (out / "000.html").read_text(encoding="utf-8")
    assert "SHA-256 differs" in page  # not the cited copy: the page says its lines may not match
    line = re.search(r'<div class="ln([^"]*)" id="L11">', page)
    assert line and "v-refuted" in line.group(1)  # the worst verdict on the line colours it
    assert re.search(r'<div class="ln v-verified" id="L10">', page)
    assert re.search(r'<div class="ln" id="L13">', page)  # outside every range: unmarked
    assert "seed says &lt;x&gt;" in page and "x is y" in page  # escaped
    assert "Stanford" in page and "the paper&#x27;s title page" in page
    assert 'href="../report/index.html#demo.good"' in page
    assert "demo.other-seed" not in page
    assert "Verdicts from the results of a run" in page
    assert page.count('class="ln') == 1715


def test_annotate_without_results_shows_expected_verdicts_in_chinese(tmp_path: Path) -> None:
    seed = _synthetic(tmp_path)
    out = tmp_path / "out"
    result = CliRunner().invoke(app, ["annotate", str(seed), "--report", str(out), "--seed",
                                      "000", "--lang", "zh"])
    assert result.exit_code == 0, result.output
    page = (out / "000.zh.html").read_text(encoding="utf-8")
    assert '<html lang="zh-CN">' in page and "Noto Sans CJK SC" in page
    assert "未实际运行" in page and "§8.3.3 位置编码理论" in page
    # every registered claim's range on 000 is marked with its expected verdict
    assert "position.rope-relative · 预期: verified" in page


def test_identified_by_sha256(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seed = _synthetic(tmp_path, 90)
    digest = hashlib.sha256(seed.read_bytes()).hexdigest()
    monkeypatch.setitem(chapters.SEED_FILES, "003", {"sha256": digest, "lines": 90, "name": "x"})
    assert seed_annotation.seed_of_bytes(seed.read_bytes()) == "003"
    result = CliRunner().invoke(app, ["annotate", str(seed), "--report", str(tmp_path / "o")])
    assert result.exit_code == 0, result.output
    page = (tmp_path / "o" / "003.html").read_text(encoding="utf-8")
    assert "recognised by its SHA-256" in page
    result = CliRunner().invoke(app, ["annotate", str(seed), "--report", str(tmp_path / "o"),
                                      "--seed", "000"])
    assert result.exit_code == 2 and "contradicts the file" in result.output


@pytest.mark.parametrize("args, message", [
    (["nothere.txt"], "is not an existing file"),
    (["{seed}", "--lang", "fr"], "--lang must be one of en, zh"),
    (["{seed}", "--seed", "007"], "--seed must be one of 000, 003, 004"),
    (["{seed}"], "is not one of the seed copies the claims cite"),
    (["{binary}", "--seed", "000"], "is not UTF-8 text"),
    (["{seed}", "--seed", "000", "--results", "{seed}"], "--results"),
    (["{seed}", "--seed", "000", "--results", "{tmp}"], "neither a results file nor a report"),
])
def test_user_mistakes_exit_2_in_one_line(tmp_path: Path, args: list[str], message: str) -> None:
    binary = tmp_path / "b.txt"
    binary.write_bytes(b"\xff\xfe\x00 not utf-8")
    values = {"seed": str(_synthetic(tmp_path)), "binary": str(binary), "tmp": str(tmp_path)}
    argv = ["annotate", *[a.format(**values) for a in args], "--report", str(tmp_path / "o")]
    result = CliRunner().invoke(app, argv)
    assert result.exit_code == 2, result.output
    assert message in result.output and "Traceback" not in result.output
    assert len(result.output.strip().splitlines()) == 1


def test_oversized_file_is_refused_before_reading(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(seed_annotation, "MAX_SEED_BYTES", 100)
    with pytest.raises(ValueError, match="more than the maximum 100"):
        seed_annotation.read_seed(_synthetic(tmp_path), "000")


@pytest.mark.skipif(not SEEDS_DIR.is_dir(), reason="the seeds are not next to this checkout "
                    f"({SEEDS_DIR}); the real-copy test needs them")
@pytest.mark.parametrize("seed", sorted(chapters.SEED_FILES))
def test_real_seed_copies_are_recognised(tmp_path: Path, seed: str) -> None:
    path = SEEDS_DIR / str(chapters.SEED_FILES[seed]["name"])
    found, text, identified = seed_annotation.read_seed(path)
    assert (found, identified) == (seed, True)
    assert len(text.split("\n")) == chapters.SEED_FILES[seed]["lines"]
    out = seed_annotation.annotate(path, tmp_path, lang="en")
    assert "recognised by its SHA-256" in out.read_text(encoding="utf-8")


def test_annotated_pages_render_without_missing_glyphs(tmp_path: Path) -> None:
    """Both languages in a real browser (headless chromium): no character without a glyph."""
    from transformer_math.report import browser

    if browser.find_browser() is None:
        pytest.skip("no headless chromium found: install Debian's chromium and fonts-noto-cjk "
                    "(.ci/run does) to run the browser test")
    seed = _synthetic(tmp_path, 200)
    for lang in ("en", "zh"):
        page = seed_annotation.annotate(seed, tmp_path / "o", lang=lang, seed="000")
        glyphs = browser.missing_glyphs(page)
        assert glyphs["checked"] > 10, glyphs
        assert glyphs["missing"] == [], glyphs
    if SEEDS_DIR.is_dir():  # the real text: CJK, math symbols and the seeds' emoji
        path = SEEDS_DIR / str(chapters.SEED_FILES["000"]["name"])
        glyphs = browser.missing_glyphs(seed_annotation.annotate(path, tmp_path / "r", lang="zh"))
        assert glyphs["checked"] > 1000 and glyphs["missing"] == [], glyphs


def test_refuted_is_teal_on_the_seed_page_as_in_the_report(tmp_path: Path) -> None:
    # issue 38.3: a purple "refuted" read as the project failing; the report made it teal, the
    # seed page kept #8250df. Both now take the colours from html_style.ROOT_COLOURS.
    from transformer_math.html_style import VERDICT_COLOURS, page_css

    seed, report = _synthetic(tmp_path, n=30), _results(tmp_path)
    out = tmp_path / "out"
    result = CliRunner().invoke(app, ["annotate", str(seed), "--report", str(out), "--seed",
                                      "000", "--results", str(report)])
    assert result.exit_code == 0, result.output
    page = (out / "000.html").read_text(encoding="utf-8")
    teal = VERDICT_COLOURS["refuted"]
    assert f"--teal:{teal}" in page and f"--teal:{teal}" in page_css()
    for rule in (".ln.v-refuted", ".b-refuted", ".note.refutes"):
        found = re.search(re.escape(rule) + r" \{([^}]*)\}", page)
        assert found and "var(--teal)" in found.group(1), rule
    assert "8250df" not in page.lower() and "magenta" not in page
    assert "8250df" not in page_css().lower()
    # the same colour for every verdict on both pages
    for verdict, colour in VERDICT_COLOURS.items():
        assert colour in page and colour in page_css(), verdict
