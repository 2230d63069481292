"""Look at a report page in a real (headless) browser: its DOM after scripts ran, a screenshot,
and whether every character of its text has a glyph in the fonts the page asks for.

A report in Chinese is only readable if the reader's fonts cover its characters; a missing glyph
shows as a box ("tofu") and no HTML test can see it. :func:`missing_glyphs` therefore asks the
browser itself. For every distinct non-ASCII character of the page's text it draws the character
on a canvas in the computed font of the element holding it (weight, style and family stack, at
a fixed size), and compares the pixels with two references drawn in the same font:

- the drawing of code points no font has (U+0378, unassigned, and U+10FFFD, a private-use
  code point of plane 16): the browser falls back through every installed font and, when none
  covers the character, draws the ``.notdef`` box, which is the same box for every missing code
  point of one font;
- the empty drawing (nothing painted): a font that maps a character to a blank glyph.

A character whose drawing equals either reference is missing (separators, control and format
characters, Unicode categories Z, Cc and Cf, and the variation selectors U+FE00-FE0F and
U+E0100-E01EF, which modify the character before them, are expected to be blank and are not
checked; private-use and unassigned ones are). The browser's own
font fallback is part of the measurement on purpose: the question is what a reader of this
machine sees, not which font in the CSS stack happened to supply the glyph.

The browser is Chromium (Debian's ``chromium`` package, or ``chromium-browser`` /
``google-chrome``; ``TMATH_BROWSER`` names another binary), run headless with
``--no-sandbox --headless=new --disable-gpu`` (the sandbox refuses to start as root) and a
throw-away profile so that several runs may happen at once.
"""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
import tempfile
import urllib.parse
from pathlib import Path
from typing import Any

BROWSERS: tuple[str, ...] = ("chromium", "chromium-browser", "google-chrome",
                             "google-chrome-stable")
"""Executable names :func:`find_browser` looks for on ``PATH``, in this order."""

INSTALL_HINT = ("install Debian's chromium (apt-get install chromium fonts-noto-cjk) or set "
                "TMATH_BROWSER to a Chromium binary")

#: Code points that no font covers: their drawing is the "missing glyph" reference.
MISSING_REFERENCES: tuple[str, ...] = ("\u0378", "\U0010fffd")

_RESULT_ID = "tmath-browser-result"

_FLAGS: tuple[str, ...] = (
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-extensions",
    "--no-first-run",
    "--no-default-browser-check",
    "--hide-scrollbars",
    "--mute-audio",
    "--allow-file-access-from-files",
)


class BrowserError(RuntimeError):
    """The browser did not start, crashed, timed out or returned no result."""


def find_browser() -> str | None:
    """The path of a headless-capable Chromium: ``$TMATH_BROWSER`` when set (and executable),
    else the first of :data:`BROWSERS` on ``PATH``; None when there is none."""
    override = os.environ.get("TMATH_BROWSER")
    if override:
        found = shutil.which(override)
        return found
    for name in BROWSERS:
        found = shutil.which(name)
        if found:
            return found
    return None


def _browser() -> str:
    found = find_browser()
    if found is None:
        raise BrowserError(f"no headless chromium found: {INSTALL_HINT}")
    return found


def _run(args: list[str], *, timeout: float) -> subprocess.CompletedProcess[bytes]:
    """Run the browser with a fresh profile folder (removed afterwards)."""
    with tempfile.TemporaryDirectory(prefix="tmath-chromium-") as profile:
        cmd = [_browser(), *_FLAGS, f"--user-data-dir={profile}", *args]
        try:
            done = subprocess.run(cmd, capture_output=True, timeout=timeout, check=False,
                                  stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired as exc:
            raise BrowserError(f"{Path(cmd[0]).name} did not finish in {timeout} s") from exc
    return done


def _url(path: Path) -> str:
    return Path(path).resolve().as_uri()


def dump_dom(html_path: Path, *, timeout: float = 60, budget_ms: int = 5000,
             window: tuple[int, int] | None = None, fragment: str = "") -> str:
    """The page's DOM serialised after its scripts ran (``chromium --dump-dom``).

    ``budget_ms`` is the browser's virtual time budget: timers and promises the page schedules
    within it run before the DOM is written. ``window`` is the viewport (width, height) in CSS
    pixels; ``fragment`` an anchor to open the page at (``#id`` without the ``#``).
    """
    path = Path(html_path)
    if not path.is_file():
        raise FileNotFoundError(f"no such page: {str(path)!r}")
    size = [f"--window-size={int(window[0])},{int(window[1])}"] if window else []
    url = _url(path) + (f"#{urllib.parse.quote(fragment)}" if fragment else "")
    done = _run([*size, f"--virtual-time-budget={int(budget_ms)}", "--dump-dom", url],
                timeout=timeout)
    out = done.stdout.decode("utf-8", errors="replace")
    if done.returncode != 0 or "<html" not in out.lower():
        tail = done.stderr.decode("utf-8", errors="replace").strip().splitlines()[-3:]
        raise BrowserError(f"dump-dom of {str(path)!r} failed (exit {done.returncode}): "
                           + " | ".join(tail))
    return out


def screenshot(html_path: Path, png_path: Path, *, width: int = 1280, height: int = 2000,
               timeout: float = 60) -> Path:
    """A PNG of the page's first ``width`` x ``height`` CSS pixels."""
    path, png = Path(html_path), Path(png_path).resolve()
    if not path.is_file():
        raise FileNotFoundError(f"no such page: {str(path)!r}")
    png.parent.mkdir(parents=True, exist_ok=True)
    png.unlink(missing_ok=True)
    done = _run([f"--window-size={int(width)},{int(height)}", "--virtual-time-budget=3000",
                 f"--screenshot={png}", _url(path)], timeout=timeout)
    if not png.is_file():
        tail = done.stderr.decode("utf-8", errors="replace").strip().splitlines()[-3:]
        raise BrowserError(f"screenshot of {str(path)!r} failed (exit {done.returncode}): "
                           + " | ".join(tail))
    return png


# The measuring script. It runs after the load event and the fonts' promise, and writes its
# result URI-encoded (ASCII only, nothing for the serialiser to escape) into a <pre>.
_GLYPH_SCRIPT = r"""
(function () {
  var REFS = %(refs)s;
  var SIZE = 32, W = 64, H = 48;
  function fontOf(el) {
    var s = getComputedStyle(el);
    return s.fontStyle + " " + s.fontWeight + " " + SIZE + "px " + s.fontFamily;
  }
  function draw(ctx, font, ch) {
    ctx.clearRect(0, 0, W, H);
    ctx.font = font;
    ctx.fillStyle = "#000";
    ctx.textBaseline = "alphabetic";
    ctx.fillText(ch, 8, 36);
    var d = ctx.getImageData(0, 0, W, H).data, h = 2166136261, ink = 0;
    for (var i = 3; i < d.length; i += 4) {
      if (d[i]) { ink++; h = Math.imul(h ^ d[i] ^ (i << 8), 16777619) >>> 0; }
    }
    return ink ? h + ":" + ink : "";
  }
  function measure() {
    var canvas = document.createElement("canvas");
    canvas.width = W; canvas.height = H;
    var ctx = canvas.getContext("2d", {willReadFrequently: true});
    var skip = /[\p{Z}\p{Cc}\p{Cf}\uFE00-\uFE0F\u{E0100}-\u{E01EF}]/u;  // + variation selectors
    var byFont = {}, families = {}, all = {};
    var walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
    for (var node = walker.nextNode(); node; node = walker.nextNode()) {
      var el = node.parentElement;
      if (!el || /^(SCRIPT|STYLE|NOSCRIPT|TEMPLATE)$/.test(el.tagName)) continue;
      if (el.id === "%(rid)s") continue;
      var font = null;
      for (var ch of node.data) {
        if (ch.codePointAt(0) < 128 || skip.test(ch)) continue;
        if (font === null) {
          font = fontOf(el);
          families[getComputedStyle(el).fontFamily] = true;
          byFont[font] = byFont[font] || {};
        }
        byFont[font][ch] = true; all[ch] = true;
      }
    }
    var missing = {}, tests = 0;
    for (var f in byFont) {
      var bad = {"": true};
      REFS.forEach(function (r) { bad[draw(ctx, f, r)] = true; });
      for (var c in byFont[f]) {
        tests++;
        if (bad[draw(ctx, f, c)]) {
          missing[c] = missing[c] || [];
          missing[c].push(f);
        }
      }
    }
    var out = {checked: Object.keys(all).length, tests: tests,
               missing: Object.keys(missing).sort(), where: missing,
               fonts: Object.keys(families).sort(), lang: document.documentElement.lang};
    var pre = document.createElement("pre");
    pre.id = "%(rid)s";
    pre.textContent = encodeURIComponent(JSON.stringify(out));
    document.body.appendChild(pre);
  }
  function start() {
    (document.fonts ? document.fonts.ready : Promise.resolve()).then(measure, measure);
  }
  if (document.readyState === "complete") start(); else window.addEventListener("load", start);
})();
"""


def _with_script(page: str, script: str, base: str) -> str:
    """``page`` with ``<base href=base>`` at the start of its head and ``script`` at its end."""
    base_tag = f'<base href="{html.escape(base, quote=True)}">'
    m = re.search(r"<head[^>]*>", page, flags=re.IGNORECASE)
    page = (page[: m.end()] + base_tag + page[m.end():]) if m else base_tag + page
    tag = f"<script>{script}</script>"
    at = page.lower().rfind("</body>")
    return page[:at] + tag + page[at:] if at >= 0 else page + tag


def missing_glyphs(html_path: Path, *, timeout: float = 90) -> dict[str, Any]:
    """Measure in headless Chromium which characters of the page's text no font can draw.

    Returns ``{"checked": n, "missing": [chars], "fonts": [computed font-family stacks],
    "tests": (font, character) pairs drawn, "where": {char: [canvas fonts it is missing in]},
    "lang": the page's lang attribute}``; ``checked`` counts the distinct non-ASCII characters
    of the text (Unicode categories Z, Cc and Cf excepted). The page is measured from a copy in a
    temporary folder with a ``<base>`` pointing at the original's folder, so its images load
    and the original is not touched.
    """
    path = Path(html_path).resolve()
    if not path.is_file():
        raise FileNotFoundError(f"no such page: {str(path)!r}")
    script = _GLYPH_SCRIPT % {"refs": json.dumps(list(MISSING_REFERENCES)), "rid": _RESULT_ID}
    page = _with_script(path.read_text(encoding="utf-8"), script, path.parent.as_uri() + "/")
    with tempfile.TemporaryDirectory(prefix="tmath-glyphs-") as tmp:
        probe = Path(tmp) / "probe.html"
        probe.write_text(page, encoding="utf-8")
        dom = dump_dom(probe, timeout=timeout)
    m = re.search(rf'<pre id="{_RESULT_ID}">([^<]*)</pre>', dom)
    if m is None:
        raise BrowserError(f"the glyph measurement of {str(path)!r} returned no result")
    return json.loads(urllib.parse.unquote(html.unescape(m.group(1))))


# After the load event (and the page's own scripts), where the anchor's target and the sticky
# filter bar sit in the viewport, written URI-encoded into a <pre> like the glyph measurement.
_ANCHOR_SCRIPT = r"""
window.addEventListener("load", function () {
  setTimeout(function () {
    var id = decodeURIComponent(location.hash.slice(1));
    var target = document.getElementById(id), bar = document.getElementById("filters");
    var out = {scroll_y: window.scrollY, found: !!target,
               target_top: target ? target.getBoundingClientRect().top : null,
               bar_bottom: bar && !bar.hidden ? bar.getBoundingClientRect().bottom : 0};
    var pre = document.createElement("pre");
    pre.id = "%(rid)s";
    pre.textContent = encodeURIComponent(JSON.stringify(out));
    document.body.appendChild(pre);
  }, 50);
});
"""


def anchor_jump(html_path: Path, anchor: str, *, width: int = 1000, height: int = 500,
                timeout: float = 60) -> dict[str, Any]:
    """Open the page at ``#anchor`` in a ``width`` x ``height`` viewport and measure where the
    target landed: ``{"scroll_y", "found", "target_top", "bar_bottom"}`` in CSS pixels
    (``bar_bottom`` is the sticky filter bar's lower edge, 0 without one). The target is hidden
    under the bar when ``target_top < bar_bottom``."""
    path = Path(html_path).resolve()
    if not path.is_file():
        raise FileNotFoundError(f"no such page: {str(path)!r}")
    page = _with_script(path.read_text(encoding="utf-8"), _ANCHOR_SCRIPT % {"rid": _RESULT_ID},
                        path.parent.as_uri() + "/")
    with tempfile.TemporaryDirectory(prefix="tmath-anchor-") as tmp:
        probe = Path(tmp) / "probe.html"
        probe.write_text(page, encoding="utf-8")
        dom = dump_dom(probe, timeout=timeout, window=(width, height), fragment=anchor)
    m = re.search(rf'<pre id="{_RESULT_ID}">([^<]*)</pre>', dom)
    if m is None:
        raise BrowserError(f"the anchor measurement of {str(path)!r} returned no result")
    return json.loads(urllib.parse.unquote(html.unescape(m.group(1))))
