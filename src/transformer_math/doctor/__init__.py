"""``tmath doctor``: the seed's troubleshooting manual (000:1664-1673) run on a user's model.

The main seed ends §8.3 with a table of symptoms (loss stuck at the start, failure past the
training length, a set model that depends on input order, few-shot that never works, a bigger
model that is worse and slower, gradients that vanish or explode with depth). The doctor turns
each diagnosable row, and the families of silent bugs that keep reaching inference engines
(YaRN's attention factor dropped, causal masks aligned top-left under a KV cache, GQA heads
tiled, RoPE layouts mixed, NaN rows from fully masked queries, ...), into registered checks
(``checks.py``) that report a :class:`~transformer_math.doctor.findings.Finding` with the number
that shows the problem, the threshold, what it means, the fix and the source.

Static checks read the config and the safetensors headers only (nothing is allocated); dynamic
checks run forward passes on synthetic inputs drawn from a seeded generator, through an
:class:`~transformer_math.doctor.engines.Engine`: the project's own model (hook points) or
``transformers``' implementation of the same checkpoint (``engine="transformers"``).

    from transformer_math.doctor import examine
    diagnosis = examine("path/to/checkpoint", context=32768, train_tokens=2e9)
    for f in diagnosis.flagged: print(f.check, f.severity, f.summary)
"""

from __future__ import annotations

import fnmatch
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from transformer_math.doctor.checks import (
    CHECKS,
    DYNAMIC,
    STATIC,
    Check,
    NotApplicable,
    Options,
    Subject,
    load_checks,
    register_check,
)
from transformer_math.doctor.findings import Diagnosis, Finding, Severity, judged

__all__ = ["CHECKS", "Check", "Diagnosis", "Finding", "NotApplicable", "Options", "Severity",
           "Subject", "examine", "judged", "load_checks", "register_check", "subject_for"]

ENGINES = ("project", "transformers")


def _is_hf_model(obj: Any) -> bool:
    return any(cls.__module__.startswith("transformers.") and cls.__name__ == "PreTrainedModel"
               for cls in type(obj).__mro__)


def subject_for(target: Any, options: Options, *, engine: str = "project",
                static_only: bool = False) -> Subject:
    """The :class:`Subject` of ``target``: a checkpoint directory (str or Path), a project
    :class:`~transformer_math.nn.transformer.Transformer`, or a ``transformers`` causal LM
    (always run by the transformers engine: it is the code under examination).

    A directory is read statically first (config, generation config, safetensors headers:
    everything :func:`~transformer_math.checkpoints.io.from_pretrained` checks); a config the
    project's loader refuses becomes ``load_error`` (the static checks still judge the raw
    config) instead of an exception. Only then, unless ``static_only``, is the model loaded by
    the chosen engine. A path that is not a checkpoint directory is a FileNotFoundError.
    """
    if engine not in ENGINES:
        raise ValueError(f"engine must be one of {list(ENGINES)}, got {engine!r}")
    if isinstance(target, str | Path):
        return _checkpoint_subject(Path(target), options, engine, static_only)
    from transformer_math.nn.transformer import Transformer

    if isinstance(target, Transformer):
        if engine != "project":
            raise ValueError("engine='transformers' needs a checkpoint directory or a "
                             "transformers model, got a transformer_math Transformer")
        from transformer_math.doctor.engines import ProjectEngine

        return Subject(target.config, options,
                       engine=None if static_only else ProjectEngine(target))
    if _is_hf_model(target):
        from transformer_math.checkpoints.io import config_from_hf
        from transformer_math.doctor.engines_transformers import TransformersEngine

        raw = target.config.to_dict()
        config, info = config_from_hf(raw, "model.config")
        return Subject(config, options, raw_config=raw, family=info.family,
                       engine=None if static_only else TransformersEngine(target))
    raise TypeError(f"examine() takes a checkpoint directory, a transformer_math Transformer or "
                    f"a transformers model, got {type(target).__name__}")


def _checkpoint_subject(path: Path, options: Options, engine: str,
                        static_only: bool) -> Subject:
    from transformer_math.checkpoints.io import (
        config_from_hf,
        from_pretrained,
        hf_family,
        read_config,
        stored_tensors,
    )

    raw = read_config(path)  # FileNotFoundError / ValueError: not a readable checkpoint
    subject = Subject(None, options, raw_config=raw, path=path)
    try:
        subject.family = hf_family(raw, str(path / "config.json"))
        subject.config, _ = config_from_hf(raw, str(path / "config.json"))
    except ValueError as exc:
        subject.load_error = str(exc)
    try:
        subject.shapes = stored_tensors(path).shapes
    except ValueError as exc:
        subject.load_error = subject.load_error or str(exc)
    if static_only or subject.load_error is not None:
        return subject
    if engine == "project":
        from transformer_math.doctor.engines import ProjectEngine
        from transformer_math.doctor.precision import load_dtype

        try:  # float32 unless it would not fit (doctor/precision.py): then the stored dtype
            dtype = load_dtype(subject.shapes or {})
            subject.engine = ProjectEngine(from_pretrained(path, dtype=dtype))
        except ValueError as exc:
            subject.load_error = str(exc)
    else:
        # the project's header and config checks above ran before transformers reads a byte
        from transformer_math.doctor.engines_transformers import TransformersEngine

        try:
            subject.engine = TransformersEngine.from_path(path)
        except ValueError as exc:
            subject.load_error = str(exc)
    return subject


def select_checks(patterns: Iterable[str] | None = None, *, static_only: bool = False
                  ) -> list[Check]:
    """The registered checks in registration order, filtered by glob ``patterns`` on the name
    (any match keeps a check) and by kind."""
    load_checks()
    pats = list(patterns or [])
    chosen = []
    for name in CHECKS.names():
        check = CHECKS[name]
        if static_only and check.kind != STATIC:
            continue
        if pats and not any(fnmatch.fnmatchcase(name, p) for p in pats):
            continue
        chosen.append(check)
    if pats and not chosen:
        raise ValueError(f"checks {pats} match no doctor check; known: "
                         f"{', '.join(CHECKS.names())}")
    return chosen


def run_checks(subject: Subject, checks: list[Check], *, target: str,
               progress: Callable[[str], None] | None = None,
               budget: float | None = None, already_spent: float = 0.0) -> Diagnosis:
    """Run ``checks`` on ``subject``; a check that raises NotApplicable is recorded as skipped,
    one that raises anything else becomes an error finding (the probe made the model fail).

    ``budget`` (seconds): plan the run to fit (``doctor/budget.py``: static checks first,
    dynamic ones by value, sampled layers and short probes when the full run would not fit,
    checks that do not fit skipped with the reason); ``Diagnosis.budget`` says what it did.
    ``already_spent``: seconds of the budget used before (loading the checkpoint)."""
    from transformer_math.doctor import budget as budgets

    plan = None if budget is None else budgets.Plan(budgets.parse_budget(budget, "budget"))
    if plan is not None:
        checks = budgets.order_checks(checks)
        plan.load_s = already_spent
    started = time.perf_counter() - already_spent
    diagnosis = Diagnosis(target, subject.engine.name if subject.engine is not None else "static",
                          options={k: getattr(subject.options, k) for k in (
                              "context", "train_tokens", "set_model", "seed", "probe_len",
                              "batch")})
    if subject.load_error is not None:
        diagnosis.findings.append(Finding(
            "checkpoint.loads", Severity.ERROR,
            f"the checkpoint cannot be loaded: {subject.load_error}",
            meaning="the dynamic checks cannot run; the static checks judge the raw config",
            fix="correct the config or weights named in the message",
            source="issue 15 (checkpoints trust nothing)"))
    subject.scratch.setdefault("figures", {})
    dynamic = [c for c in checks if c.kind == DYNAMIC]
    if dynamic and subject.engine is not None:
        diagnosis.findings.extend(_precision_findings(subject))
    for check in checks:
        if plan is not None and check.kind == DYNAMIC and subject.engine is not None:
            if plan.forward_s is None:
                _plan(subject, plan, dynamic, started)
            left = plan.seconds - (time.perf_counter() - started)
            need = plan.estimate(check)
            if need > left:
                diagnosis.skipped[check.name] = (
                    f"budget: needs ~{need:.3g} s ({need / plan.forward_s:.3g} forward passes "
                    f"of {plan.forward_s:.3g} s), {max(left, 0.0):.3g} s left of "
                    f"{plan.seconds:.3g} s")
                diagnosis.seconds[check.name] = 0.0
                plan.skipped.append(check.name)
                continue
        if progress is not None:
            progress(check.name)
        start = time.perf_counter()
        try:
            if check.kind == DYNAMIC:
                subject.need_engine()
            found = _run_in_precision(check, subject)
            if plan is not None and check.kind == DYNAMIC:
                found = [budgets.relabel(f, plan) for f in found]
        except NotApplicable as why:
            diagnosis.skipped[check.name] = str(why)
        except Exception as exc:  # a failing probe is itself a finding
            diagnosis.findings.append(Finding(
                check.name, Severity.ERROR,
                f"the probe raised {type(exc).__name__}: {exc}",
                meaning="the model fails on an input the check needs",
                fix="run the check's probe by hand (see its docstring) to find the failure",
                source=check.source, details={"crashed": True}))
        else:
            diagnosis.findings.extend(found)
        diagnosis.seconds[check.name] = time.perf_counter() - start
    diagnosis.figures = dict(subject.scratch["figures"])
    if plan is not None:
        plan.spent = time.perf_counter() - started
        diagnosis.budget = plan.to_json()
    return diagnosis


def _low_precision(subject: Subject) -> Any:
    """The parameter dtype of a project engine's model when it is bfloat16 or float16."""
    from transformer_math.doctor.engines import ProjectEngine
    from transformer_math.doctor.precision import LOW_PRECISION, parameter_dtype

    engine = subject.engine
    if isinstance(engine, ProjectEngine) and parameter_dtype(engine.model) in LOW_PRECISION:
        return parameter_dtype(engine.model)
    return None


def _precision_findings(subject: Subject) -> list[Finding]:
    """An info finding when the probes run in low precision (``doctor/precision.py``)."""
    from transformer_math.doctor import precision

    dtype = _low_precision(subject)
    if dtype is None:
        return []
    name = str(dtype).removeprefix("torch.")
    device = subject.engine._device
    upcast = sorted(c for c in precision.NEEDS_FLOAT32 | precision.FLOAT32_BACKWARD
                    if precision.needs_float32(c, device))
    return [Finding(
        "checkpoint.dtype", Severity.INFO,
        f"the probes run in {name} (a float32 copy of the model would not fit in half the "
        f"available memory); {', '.join(upcast)} run on a float32 copy of the "
        "probed model",
        meaning=f"statistics are computed in float32 from {name} activations; the checks "
                "that compare differently rounded computations need float32, and on a CPU "
                "those that differentiate through the model run faster in it",
        fix="none needed; for float32 probes everywhere run on a machine with more memory",
        source="issue 36 item 4; doctor/precision.py", details={"dtype": name})]


def _run_in_precision(check: Check, subject: Subject) -> list[Finding]:
    """``check.run(subject)``; a check of ``precision.NEEDS_FLOAT32`` on a bfloat16/float16
    project model runs on a float32 copy of it (skipped when the copy is too big)."""
    from transformer_math.doctor import precision
    from transformer_math.doctor.engines import ProjectEngine

    dtype = _low_precision(subject)
    engine = subject.engine
    if dtype is None or not precision.needs_float32(check.name, engine._device):
        return check.run(subject)
    assert isinstance(engine, ProjectEngine)
    key = f"engine:float32:{id(engine)}"
    if not subject.has_cached(key):  # the copy is made once per run
        need = precision.float32_bytes(engine.model)
        stored = (None if subject.shapes is None
                  else precision.stored_bytes(subject.shapes, dtype.itemsize))
        if not precision.upcast_fits(need, stored):
            raise NotApplicable(precision.too_big_reason(check.name, need, dtype))
    subject.engine = subject.cached(key, lambda: ProjectEngine(precision.upcast(engine.model)))
    try:
        found = check.run(subject)
    finally:
        subject.engine = engine
    return [precision.mark_upcast(f, dtype) for f in found]


def _plan(subject: Subject, plan: Any, dynamic: list[Check], started: float) -> None:
    """Decide the sampling and time the probe forward (``doctor/budget.py``).

    A project model deeper than ``SAMPLED_LAYERS`` is first timed SAMPLED on short probes
    (cheap even at 8B) and the full forward is estimated from that by the ratio of parameter
    counts and of probe lengths; otherwise the full forward is timed. When the dynamic checks
    would need more than ``PLAN_SHARE`` of what is left at the full size, the run uses the
    sampled model (or, not sampleable, the short probes)."""
    import dataclasses

    from transformer_math.doctor import budget as budgets
    from transformer_math.doctor.engines import ProjectEngine

    engine = subject.need_engine()
    if engine.vocab_size is None:
        plan.forward_s = plan.full_forward_s = 0.0  # vector models are small: no plan
        return
    units = sum(budgets.units(c.name, engine.num_layers) for c in dynamic)
    plan.probed_layers = engine.num_layers
    full_len = subject.probe_len
    short_len = (budgets.SHORT_PROBE if subject.options.probe_len is None
                 and full_len > budgets.SHORT_PROBE else full_len)
    sampled = None
    if isinstance(engine, ProjectEngine) and engine.num_layers > budgets.SAMPLED_LAYERS:
        layers = budgets.sample_layers(engine.num_layers)
        sampled = (layers, ProjectEngine(budgets.sampled_model(engine.model, layers)))
        short_s = budgets.time_forward(sampled[1], subject.random_ids("budget.forward",
                                                                      length=short_len))
        ratio = budgets.parameter_count(engine.model) / budgets.parameter_count(
            sampled[1].model)
        plan.full_forward_s = short_s * ratio * full_len / short_len  # an estimate
    else:
        plan.full_forward_s = budgets.time_forward(engine, subject.random_ids("budget.forward"))
    plan.forward_s = plan.full_forward_s
    left = plan.seconds - (time.perf_counter() - started)
    if units * plan.full_forward_s <= budgets.PLAN_SHARE * left:
        return
    if short_len != full_len:
        subject.options = dataclasses.replace(subject.options, probe_len=short_len)
    plan.probe_len = subject.probe_len
    plan.num_layers = engine.num_layers
    if sampled is not None:
        plan.layers, subject.engine = sampled
        plan.forward_s = short_s
        plan.probed_layers = len(plan.layers)
    else:
        plan.layers = tuple(range(engine.num_layers))
        plan.forward_s = budgets.time_forward(engine, subject.random_ids("budget.forward"))


def examine(target: Any, *, context: int | None = None, train_tokens: float | None = None,
            set_model: bool = False, engine: str = "project", checks: Iterable[str] | None = None,
            static_only: bool = False, seed: int = 0, probe_len: int | None = None,
            batch: int = 2, progress: Callable[[str], None] | None = None,
            budget: float | str | None = None) -> Diagnosis:
    """Run the doctor on ``target`` (checkpoint directory, project Transformer, or transformers
    model) and return the :class:`Diagnosis`. Arguments as ``tmath doctor``'s options;
    ``checks`` are glob patterns on check names (``["rope.*", "attention.saturation"]``);
    ``budget``: seconds (or ``"5m"``) to plan the run for (``doctor/budget.py``), None: run
    every check in full."""
    from transformer_math.doctor.budget import parse_budget

    seconds = None if budget is None else parse_budget(budget, "budget")  # before any work
    options = Options(context=context, train_tokens=train_tokens, set_model=set_model,
                      seed=seed, probe_len=probe_len, batch=batch)
    chosen = select_checks(checks, static_only=static_only)
    subject = subject_for(target, options, engine=engine, static_only=static_only)
    name = str(target) if isinstance(target, str | Path) else type(target).__name__
    return run_checks(subject, chosen, target=name, progress=progress, budget=seconds)
