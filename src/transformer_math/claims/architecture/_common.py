"""Helpers shared by the architecture claims."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

from transformer_math.diagnostics.fits import fit_power_law

SEED_000 = "000 §8.3.7"


def xavier_init_(module: nn.Module, generator: torch.Generator) -> None:
    """Xavier-uniform weights and zero biases for every Linear (Xiong et al. 2020's setting)."""
    for m in module.modules():
        if isinstance(m, nn.Linear):
            nn.init.xavier_uniform_(m.weight, generator=generator)
            if m.bias is not None:
                nn.init.zeros_(m.bias)


def loglog_slope(xs: Sequence[float], ys: Sequence[float]) -> float:
    """Least-squares slope of log y against log x (``diagnostics.fits.fit_power_law``)."""
    return fit_power_law(xs, ys).exponent
