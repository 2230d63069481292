"""A parameter sweep of one experiment: plan, run (here or on Ray), store, summarise, draw.

A sweep is the cartesian product of ``--grid`` values of an experiment's config fields
(``experiments/sweeps.py``) times a list of seeds; every (grid point, seed) is one task, whose
config is the experiment's size preset for that seed with the point's fields replaced
(``dataclasses.replace``). Every point's config is built, and so validated, before anything
runs (:func:`plan_sweep`). The recipe of issue 19 is the task-diversity grid of Raventos et al.
2023 ("Pretraining task diversity and the emergence of non-Bayesian in-context learning for
regression", NeurIPS) on the in-context regression setting of Garg et al. 2022.

Execution. Inline, the tasks run one after another in this process; on Ray each task is
:func:`run_task` in a worker process (``ray.remote`` with ``max_retries`` for a worker that
died, never for an exception of the run), at most ``workers`` in flight (with an ``address``
and one worker: every task is submitted and the cluster schedules them), collected with
``ray.wait``. Both call :func:`run_task`, which sets torch's intra-op threads and runs the
experiment from its seeded generators (no global RNG), so the metrics are equal seed by seed
wherever the tasks ran.

Output in the sweep's folder:

* ``rows.jsonl``: one JSON line per finished task, appended and fsync-ed when it finishes (in
  completion order; a crash keeps the finished rows). A new sweep truncates it.
* ``results.parquet``: the rows sorted by (point, seed). Columns: ``point`` (the grid point's
  index), the grid fields, ``seed``, every metric (float64; null where a row lacks it, NaN
  where the run produced one) and ``seconds`` (the task's wall time). A tuple-valued field is
  a Parquet list column (``[8, 16]`` for ``(8, 16)``; in ``rows.jsonl`` a JSON list). The
  file carries its meaning as Parquet key-value metadata (the keys of :data:`META_KEYS`,
  every value a JSON text): the store's schema, the experiment (name, summary, source), the
  size, the seeds, the grid and its field types, the fixed settings (every other field of the
  size preset's config for the first seed), the metrics with their description (the
  experiment's metrics docstring) and the project version; every column has a
  ``description`` in its field metadata. :func:`read_results` reads such a file and also a
  store of schema 1 (no metadata, tuples as ``"8;16"`` text, their types from the
  ``sweep.json`` beside it).
* ``sweep.json``: the sweep (experiment, size, seeds, grid, tasks, executor, wall seconds) and,
  per point, every metric's mean, std (n - 1 in the denominator; 0 for one seed), min and max
  over the seeds (non-finite values left out; a non-finite number is written as null).
* ``sweep.png``: every metric (one panel each) against the first grid field: the mean over
  seeds, a band from the min to the max over seeds and every seed as a dot; one line per
  combination of the other grid fields; log x when the values are positive and span > 10x.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from transformer_math import safe_write

MAX_TASKS = 100_000
"""Most tasks (grid points x seeds) one sweep runs."""
MAX_RETRIES = 3
"""A Ray task whose worker process died is run again up to this many times."""
SCHEMA = "transformer-math/sweep/2"
"""Schema 2 (issue 35): tuples as lists and Parquet key-value metadata; 1: tuples as text."""
OLD_SCHEMA = "transformer-math/sweep/1"
META_PREFIX = "transformer_math."
META_KEYS = ("schema", "experiment", "size", "seeds", "grid", "grid_types", "fixed_settings",
             "metrics", "columns", "project_version")
"""The Parquet key-value metadata of ``results.parquet``, each under ``transformer_math.<key>``
and holding a JSON text."""
ROWS_FILE, PARQUET_FILE, SUMMARY_FILE, FIGURE_FILE = (
    "rows.jsonl", "results.parquet", "sweep.json", "sweep.png")

Kind = tuple[type, type | None]
Progress = Callable[[int, int], None]
"""``progress(done, total)``: called when a task finished."""


class SweepError(ValueError):
    """A user's mistake in a sweep's arguments; the message names the option."""


# ------------------------------------------------------------------------------ grid values
def parse_scalar(text: str, kind: type) -> Any:
    """``text`` as an int, float (finite), bool (``true``/``false``) or str; ValueError else."""
    text = text.strip()
    if kind is bool:
        if text.lower() not in ("true", "false"):
            raise ValueError(f"expected true or false, got {text!r}")
        return text.lower() == "true"
    if kind is int:
        try:
            return int(text)
        except ValueError:
            raise ValueError(f"expected an integer, got {text!r}") from None
    if kind is float:
        try:
            value = float(text)
        except ValueError:
            raise ValueError(f"expected a number, got {text!r}") from None
        if not math.isfinite(value):
            raise ValueError(f"expected a finite number, got {text!r}")
        return value
    if not text:
        raise ValueError("expected a non-empty string")
    return text


def parse_value(text: str, kind: Kind) -> Any:
    """One grid value of a field of type ``kind``: a scalar, or for a tuple field the elements
    separated by ``;`` (a single element ``8`` is the 1-tuple ``(8,)``)."""
    base, element = kind
    if base is tuple:
        assert element is not None
        return tuple(parse_scalar(part, element) for part in text.split(";"))
    return parse_scalar(text, base)


def format_value(value: Any) -> Any:
    """A grid value as a table cell: tuples as ``"8;16"`` text (the ``--grid`` syntax), other
    values as they are."""
    if isinstance(value, tuple):
        return ";".join(str(v).lower() if isinstance(v, bool) else str(v) for v in value)
    return value


def json_value(value: Any) -> Any:
    """A grid value for JSON: tuples as lists."""
    return list(value) if isinstance(value, tuple) else value


def parse_grid(specs: Sequence[str], fields: Mapping[str, Kind], *, seed_field: str,
               experiment: str) -> dict[str, tuple[Any, ...]]:
    """``["name=v1,v2", ...]`` -> ``{name: (v1, v2)}`` in the order given; SweepError on an
    unknown, repeated or seed field, an empty or repeated value or one that does not parse."""
    grid: dict[str, tuple[Any, ...]] = {}
    for spec in specs:
        name, sep, values = spec.partition("=")
        name = name.strip()
        if not sep or not name:
            raise SweepError(f"--grid must be NAME=V1,V2,..., got {spec!r}")
        if name == seed_field:
            raise SweepError(f"--grid: {name!r} is the seed field of {experiment}; give the "
                             f"seeds with --seed and --seeds")
        if name not in fields:
            raise SweepError(f"--grid: {experiment} has no sweepable field {name!r}; fields: "
                             f"{', '.join(fields)}")
        if name in grid:
            raise SweepError(f"--grid: field {name!r} is given twice")
        grid[name] = _parse_values(name, values, fields[name])
    return grid


def _parse_values(name: str, values: str, kind: Kind) -> tuple[Any, ...]:
    if not values.strip():
        raise SweepError(f"--grid {name}: no values given")
    parsed = []
    for text in values.split(","):
        try:
            parsed.append(parse_value(text, kind))
        except ValueError as exc:
            raise SweepError(f"--grid {name}={values}: {exc} for a field of type "
                             f"{_type_name(kind)}") from None
    if len(set(parsed)) != len(parsed):
        raise SweepError(f"--grid {name}={values}: a value is repeated")
    return tuple(parsed)


def _type_name(kind: Kind) -> str:
    base, element = kind
    return base.__name__ if element is None else f"tuple[{element.__name__}, ...]"


# ------------------------------------------------------------------------------ planning
@dataclass(frozen=True)
class SweepPlan:
    """What a sweep runs: the experiment, size, seeds and grid; ``points`` is the cartesian
    product of the grid (first field slowest), each point a dict field -> value."""

    experiment: str
    size: str
    seeds: tuple[int, ...]
    grid: dict[str, tuple[Any, ...]]
    points: tuple[dict[str, Any], ...]

    @property
    def tasks(self) -> list[tuple[int, int]]:
        """Every (point index, seed), points first."""
        return [(p, s) for p in range(len(self.points)) for s in self.seeds]

    def label(self, index: int) -> str:
        """``"num_tasks=8, lr=0.01"`` (``"preset"`` without a grid)."""
        point = self.points[index]
        return ", ".join(f"{k}={format_value(v)}" for k, v in point.items()) or "preset"


def plan_sweep(experiment: str, grid_specs: Sequence[str], *, size: str, seed: int,
               seeds: int) -> SweepPlan:
    """Parse the grid, count the tasks (at most :data:`MAX_TASKS`) and build every point's
    config for the first seed, so that a value the config rejects (its ``__post_init__``, or
    the experiment's own check) is an error before anything runs."""
    from transformer_math.experiments.sweeps import SWEEPS, sweepable_fields

    if experiment not in SWEEPS:
        raise SweepError(f"EXPERIMENT must be one of {', '.join(SWEEPS)}, got {experiment!r}")
    entry = SWEEPS.get(experiment)
    grid = parse_grid(grid_specs, sweepable_fields(entry), seed_field=entry.seed_field,
                      experiment=experiment)
    count = math.prod(len(v) for v in grid.values()) * seeds
    if count > MAX_TASKS:
        raise SweepError(f"--grid and --seeds make {count} tasks, more than {MAX_TASKS}")
    points = tuple(dict(zip(grid, combo, strict=True))
                   for combo in itertools.product(*grid.values()))
    for point in points:
        try:
            entry.validate(dataclasses.replace(entry.preset(size, seed), **point))
        except (ValueError, TypeError) as exc:
            where = ", ".join(f"{k}={format_value(v)}" for k, v in point.items()) or "preset"
            raise SweepError(f"--grid {where}: {experiment} rejects it: "
                             f"{' '.join(str(exc).split())}") from None
    return SweepPlan(experiment, size, tuple(range(seed, seed + seeds)), grid, points)


# ------------------------------------------------------------------------------ one task
def run_task(experiment: str, size: str, seed: int, point: dict[str, Any],
             threads: int) -> dict[str, Any]:
    """Run one (point, seed) of ``experiment``: ``{"metrics": {...}, "seconds": s}``.

    The config is ``preset(size)(seed)`` with ``point`` replaced; torch runs ``threads``
    intra-op threads during the run (the caller's count is restored after). A module-level
    function of plain arguments, so that a Ray worker can
    run it (the inline executor runs the same function)."""
    from transformer_math.diagnostics.timing import torch_threads
    from transformer_math.experiments.sweeps import SWEEPS

    entry = SWEEPS.get(experiment)
    config = dataclasses.replace(entry.preset(size, seed), **point)
    with torch_threads(threads):  # restored after the run: no global leak
        start = time.perf_counter()
        result = entry.run(config)
        seconds = time.perf_counter() - start
    metrics = {k: float(v) for k, v in entry.metrics(result).items()}
    return {"metrics": metrics, "seconds": seconds}


# ------------------------------------------------------------------------------ running
@dataclass
class SweepRun:
    """A finished sweep: its plan, rows (sorted by point and seed) and how it executed."""

    plan: SweepPlan
    rows: list[dict[str, Any]]
    executor: str
    workers: int
    address: str | None
    threads: int
    wall_seconds: float
    metrics: list[str] = field(default_factory=list)


def make_row(plan: SweepPlan, point: int, seed: int, payload: Mapping[str, Any]
             ) -> dict[str, Any]:
    """One table row: ``point``, the grid fields (tuples as lists), ``seed``, the metrics,
    ``seconds``."""
    row: dict[str, Any] = {"point": point}
    row.update({k: json_value(v) for k, v in plan.points[point].items()})
    row["seed"] = seed
    row.update(payload["metrics"])
    row["seconds"] = payload["seconds"]
    return row


class RowLog:
    """``rows.jsonl``: truncated when the sweep starts, one line appended and fsync-ed per
    finished task (a non-finite metric is written as null)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        safe_write.write_text(path, "")  # a link there is replaced, never followed

    def append(self, row: Mapping[str, Any]) -> None:
        line = json.dumps({k: _finite_or_none(v) for k, v in row.items()}, allow_nan=False)
        safe_write.append_line(self.path, line)


def _finite_or_none(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def run_sweep(plan: SweepPlan, out: Path, *, workers: int = 1, address: str | None = None,
              threads: int = 1, progress: Progress | None = None) -> SweepRun:
    """Run every task of ``plan`` (inline when ``workers == 1`` and no ``address``, else on
    Ray), append each row to ``out/rows.jsonl`` as it finishes, then write
    ``results.parquet``, ``sweep.json`` and ``sweep.png`` into ``out``."""
    start = time.perf_counter()
    executor = "inline" if workers == 1 and address is None else "ray"
    log = RowLog(out / ROWS_FILE)
    tasks = plan.tasks
    rows: dict[tuple[int, int], dict[str, Any]] = {}

    def finished(task: tuple[int, int], payload: Mapping[str, Any]) -> None:
        rows[task] = make_row(plan, *task, payload)
        log.append(rows[task])
        if progress is not None:
            progress(len(rows), len(tasks))

    if executor == "inline":
        _run_inline(plan, tasks, threads, finished)
    else:
        _run_ray(plan, tasks, workers=workers, address=address, threads=threads,
                 finished=finished)
    ordered = [rows[t] for t in sorted(rows)]
    run = SweepRun(plan, ordered, executor, workers, address, threads,
                   time.perf_counter() - start, metric_names(plan, ordered))
    write_outputs(run, out)
    return run


def _run_inline(plan: SweepPlan, tasks: Sequence[tuple[int, int]], threads: int,
                finished: Callable[[tuple[int, int], Mapping[str, Any]], None]) -> None:
    for point, seed in tasks:  # run_task restores the thread count itself
        finished((point, seed), run_task(plan.experiment, plan.size, seed,
                                         plan.points[point], threads))


def _run_ray(plan: SweepPlan, tasks: Sequence[tuple[int, int]], *, workers: int,
             address: str | None, threads: int,
             finished: Callable[[tuple[int, int], Mapping[str, Any]], None]) -> None:
    """Ray tasks (``executors.map_on_ray``), at most ``workers`` in flight (all of them with an
    address and one worker); raises ``executors.ExecutorError`` when Ray cannot start or the
    cluster is unreachable."""
    from transformer_math.execution.executors import map_on_ray

    jobs = [((point, seed), (plan.experiment, plan.size, seed, plan.points[point], threads))
            for point, seed in tasks]
    map_on_ray(run_task, jobs, workers=workers, address=address, finished=finished)


# ------------------------------------------------------------------------------ outputs
def metric_names(plan: SweepPlan, rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """The metric columns, in the order they first appear (rows of different points may carry
    different metrics, e.g. one per arm of the arms they train)."""
    fixed = {"point", "seed", "seconds", *plan.grid}
    names: dict[str, None] = {}
    for row in rows:
        names.update((k, None) for k in row if k not in fixed)
    return list(names)


def write_outputs(run: SweepRun, out: Path) -> None:
    """``results.parquet``, ``sweep.json`` and ``sweep.png`` of a finished sweep."""
    write_parquet(run, out / PARQUET_FILE)
    safe_write.write_text(out / SUMMARY_FILE,
                          json.dumps(summary(run), indent=1, allow_nan=False) + "\n")
    draw_sweep(run, out / FIGURE_FILE)


def write_parquet(run: SweepRun, path: Path) -> None:
    """The rows as a Parquet table (one row per (point, seed)) with the key-value metadata of
    :func:`store_metadata` (see the module docstring)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    plan = run.plan
    meta = store_metadata(run)
    described = meta["columns"]
    arrays: dict[str, pa.Array] = {
        "point": pa.array([r["point"] for r in run.rows], type=pa.int64())}
    for name, values in plan.grid.items():
        arrays[name] = pa.array([r[name] for r in run.rows], type=_arrow_type(values))
    arrays["seed"] = pa.array([r["seed"] for r in run.rows], type=pa.int64())
    for name in run.metrics:
        arrays[name] = pa.array([r.get(name) for r in run.rows], type=pa.float64())
    arrays["seconds"] = pa.array([r["seconds"] for r in run.rows], type=pa.float64())
    fields = [pa.field(name, array.type, metadata={"description": described[name]})
              for name, array in arrays.items()]
    schema = pa.schema(fields, metadata={
        META_PREFIX + key: json.dumps(meta[key], allow_nan=False) for key in META_KEYS})
    table = pa.Table.from_arrays(list(arrays.values()), schema=schema)
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink)
    safe_write.write_bytes(path, sink.getvalue().to_pybytes())


def store_metadata(run: SweepRun) -> dict[str, Any]:
    """What ``results.parquet`` means, key by key (:data:`META_KEYS`): plain JSON values."""
    from transformer_math import __version__
    from transformer_math.experiments.sweeps import SWEEPS, sweepable_fields

    plan = run.plan
    entry = SWEEPS.get(plan.experiment)
    kinds = sweepable_fields(entry)
    config = entry.preset(plan.size, plan.seeds[0])
    skip = {*plan.grid, entry.seed_field}
    fixed = {f.name: _json_safe(_plain(getattr(config, f.name)))
             for f in dataclasses.fields(config) if f.name not in skip}
    doc = " ".join((entry.metrics.__doc__ or "").split())
    columns = {"point": "index of the grid point (sweep.json's by_point)"}
    columns |= {k: f"grid field {k} ({_type_name(kinds[k])})" for k in plan.grid}
    columns["seed"] = f"the run's seed (the config's {entry.seed_field})"
    columns |= {m: f"metric {m} (float64; null: the row lacks it; NaN: the run gave NaN)"
                for m in run.metrics}
    columns["seconds"] = "the task's wall time in seconds"
    return {
        "schema": SCHEMA,
        "experiment": {"name": plan.experiment, "summary": entry.summary,
                       "source": entry.source, "config": type(config).__qualname__},
        "size": plan.size, "seeds": list(plan.seeds),
        "grid": {k: [json_value(v) for v in vs] for k, vs in plan.grid.items()},
        "grid_types": {k: _type_name(kinds[k]) for k in plan.grid},
        "fixed_settings": fixed,
        "metrics": {"names": list(run.metrics), "description": doc},
        "columns": columns,
        "project_version": __version__,
    }


def _plain(value: Any) -> Any:
    """A config value as plain JSON data: dataclasses as dicts, tuples as lists, other objects
    (enums, paths) as their text."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return str(value)


def _arrow_type(values: Sequence[Any]) -> Any:
    import pyarrow as pa

    first = values[0]
    if isinstance(first, tuple):
        return pa.list_(_scalar_arrow_type(first[0]))
    return _scalar_arrow_type(first)


def _scalar_arrow_type(value: Any) -> Any:
    import pyarrow as pa

    if isinstance(value, str):
        return pa.string()
    if isinstance(value, bool):
        return pa.bool_()
    return pa.int64() if isinstance(value, int) else pa.float64()


@dataclass(frozen=True)
class SweepTable:
    """A stored sweep read back: its rows (tuple fields as lists) and its metadata (the keys of
    :data:`META_KEYS` for schema 2; ``{"schema": OLD_SCHEMA, ...}`` with what ``sweep.json``
    gives for schema 1)."""

    rows: list[dict[str, Any]]
    metadata: dict[str, Any]


def read_results(path: Path) -> SweepTable:
    """Read ``results.parquet`` (``path``: the file or its sweep folder) of either schema.

    Schema 2 carries its metadata; for schema 1 (no metadata) the grid types come from the
    ``sweep.json`` beside it when there is one, and a tuple field's ``"8;16"`` text is parsed
    back into ``[8, 16]`` (without ``sweep.json`` the text is left as it is). ``SweepError``
    names the file when it is missing or not a sweep table."""
    import pyarrow.parquet as pq

    path = Path(path)
    if path.is_dir():
        path = path / PARQUET_FILE
    if not path.is_file():
        raise SweepError(f"no sweep table at {path}")
    try:
        table = pq.read_table(path)
    except Exception as exc:  # pyarrow raises several types for a file that is not Parquet
        raise SweepError(f"{path} is not a Parquet file: {exc}") from None
    raw = table.schema.metadata or {}
    meta = {k.decode()[len(META_PREFIX):]: json.loads(v) for k, v in raw.items()
            if k.decode().startswith(META_PREFIX)}
    rows = table.to_pylist()
    if "schema" in meta:
        if meta["schema"] != SCHEMA:
            raise SweepError(f"{path}: unknown sweep schema {meta['schema']!r} "
                             f"(this version reads {SCHEMA} and {OLD_SCHEMA})")
        return SweepTable(rows, meta)
    if not {"point", "seed", "seconds"} <= set(table.column_names):
        raise SweepError(f"{path} is not a sweep table (no point/seed/seconds columns)")
    meta = {"schema": OLD_SCHEMA}
    summary_path = path.parent / SUMMARY_FILE
    if summary_path.is_file():
        doc = json.loads(summary_path.read_text())
        meta |= {k: doc[k] for k in ("experiment", "size", "seed_values", "grid",
                                     "grid_types", "metrics") if k in doc}
        for name, type_text in doc.get("grid_types", {}).items():
            if type_text.startswith("tuple["):
                element = _ELEMENT_TYPES[type_text[len("tuple["):].split(",")[0]]
                for row in rows:
                    if isinstance(row.get(name), str):
                        row[name] = list(parse_value(row[name], (tuple, element)))
    return SweepTable(rows, meta)


_ELEMENT_TYPES: dict[str, type] = {"int": int, "float": float, "bool": bool, "str": str}


def point_stats(values: Sequence[Any]) -> dict[str, Any]:
    """Mean, std (n - 1; 0 for one value), min, max and n of the finite ``values``."""
    xs = [float(v) for v in values if v is not None and math.isfinite(v)]
    if not xs:
        return {"mean": None, "std": None, "min": None, "max": None, "n": 0}
    mean = math.fsum(xs) / len(xs)
    var = math.fsum((x - mean) ** 2 for x in xs) / (len(xs) - 1) if len(xs) > 1 else 0.0
    return {"mean": mean, "std": math.sqrt(var), "min": min(xs), "max": max(xs), "n": len(xs)}


def summary(run: SweepRun) -> dict[str, Any]:
    """The ``sweep.json`` document (see the module docstring)."""
    from transformer_math.experiments.sweeps import SWEEPS, sweepable_fields

    plan = run.plan
    entry = SWEEPS.get(plan.experiment)
    kinds = sweepable_fields(entry)
    points = []
    for index, point in enumerate(plan.points):
        mine = [r for r in run.rows if r["point"] == index]
        points.append({
            "point": index, "label": plan.label(index),
            "values": {k: json_value(v) for k, v in point.items()},
            "seeds": [r["seed"] for r in mine],
            "stats": {m: point_stats([r.get(m) for r in mine]) for m in run.metrics},
            "seconds": point_stats([r["seconds"] for r in mine]),
        })
    return {
        "schema": SCHEMA, "experiment": plan.experiment, "source": entry.source,
        "size": plan.size, "seed": plan.seeds[0], "seeds": len(plan.seeds),
        "seed_values": list(plan.seeds), "seed_field": entry.seed_field,
        "grid": {k: [json_value(v) for v in vs] for k, vs in plan.grid.items()},
        "grid_types": {k: _type_name(kinds[k]) for k in plan.grid},
        "points": len(plan.points), "tasks": len(run.rows), "executor": run.executor,
        "workers": run.workers, "address": run.address, "threads": run.threads,
        "wall_seconds": run.wall_seconds,
        "task_seconds": math.fsum(r["seconds"] for r in run.rows),
        "metrics": list(run.metrics),
        "files": {"rows": ROWS_FILE, "parquet": PARQUET_FILE, "summary": SUMMARY_FILE,
                  "figure": FIGURE_FILE},
        "by_point": [_json_safe(p) for p in points],
    }


def _json_safe(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _json_safe(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_json_safe(v) for v in value]
    return _finite_or_none(value)


# ------------------------------------------------------------------------------ figure
def _x_positions(plan: SweepPlan) -> tuple[str, list[float], list[str] | None, bool]:
    """The x axis: (label, x of every value of the first grid field, tick labels for a
    categorical axis or None, log scale)."""
    if not plan.grid:
        return "preset", [0.0], ["preset"], False
    name, values = next(iter(plan.grid.items()))
    numbers = [_as_number(v) for v in values]
    if any(x is None for x in numbers):
        return name, [float(i) for i in range(len(values))], \
            [str(format_value(v)) for v in values], False
    xs = [float(x) for x in numbers if x is not None]
    log = min(xs) > 0 and max(xs) > 10 * min(xs)
    return name, xs, None, log


def _as_number(value: Any) -> float | None:
    if isinstance(value, tuple) and len(value) == 1:
        value = value[0]
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _series(run: SweepRun, metric: str, xs: list[float]
            ) -> dict[str, list[tuple[float, list[float]]]]:
    """line label -> [(x, finite values over seeds)] for one metric; a line per combination of
    the grid fields after the first (those with one value are left out of the labels)."""
    plan = run.plan
    first = next(iter(plan.grid), None)
    first_values = list(plan.grid[first]) if first is not None else [None]
    lines: dict[str, list[tuple[float, list[float]]]] = {}
    for index, point in enumerate(plan.points):
        rest = ", ".join(f"{k}={format_value(v)}" for k, v in point.items()
                         if k != first and len(plan.grid[k]) > 1)
        x = xs[first_values.index(point[first])] if first is not None else xs[0]
        values = [float(r[metric]) for r in run.rows if r["point"] == index
                  and r.get(metric) is not None and math.isfinite(r[metric])]
        lines.setdefault(rest, []).append((x, values))
    return lines


def draw_sweep(run: SweepRun, path: Path) -> None:
    """The sweep's PNG: a panel per metric against the first grid field (module docstring)."""
    from matplotlib.figure import Figure

    name, xs, ticks, log = _x_positions(run.plan)
    metrics = run.metrics or ["seconds"]
    ncols = min(3, len(metrics))
    nrows = math.ceil(len(metrics) / ncols)
    fig = Figure(figsize=(4.4 * ncols, 3.3 * nrows), layout="constrained")
    axes = fig.subplots(nrows, ncols, squeeze=False).ravel()
    for ax, metric in zip(axes, metrics, strict=False):
        _draw_metric(ax, _series(run, metric, xs))
        ax.set_title(metric, fontsize=9)
        ax.set_xlabel(name, fontsize=8)
        if log:
            ax.set_xscale("log", base=2 if all(_is_power_of_two(x) for x in xs) else 10)
        if ticks is not None:
            ax.set_xticks(xs, ticks, fontsize=7)
        ax.tick_params(labelsize=7)
    for ax in axes[len(metrics):]:
        ax.set_visible(False)
    plan = run.plan
    fig.suptitle(f"{plan.experiment} ({plan.size}), {len(plan.seeds)} seed(s)", fontsize=10)
    safe_write.save_figure(fig, path, format="png", dpi=100)


def _is_power_of_two(x: float) -> bool:
    return x >= 1 and float(x).is_integer() and int(x) & (int(x) - 1) == 0


def _draw_metric(ax: Any, lines: Mapping[str, list[tuple[float, list[float]]]]) -> None:
    drawn = 0
    for i, (label, points) in enumerate(lines.items()):
        color = f"C{i % 10}"
        points = sorted((x, v) for x, v in points if v)
        if not points:
            continue
        drawn += 1
        x = [p[0] for p in points]
        ax.plot(x, [math.fsum(v) / len(v) for _, v in points], "-o", color=color, ms=3,
                lw=1.2, label=label or None)
        ax.fill_between(x, [min(v) for _, v in points], [max(v) for _, v in points],
                        color=color, alpha=0.2, lw=0)
        dots = [(xi, y) for xi, v in points for y in v]
        ax.scatter([d[0] for d in dots], [d[1] for d in dots], s=6, color=color, alpha=0.7)
    if drawn and len(lines) > 1:
        ax.legend(fontsize=6)
    if not drawn:
        ax.text(0.5, 0.5, "no finite values", ha="center", va="center",
                transform=ax.transAxes, fontsize=8)
