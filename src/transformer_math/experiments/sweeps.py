"""The experiments ``tmath sweep`` can sweep, each with the scalar metrics a sweep records.

A sweep (``execution/sweep.py``) runs one experiment many times: one task per (grid point,
seed), the config of a task being the experiment's size preset for that seed with the point's
fields replaced (``dataclasses.replace``). What a sweep needs to know about an experiment is
here, in :data:`SWEEPS` (a :class:`transformer_math.registry.Registry` of
:class:`SweepExperiment`):

* ``config``: the frozen config dataclass; its fields of simple types (int, float, bool, str
  and tuples of those) are what ``--grid`` can set (:func:`sweepable_fields`);
* ``seed_field``: the field the seed goes to; most configs have ``seed: int``, task_diversity
  has ``seeds: tuple[int, ...]`` and gets the 1-tuple ``(seed,)`` (one task trains one seed);
* ``run``: ``run(config, progress=None) -> Result``;
* ``metrics(result) -> dict[str, float]``: the numbers worth plotting against a grid, chosen
  from the Result dataclass by hand (every key present for every config of the experiment that
  has the same list-valued fields, so that the rows of one sweep share their columns).

The cluster recipe of issue 19 is the task-diversity grid of Raventos et al. 2023 ("Pretraining
task diversity and the emergence of non-Bayesian in-context learning for regression", NeurIPS):
one task per pool size M (``--grid num_tasks=2,4,...,1048576``, a single value meaning the
1-tuple ``(M,)``) and seed. The in-context regression setting is Garg et al. 2022 ("What can
transformers learn in-context? A case study of simple function classes", NeurIPS).
"""

from __future__ import annotations

import dataclasses
import inspect
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from transformer_math.experiments import (
    deepsets_vs_set_transformer,
    icl_gd,
    icl_preconditioner,
    induction_heads,
    parity_scratchpad,
    robotics_dt,
    task_diversity,
)
from transformer_math.registry import Registry

SIZES = ("tiny", "default", "large")
"""The preset constructors every experiment config has (``Config.tiny(seed)`` ...)."""

SCALARS = (int, float, bool, str)
"""Field types a grid value can be parsed to (and tuples of them, ``tuple[int, ...]``)."""

RESERVED = ("point", "seed", "seconds")
"""Column names of the sweep's table that no grid field or metric may take."""


@dataclass(frozen=True)
class SweepExperiment:
    """One sweepable experiment: its config class, how its seed is set, its run and metrics."""

    name: str
    config: type
    run: Callable[..., Any]
    metrics: Callable[[Any], dict[str, float]]
    seed_field: str = "seed"
    summary: str = ""
    source: str = ""
    #: checks of a config that its run (not its ``__post_init__``) makes: raises ValueError
    check: Callable[[Any], None] | None = None

    def validate(self, config: Any) -> None:
        """Raise ``ValueError`` for a config the run would reject (before anything runs)."""
        if self.check is not None:
            self.check(config)

    def preset(self, size: str, seed: int) -> Any:
        """The ``size`` preset for ``seed``: ``Config.size(seed)`` (or ``Config.size()`` for a
        preset without a seed argument) with the seed field set to ``seed`` (``(seed,)`` for a
        tuple of seeds), so that one config trains exactly one seed."""
        if size not in SIZES:
            raise ValueError(f"size must be one of {list(SIZES)}, got {size!r}")
        make = getattr(self.config, size)
        takes_seed = "seed" in inspect.signature(make).parameters
        config = make(seed) if takes_seed else make()
        return dataclasses.replace(config, **{self.seed_field: self.seed_value(seed)})

    def seed_value(self, seed: int) -> int | tuple[int, ...]:
        """What the seed field holds for one seed: ``seed`` or ``(seed,)``."""
        return (seed,) if field_types(self.config)[self.seed_field] == (tuple, int) else seed


SWEEPS: Registry[SweepExperiment] = Registry("sweep experiment")


def field_types(config: type) -> dict[str, tuple[type, type | None]]:
    """The sweepable fields of a config dataclass: name -> (type, element type).

    ``(int, None)`` for ``x: int``; ``(tuple, float)`` for ``x: tuple[float, ...]``. Fields of
    other types (nested dataclasses, tuples of tuples, optional values) are left out.
    """
    hints = typing.get_type_hints(config)
    out: dict[str, tuple[type, type | None]] = {}
    for f in dataclasses.fields(config):
        kind = _simple_type(hints[f.name])
        if kind is not None:
            out[f.name] = kind
    return out


def _simple_type(hint: Any) -> tuple[type, type | None] | None:
    if hint in SCALARS:
        return hint, None
    if typing.get_origin(hint) is tuple:
        args = typing.get_args(hint)
        if len(args) == 2 and args[1] is Ellipsis and args[0] in SCALARS:
            return tuple, args[0]
    return None  # nested dataclasses, tuples of tuples, optional values: not sweepable


def sweepable_fields(experiment: SweepExperiment) -> dict[str, tuple[type, type | None]]:
    """The fields ``--grid`` may set: every simple-typed field except the seed field."""
    return {k: v for k, v in field_types(experiment.config).items()
            if k != experiment.seed_field}


def type_name(kind: tuple[type, type | None]) -> str:
    """``int``, ``tuple[float, ...]``: how ``--list`` shows a field's type."""
    base, element = kind
    return base.__name__ if element is None else f"tuple[{element.__name__}, ...]"


def register(name: str, config: type, run: Callable[..., Any], *, seed_field: str = "seed",
             summary: str, source: str, check: Callable[[Any], None] | None = None
             ) -> Callable[[Callable[[Any], dict[str, float]]],
                                                    Callable[[Any], dict[str, float]]]:
    """Decorator: register the decorated ``metrics`` function for experiment ``name``."""

    def decorate(metrics: Callable[[Any], dict[str, float]]) -> Callable[[Any],
                                                                          dict[str, float]]:
        if seed_field not in field_types(config):
            raise ValueError(f"{name}: {config.__name__} has no simple field {seed_field!r}")
        clash = set(RESERVED) & set(field_types(config)) - {seed_field}
        if clash:
            raise ValueError(f"{name}: config fields {sorted(clash)} clash with the columns "
                             f"{list(RESERVED)}")
        SWEEPS.add(name, SweepExperiment(name, config, run, metrics, seed_field, summary,
                                         source, check), source=source)
        return metrics

    return decorate


def _per_index(prefix: str, labels: list[Any], values: list[float]) -> dict[str, float]:
    """``{prefix: v}`` for one value, else ``{prefix_m{label}: v}`` per value."""
    if len(values) == 1:
        return {prefix: float(values[0])}
    return {f"{prefix}_m{label}": float(v) for label, v in zip(labels, values, strict=True)}


def _require(config: Any, minimum: Mapping[str, float], *, positive: tuple[str, ...] = ()
             ) -> None:
    """ValueError unless every field of ``minimum`` (every element of a tuple field) is at least
    its bound and every field of ``positive`` is > 0: the checks a run would otherwise fail
    (or silently misbehave) on, made before anything runs."""
    for name, low in minimum.items():
        value = getattr(config, name)
        for v in value if isinstance(value, tuple) else (value,):
            if v < low:
                raise ValueError(f"{name} must be >= {low:g}, got {value!r}")
    for name in positive:
        if not getattr(config, name) > 0:
            raise ValueError(f"{name} must be > 0, got {getattr(config, name)!r}")


def _ones(*names: str) -> dict[str, float]:
    return dict.fromkeys(names, 1)


def _check_task_diversity(config: task_diversity.TaskDiversityConfig) -> None:
    _require(config, _ones("x_dim", "num_points", "num_tasks", "d_model", "num_layers",
                           "num_heads", "batch_size", "steps", "eval_prompts")
             | {"weight_decay": 0, "warmup_fraction": 0}, positive=("noise_var", "lr"))
    if config.warmup_fraction > 1:
        raise ValueError(f"warmup_fraction must be <= 1, got {config.warmup_fraction}")
    config.model_config()  # the model's own checks (sizes, heads dividing d_model)


def _check_icl_gd(config: icl_gd.ICLGDConfig) -> None:
    _require(config, _ones("dim", "num_context", "batch_size", "steps", "eval_batch",
                           "eval_every", "restarts") | {"init_std": 0},
             positive=("x_range", "lr"))


def _check_induction(config: induction_heads.InductionHeadsConfig) -> None:
    _require(config, _ones("vocab_size", "d_model", "num_heads", "seq_len", "min_segment",
                           "max_segment", "batch_size", "steps", "warmup", "eval_every",
                           "probe_half_len", "probe_batch", "control_layers")
             | {"max_prefix": 0, "icl_early": 0}, positive=("lr", "rope_theta"))
    if config.min_segment > config.max_segment:
        raise ValueError(f"min_segment {config.min_segment} > max_segment {config.max_segment}")
    if not config.icl_early < config.icl_late < config.seq_len - 1:
        raise ValueError(f"need icl_early < icl_late < seq_len - 1, got {config.icl_early}, "
                         f"{config.icl_late}, {config.seq_len}")
    config.model_config(2)
    config.model_config(config.control_layers)


def _check_stitching(config: robotics_dt.StitchingConfig) -> None:
    _require(config, _ones("num_per_segment", "train_steps", "batch_size", "dim", "num_layers")
             | {"dropout": 0}, positive=("lr", "gamma"))
    if config.dropout >= 1 or config.gamma > 1:
        raise ValueError(f"need dropout < 1 and gamma <= 1, got {config.dropout}, "
                         f"{config.gamma}")


# ------------------------------------------------------------------------------ experiments
@register("task_diversity", task_diversity.TaskDiversityConfig, task_diversity.run,
          seed_field="seeds",
          summary="pretraining task diversity M: dMMSE (memorising the M tasks) vs ridge",
          source="Raventos et al. 2023, NeurIPS; Garg et al. 2022",
          check=_check_task_diversity)
def task_diversity_metrics(result: task_diversity.TaskDiversityResult) -> dict[str, float]:
    """At one pool size M (``num_tasks=(M,)``): the mean squared distance of the model's
    predictions to dMMSE's and to ridge's, their difference (negative: closer to dMMSE), the
    model's fresh-task MSE and the two baselines' MSEs. With several M in one config every
    per-M number gets a ``_m{M}`` suffix."""
    m = result.num_tasks
    out: dict[str, float] = {}
    out |= _per_index("distance_to_dmmse", m, result.distance_to_dmmse)
    out |= _per_index("distance_to_ridge", m, result.distance_to_ridge)
    gap = [a - b for a, b in zip(result.distance_to_dmmse, result.distance_to_ridge,
                                 strict=True)]
    out |= _per_index("dmmse_minus_ridge", m, gap)
    out |= _per_index("model_mse", m, result.model_mse)
    out |= _per_index("dmmse_mse", m, result.dmmse_mse)
    out["ridge_mse"] = float(result.ridge_mse)
    return out


@register("icl_gd", icl_gd.ICLGDConfig, icl_gd.run,
          summary="one linear self-attention layer trained on in-context regression vs one GD step",
          source="von Oswald et al. 2023; Garg et al. 2022", check=_check_icl_gd)
def icl_gd_metrics(result: icl_gd.ICLGDResult) -> dict[str, float]:
    """Final evaluation: cosine and L2 distance of the model's and GD's input sensitivities,
    RMS difference of their predictions (absolute, and relative at the line-searched eta), the
    model's and GD's losses, the line-searched eta and the model's learned eta."""
    return {
        "cosine": float(result.cosine[-1]),
        "sensitivity_l2": float(result.sensitivity_l2[-1]),
        "prediction_rms": float(result.prediction_rms[-1]),
        "relative_rms": float(result.relative_rms_at_factor[1.0]),
        "model_loss": float(result.model_loss[-1]),
        "gd_loss": float(result.gd_loss),
        "eta_gd": float(result.eta_gd),
        "eta_model": float(result.eta_model[-1]),
    }


@register("induction_heads", induction_heads.InductionHeadsConfig, induction_heads.run,
          summary="induction heads in a 2-layer attention-only model vs a shallower control",
          source="Olsson et al. 2022", check=_check_induction)
def induction_heads_metrics(result: induction_heads.InductionHeadsResult) -> dict[str, float]:
    """For the 2-layer model and the control: the best head's final induction score, the final
    in-context loss (second copy of the probe) and ICL score; for the 2-layer model also the
    best layer-0 previous-token score and the step of the steepest in-context-loss drop (the
    phase change)."""
    two, control = result.two_layer, result.control
    return {
        "induction_score": float(two.max_induction()[-1]),
        "previous_token_score": float(two.max_previous_token(0)[-1]),
        "in_context_loss": float(two.in_context_loss[-1]),
        "icl_score": float(two.icl_score[-1]),
        "phase_change_step": float(two.steepest_loss_drop()),
        "control_induction_score": float(control.max_induction()[-1]),
        "control_in_context_loss": float(control.in_context_loss[-1]),
        "control_icl_score": float(control.icl_score[-1]),
    }


@register("icl_preconditioner", icl_preconditioner.ICLPreconditionerConfig,
          icl_preconditioner.run,
          summary="trained linear attention under x ~ N(0, Sigma) vs the optimal Gamma^-1",
          source="Ahn et al. 2023, Thm. 1")
def icl_preconditioner_metrics(result: icl_preconditioner.ICLPreconditionerResult
                               ) -> dict[str, float]:
    """Relative Frobenius error of the learned preconditioner against Gamma^-1 and against the
    naive Sigma^-1, the model's risk, the optimal risk and their ratio."""
    return {
        "relative_error": float(result.relative_error),
        "relative_error_vs_sigma_inverse": float(result.relative_error_vs_sigma_inverse),
        "model_risk": float(result.model_risk),
        "optimal_risk": float(result.optimal_risk),
        "risk_ratio": float(result.model_risk / result.optimal_risk),
    }


def run_parity(config: parity_scratchpad.ParityScratchpadConfig,
               progress: Callable[[float], None] | None = None
               ) -> parity_scratchpad.ParityScratchpadResult:
    """``parity_scratchpad.run`` training every arm afresh (no memo: every task's ``seconds``
    are its own, and a long inline sweep keeps no trained arms in memory)."""
    return parity_scratchpad.run(config, progress, reuse=False)


@register("parity_scratchpad", parity_scratchpad.ParityScratchpadConfig, run_parity,
          summary="PARITY at lengths beyond training, with and without a scratchpad",
          source="Hahn 2020; 000 §8.3.5")
def parity_metrics(result: parity_scratchpad.ParityScratchpadResult) -> dict[str, float]:
    """Per arm: the accuracy at every test length (``accuracy_{arm}_len{L}``) and the final
    training loss."""
    out: dict[str, float] = {}
    for arm, r in result.arms.items():
        for length, acc in sorted(r.accuracy_by_length.items()):
            out[f"accuracy_{arm}_len{length}"] = float(acc)
        out[f"train_loss_{arm}"] = float(r.final_train_loss)
    return out


def _check_sets(config: deepsets_vs_set_transformer.DeepSetsVsSetTransformerConfig) -> None:
    if config.set_size < 2:
        raise ValueError(f"set_size must be >= 2, got {config.set_size}")


@register("deepsets_vs_set_transformer",
          deepsets_vs_set_transformer.DeepSetsVsSetTransformerConfig,
          deepsets_vs_set_transformer.run,
          summary="Deep Sets vs Set Transformer on 'is any pair closer than r?'",
          source="Zaheer et al. 2017; Lee et al. 2019", check=_check_sets)
def deepsets_metrics(result: deepsets_vs_set_transformer.DeepSetsVsSetTransformerResult
                     ) -> dict[str, float]:
    """Held-out accuracy of each model, the Set Transformer's lead, and the radius r."""
    out = {f"accuracy_{name}": float(acc) for name, acc in sorted(result.accuracy.items())}
    out["set_transformer_lead"] = float(result.accuracy["set_transformer"]
                                        - result.accuracy["deepsets"])
    out["radius"] = float(result.radius)
    return out


@register("dt_stitching", robotics_dt.StitchingConfig, robotics_dt.run_stitching,
          summary="Decision Transformer vs offline Q-learning on a trajectory-stitching grid",
          source="Chen et al. 2021; 000 §8.3.8", check=_check_stitching)
def dt_stitching_metrics(result: robotics_dt.StitchingResult) -> dict[str, float]:
    """Return of the DT at the stitched target and of Q-learning, whether each reached C (the
    stitched goal, 1 or 0), the best return in the data from A and Q-learning's value at A."""
    return {
        "dt_return": float(result.dt.ret),
        "q_learning_return": float(result.q_learning.ret),
        "dt_reached_c": float(result.dt.reached == "C"),
        "q_learning_reached_c": float(result.q_learning.reached == "C"),
        "best_data_return_at_a": float(max(result.data_returns_at_a)),
        "q_value_at_a": float(result.q_value_at_a),
    }


def experiment(name: str) -> SweepExperiment:
    """The registered experiment ``name`` (``ValueError`` naming the known ones otherwise)."""
    return SWEEPS.get(name)


def describe() -> list[Mapping[str, Any]]:
    """Every experiment with its summary, source, seed field and sweepable fields (for
    ``tmath sweep --list``)."""
    return [{"name": e.name, "summary": e.summary, "source": e.source,
             "seed_field": e.seed_field,
             "fields": {k: type_name(v) for k, v in sweepable_fields(e).items()}}
            for e in SWEEPS.values()]
