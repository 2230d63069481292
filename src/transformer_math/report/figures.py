"""Draw a claim's figure data (``registry.Figure`` or its JSON form) as a PNG with matplotlib.

Only matplotlib's object-oriented API and its Agg canvas are used (no ``pyplot``, no global
state, no display), so drawing works headless and from any thread.

Series kinds: ``line`` (``ax.plot`` with the series' format string), ``scatter`` (markers only;
the marker and colour of the format string are honoured), ``bar`` (several bar series sharing x
are drawn side by side), ``step`` (``where="post"``: the value at x holds until the next x).
``logx``/``logy`` switch the axes to log scale; ``hlines``/``vlines`` are dashed reference lines
whose labels join the legend. x values that are not numbers are treated as categories.

Chinese labels need a CJK font: :func:`cjk_font` finds an installed one through matplotlib's
font manager (Noto Sans CJK, Source Han Sans, WenQuanYi, ...), checking that the file really
maps a Chinese character; :func:`draw_figure` takes a list of families (``font_family``), which
matplotlib falls back through glyph by glyph, and :func:`missing_chars` says which characters of
the labels none of those families has (so a report never ships boxes instead of text).

matplotlib lists the fonts it knows in a cache written the first time it runs; a CJK font
installed later (``apt-get install fonts-noto-cjk``) is not in it until the cache is deleted
(issue 38.3). When no candidate family is in matplotlib's list, :func:`cjk_font` asks
fontconfig (``fc-list :lang=zh``) for the files holding one and registers them with
``font_manager.fontManager.addfont`` for this process only: matplotlib's cache file is neither
read again nor written.
"""

from __future__ import annotations

import functools
import itertools
import math
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

SERIES_KINDS: tuple[str, ...] = ("line", "scatter", "bar", "step")

#: Bounds on what one figure may hold (issue 40.2): beyond them a figure is not readable and the
#: drawing time grows with the input, so it is refused (the report shows the reason instead).
MAX_CATEGORIES = 200
MAX_SERIES = 64
MAX_POINTS = 200_000

#: values of one axis closer than this fraction of their size are one value (rounding)
RELATIVE_FLAT = 1e-6

_MARKERS = set(".,ov^<>1234sp*hH+xDd|_")

#: CJK families tried by :func:`cjk_font`, in order (Simplified Chinese first).
CJK_FAMILIES: tuple[str, ...] = (
    "Noto Sans CJK SC", "Source Han Sans SC", "Noto Sans SC", "Source Han Sans CN",
    "WenQuanYi Zen Hei", "WenQuanYi Micro Hei", "PingFang SC", "Hiragino Sans GB",
    "Microsoft YaHei", "SimHei", "Noto Sans CJK JP", "Noto Serif CJK SC", "AR PL UMing CN",
)

#: The family matplotlib draws Latin text in; the fallback after a CJK family.
LATIN_FAMILY = "DejaVu Sans"

_PROBE = "中文"
_COLORS = set("bgrcmykw")
_LINESTYLES = ("--", "-.", "-", ":")


def figure_to_json(figure: Any) -> dict[str, Any]:
    """The JSON form of a figure: ``Figure.to_json()`` for a Figure, a dict as it is."""
    if isinstance(figure, Mapping):
        return dict(figure)
    to_json = getattr(figure, "to_json", None)
    if callable(to_json):
        return to_json()
    raise TypeError(f"figure must be a Figure or its JSON dict, got {type(figure).__name__}")


def parse_style(style: str) -> tuple[str | None, str | None, str | None]:
    """Split a matplotlib format string such as ``"o--r"`` into (marker, linestyle, colour)."""
    marker = linestyle = color = None
    rest = style or ""
    while rest:
        for ls in _LINESTYLES:
            if rest.startswith(ls):
                linestyle, rest = ls, rest[len(ls) :]
                break
        else:
            ch, rest = rest[0], rest[1:]
            if ch in _MARKERS:
                marker = ch
            elif ch in _COLORS:
                color = ch
            elif ch.isdigit() and marker is None:
                marker = ch
            else:
                raise ValueError(f"series style must be a matplotlib format string, got {style!r}")
    return marker, linestyle, color


def _as_float(value: Any) -> float:
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):  # "NaN", "Infinity" as written by to_jsonable
        return float(value)
    raise TypeError(f"expected a number, got {value!r}")


def _numbers(values: Sequence[Any]) -> list[float] | None:
    try:
        return [_as_float(v) for v in values]
    except (TypeError, ValueError):
        return None


def _check_series(index: int, series: Mapping[str, Any]) -> None:
    kind = series.get("kind", "line")
    if kind not in SERIES_KINDS:
        raise ValueError(f"series {index} kind must be one of {SERIES_KINDS}, got {kind!r}")
    x, y = series.get("x"), series.get("y")
    if not isinstance(x, Sequence) or not isinstance(y, Sequence) or isinstance(x, str):
        raise ValueError(f"series {index} needs lists x and y")
    if len(x) != len(y):
        raise ValueError(
            f"series {index} ({series.get('label')!r}) has {len(x)} x values but {len(y)} y values"
        )


@functools.lru_cache(maxsize=64)
def _font_file(family: str) -> str | None:
    """The file matplotlib would use for ``family`` (None when it is not installed)."""
    from matplotlib import font_manager

    try:
        return font_manager.fontManager.findfont(font_manager.FontProperties(family=family),
                                                 fallback_to_default=False)
    except ValueError:
        return None


@functools.lru_cache(maxsize=16)
def _charmap(path: str) -> frozenset[int]:
    from matplotlib.ft2font import FT2Font

    return frozenset(FT2Font(path).get_charmap())


def fontconfig_files(families: Sequence[str], *, lang: str = "zh") -> list[str]:
    """The font files fontconfig lists for ``lang`` (``fc-list :lang=zh``) that hold one of
    ``families``; [] without fontconfig."""
    exe = shutil.which("fc-list")
    if exe is None:
        return []
    try:
        done = subprocess.run([exe, f":lang={lang}", "-f", "%{file}\t%{family}\n"],
                              capture_output=True, text=True, timeout=30, check=False,
                              stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return []
    wanted, files = set(families), set()
    for line in done.stdout.splitlines():
        path, _, names = line.partition("\t")
        if path.lower().endswith((".ttf", ".otf", ".ttc", ".otc")) and wanted & {
                n.strip() for n in names.split(",")}:
            files.add(path)
    return sorted(files)


def _register_fontconfig_fonts(candidates: Sequence[str]) -> bool:
    """Add the fontconfig files holding ``candidates`` to matplotlib's font list in memory
    (``FontManager.addfont``; its cache file is not written). True when one was added."""
    from matplotlib import font_manager

    added = False
    for path in fontconfig_files(candidates):
        try:
            font_manager.fontManager.addfont(path)
        except (OSError, RuntimeError, ValueError):  # a file FreeType cannot read
            continue
        added = True
    if added:
        _font_file.cache_clear()
    return added


def cjk_font(candidates: Sequence[str] = CJK_FAMILIES) -> str | None:
    """The first installed family of ``candidates`` whose font maps the Chinese characters
    ``中文`` (None when there is none: the caller then draws English labels). A family that
    fontconfig has but matplotlib's cached font list lacks is registered first."""
    from matplotlib import font_manager

    installed = {f.name for f in font_manager.fontManager.ttflist}
    if not installed & set(candidates) and _register_fontconfig_fonts(candidates):
        installed = {f.name for f in font_manager.fontManager.ttflist}
    for family in candidates:
        if family not in installed:
            continue
        path = _font_file(family)
        if path is not None and all(ord(ch) in _charmap(path) for ch in _PROBE):
            return family
    return None


def figure_texts(figure: Any) -> list[str]:
    """Every piece of text a figure draws: title, axis labels, series and line labels."""
    data = figure_to_json(figure)
    texts = [str(data.get(k, "")) for k in ("title", "xlabel", "ylabel")]
    texts += [str(s.get("label") or "") for s in data.get("series") or []]
    texts += [str(line[1]) for key in ("hlines", "vlines") for line in data.get(key) or []
              if len(line) > 1]
    return [t for t in texts if t]


def missing_chars(texts: Sequence[str], families: Sequence[str]) -> list[str]:
    """The characters of ``texts`` that no font of ``families`` maps (whitespace excepted)."""
    maps = [_charmap(p) for p in (_font_file(f) for f in families) if p is not None]
    chars = sorted({ch for t in texts for ch in t if not ch.isspace()})
    return [ch for ch in chars if not any(ord(ch) in m for m in maps)]


def plain_ticks(ax: Any) -> None:
    """Tick labels as the numbers themselves: matplotlib's offset notation (``+6.5`` above the
    axis, ticks ``0.0001 0.0002``) is turned off on linear axes (issue 38.7: equal norms of the
    LayerNorm-geometry figure read as spread from 1 to 6.5). A linear axis whose values agree
    to better than ``RELATIVE_FLAT`` of their size (equal up to rounding) is widened to
    +-0.1 % around them, so that they are drawn as the one value they are."""
    from matplotlib.ticker import ScalarFormatter

    for axis, get, set_ in ((ax.xaxis, ax.get_xlim, ax.set_xlim),
                            (ax.yaxis, ax.get_ylim, ax.set_ylim)):
        formatter = axis.get_major_formatter()
        if not isinstance(formatter, ScalarFormatter):
            continue  # a log or category axis
        formatter.set_useOffset(False)
        lo, hi = get()
        size = max(abs(lo), abs(hi))
        if size > 0 and math.isfinite(size) and hi - lo < RELATIVE_FLAT * size:
            centre = (lo + hi) / 2
            set_(centre - 1e-3 * size, centre + 1e-3 * size)


def draw_figure(figure: Any, path: Path, *, dpi: int = 100,
                font_family: Sequence[str] | None = None) -> Path:
    """Draw ``figure`` (a ``Figure`` or its JSON dict) into the PNG file ``path``.

    ``font_family``: families for the title, axis labels and legend, tried glyph by glyph
    (e.g. ``["Noto Sans CJK SC", "DejaVu Sans"]`` for Chinese labels); default matplotlib's.

    Raises ``ValueError``/``TypeError`` for malformed data (unequal x and y lengths, an unknown
    series kind, y values that are not numbers); the caller decides how to report it.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure as MplFigure
    from matplotlib.font_manager import FontProperties

    data = figure_to_json(figure)
    series_list = list(data.get("series") or [])
    for i, s in enumerate(series_list):
        _check_series(i, s)

    if len(series_list) > MAX_SERIES:
        raise ValueError(f"figure has {len(series_list)} series, more than a reader can tell "
                         f"apart (at most {MAX_SERIES})")
    points = sum(len(s["x"]) for s in series_list)
    if points > MAX_POINTS:
        raise ValueError(f"figure has {points} points, more than {MAX_POINTS}")
    # A shared category axis when any series has x values that are not numbers (a dict keeps
    # the first-seen order and makes the lookup linear in the points, issue 40.2).
    index: dict[str, int] = {}
    for s in series_list:
        if _numbers(s["x"]) is None:
            for v in s["x"]:
                index.setdefault(str(v), len(index))
                if len(index) > MAX_CATEGORIES:
                    raise ValueError(f"figure has more than {MAX_CATEGORIES} x categories, more "
                                     "than a reader can see on one axis")
    categories = list(index)

    def xs_of(s: Mapping[str, Any]) -> list[float]:
        if categories:
            return [float(index[str(v)]) for v in s["x"]]
        return [_as_float(v) for v in s["x"]]

    fig = MplFigure(figsize=(6.4, 4.0), dpi=dpi, layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()

    bars = [s for s in series_list if s.get("kind", "line") == "bar"]
    bar_width = 0.8
    if bars:
        xs_all = sorted({x for s in bars for x in xs_of(s) if math.isfinite(x)})
        gaps = [b - a for a, b in itertools.pairwise(xs_all) if b > a]
        bar_width = 0.8 * (min(gaps) if gaps else 1.0) / len(bars)

    bar_index = 0
    for i, s in enumerate(series_list):
        kind = s.get("kind", "line")
        named = str(s.get("label") or "")
        label = named or f"series {i}"  # in messages
        legend = named or "_nolegend_"  # an unlabelled series (a repeated path) stays out
        style = str(s.get("style") or "")
        x = xs_of(s)
        y = _numbers(s["y"])
        if y is None:
            raise TypeError(f"series {i} ({label!r}) has y values that are not numbers")
        if kind == "line":
            if style:
                ax.plot(x, y, style, label=legend)
            else:
                ax.plot(x, y, label=legend)
        elif kind == "scatter":
            marker, _, color = parse_style(style)
            ax.scatter(x, y, marker=marker or "o", color=color, label=legend, s=18)
        elif kind == "step":
            marker, linestyle, color = parse_style(style)
            ax.step(
                x,
                y,
                where="post",
                label=legend,
                marker=marker,
                color=color,
                linestyle=linestyle or "-",
            )
        else:  # bar
            _, _, color = parse_style(style)
            offset = (bar_index - (len(bars) - 1) / 2) * bar_width
            ax.bar([v + offset for v in x], y, width=bar_width, label=legend, color=color)
            bar_index += 1

    n_lines = len(series_list)
    for j, (value, label) in enumerate(data.get("hlines") or []):
        ax.axhline(
            _as_float(value),
            linestyle="--",
            linewidth=1.0,
            color=f"C{(n_lines + j) % 10}",
            label=str(label) or None,
        )
    n_lines += len(data.get("hlines") or [])
    for j, (value, label) in enumerate(data.get("vlines") or []):
        ax.axvline(
            _as_float(value),
            linestyle=":",
            linewidth=1.2,
            color=f"C{(n_lines + j) % 10}",
            label=str(label) or None,
        )

    if categories:
        ax.set_xticks(range(len(categories)), categories, rotation=30 if len(categories) > 4 else 0)
    if data.get("logx"):
        ax.set_xscale("log")
    if data.get("logy"):
        ax.set_yscale("log")
    plain_ticks(ax)
    font = FontProperties(family=list(font_family)) if font_family else None
    ax.set_title(str(data.get("title", "")), fontproperties=font)
    ax.set_xlabel(str(data.get("xlabel", "")), fontproperties=font)
    ax.set_ylabel(str(data.get("ylabel", "")), fontproperties=font)
    ax.grid(True, alpha=0.3, which="both" if (data.get("logx") or data.get("logy")) else "major")
    handles, _labels = ax.get_legend_handles_labels()
    if handles:
        if font is not None:
            small = font.copy()
            small.set_size("small")
            ax.legend(prop=small)
        else:
            ax.legend(fontsize="small")

    from transformer_math import safe_write

    return safe_write.save_figure(fig, Path(path), format="png")
