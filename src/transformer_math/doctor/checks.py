"""The registry of doctor checks and what every check is given (:class:`Subject`).

A check is a function ``run(subject) -> list[Finding]`` registered with :func:`register_check`
under a dotted name, with its kind (``"static"``: config and safetensors headers only, nothing
allocated; ``"dynamic"``: forward passes on synthetic inputs through ``subject.engine``), the
rows of the seed's troubleshooting manual it diagnoses (000:1664-1673) and the bug families it
targets. A check that does not apply (no RoPE in a learned-position model, no cache in an
engine) raises :class:`NotApplicable` with the reason; the run records it as skipped.

Checks live in the modules of this package named for what they examine (``rope_static``,
``attention_probes``, ...); :func:`load_checks` imports them, the way lm-evaluation-harness finds
tasks by where they live.
"""

from __future__ import annotations

import importlib
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from transformer_math.doctor.findings import Finding
from transformer_math.registry import Registry

if TYPE_CHECKING:
    from transformer_math.doctor.engines import Engine
    from transformer_math.nn.config import TransformerConfig

STATIC, DYNAMIC = "static", "dynamic"

CHECK_MODULES = (
    "transformer_math.doctor.config_static",
    "transformer_math.doctor.rope_static",
    "transformer_math.doctor.attention_probes",
    "transformer_math.doctor.position_probes",
    "transformer_math.doctor.depth_probes",
)
"""The modules holding checks, imported by :func:`load_checks` (one import each; a module
missing from a partial install is an ImportError, not a silently smaller doctor)."""


class NotApplicable(Exception):  # noqa: N818 - a signal, not an error
    """Raised by a check that does not apply to the subject; the message says why."""


@dataclass(frozen=True)
class Check:
    name: str
    kind: str
    run: Callable[[Subject], list[Finding]]
    manual_rows: tuple[int, ...] = ()
    families: tuple[str, ...] = ()
    source: str = ""
    description: str = ""


CHECKS: Registry[Check] = Registry("doctor check")


def register_check(name: str, *, kind: str, manual_rows: tuple[int, ...] = (),
                   families: tuple[str, ...] = (), source: str = ""
                   ) -> Callable[[Callable[[Subject], list[Finding]]],
                                 Callable[[Subject], list[Finding]]]:
    """Decorator: register ``fn`` as the check ``name`` (its docstring's first line is the
    description)."""
    if kind not in (STATIC, DYNAMIC):
        raise ValueError(f"kind must be {STATIC!r} or {DYNAMIC!r}, got {kind!r}")

    def decorate(fn: Callable[[Subject], list[Finding]]) -> Callable[[Subject], list[Finding]]:
        doc = (fn.__doc__ or "").strip().splitlines()
        CHECKS.add(name, Check(name, kind, fn, tuple(manual_rows), tuple(families), source,
                               doc[0] if doc else ""))
        return fn

    return decorate


def load_checks() -> Registry[Check]:
    """Import every check module; return :data:`CHECKS`."""
    for module in CHECK_MODULES:
        importlib.import_module(module)
    return CHECKS


@dataclass(frozen=True)
class Options:
    """What the user tells the doctor about the intended use.

    ``context``: the target context length (default: the model's trained / maximum length);
    ``train_tokens``: tokens the model was or will be trained on (enables the Chinchilla check);
    ``set_model``: the model is meant to be permutation equivariant (point clouds, object sets:
    manual row 3); ``seed``: every synthetic input is drawn from ``torch.Generator`` seeded with
    it; ``probe_len``: length of the synthetic sequences (default min(64, trained length));
    ``batch``: sequences per probe.
    """

    context: int | None = None
    train_tokens: float | None = None
    set_model: bool = False
    seed: int = 0
    probe_len: int | None = None
    batch: int = 2

    def __post_init__(self) -> None:
        for name in ("context", "probe_len"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                                      or value < 1):
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        if self.train_tokens is not None and (
                isinstance(self.train_tokens, bool)
                or not isinstance(self.train_tokens, int | float)
                or not self.train_tokens > 0 or self.train_tokens == float("inf")):
            raise ValueError(f"train_tokens must be a finite number > 0, "
                             f"got {self.train_tokens!r}")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or self.seed < 0:
            raise ValueError(f"seed must be an integer >= 0, got {self.seed!r}")
        if isinstance(self.batch, bool) or not isinstance(self.batch, int) or not (
                1 <= self.batch <= 64):
            raise ValueError(f"batch must be an integer in [1, 64], got {self.batch!r}")


@dataclass
class Subject:
    """What a check examines.

    ``config``: the project's :class:`TransformerConfig` of the model (None when the checkpoint's
    config could not be read; ``load_error`` then says why); ``raw_config``: ``config.json`` as
    stored (checkpoints only: the static checks judge the keys the loader may refuse or ignore);
    ``shapes``: tensor name -> shape from the safetensors headers (checkpoints only);
    ``engine``: runs the model for dynamic checks (None in a static-only run).
    """

    config: TransformerConfig | None
    options: Options = field(default_factory=Options)
    raw_config: Mapping[str, Any] | None = None
    shapes: Mapping[str, tuple[int, ...]] | None = None
    path: Path | None = None
    family: str | None = None
    engine: Engine | None = None
    load_error: str | None = None
    scratch: dict[str, Any] = field(default_factory=dict)  # shared by checks of one run

    @property
    def trained_length(self) -> int | None:
        """The context the model was built for: ``original_max_position_embeddings`` of a
        scaled RoPE if given, else the config's ``max_seq_len``."""
        if self.config is None:
            return None
        scaling = self.config.rope_scaling or {}
        original = scaling.get("original_max_position_embeddings")
        return int(original) if original else int(self.config.max_seq_len)

    @property
    def target_context(self) -> int | None:
        """The context the user wants (``--context``), else the config's ``max_seq_len``."""
        if self.options.context is not None:
            return self.options.context
        return None if self.config is None else int(self.config.max_seq_len)

    @property
    def probe_len(self) -> int:
        """Length of the synthetic probe sequences: ``options.probe_len``, else
        min(64, trained length)."""
        if self.options.probe_len is not None:
            return self.options.probe_len
        return min(64, self.trained_length or 64)

    def generator(self, salt: str) -> torch.Generator:
        """A CPU generator seeded from ``options.seed`` and ``salt`` (each check names its own
        salt, so one check's draws do not depend on which checks ran before)."""
        g = torch.Generator()
        g.manual_seed(self.options.seed * 1_000_003 + zlib.crc32(salt.encode()))
        return g

    def random_ids(self, salt: str, length: int | None = None, batch: int | None = None
                   ) -> torch.Tensor:
        """Uniform random token ids (batch, length) from :meth:`generator`; token models only."""
        engine = self.need_engine()
        if engine.vocab_size is None:
            raise NotApplicable("the model takes vectors, not token ids")
        return torch.randint(0, engine.vocab_size,
                             (batch or self.options.batch, length or self.probe_len),
                             generator=self.generator(salt))

    def cached(self, key: str, compute: Callable[[], Any]) -> Any:
        """``compute()`` once per run under ``key`` (checks share e.g. one attention pass on
        the standard probe: key it by what was computed, ``"attention:random:64"``)."""
        store = self.scratch.setdefault("cache", {})
        if key not in store:
            store[key] = compute()
        return store[key]

    def has_cached(self, key: str) -> bool:
        """Whether :meth:`cached` already holds ``key`` in this run."""
        return key in self.scratch.get("cache", {})

    def figure(self, name: str, data: Mapping[str, Any]) -> None:
        """Hand plot data to the report (``report.py`` draws figures it knows by name)."""
        self.scratch.setdefault("figures", {})[name] = dict(data)

    def need_config(self) -> TransformerConfig:
        if self.config is None:
            raise NotApplicable(f"no model config ({self.load_error or 'not given'})")
        return self.config

    def need_engine(self) -> Engine:
        if self.engine is None:
            raise NotApplicable("static run (no engine to run the model)")
        return self.engine
