"""Figures show tick values as they are (issue 38.7): the LayerNorm-geometry figure's norms, all
1 up to rounding, were labelled 1 to 6.5 under an offset of 1 (matplotlib's offset notation)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from transformer_math.report import figures


def _axes(ys: list[float], *, plain: bool) -> Any:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure()
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    ax.scatter([0.1, 0.2, 0.3], ys)
    if plain:
        figures.plain_ticks(ax)
    fig.canvas.draw()
    return ax


NORMS = [1.0 + 1e-7, 1.0 + 3e-7, 1.0 + 6.5e-7]  # equal norms, rounding apart
SPREAD = [1000.001, 1000.002, 1000.003]  # a real spread that matplotlib would offset


def test_no_offset_and_equal_values_drawn_as_one() -> None:
    before = _axes(NORMS, plain=False)
    assert before.yaxis.get_offset_text().get_text() != ""  # control: the offset of the issue
    after = _axes(NORMS, plain=True)
    assert after.yaxis.get_offset_text().get_text() == ""
    lo, hi = after.get_ylim()
    assert lo < 0.9995 and hi > 1.0005  # +-0.1 %: one value, not a spread
    labels = [t.get_text() for t in after.get_yticklabels()]
    assert any(t.startswith("1.000") for t in labels), labels


def test_a_real_spread_keeps_its_limits_without_an_offset() -> None:
    before = _axes(SPREAD, plain=False)
    after = _axes(SPREAD, plain=True)
    assert before.yaxis.get_offset_text().get_text() != ""
    assert after.yaxis.get_offset_text().get_text() == ""
    assert after.get_ylim() == pytest.approx(before.get_ylim())


def test_draw_figure_uses_plain_ticks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[Any] = []
    real = figures.plain_ticks
    monkeypatch.setattr(figures, "plain_ticks", lambda ax: (seen.append(ax), real(ax)))
    figures.draw_figure({"title": "t", "xlabel": "x", "ylabel": "y",
                         "series": [{"label": "n", "x": [0.1, 0.2, 0.3], "y": NORMS,
                                     "kind": "scatter"}]}, tmp_path / "f.png")
    assert len(seen) == 1 and seen[0].yaxis.get_offset_text().get_text() == ""
