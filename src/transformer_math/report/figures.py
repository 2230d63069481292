"""Draw a claim's figure data (``registry.Figure`` or its JSON form) as a PNG with matplotlib.

Only matplotlib's object-oriented API and its Agg canvas are used (no ``pyplot``, no global
state, no display), so drawing works headless and from any thread.

Series kinds: ``line`` (``ax.plot`` with the series' format string), ``scatter`` (markers only;
the marker and colour of the format string are honoured), ``bar`` (several bar series sharing x
are drawn side by side), ``step`` (``where="post"``: the value at x holds until the next x).
``logx``/``logy`` switch the axes to log scale; ``hlines``/``vlines`` are dashed reference lines
whose labels join the legend. x values that are not numbers are treated as categories.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

SERIES_KINDS: tuple[str, ...] = ("line", "scatter", "bar", "step")

_MARKERS = set(".,ov^<>1234sp*hH+xDd|_")
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


def draw_figure(figure: Any, path: Path, *, dpi: int = 100) -> Path:
    """Draw ``figure`` (a ``Figure`` or its JSON dict) into the PNG file ``path``.

    Raises ``ValueError``/``TypeError`` for malformed data (unequal x and y lengths, an unknown
    series kind, y values that are not numbers); the caller decides how to report it.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure as MplFigure

    data = figure_to_json(figure)
    series_list = list(data.get("series") or [])
    for i, s in enumerate(series_list):
        _check_series(i, s)

    # A shared category axis when any series has x values that are not numbers.
    categories: list[str] = []
    for s in series_list:
        if _numbers(s["x"]) is None:
            for v in s["x"]:
                if str(v) not in categories:
                    categories.append(str(v))

    def xs_of(s: Mapping[str, Any]) -> list[float]:
        if categories:
            return [float(categories.index(str(v))) for v in s["x"]]
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
        label = str(s.get("label") or f"series {i}")
        style = str(s.get("style") or "")
        x = xs_of(s)
        y = _numbers(s["y"])
        if y is None:
            raise TypeError(f"series {i} ({label!r}) has y values that are not numbers")
        if kind == "line":
            if style:
                ax.plot(x, y, style, label=label)
            else:
                ax.plot(x, y, label=label)
        elif kind == "scatter":
            marker, _, color = parse_style(style)
            ax.scatter(x, y, marker=marker or "o", color=color, label=label, s=18)
        elif kind == "step":
            marker, linestyle, color = parse_style(style)
            ax.step(
                x,
                y,
                where="post",
                label=label,
                marker=marker,
                color=color,
                linestyle=linestyle or "-",
            )
        else:  # bar
            _, _, color = parse_style(style)
            offset = (bar_index - (len(bars) - 1) / 2) * bar_width
            ax.bar([v + offset for v in x], y, width=bar_width, label=label, color=color)
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
    ax.set_title(str(data.get("title", "")))
    ax.set_xlabel(str(data.get("xlabel", "")))
    ax.set_ylabel(str(data.get("ylabel", "")))
    ax.grid(True, alpha=0.3, which="both" if (data.get("logx") or data.get("logy")) else "major")
    handles, _labels = ax.get_legend_handles_labels()
    if handles:
        ax.legend(fontsize="small")

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, format="png")
    return path
