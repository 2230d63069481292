"""The doctor under a time budget (issue 36 item 2): ``tmath doctor PATH --budget 5m``.

A full doctor run costs about :data:`FULL_RUN_UNITS` forward passes of the probe batch
(``Options.batch`` sequences of ``probe_len`` tokens): on a random 134M Llama that was 160 s on
the shared 2-core machine, on an 8B model it would be hours. Under a budget of ``B`` seconds
the run (which ``tmath doctor`` starts counting before it loads the checkpoint) is planned as

1. every static check first (config and headers: milliseconds, nothing allocated);
2. the dynamic checks in the order of :data:`VALUE_ORDER`: the checks that find faults which
   are wrong whatever the use (causal leakage, a KV cache that disagrees with the full forward,
   NaN rows, padding, RoPE tables) before the statistical ones (saturation, depth statistics,
   induction heads);
3. the cost of one forward pass of the probe batch (``u`` seconds) is found: on a model deeper
   than :data:`SAMPLED_LAYERS` by timing the *sampled* model (:func:`sample_layers`: the first,
   the last and evenly spaced middle layers, sharing their weights with the loaded model,
   :func:`sampled_model`: no copy) on :data:`SHORT_PROBE`-token probes and scaling by the
   ratio of parameter counts and of probe lengths (so an 8B model is never run whole just to
   plan); otherwise by timing the model. When the dynamic checks would need more than
   :data:`PLAN_SHARE` of what is left (``sum COST_UNITS * u``), the run uses the sampled model
   and the short probes;
4. before each dynamic check its cost is estimated as ``COST_UNITS[check] * u``; a check that
   does not fit in what is left of the budget is skipped, with the estimate in the reason.

A bug present in every layer (a mask, a RoPE table, a cache alignment, a norm) is present in
every sampled layer, so sampling cannot hide it (``tests/doctor/test_budget.py`` plants each
zoo bug and compares); what sampling can hide is a fault confined to layers it leaves out,
which is why every finding of a sampled run says what it sampled (``details["sampled"]`` and a
suffix of its summary) and its layer numbers are those of the loaded model.

The cost table was measured (forward-pass units, rounded up) on a random Llama d 256, 4 layers,
(B, T) = (2, 64) on the shared 2-core machine, 2026-12-03 17:45 UTC.
"""

from __future__ import annotations

import copy
import dataclasses
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from torch import nn

from transformer_math.doctor.checks import DYNAMIC, Check
from transformer_math.doctor.findings import Finding

VALUE_ORDER: tuple[str, ...] = (
    "attention.causal-leakage", "cache.consistency", "attention.masked-rows",
    "attention.padding", "attention.mask-coverage", "rope.tables", "attention.recompute",
    "attention.kv-projection-shapes", "rope.relativity", "alibi.slopes", "position.beyond-table",
    "position.sinusoid-table", "position.permutation", "norm.statistics", "depth.gradients",
    "depth.residual-path", "norm.placement-probe", "attention.saturation", "icl.induction",
)
"""Dynamic checks, most valuable first (a check not listed runs after these, in registration
order)."""

COST_UNITS: dict[str, float] = {
    "attention.causal-leakage": 4, "cache.consistency": 5, "attention.masked-rows": 6,
    "attention.padding": 5, "attention.mask-coverage": 4, "rope.tables": 1,
    "attention.recompute": 4, "attention.kv-projection-shapes": 1, "rope.relativity": 1,
    "alibi.slopes": 1, "position.beyond-table": 1, "position.sinusoid-table": 1,
    "position.permutation": 2, "norm.statistics": 3, "depth.gradients": 3,
    "depth.residual-path": 3, "norm.placement-probe": 3, "attention.saturation": 11,
    "icl.induction": 5,
}
"""Estimated cost of each dynamic check in forward passes of the probe batch (module
docstring; masked-rows and mask-coverage raised after the 8B run, 2026-12-03 18:16 UTC, took
5.9 and 3.4); an unlisted check counts :data:`DEFAULT_UNITS`."""
PER_LAYER = frozenset({"depth.gradients"})
"""Checks whose cost grows with the layer count (one Jacobian per layer): their units are for
:data:`CALIBRATION_LAYERS` layers and scale linearly (8B, 32 layers: 19.3 forward passes
measured, 2.3 x 32 / 4 = 18.4 predicted)."""
CALIBRATION_LAYERS = 4
DEFAULT_UNITS = 3.0
FULL_RUN_UNITS = float(sum(COST_UNITS.values()))
PLAN_SHARE = 0.8
SAMPLED_LAYERS = 3
SHORT_PROBE = 32
DEFAULT_BUDGET_S = 120.0
"""``tmath doctor``'s budget when ``--budget`` is not given (issue 36: a 1B model in 2 minutes
on 2 cores)."""

_DURATION = re.compile(r"\s*(\d+(?:\.\d+)?)\s*(s|sec|m|min|h)?\s*", re.IGNORECASE)
_UNIT_S = {None: 1.0, "s": 1.0, "sec": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0}


def units(check: str, layers: int) -> float:
    """Forward passes ``check`` is estimated to cost on a model of ``layers`` layers."""
    base = COST_UNITS.get(check, DEFAULT_UNITS)
    return base * max(1.0, layers / CALIBRATION_LAYERS) if check in PER_LAYER else base


def parse_budget(text: str | float | int, name: str = "--budget") -> float:
    """Seconds of a budget: a number of seconds or ``"90s"``, ``"5m"``, ``"1.5h"``; a
    ValueError naming ``name`` for anything else or a budget that is not positive."""
    if isinstance(text, bool):
        raise ValueError(f"{name} must be a duration such as 90, 90s, 5m or 1h, got {text!r}")
    if isinstance(text, int | float):
        seconds = float(text)
    else:
        match = _DURATION.fullmatch(str(text))
        if match is None:
            raise ValueError(f"{name} must be a duration such as 90, 90s, 5m or 1h, got "
                             f"{text!r}"[:200])
        unit = match.group(2).lower() if match.group(2) else None
        seconds = float(match.group(1)) * _UNIT_S[unit]
    if not 0 < seconds < float("inf"):
        raise ValueError(f"{name} must be a positive duration, got {text!r}"[:200])
    return seconds


def order_checks(checks: Sequence[Check]) -> list[Check]:
    """Static checks first (registration order), then dynamic ones by :data:`VALUE_ORDER`."""
    rank = {name: i for i, name in enumerate(VALUE_ORDER)}
    static = [c for c in checks if c.kind != DYNAMIC]
    dynamic = sorted((c for c in checks if c.kind == DYNAMIC),
                     key=lambda c: rank.get(c.name, len(rank)))  # sorted() is stable
    return static + dynamic


def sample_layers(num_layers: int, count: int = SAMPLED_LAYERS) -> tuple[int, ...]:
    """``count`` layer indices: the first, the last and evenly spaced ones between (all of
    them when there are no more than ``count``)."""
    if num_layers <= count:
        return tuple(range(num_layers))
    if count < 2:
        raise ValueError(f"count must be >= 2 to keep the first and the last layer, got {count}")
    return tuple(sorted({round(i * (num_layers - 1) / (count - 1)) for i in range(count)}))


def sampled_model(model: nn.Module, layers: Sequence[int]) -> nn.Module:
    """A shallow copy of the project ``Transformer`` ``model`` whose blocks are
    ``model.layers[i]`` for ``i`` in ``layers`` (the same modules: no weight is copied) and
    whose config says ``num_layers=len(layers)``; ``model`` itself is unchanged."""
    sub = copy.copy(model)
    for slot in ("_modules", "_parameters", "_buffers"):
        setattr(sub, slot, dict(getattr(model, slot)))
    sub.layers = nn.ModuleList([model.layers[i] for i in layers])
    sub.config = dataclasses.replace(model.config, num_layers=len(layers))
    return sub


@dataclass
class Plan:
    """What a budgeted run decided and spent (``Diagnosis.budget``)."""

    seconds: float
    forward_s: float | None = None
    full_forward_s: float | None = None
    layers: tuple[int, ...] | None = None  # the sampled layers; None: every layer
    num_layers: int | None = None
    probe_len: int | None = None
    skipped: list[str] = field(default_factory=list)
    spent: float = 0.0
    load_s: float = 0.0  # of ``spent``: reading the checkpoint before the checks

    probed_layers: int = CALIBRATION_LAYERS  # layers of the model the probes run on

    def estimate(self, check: Check) -> float:
        return units(check.name, self.probed_layers) * (self.forward_s or 0.0)

    def sampled(self) -> dict[str, Any] | None:
        if self.layers is None:
            return None
        return {"layers": list(self.layers), "of": self.num_layers, "probe_len": self.probe_len}

    def to_json(self) -> dict[str, Any]:
        return {"seconds": self.seconds, "spent": round(self.spent, 3),
                "load_s": round(self.load_s, 3),
                "forward_s": self.forward_s, "full_forward_s": self.full_forward_s,
                "sampled": self.sampled(), "skipped": list(self.skipped)}


def time_forward(engine: Any, ids: Any) -> float:
    """Seconds of one forward pass of ``ids`` (one pass only: on an 8B model a pass costs
    tens of seconds; a first pass's warm-up makes it an overestimate, the safe side)."""
    start = time.perf_counter()
    engine.logits(ids)
    return time.perf_counter() - start


def parameter_count(model: nn.Module) -> int:
    """Elements of the model's distinct parameters (a tied head counts once)."""
    return sum(p.numel() for p in model.parameters())


_LAYER = re.compile(r"\blayer (\d+)(?![\d.]*\d)")


def relabel(finding: Finding, plan: Plan) -> Finding:
    """``finding`` of a sampled run with its layer numbers mapped back to the loaded model's
    and what was sampled stated (summary suffix, ``details["sampled"]``)."""
    sampled = plan.sampled()
    if sampled is None:
        return finding
    layers = plan.layers or ()

    def back(match: re.Match[str]) -> str:
        i = int(match.group(1))
        return f"layer {layers[i]}" if i < len(layers) else match.group(0)

    note = (f" [sampled layers {', '.join(map(str, layers))} of {plan.num_layers}, "
            f"probe length {plan.probe_len}]")
    return dataclasses.replace(
        finding, subject=_LAYER.sub(back, finding.subject),
        summary=_LAYER.sub(back, finding.summary) + note,
        details={**dict(finding.details), "sampled": sampled})
