"""What the icl claim modules share: the source, presets, and the one memo for trained runs."""

from __future__ import annotations

from typing import Any

from transformer_math.claims.registry import Context
from transformer_math.experiments.memo import memoized

SOURCE = "000 §8.3.6"


def preset(config_cls: Any, ctx: Context) -> Any:
    """The config of ``config_cls`` at the context's size, for the context's seed."""
    return ctx.preset(config_cls)(ctx.seed)


def run_experiment(module: Any, config: Any, ctx: Context) -> Any:
    """``module.run(config)``, computed once per configuration (claim and falsifier share it)."""
    return memoized(module.run, config, ctx.report_progress if ctx.progress else None)
