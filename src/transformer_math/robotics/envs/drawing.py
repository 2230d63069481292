"""A tiny numpy rasteriser for ``render()`` (RGB arrays without pygame)."""

from __future__ import annotations

import numpy as np


class Canvas:
    """White (height, width, 3) uint8 image mapping world box xlim x ylim onto pixels."""

    def __init__(self, width: int, height: int, xlim: tuple[float, float],
                 ylim: tuple[float, float]) -> None:
        self.image = np.full((height, width, 3), 255, dtype=np.uint8)
        self.w, self.h, self.xlim, self.ylim = width, height, xlim, ylim

    def _pix(self, xy: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        xy = np.atleast_2d(xy)
        col = (xy[:, 0] - self.xlim[0]) / (self.xlim[1] - self.xlim[0]) * (self.w - 1)
        row = (self.ylim[1] - xy[:, 1]) / (self.ylim[1] - self.ylim[0]) * (self.h - 1)
        return np.round(row).astype(int), np.round(col).astype(int)

    def _put(self, rows: np.ndarray, cols: np.ndarray, color: tuple[int, int, int]) -> None:
        ok = (rows >= 0) & (rows < self.h) & (cols >= 0) & (cols < self.w)
        self.image[rows[ok], cols[ok]] = color

    def polyline(self, xy: np.ndarray, color: tuple[int, int, int]) -> None:
        if len(xy) < 2:
            return
        a, b = xy[:-1], xy[1:]
        s = np.linspace(0.0, 1.0, 8)[None, :, None]
        pts = (a[:, None] * (1 - s) + b[:, None] * s).reshape(-1, 2)
        self._put(*self._pix(pts), color)

    def disc(self, center: np.ndarray, radius: float, color: tuple[int, int, int]) -> None:
        ys, xs = np.mgrid[0 : self.h, 0 : self.w]
        wx = self.xlim[0] + xs / (self.w - 1) * (self.xlim[1] - self.xlim[0])
        wy = self.ylim[1] - ys / (self.h - 1) * (self.ylim[1] - self.ylim[0])
        mask = (wx - center[0]) ** 2 + (wy - center[1]) ** 2 <= radius**2
        self.image[mask] = color

    def rect(self, lo: np.ndarray, hi: np.ndarray, color: tuple[int, int, int]) -> None:
        r0, c0 = self._pix(np.array([lo[0], hi[1]]))
        r1, c1 = self._pix(np.array([hi[0], lo[1]]))
        self.image[max(r0[0], 0) : r1[0] + 1, max(c0[0], 0) : c1[0] + 1] = color
