"""Helpers shared by the robotics claims."""

from __future__ import annotations

from typing import Any

from transformer_math.claims.registry import Context

SOURCE = "000 §8.3.8"


def preset(cls: Any, ctx: Context, **overrides: Any) -> Any:
    """The experiment config ``cls`` at the context's size and seed, with ``overrides``."""
    cfg = ctx.preset(cls)(seed=ctx.seed)
    return cls(**{**cfg.__dict__, **overrides}) if overrides else cfg
