"""`tmath sweep`: grid parsing, the stored rows (Parquet, JSON lines, sweep.json, figure),
one-line errors, crash-safe rows, determinism and Ray equal to inline seed by seed."""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import typer
from typer.testing import CliRunner

from transformer_math.commands.sweep import register
from transformer_math.execution import sweep as sweep_module
from transformer_math.execution.sweep import (
    SweepError,
    format_value,
    parse_grid,
    parse_value,
    plan_sweep,
)
from transformer_math.experiments import sweeps
from transformer_math.experiments.sweeps import SWEEPS, sweepable_fields

ICL_GD = ["icl_gd", "--size", "tiny", "--grid", "steps=20,40", "--seeds", "2"]
"""The small real sweep: 2 points x 2 seeds of a tiny linear-attention run, ~1 s a task."""
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _app() -> typer.Typer:
    app = typer.Typer()
    register(app)

    @app.command("noop")
    def noop() -> None:  # a second command keeps typer in multi-command mode
        """Unused."""

    return app


def _invoke(argv: list[str]) -> Any:
    return CliRunner(env={"COLUMNS": "160", "NO_COLOR": "1"}).invoke(_app(), ["sweep", *argv])


def _rows(folder: Path) -> list[dict[str, Any]]:
    return pq.read_table(folder / "results.parquet").to_pylist()


def _without_seconds(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in r.items() if k != "seconds"} for r in rows]


@pytest.fixture(scope="module")
def inline_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("inline")
    res = _invoke([*ICL_GD, "--out", str(out), "--json"])
    assert res.exit_code == 0, res.output
    (out / "stdout.json").write_text(res.stdout)
    return out


# ------------------------------------------------------------------------------ a toy experiment
@dataclass(frozen=True)
class ToyConfig:
    """A config with every field type a grid handles; the run is arithmetic (no training)."""

    a: int = 1
    b: float = 0.5
    flag: bool = False
    name: str = "x"
    widths: tuple[int, ...] = (4,)
    fail_at: int = -1
    seed: int = 0

    def __post_init__(self) -> None:
        if self.a < 0:
            raise ValueError(f"a must be >= 0, got {self.a}")

    @staticmethod
    def tiny(seed: int = 0) -> ToyConfig:
        return ToyConfig(seed=seed)

    default = tiny
    large = tiny


def _toy_run(config: ToyConfig, progress: Any = None) -> dict[str, float]:
    if config.fail_at == config.seed:
        raise RuntimeError("the toy run fails here")
    return {"value": config.a * config.b + config.seed + sum(config.widths),
            "flag": float(config.flag), "nan": math.nan}


@pytest.fixture
def toy() -> Iterator[str]:
    sweeps.register("toy_sweep", ToyConfig, _toy_run, summary="toy", source="tests")(dict)
    yield "toy_sweep"
    SWEEPS.remove("toy_sweep")


# ------------------------------------------------------------------------------ grid values
def test_grid_values_follow_the_field_types(toy: str) -> None:
    fields = sweepable_fields(SWEEPS.get(toy))
    assert "seed" not in fields and fields["widths"] == (tuple, int)
    assert parse_value("8", fields["widths"]) == (8,)
    assert parse_value("8;16", fields["widths"]) == (8, 16)
    assert parse_value("True", fields["flag"]) is True
    assert parse_value("1e-3", fields["b"]) == 1e-3
    assert format_value((8, 16)) == "8;16" and format_value((8,)) == "8"
    grid = parse_grid(["a=1,2", "widths=4;8,16"], fields, seed_field="seed", experiment=toy)
    assert grid == {"a": (1, 2), "widths": ((4, 8), (16,))}
    for bad in ("a=1.5", "b=inf", "flag=yes", "widths=4;x", "a=", "a=1,1", "seed=1", "zz=1",
                "noequals"):
        with pytest.raises(SweepError):
            parse_grid([bad], fields, seed_field="seed", experiment=toy)


def test_plan_is_the_cartesian_product_and_every_config_is_built_first(toy: str) -> None:
    plan = plan_sweep(toy, ["a=1,2,3", "name=p,q"], size="tiny", seed=5, seeds=2)
    assert plan.seeds == (5, 6) and len(plan.points) == 6 and len(plan.tasks) == 12
    assert plan.points[1] == {"a": 1, "name": "q"} and plan.label(1) == "a=1, name=q"
    with pytest.raises(SweepError, match="rejects it: a must be >= 0"):
        plan_sweep(toy, ["a=1,-1"], size="tiny", seed=0, seeds=1)
    with pytest.raises(SweepError, match="more than 100000"):
        plan_sweep(toy, ["a=" + ",".join(map(str, range(1001)))], size="tiny", seed=0,
                   seeds=100)


def test_every_registered_preset_builds_and_sets_one_seed() -> None:
    assert {"task_diversity", "icl_gd", "induction_heads"} <= set(SWEEPS)
    assert len(SWEEPS) >= 5
    for entry in SWEEPS.values():
        for size in ("tiny", "default", "large"):
            config = entry.preset(size, 7)
            entry.validate(config)
            assert getattr(config, entry.seed_field) in (7, (7,)), (entry.name, size)


# ------------------------------------------------------------------------------ outputs
def test_toy_sweep_writes_rows_table_summary_and_figure(toy: str, tmp_path: Path) -> None:
    res = _invoke([toy, "--grid", "a=1,2", "--grid", "widths=4;8,16", "--seeds", "2",
                   "--seed", "3", "--out", str(tmp_path)])
    assert res.exit_code == 0, res.output
    rows = _rows(tmp_path)
    assert [(r["point"], r["a"], r["widths"], r["seed"]) for r in rows] == [
        (0, 1, [4, 8], 3), (0, 1, [4, 8], 4), (1, 1, [16], 3), (1, 1, [16], 4),
        (2, 2, [4, 8], 3), (2, 2, [4, 8], 4), (3, 2, [16], 3), (3, 2, [16], 4)]
    assert rows[0]["value"] == 1 * 0.5 + 3 + 12 and math.isnan(rows[0]["nan"])
    lines = [json.loads(x) for x in (tmp_path / "rows.jsonl").read_text().splitlines()]
    assert lines[0]["nan"] is None and len(lines) == 8
    assert [r["value"] for r in rows] == [r["value"] for r in lines]  # inline: in order
    doc = json.loads((tmp_path / "sweep.json").read_text())
    assert doc["grid"] == {"a": [1, 2], "widths": [[4, 8], [16]]} and doc["tasks"] == 8
    stats = doc["by_point"][3]["stats"]
    assert stats["value"]["mean"] == pytest.approx(2 * 0.5 + 3.5 + 16)
    assert stats["value"]["std"] == pytest.approx(math.sqrt(0.5))
    assert stats["nan"] == {"mean": None, "std": None, "min": None, "max": None, "n": 0}
    assert (tmp_path / "sweep.png").read_bytes()[:8] == PNG_MAGIC
    assert "a=2, widths=16" in res.stdout and "± 0.71" in res.stdout


def test_the_table_carries_its_meaning_as_parquet_metadata(toy: str, tmp_path: Path) -> None:
    res = _invoke([toy, "--grid", "a=1,2", "--grid", "widths=4;8,16", "--seeds", "2",
                   "--size", "tiny", "--out", str(tmp_path)])
    assert res.exit_code == 0, res.output
    schema = pq.read_schema(tmp_path / "results.parquet")
    assert pa.types.is_list(schema.field("widths").type)
    assert schema.field("widths").type.value_type == pa.int64()
    raw = {k.decode(): json.loads(v) for k, v in schema.metadata.items()
           if k.startswith(b"transformer_math.")}
    assert set(raw) == {f"transformer_math.{k}" for k in sweep_module.META_KEYS}
    assert raw["transformer_math.schema"] == "transformer-math/sweep/2"
    assert raw["transformer_math.experiment"]["name"] == toy
    assert raw["transformer_math.size"] == "tiny" and raw["transformer_math.seeds"] == [0, 1]
    assert raw["transformer_math.grid"] == {"a": [1, 2], "widths": [[4, 8], [16]]}
    assert raw["transformer_math.grid_types"]["widths"] == "tuple[int, ...]"
    fixed = raw["transformer_math.fixed_settings"]  # every field not swept, not the seed
    assert fixed == {"b": 0.5, "flag": False, "name": "x", "fail_at": -1}
    assert raw["transformer_math.metrics"]["names"] == ["value", "flag", "nan"]
    assert raw["transformer_math.project_version"]
    assert b"grid field widths" in schema.field("widths").metadata[b"description"]
    table = sweep_module.read_results(tmp_path)
    assert table.metadata["experiment"]["name"] == toy
    assert [r["widths"] for r in table.rows] == [[4, 8], [4, 8], [16], [16]] * 2


def test_a_schema_1_store_still_reads(toy: str, tmp_path: Path) -> None:
    pq.write_table(pa.table({"point": [0, 1], "widths": ["4;8", "16"], "seed": [0, 0],
                             "value": [1.0, 2.0], "seconds": [0.1, 0.1]}),
                   tmp_path / "results.parquet")
    bare = sweep_module.read_results(tmp_path / "results.parquet")
    assert bare.metadata == {"schema": "transformer-math/sweep/1"}
    assert [r["widths"] for r in bare.rows] == ["4;8", "16"]  # no sweep.json: text kept
    (tmp_path / "sweep.json").write_text(json.dumps({
        "schema": "transformer-math/sweep/1", "experiment": toy, "size": "tiny",
        "grid": {"widths": [[4, 8], [16]]}, "grid_types": {"widths": "tuple[int, ...]"}}))
    table = sweep_module.read_results(tmp_path)
    assert [r["widths"] for r in table.rows] == [[4, 8], [16]]
    assert table.metadata["experiment"] == toy
    with pytest.raises(SweepError, match="no sweep table"):
        sweep_module.read_results(tmp_path / "missing")
    (tmp_path / "bad.parquet").write_text("not parquet")
    with pytest.raises(SweepError, match="not a Parquet file"):
        sweep_module.read_results(tmp_path / "bad.parquet")


def test_a_failed_task_keeps_the_finished_rows(toy: str, tmp_path: Path) -> None:
    plan = plan_sweep(toy, ["fail_at=1"], size="tiny", seed=0, seeds=3)
    with pytest.raises(RuntimeError, match="the toy run fails here"):
        sweep_module.run_sweep(plan, tmp_path)
    lines = (tmp_path / "rows.jsonl").read_text().splitlines()
    assert [json.loads(x)["seed"] for x in lines] == [0]
    assert not (tmp_path / "results.parquet").exists()


def test_inline_icl_gd_sweep(inline_run: Path) -> None:
    rows = _rows(inline_run)
    assert [(r["steps"], r["seed"]) for r in rows] == [(20, 0), (20, 1), (40, 0), (40, 1)]
    assert {"cosine", "prediction_rms", "gd_loss", "model_loss", "seconds"} <= set(rows[0])
    assert all(r["seconds"] > 0 for r in rows)
    lines = [json.loads(x) for x in (inline_run / "rows.jsonl").read_text().splitlines()]
    assert _without_seconds(lines) == _without_seconds(rows)
    doc = json.loads((inline_run / "sweep.json").read_text())
    assert json.loads((inline_run / "stdout.json").read_text()) == doc  # --json prints it
    assert (doc["experiment"], doc["size"], doc["seeds"], doc["tasks"], doc["executor"]) == (
        "icl_gd", "tiny", 2, 4, "inline")
    cos = doc["by_point"][1]["stats"]["cosine"]
    assert cos["mean"] == pytest.approx((rows[2]["cosine"] + rows[3]["cosine"]) / 2)
    assert cos["min"] <= cos["mean"] <= cos["max"]
    assert (inline_run / "sweep.png").read_bytes()[:8] == PNG_MAGIC


def test_the_same_sweep_twice_gives_equal_rows(inline_run: Path, tmp_path: Path) -> None:
    res = _invoke([*ICL_GD, "--out", str(tmp_path)])
    assert res.exit_code == 0, res.output
    assert _without_seconds(_rows(tmp_path)) == _without_seconds(_rows(inline_run))


def test_task_diversity_one_m_per_task(tmp_path: Path) -> None:
    """A single value is the 1-tuple (M,); a one-M task equals the multi-M run at that M
    (each M trains from its own seeded generator)."""
    small = ["--grid", "steps=4", "--grid", "eval_prompts=32"]
    res = _invoke(["task_diversity", "--size", "tiny", "--grid", "num_tasks=1,4", *small,
                   "--out", str(tmp_path)])
    assert res.exit_code == 0, res.output
    rows = _rows(tmp_path)
    assert [r["num_tasks"] for r in rows] == [[1], [4]]
    from transformer_math.experiments import task_diversity as td

    both = td.run(dataclasses.replace(td.TaskDiversityConfig.tiny(0), num_tasks=(1, 4),
                                      steps=4, eval_prompts=32))
    assert [r["distance_to_dmmse"] for r in rows] == both.distance_to_dmmse
    assert [r["dmmse_minus_ridge"] for r in rows] == [
        a - b for a, b in zip(both.distance_to_dmmse, both.distance_to_ridge, strict=True)]


@pytest.mark.xdist_group("ray")
def test_ray_rows_equal_inline_rows(inline_run: Path, tmp_path: Path) -> None:
    res = _invoke([*ICL_GD, "--workers", "2", "--out", str(tmp_path)])
    assert res.exit_code == 0, res.output
    assert _without_seconds(_rows(tmp_path)) == _without_seconds(_rows(inline_run))
    assert json.loads((tmp_path / "sweep.json").read_text())["executor"] == "ray"
    assert len((tmp_path / "rows.jsonl").read_text().splitlines()) == 4


# ------------------------------------------------------------------------------ the command line
def test_list_names_the_experiments_and_fields() -> None:
    res = _invoke(["--list"])
    assert res.exit_code == 0 and "task_diversity" in res.stdout and "num_tasks" in res.stdout
    assert _invoke([]).stdout == res.stdout  # EXPERIMENT omitted: the list
    listed = json.loads(_invoke(["--list", "--json"]).stdout)
    entry = next(e for e in listed if e["name"] == "task_diversity")
    assert entry["seed_field"] == "seeds" and entry["fields"]["num_tasks"] == "tuple[int, ...]"


@pytest.mark.parametrize(("argv", "says"), [
    (["nope"], "EXPERIMENT must be one of task_diversity, icl_gd"),
    (["icl_gd", "--grid", "foo=1"], "no sweepable field 'foo'; fields: dim"),
    (["icl_gd", "--grid", "steps=1.5"], "--grid steps=1.5: expected an integer"),
    (["icl_gd", "--grid", "steps=1", "--grid", "steps=2"], "'steps' is given twice"),
    (["icl_gd", "--grid", "seed=1,2"], "the seed field of icl_gd"),
    (["task_diversity", "--grid", "seeds=1"], "the seed field of task_diversity"),
    (["task_diversity", "--grid", "num_tasks=2;x"], "tuple[int, ...]"),
    (["icl_gd", "--grid", "lr=nan"], "expected a finite number"),
    (["icl_gd", "--grid", "steps"], "--grid must be NAME=V1,V2"),
    (["icl_preconditioner", "--size", "tiny", "--grid", "dim=3"], "rejects it: spectrum"),
    (["icl_gd", "--grid", "eval_every=0"], "eval_every must be >= 1"),
    (["icl_gd", "--grid", "steps=" + ",".join(map(str, range(1, 1002))), "--seeds", "100"],
     "more than 100000"),
    (["icl_gd", "--seeds", "0"], "--seeds must be >= 1"),
    (["icl_gd", "--seed", str(2**32)], "--seed must be <= 4294967295"),
    (["icl_gd", "--workers", "0"], "--workers must be >= 1"),
    (["icl_gd", "--threads", "0"], "--threads must be >= 1"),
    (["icl_gd", "--address", "nowhere"], "--address must be HOST:PORT"),
    (["icl_gd", "--size", "huge"], "--size must be one of tiny, default, large"),
    (["icl_gd"], "--out DIR is required"),
])
def test_mistakes_are_one_line_errors(argv: list[str], says: str, tmp_path: Path) -> None:
    out = tmp_path / "out"
    res = _invoke([*argv, *(["--out", str(out)] if argv != ["icl_gd"] else [])])
    lines = [x for x in res.stderr.splitlines() if x.strip()]
    assert res.exit_code == 2, res.output
    assert len(lines) == 1 and says in lines[0] and "Traceback" not in res.output, res.output
    assert not out.exists()  # nothing was written


def test_ray_that_cannot_start_is_a_one_line_error(toy: str, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    from transformer_math.execution import executors

    def refuse(**kwargs: Any) -> None:
        raise executors.ExecutorError("cannot start a local Ray: no room")

    monkeypatch.setattr(executors, "start_ray", refuse)
    res = _invoke([toy, "--workers", "2", "--out", str(tmp_path)])
    lines = [x for x in res.stderr.splitlines() if x.strip()]
    assert res.exit_code == 2 and len(lines) == 1 and "no room" in lines[0], res.output


def test_out_must_be_a_folder(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    res = _invoke([*ICL_GD, "--out", str(tmp_path / "file")])
    assert res.exit_code == 2 and "exists and is not a folder" in res.stderr
