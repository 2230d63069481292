"""Write demonstrations as a LeRobot dataset folder (codebase version v3.0), and record a
scripted expert's episodes into one.

The layout is the one :mod:`.lerobot_format` reads (LeRobot 0.4.4's v3.0; see there): every
episode's frames appended to ``data/chunk-000/file-000.parquet`` (a new file once a file holds
``data_files_size_in_mb`` of arrays, a new chunk every ``chunks_size`` files), one row per
episode in ``meta/episodes/chunk-000/file-000.parquet`` with its data file, row range and
per-episode statistics, ``meta/tasks.parquet`` (``task_index`` and the task text as the pandas
index, so that LeRobot's ``pd.read_parquet`` finds the text where it looks) and
``meta/stats.json`` over all frames. Statistics follow LeRobot's ``compute_stats.py``: per
dimension min, max, mean, std (population, 1/N), count and the quantiles q01, q10, q50, q90,
q99 (exact here, ``numpy.quantile``); an ``image`` feature's are per channel (shape (C, 1, 1))
of the pixels scaled to [0, 1]. Vectors are ``fixed_size_list`` columns of their dtype; images
(``dtype: image``, uint8 (T, H, W, C)) are PNG bytes in a ``{bytes, path}`` struct.

The folder is written into a temporary sibling and swapped in whole
(:func:`transformer_math.safe_write.replacing_folder`) by :meth:`LeRobotWriter.finalize`.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from transformer_math import safe_write
from transformer_math.robotics.datasets.lerobot_format import (
    INFO_PATH,
    NUMERIC_DTYPES,
    STATS_PATH,
    TASKS_PATH_V30,
)

CODEBASE_VERSION = "v3.0"
DATA_PATH = "data/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet"
EPISODES_PATH = "meta/episodes/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet"
VIDEO_PATH = "videos/{video_key}/chunk-{chunk_index:03d}/file-{file_index:03d}.mp4"
CHUNKS_SIZE = 1000
DATA_FILE_MB = 100
QUANTILES = (0.01, 0.10, 0.50, 0.90, 0.99)
FRAME_FEATURES: dict[str, dict[str, Any]] = {
    "timestamp": {"dtype": "float32", "shape": [1], "names": None},
    "frame_index": {"dtype": "int64", "shape": [1], "names": None},
    "episode_index": {"dtype": "int64", "shape": [1], "names": None},
    "index": {"dtype": "int64", "shape": [1], "names": None},
    "task_index": {"dtype": "int64", "shape": [1], "names": None},
}


def feature_stats(values: np.ndarray, dtype: str) -> dict[str, np.ndarray]:
    """min, max, mean, std (1/N), count and quantiles of ``values`` (T, *shape) over frames; an
    image (T, H, W, C) uint8 per channel of pixels / 255, shaped (C, 1, 1) like LeRobot's."""
    if dtype == "image":
        x = values.astype(np.float64).transpose(0, 3, 1, 2) / 255.0  # (T, C, H, W)
        axes: tuple[int, ...] = (0, 2, 3)
        keep = True
    else:
        x = values.astype(np.float64)
        axes, keep = (0,), False
    out = {"min": x.min(axis=axes, keepdims=keep), "max": x.max(axis=axes, keepdims=keep),
           "mean": x.mean(axis=axes, keepdims=keep), "std": x.std(axis=axes, keepdims=keep)}
    for q in QUANTILES:
        out[f"q{round(q * 100):02d}"] = np.quantile(x, q, axis=axes, keepdims=keep)
    if keep:
        out = {k: v[0] for k, v in out.items()}  # (C, 1, 1)
    out["count"] = np.array([values.shape[0]])
    return out


def _png(image: np.ndarray) -> bytes:
    from PIL import Image

    buffer = io.BytesIO()
    Image.fromarray(image).save(buffer, format="PNG")
    return buffer.getvalue()


class LeRobotWriter:
    """Collect episodes, then write them as a v3.0 LeRobot dataset folder.

    ``features``: name -> ``{"dtype", "shape", "names"}`` as in LeRobot's ``info.json`` (numeric
    dtypes, or ``image`` for uint8 (H, W, C) frames); the frame columns are added. Call
    :meth:`add_episode` per episode and :meth:`finalize` once."""

    def __init__(self, root: str | Path, *, fps: int, features: Mapping[str, Mapping[str, Any]],
                 robot_type: str | None = None, data_file_mb: float = DATA_FILE_MB) -> None:
        if not isinstance(fps, int) or isinstance(fps, bool) or fps < 1:
            raise ValueError(f"fps must be an integer >= 1, got {fps!r}")
        if not features:
            raise ValueError("features must name at least one feature")
        self.root, self.fps, self.robot_type = Path(root), fps, robot_type
        self.features: dict[str, dict[str, Any]] = {}
        for name, spec in features.items():
            if name in FRAME_FEATURES:
                raise ValueError(f"features: {name!r} is a frame column the writer adds itself")
            dtype, shape = spec.get("dtype"), list(spec.get("shape", ()))
            if dtype not in (*NUMERIC_DTYPES, "image"):
                raise ValueError(f"features: {name!r} has dtype {dtype!r}; the writer takes "
                                 f"{', '.join(NUMERIC_DTYPES)} or image (video: not written)")
            if not shape or not all(isinstance(s, int) and s >= 1 for s in shape) or (
                    dtype == "image" and len(shape) != 3):
                raise ValueError(f"features: {name!r} needs a shape of positive integers "
                                 f"((H, W, C) for an image), got {spec.get('shape')!r}")
            self.features[name] = {"dtype": dtype, "shape": shape,
                                   "names": spec.get("names")}
        self.data_file_bytes = data_file_mb * 1024 * 1024
        self._episodes: list[tuple[dict[str, np.ndarray], str]] = []
        self._done = False

    def add_episode(self, frames: Mapping[str, Any], task: str) -> int:
        """Add one episode: ``frames[name]`` an array (T, *shape) for every feature; returns its
        episode index."""
        if self._done:
            raise RuntimeError("the writer is finalized")
        if not isinstance(task, str) or not task:
            raise ValueError(f"task must be a non-empty string, got {task!r}")
        missing = [k for k in self.features if k not in frames]
        extra = [k for k in frames if k not in self.features]
        if missing or extra:
            raise ValueError(f"frames must hold exactly the features {list(self.features)}; "
                             f"missing {missing}, unknown {extra}")
        arrays: dict[str, np.ndarray] = {}
        length = None
        for name, spec in self.features.items():
            dtype = np.uint8 if spec["dtype"] == "image" else np.dtype(spec["dtype"])
            x = np.asarray(frames[name])
            if spec["shape"] == [1] and x.ndim == 1:
                x = x[:, None]
            if x.ndim != 1 + len(spec["shape"]) or list(x.shape[1:]) != spec["shape"]:
                raise ValueError(f"frames[{name!r}] must have shape (T, "
                                 f"{', '.join(map(str, spec['shape']))}), got {x.shape}")
            if np.issubdtype(x.dtype, np.floating) and not np.isfinite(x).all():
                raise ValueError(f"frames[{name!r}] must be finite")
            if spec["dtype"] == "image" and x.dtype != np.uint8:
                raise ValueError(f"frames[{name!r}] must be uint8 images, got {x.dtype}")
            length = x.shape[0] if length is None else length
            if x.shape[0] != length or length < 1:
                raise ValueError(f"every feature of an episode needs the same length >= 1; "
                                 f"frames[{name!r}] has {x.shape[0]}, expected {length}")
            arrays[name] = x.astype(dtype, copy=False)
        self._episodes.append((arrays, task))
        return len(self._episodes) - 1

    def finalize(self) -> Path:
        """Write the folder (replacing whatever was at ``root``, whole) and return its path."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        if not self._episodes:
            raise ValueError("no episodes were added")
        self._done = True
        task_index: dict[str, int] = {}
        for _, task in self._episodes:
            task_index.setdefault(task, len(task_index))
        with safe_write.replacing_folder(self.root) as tmp:
            episode_rows, file_tables, total = self._data_tables(task_index)
            for (chunk, file), tables in file_tables.items():
                table = pa.concat_tables(tables)
                self._write_parquet(tmp / DATA_PATH.format(chunk_index=chunk, file_index=file),
                                    table, pq)
            self._write_parquet(tmp / EPISODES_PATH.format(chunk_index=0, file_index=0),
                                pa.Table.from_pylist(episode_rows), pq)
            self._write_parquet(tmp / TASKS_PATH_V30, _tasks_table(task_index), pq)
            safe_write.write_text(tmp / STATS_PATH,
                                  json.dumps(self._all_stats(task_index), indent=1) + "\n")
            safe_write.write_text(tmp / INFO_PATH,
                                  json.dumps(self._info(total, len(task_index)), indent=1) + "\n")
        return self.root

    @staticmethod
    def _write_parquet(path: Path, table: Any, pq: Any) -> None:
        import pyarrow as pa

        sink = pa.BufferOutputStream()
        pq.write_table(table, sink)
        safe_write.write_bytes(path, sink.getvalue().to_pybytes())

    def _data_tables(self, task_index: Mapping[str, int]
                     ) -> tuple[list[dict[str, Any]], dict[tuple[int, int], list[Any]], int]:
        file, used, start = 0, 0.0, 0
        rows: list[dict[str, Any]] = []
        tables: dict[tuple[int, int], list[Any]] = {}
        for episode, (arrays, task) in enumerate(self._episodes):
            size = sum(a.nbytes for a in arrays.values())
            if used and used + size > self.data_file_bytes:
                file, used = file + 1, 0.0
            used += size
            chunk, index = divmod(file, CHUNKS_SIZE)
            length = next(iter(arrays.values())).shape[0]
            tables.setdefault((chunk, index), []).append(
                self._episode_table(arrays, episode, start, task_index[task]))
            row: dict[str, Any] = {
                "episode_index": episode, "tasks": [task], "length": length,
                "data/chunk_index": chunk, "data/file_index": index,
                "dataset_from_index": start, "dataset_to_index": start + length}
            frame_cols = self._frame_columns(length, episode, start, task_index[task])
            for name, values in {**arrays, **frame_cols}.items():
                dtype = self.features.get(name, FRAME_FEATURES.get(name))["dtype"]
                for stat, value in feature_stats(values, dtype).items():
                    row[f"stats/{name}/{stat}"] = value.tolist()
            row["meta/episodes/chunk_index"], row["meta/episodes/file_index"] = 0, 0
            rows.append(row)
            start += length
        return rows, tables, start

    def _frame_columns(self, length: int, episode: int, start: int, task: int
                       ) -> dict[str, np.ndarray]:
        frame = np.arange(length, dtype=np.int64)
        return {"timestamp": (frame / self.fps).astype(np.float32)[:, None],
                "frame_index": frame[:, None],
                "episode_index": np.full((length, 1), episode, dtype=np.int64),
                "index": (start + frame)[:, None],
                "task_index": np.full((length, 1), task, dtype=np.int64)}

    def _episode_table(self, arrays: Mapping[str, np.ndarray], episode: int, start: int,
                       task: int) -> Any:
        import pyarrow as pa

        columns: dict[str, Any] = {}
        length = next(iter(arrays.values())).shape[0]
        for name, spec in self.features.items():
            x = arrays[name]
            if spec["dtype"] == "image":
                columns[name] = pa.array([{"bytes": _png(img), "path": None} for img in x],
                                         type=pa.struct([("bytes", pa.binary()),
                                                         ("path", pa.string())]))
            elif spec["shape"] == [1]:
                columns[name] = pa.array(x.reshape(-1))
            else:
                flat = pa.array(x.reshape(-1))
                columns[name] = _nested(flat, spec["shape"])
        for name, values in self._frame_columns(length, episode, start, task).items():
            columns[name] = pa.array(values.reshape(-1))
        return pa.table(columns)

    def _all_stats(self, task_index: Mapping[str, int]) -> dict[str, dict[str, list[Any]]]:
        merged: dict[str, list[np.ndarray]] = {}
        start = 0
        for episode, (arrays, task) in enumerate(self._episodes):
            length = next(iter(arrays.values())).shape[0]
            frame_cols = self._frame_columns(length, episode, start, task_index[task])
            for name, values in {**arrays, **frame_cols}.items():
                merged.setdefault(name, []).append(values)
            start += length
        out: dict[str, dict[str, list[Any]]] = {}
        for name, parts in merged.items():
            dtype = self.features.get(name, FRAME_FEATURES.get(name))["dtype"]
            out[name] = {k: v.tolist() for k, v in
                         feature_stats(np.concatenate(parts), dtype).items()}
        return out

    def _info(self, total_frames: int, total_tasks: int) -> dict[str, Any]:
        return {
            "codebase_version": CODEBASE_VERSION, "robot_type": self.robot_type,
            "total_episodes": len(self._episodes), "total_frames": total_frames,
            "total_tasks": total_tasks, "chunks_size": CHUNKS_SIZE,
            "data_files_size_in_mb": DATA_FILE_MB, "video_files_size_in_mb": 200,
            "fps": self.fps, "splits": {"train": f"0:{len(self._episodes)}"},
            "data_path": DATA_PATH, "video_path": None,
            "features": {**self.features, **FRAME_FEATURES},
        }


def _nested(flat: Any, shape: list[int]) -> Any:
    """A flat Arrow array as fixed-size lists of ``shape`` (innermost last)."""
    import pyarrow as pa

    out = flat
    for size in reversed(shape):
        out = pa.FixedSizeListArray.from_arrays(out, size)
    return out


def _tasks_table(task_index: Mapping[str, int]) -> Any:
    """``meta/tasks.parquet``: ``task_index`` and the task text, marked as the pandas index
    (pandas' documented Parquet metadata), as LeRobot reads it."""
    import pyarrow as pa

    texts = list(task_index)
    pandas_meta = {
        "index_columns": ["task"], "column_indexes": [],
        "columns": [
            {"name": "task_index", "field_name": "task_index", "pandas_type": "int64",
             "numpy_type": "int64", "metadata": None},
            {"name": "task", "field_name": "task", "pandas_type": "unicode",
             "numpy_type": "object", "metadata": None}],
        "creator": {"library": "pyarrow", "version": pa.__version__},
        "pandas_version": "2.2.0"}
    schema = pa.schema([("task_index", pa.int64()), ("task", pa.string())],
                       metadata={"pandas": json.dumps(pandas_meta)})
    return pa.table({"task_index": [task_index[t] for t in texts], "task": texts},
                    schema=schema)


Expert = Callable[[Any, np.random.Generator], Callable[[Any], np.ndarray]]
"""``expert(env, rng) -> act``: a per-episode scripted expert; ``act(observation) -> action``."""
GYM_KEYS = {"agent_pos": "observation.state", "environment_state": "observation.environment_state"}
"""LeRobot's gym conventions (gym-pusht, gym-aloha): a dict observation's entries and the
dataset features they become; ``pixels`` (one camera, or a dict camera -> image) becomes
``observation.images.<camera>``."""


def _frame_features(env: Any, camera: str) -> tuple[dict[str, dict[str, Any]],
                                                    Callable[[Any], dict[str, np.ndarray]]]:
    """The dataset features of ``env``'s observations and a function observation -> frame."""
    from gymnasium import spaces

    space = env.observation_space
    if isinstance(space, spaces.Box):
        return ({"observation.state": {"dtype": "float32", "shape": list(space.shape),
                                       "names": None}},
                lambda obs: {"observation.state": np.asarray(obs, dtype=np.float32)})
    if not isinstance(space, spaces.Dict):
        raise ValueError(f"record_demonstrations: observation space must be a Box or a Dict "
                         f"(LeRobot's gym keys), got {type(space).__name__}")
    features: dict[str, dict[str, Any]] = {}
    for key, sub in space.spaces.items():
        if key in GYM_KEYS:
            features[GYM_KEYS[key]] = {"dtype": "float32", "shape": list(sub.shape),
                                       "names": None}
        elif key == "pixels":
            cams = sub.spaces if isinstance(sub, spaces.Dict) else {camera: sub}
            for name, cam in cams.items():
                features[f"observation.images.{name}"] = {
                    "dtype": "image", "shape": list(cam.shape),
                    "names": ["height", "width", "channels"]}
        else:
            raise ValueError(f"record_demonstrations: observation key {key!r} is not one of "
                             f"LeRobot's gym keys {[*GYM_KEYS, 'pixels']}")

    def frame(obs: Any) -> dict[str, np.ndarray]:
        out: dict[str, np.ndarray] = {}
        for key, value in obs.items():
            if key in GYM_KEYS:
                out[GYM_KEYS[key]] = np.asarray(value, dtype=np.float32)
            elif isinstance(value, Mapping):
                out |= {f"observation.images.{n}": np.asarray(v) for n, v in value.items()}
            else:
                out[f"observation.images.{camera}"] = np.asarray(value)
        return out

    return features, frame


def record_demonstrations(root: str | Path, env: Any, expert: Expert, *, episodes: int,
                          seed: int, fps: int, task: str | None = None,
                          max_steps: int | None = None, robot_type: str | None = None,
                          camera: str = "top") -> Path:
    """Run ``expert`` for ``episodes`` episodes of the gymnasium ``env`` (reset with seeds
    ``seed + i``, the expert's generator seeded ``seed + 10_000 + i``) and write the frames as
    a v3.0 LeRobot folder at ``root``: the observation before each step (a Box observation as
    ``observation.state``; a dict in LeRobot's gym keys: ``agent_pos`` as
    ``observation.state``, ``pixels`` as ``observation.images.<camera>``) and the expert's
    ``action``. The episode's task is ``info["task"]`` from the reset where the environment
    gives one (VLAPush, gym-aloha), else ``task``. An episode ends when the environment
    terminates or truncates it, or after ``max_steps``."""
    if episodes < 1:
        raise ValueError(f"episodes must be >= 1, got {episodes}")
    features, frame = _frame_features(env, camera)
    features["action"] = {"dtype": "float32", "shape": list(env.action_space.shape),
                          "names": None}
    writer = LeRobotWriter(root, fps=fps, features=features, robot_type=robot_type)
    for i in range(episodes):
        obs, info = env.reset(seed=seed + i)
        episode_task = info.get("task") or task
        if not episode_task:
            raise ValueError("record_demonstrations: the environment gives no info['task']; "
                             "pass task=")
        act = expert(env, np.random.default_rng(seed + 10_000 + i))
        frames: dict[str, list[np.ndarray]] = {k: [] for k in features}
        done, steps = False, 0
        while not done and (max_steps is None or steps < max_steps):
            action = np.asarray(act(obs), dtype=np.float32)
            for key, value in frame(obs).items():
                frames[key].append(value)
            frames["action"].append(action)
            obs, _, terminated, truncated, _ = env.step(action)
            done, steps = bool(terminated or truncated), steps + 1
        writer.add_episode({k: np.stack(v) for k, v in frames.items()}, episode_task)
    return writer.finalize()


def point_mass_expert(env: Any, rng: np.random.Generator) -> Callable[[Any], np.ndarray]:
    """The point-mass environment's PD tracker with Ornstein-Uhlenbeck noise
    (``PointMassTrackingEnv.expert``), as an :data:`Expert`."""
    expert = env.unwrapped.expert(rng)

    def act(obs: Any) -> np.ndarray:
        params, p, v, t = env.unwrapped.state
        return expert.act(params, t, p, v)[0].astype(np.float32)

    return act


def bimodal_expert(env: Any, rng: np.random.Generator) -> Callable[[Any], np.ndarray]:
    """The bimodal-obstacle environment's expert (one side of the obstacle per episode)."""
    from transformer_math.robotics.envs.bimodal import BimodalExpert

    expert, cfg = BimodalExpert(rng, 1), env.unwrapped.cfg
    return lambda obs: expert.act(cfg, np.asarray(obs, dtype=np.float64)[None])[0]


def vla_push_expert(env: Any, rng: np.random.Generator) -> Callable[[Any], np.ndarray]:
    """VLAPush's scripted expert (reach the source, carry it to the target, open)."""
    return lambda obs: env.unwrapped.expert_action()


SCRIPTED_EXPERTS: dict[str, Expert] = {"point-mass": point_mass_expert,
                                       "bimodal": bimodal_expert, "vla-push": vla_push_expert}
"""The project's scripted experts by ``tmath rollout`` environment name."""
