"""Read a LeRobot dataset folder (codebase versions v2.1 and v3.0) into the project's batches.

The on-disk format, as LeRobot 0.4.4 writes and reads it (``lerobot/datasets/utils.py``,
``lerobot_dataset.py`` and ``v30/convert_dataset_v21_to_v30.py`` of huggingface/lerobot):

* ``meta/info.json``: ``codebase_version``, ``fps``, ``features`` (name -> ``dtype``, ``shape``,
  ``names``; dtype ``float32``/``int64``/... for vectors, ``image`` for PNG frames stored in the
  parquet rows, ``video`` for frames in MP4 files), ``data_path`` and ``video_path`` templates,
  ``chunks_size``, totals. Every frame also has ``timestamp``, ``frame_index``,
  ``episode_index``, ``index`` (its row in the whole dataset) and ``task_index``.
* v3.0: ``data/chunk-{c:03d}/file-{f:03d}.parquet`` with many episodes per file;
  ``meta/episodes/chunk-*/file-*.parquet`` one row per episode (``episode_index``, ``tasks``,
  ``length``, ``data/chunk_index``, ``data/file_index``, ``dataset_from_index``,
  ``dataset_to_index``, ``stats/<feature>/<stat>``); ``meta/tasks.parquet`` (``task_index`` and
  the task text, the pandas index); ``meta/stats.json`` (feature -> min, max, mean, std, count,
  quantiles) over the whole dataset.
* v2.1: one ``data/chunk-{episode_chunk:03d}/episode_{episode_index:06d}.parquet`` per episode
  (``episode_chunk = episode_index // chunks_size``); ``meta/episodes.jsonl`` (``episode_index``,
  ``tasks``, ``length``), ``meta/tasks.jsonl`` (``task_index``, ``task``) and
  ``meta/episodes_stats.jsonl`` (per-episode stats; the dataset's are their pooled combination).

A batch (:meth:`LeRobotFolder.batch`) has the keys a project chunk policy takes: for frame t of
an episode of length L, ``observation.state`` (B, S) at t, ``observation.images.<cam>``
(B, C, H, W) float in [0, 1] for the cameras asked for, ``action`` (B, k, A) the actions at
t, ..., t + k - 1 and ``action_is_pad`` (B, k) True where t + j >= L (the action there repeats
the episode's last one, as LeRobot's ``delta_timestamps`` clamps to the episode, and the
project's losses leave padded steps out), and ``task`` (list of B strings). Images stored as
``image`` are decoded with Pillow. A ``video`` feature is decoded with PyAV (``pip install
av``) where it is installed: frame t of episode e is the decoded frame nearest the time
``from_timestamp(e) + timestamp(t)`` in the episode's MP4 (v3.0: ``videos/<key>/chunk_index``,
``file_index`` and ``from_timestamp`` of the episode row; v2.1: one MP4 per episode, from time
0), and it must lie within half a frame period (1 / (2 fps)) of that time. Without PyAV,
asking for a video camera is a :class:`LeRobotFolderError` that names the feature and the
package (torchcodec, LeRobot's other decoder, is not used here).
"""

from __future__ import annotations

import importlib.util
import io
import json
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import Tensor

from transformer_math.robotics.policies.base import (
    ACTION_IS_PAD_KEY,
    ACTION_KEY,
    IMAGES_PREFIX,
    STATE_KEY,
)

INFO_PATH = "meta/info.json"
STATS_PATH = "meta/stats.json"
TASKS_PATH_V30 = "meta/tasks.parquet"
EPISODES_DIR_V30 = "meta/episodes"
EPISODES_PATH_V21 = "meta/episodes.jsonl"
TASKS_PATH_V21 = "meta/tasks.jsonl"
EPISODES_STATS_PATH_V21 = "meta/episodes_stats.jsonl"
VERSIONS = ("v2.1", "v3.0")
"""The codebase versions this reader understands."""
FRAME_COLUMNS = ("timestamp", "frame_index", "episode_index", "index", "task_index")
"""The columns LeRobot adds to every frame (``DEFAULT_FEATURES``)."""
NUMERIC_DTYPES = ("float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8",
                  "bool")
TASK_KEY = "task"
MAX_CHUNK = 10_000


class LeRobotFolderError(ValueError):
    """A LeRobot dataset folder this reader cannot use; the message names the file or feature."""


@dataclass(frozen=True)
class Episode:
    """One episode: its index, length, tasks and its first row in the folder's frames."""

    index: int
    length: int
    tasks: tuple[str, ...]
    start: int


def _load_json(path: Path, what: str) -> Any:
    if not path.is_file():
        raise LeRobotFolderError(f"not a LeRobot dataset folder: {what} is missing ({path})")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise LeRobotFolderError(f"{path} is not valid JSON: {exc}") from None


def _load_jsonl(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        raise LeRobotFolderError(f"v2.1 dataset: {path.name} is missing ({path})")
    rows = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.strip():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise LeRobotFolderError(f"{path}:{number} is not valid JSON: {exc}") from None
    return rows


def read_info(root: str | Path) -> dict[str, Any]:
    """``meta/info.json`` of ``root``, checked: a known ``codebase_version``, an ``fps`` > 0,
    a ``features`` mapping with every frame column."""
    root = Path(root)
    if not root.is_dir():
        raise LeRobotFolderError(f"dataset folder {root} does not exist or is not a folder")
    info = _load_json(root / INFO_PATH, INFO_PATH)
    if not isinstance(info, dict):
        raise LeRobotFolderError(f"{root / INFO_PATH} must hold a JSON object")
    version = info.get("codebase_version")
    if version not in VERSIONS:
        raise LeRobotFolderError(f"{root / INFO_PATH}: unknown codebase_version {version!r}; "
                                 f"this reader knows {', '.join(VERSIONS)}")
    fps = info.get("fps")
    if not isinstance(fps, int | float) or isinstance(fps, bool) or not fps > 0:
        raise LeRobotFolderError(f"{root / INFO_PATH}: fps must be a number > 0, got {fps!r}")
    features = info.get("features")
    if not isinstance(features, dict) or not features:
        raise LeRobotFolderError(f"{root / INFO_PATH}: features must be a non-empty object")
    for name, spec in features.items():
        if not isinstance(spec, dict) or "dtype" not in spec or "shape" not in spec:
            raise LeRobotFolderError(f"{root / INFO_PATH}: feature {name!r} needs a dtype and a "
                                     f"shape, got {spec!r}")
    missing = [c for c in FRAME_COLUMNS if c not in features]
    if missing:
        raise LeRobotFolderError(f"{root / INFO_PATH}: features lack the frame columns "
                                 f"{missing}")
    if not isinstance(info.get("data_path"), str):
        raise LeRobotFolderError(f"{root / INFO_PATH}: data_path must be a path template")
    return info


def _read_parquet(path: Path) -> Any:
    import pyarrow.parquet as pq

    if not path.is_file():
        raise LeRobotFolderError(f"a file the dataset names is missing: {path}")
    try:
        return pq.read_table(path)
    except Exception as exc:  # pyarrow raises several types for a damaged file
        raise LeRobotFolderError(f"{path} is not a readable Parquet file: {exc}") from None


def _numeric(column: Any, rows: int, shape: Sequence[int], name: str, path: Path
             ) -> np.ndarray:
    """A numeric (possibly list-valued) Arrow column as an array (rows, *shape)."""
    import pyarrow as pa

    values = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    while pa.types.is_list(values.type) or pa.types.is_fixed_size_list(values.type) or \
            pa.types.is_large_list(values.type):
        values = values.flatten()
    flat = values.to_numpy(zero_copy_only=False)
    size = math.prod(shape)
    if flat.size != rows * size:
        raise LeRobotFolderError(f"{path}: column {name!r} has {flat.size} values, expected "
                                 f"{rows} rows of shape {tuple(shape)}")
    return flat.reshape(rows, *shape) if tuple(shape) != (1,) else flat.reshape(rows)


def _pooled_stats(per_episode: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, np.ndarray]]:
    """The dataset's stats from per-episode ones (v2.1): count-weighted mean, pooled
    (population) variance sum_i n_i (s_i^2 + (m_i - m)^2) / N, elementwise min and max."""
    out: dict[str, dict[str, np.ndarray]] = {}
    names = set().union(*(s.keys() for s in per_episode)) if per_episode else set()
    for name in sorted(names):
        parts = [s[name] for s in per_episode if name in s]
        counts = np.array([float(np.asarray(p["count"]).reshape(-1)[0]) for p in parts])
        means = [np.asarray(p["mean"], dtype=np.float64) for p in parts]
        stds = [np.asarray(p["std"], dtype=np.float64) for p in parts]
        total = counts.sum()
        mean = sum(c * m for c, m in zip(counts, means, strict=True)) / total
        var = sum(c * (s**2 + (m - mean) ** 2)
                  for c, s, m in zip(counts, stds, means, strict=True)) / total
        out[name] = {"mean": mean, "std": np.sqrt(var),
                     "min": np.min([np.asarray(p["min"]) for p in parts], axis=0),
                     "max": np.max([np.asarray(p["max"]) for p in parts], axis=0),
                     "count": np.array([int(total)])}
    return out


class LeRobotFolder:
    """A LeRobot dataset folder read into memory (state, action and other vectors as arrays;
    images kept encoded and decoded per batch). See the module docstring for the layout."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)
        self.info = read_info(self.root)
        self.version: str = self.info["codebase_version"]
        self.fps: float = self.info["fps"]
        self.features: dict[str, dict[str, Any]] = self.info["features"]
        if self.version == "v3.0":
            episodes, tasks, tables = self._read_v30()
        else:
            episodes, tasks, tables = self._read_v21()
        self.tasks: dict[int, str] = tasks
        self._load_frames(tables, episodes)
        self.stats = self._read_stats()

    # -- reading -----------------------------------------------------------------------------
    def _read_v30(self) -> tuple[list[dict[str, Any]], dict[int, str], list[tuple[Path, Any]]]:
        folder = self.root / EPISODES_DIR_V30
        files = sorted(folder.glob("chunk-*/file-*.parquet")) if folder.is_dir() else []
        if not files:
            raise LeRobotFolderError(f"v3.0 dataset: no episode files in {folder} "
                                     "(meta/episodes/chunk-*/file-*.parquet)")
        episodes: list[dict[str, Any]] = []
        for path in files:
            table = _read_parquet(path)
            want = ("episode_index", "length", "tasks")
            lacking = [c for c in want if c not in table.column_names]
            if lacking:
                raise LeRobotFolderError(f"{path}: episode table lacks columns {lacking}")
            keep = [c for c in table.column_names if not c.startswith("stats/")]
            episodes += table.select(keep).to_pylist()
        task_table = _read_parquet(self.root / TASKS_PATH_V30)
        text = [c for c in task_table.column_names
                if c != "task_index" and str(task_table.schema.field(c).type) in
                ("string", "large_string")]
        if "task_index" not in task_table.column_names or not text:
            raise LeRobotFolderError(f"{self.root / TASKS_PATH_V30}: needs a task_index column "
                                     "and a text column (the task)")
        tasks = dict(zip(task_table.column("task_index").to_pylist(),
                         task_table.column(text[0]).to_pylist(), strict=True))
        data_files = sorted({(int(e.get("data/chunk_index", 0)), int(e.get("data/file_index", 0)))
                             for e in episodes})
        tables = []
        for chunk, file in data_files:
            path = self.root / self.info["data_path"].format(chunk_index=chunk, file_index=file)
            tables.append((path, _read_parquet(path)))
        return episodes, tasks, tables

    def _read_v21(self) -> tuple[list[dict[str, Any]], dict[int, str], list[tuple[Path, Any]]]:
        episodes = _load_jsonl(self.root / EPISODES_PATH_V21)
        tasks = {int(t["task_index"]): str(t["task"])
                 for t in _load_jsonl(self.root / TASKS_PATH_V21)}
        chunks = int(self.info.get("chunks_size", 1000))
        tables = []
        for e in sorted(episodes, key=lambda e: e["episode_index"]):
            index = int(e["episode_index"])
            path = self.root / self.info["data_path"].format(
                episode_chunk=index // chunks, episode_index=index)
            tables.append((path, _read_parquet(path)))
        return episodes, tasks, tables

    def _load_frames(self, tables: list[tuple[Path, Any]],
                     episodes: list[dict[str, Any]]) -> None:
        self._columns: dict[str, np.ndarray] = {}
        self._encoded: dict[str, list[Any]] = {}
        parts: dict[str, list[np.ndarray]] = {}
        encoded: dict[str, list[Any]] = {}
        for path, table in tables:
            rows = table.num_rows
            for name, spec in self.features.items():
                dtype = spec["dtype"]
                if dtype == "video":
                    continue
                if name not in table.column_names:
                    raise LeRobotFolderError(f"{path}: no column for feature {name!r}")
                column = table.column(name)
                if dtype == "image":
                    encoded.setdefault(name, []).extend(column.to_pylist())
                elif dtype in NUMERIC_DTYPES:
                    parts.setdefault(name, []).append(
                        _numeric(column, rows, spec["shape"], name, path))
        self._columns = {k: np.concatenate(v) for k, v in parts.items()}
        order = np.lexsort((self._columns["frame_index"], self._columns["episode_index"]))
        self._columns = {k: v[order] for k, v in self._columns.items()}
        self._encoded = {k: [v[i] for i in order] for k, v in encoded.items()}
        ep = self._columns["episode_index"]
        self._episode_rows = {int(e["episode_index"]): e for e in episodes}
        self.episodes: list[Episode] = []
        for e in sorted(episodes, key=lambda e: int(e["episode_index"])):
            index, length = int(e["episode_index"]), int(e["length"])
            rows = np.flatnonzero(ep == index)
            if rows.size != length:
                raise LeRobotFolderError(f"{self.root}: episode {index} has length {length} in "
                                         f"its metadata but {rows.size} frames in the data")
            tasks = tuple(str(t) for t in (e.get("tasks") or ()))
            self.episodes.append(Episode(index, length, tasks, int(rows[0]) if length else 0))
        self.num_frames = int(ep.size)
        ends = np.empty(self.num_frames, dtype=np.int64)
        for e in self.episodes:
            ends[e.start:e.start + e.length] = e.start + e.length - 1
        self._episode_end = ends

    def _read_stats(self) -> dict[str, dict[str, np.ndarray]]:
        path = self.root / STATS_PATH
        if path.is_file():
            raw = _load_json(path, STATS_PATH)
            return {name: {k: np.asarray(v, dtype=np.float64) for k, v in stats.items()}
                    for name, stats in raw.items()}
        if self.version == "v2.1" and (self.root / EPISODES_STATS_PATH_V21).is_file():
            rows = _load_jsonl(self.root / EPISODES_STATS_PATH_V21)
            return _pooled_stats([r["stats"] for r in rows])
        return {}

    # -- what the folder holds -----------------------------------------------------------------
    def __len__(self) -> int:
        return self.num_frames

    def image_keys(self) -> list[str]:
        """The camera features (``image`` or ``video``), in ``info.json``'s order."""
        return [k for k, v in self.features.items() if v["dtype"] in ("image", "video")]

    def decodable_image_keys(self) -> list[str]:
        """The camera features this installation can decode (``image``: always; ``video``:
        where PyAV is installed)."""
        video = importlib.util.find_spec("av") is not None
        return [k for k in self.image_keys() if self.features[k]["dtype"] == "image" or video]

    def array(self, name: str) -> np.ndarray:
        """Every frame's ``name`` (rows in (episode, frame) order), e.g. ``observation.state``."""
        if name not in self._columns:
            known = sorted(self._columns)
            raise LeRobotFolderError(f"{self.root}: no numeric feature {name!r}; it has {known}")
        return self._columns[name]

    def episode(self, index: int) -> dict[str, np.ndarray]:
        """The numeric features of episode ``index`` (arrays of its length)."""
        by_index = {e.index: e for e in self.episodes}
        if index not in by_index:
            raise LeRobotFolderError(f"{self.root}: no episode {index}; it has "
                                     f"{sorted(by_index)}")
        e = by_index[index]
        return {k: v[e.start:e.start + e.length] for k, v in self._columns.items()}

    def normalization_stats(self, name: str) -> dict[str, np.ndarray]:
        """``meta/stats.json``'s entry for feature ``name`` (mean, std, min, max, count, ...)."""
        if name not in self.stats:
            raise LeRobotFolderError(f"{self.root}: {STATS_PATH} has no statistics for "
                                     f"{name!r}; it has {sorted(self.stats)}")
        return self.stats[name]

    # -- batches -------------------------------------------------------------------------------
    def _images(self, key: str, rows: np.ndarray) -> Tensor:
        spec = self.features.get(key)
        if spec is None or spec["dtype"] not in ("image", "video"):
            raise LeRobotFolderError(f"{self.root}: no camera feature {key!r}; cameras: "
                                     f"{self.image_keys()}")
        if spec["dtype"] == "video":
            if importlib.util.find_spec("av") is None:
                other = (" (torchcodec is installed, but this reader decodes with PyAV)"
                         if importlib.util.find_spec("torchcodec") is not None else
                         "; neither PyAV nor torchcodec is installed")
                raise LeRobotFolderError(
                    f"feature {key!r} is stored as video (MP4 under videos/); decoding it needs "
                    f"PyAV ('pip install av'){other}; read state and action only with "
                    "cameras=()")
            return self._video_frames(key, rows)
        from PIL import Image

        frames = []
        for r in rows:
            cell = self._encoded[key][int(r)]
            data = cell.get("bytes") if isinstance(cell, dict) else None
            if data is None and isinstance(cell, dict) and cell.get("path"):
                data = (self.root / cell["path"]).read_bytes()
            if data is None:
                raise LeRobotFolderError(f"{self.root}: frame {int(r)} of {key!r} has no image")
            with Image.open(io.BytesIO(data)) as img:
                frames.append(np.asarray(img.convert("RGB"), dtype=np.uint8))
        hwc = torch.from_numpy(np.stack(frames))
        return hwc.permute(0, 3, 1, 2).to(torch.float32) / 255.0

    def _video_source(self, key: str, row: int) -> tuple[Path, float]:
        """(MP4 path, time in it) of frame ``row`` of camera ``key`` (module docstring)."""
        episode = int(self._columns["episode_index"][row])
        t = float(self._columns["timestamp"][row])
        template = self.info.get("video_path")
        if not isinstance(template, str):
            raise LeRobotFolderError(f"{self.root / INFO_PATH}: video feature {key!r} but no "
                                     "video_path template")
        meta = self._episode_rows[episode]
        if self.version == "v3.0":
            prefix = f"videos/{key}/"
            try:
                chunk, file = int(meta[prefix + "chunk_index"]), int(meta[prefix + "file_index"])
                start = float(meta[prefix + "from_timestamp"])
            except KeyError as exc:
                raise LeRobotFolderError(f"{self.root}: episode {episode} has no {exc.args[0]!r} "
                                         "in its episode row") from None
            path = template.format(video_key=key, chunk_index=chunk, file_index=file)
            return self.root / path, start + t
        chunks = int(self.info.get("chunks_size", 1000))
        path = template.format(episode_chunk=episode // chunks, video_key=key,
                               episode_index=episode)
        return self.root / path, t

    def _video_frames(self, key: str, rows: np.ndarray) -> Tensor:
        """The frames of camera ``key`` at ``rows``, decoded with PyAV, (B, C, H, W) in [0, 1]."""
        wanted: dict[Path, list[tuple[float, int]]] = {}
        for i, r in enumerate(rows):
            path, t = self._video_source(key, int(r))
            wanted.setdefault(path, []).append((t, i))
        out: list[np.ndarray | None] = [None] * len(rows)
        tolerance = 0.5 / float(self.fps)
        for path, requests in wanted.items():
            for i, frame in _decode_at(path, requests, tolerance):
                out[i] = frame
        hwc = torch.from_numpy(np.stack([f for f in out if f is not None]))
        return hwc.permute(0, 3, 1, 2).to(torch.float32) / 255.0

    def batch(self, rows: Sequence[int] | np.ndarray | Tensor, chunk_size: int, *,
              cameras: Sequence[str] | None = None, state_key: str = STATE_KEY,
              action_key: str = ACTION_KEY) -> dict[str, Any]:
        """The project batch of frames ``rows`` (module docstring): ``observation.state``,
        the ``cameras`` (feature names or bare camera names; default: every decodable one),
        ``action`` chunks of ``chunk_size`` with ``action_is_pad``, ``task``."""
        if not 1 <= chunk_size <= MAX_CHUNK:
            raise ValueError(f"chunk_size must be in [1, {MAX_CHUNK}], got {chunk_size}")
        r = np.asarray(torch.as_tensor(rows).cpu().numpy() if isinstance(rows, Tensor) else rows,
                       dtype=np.int64).reshape(-1)
        if r.size and (r.min() < 0 or r.max() >= self.num_frames):
            raise ValueError(f"rows must lie in [0, {self.num_frames}), got {r.min()}..{r.max()}")
        ends = self._episode_end[r][:, None]
        steps = r[:, None] + np.arange(chunk_size)[None]
        pad = steps > ends
        steps = np.minimum(steps, ends)
        actions = self.array(action_key)
        out: dict[str, Any] = {
            STATE_KEY: torch.as_tensor(self.array(state_key)[r], dtype=torch.float32),
            ACTION_KEY: torch.as_tensor(actions[steps], dtype=torch.float32),
            ACTION_IS_PAD_KEY: torch.as_tensor(pad),
        }
        if out[ACTION_KEY].dim() == 2:  # a scalar action feature: one dimension
            out[ACTION_KEY] = out[ACTION_KEY][..., None]
        if out[STATE_KEY].dim() == 1:
            out[STATE_KEY] = out[STATE_KEY][:, None]
        for key in self.decodable_image_keys() if cameras is None else cameras:
            full = key if key.startswith(IMAGES_PREFIX) else IMAGES_PREFIX + key
            out[full] = self._images(full, r)
        out[TASK_KEY] = [self.tasks.get(int(t), "") for t in self.array("task_index")[r]]
        return out

    def sampler(self, chunk_size: int, batch_size: int, *, cameras: Sequence[str] | None = ()
                ) -> Callable[[torch.Generator], dict[str, Any]]:
        """``sample(generator)``: a batch of ``batch_size`` frames drawn uniformly from every
        frame (with replacement), for ``robotics.training.train_policy``."""
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")

        def sample(generator: torch.Generator) -> dict[str, Any]:
            rows = torch.randint(0, self.num_frames, (batch_size,), generator=generator)
            return self.batch(rows, chunk_size, cameras=cameras)

        return sample

    def batches(self, chunk_size: int, batch_size: int, *, cameras: Sequence[str] | None = (),
                generator: torch.Generator | None = None) -> Iterator[dict[str, Any]]:
        """Every frame once, in ``batch_size`` batches: in order, or shuffled by
        ``generator``."""
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        order = (torch.arange(self.num_frames) if generator is None
                 else torch.randperm(self.num_frames, generator=generator))
        for start in range(0, self.num_frames, batch_size):
            yield self.batch(order[start:start + batch_size], chunk_size, cameras=cameras)


def _decode_at(path: Path, requests: Sequence[tuple[float, int]], tolerance: float
               ) -> Iterator[tuple[int, np.ndarray]]:
    """For each (time, slot) of ``requests``: (slot, the RGB frame (H, W, 3) uint8 of the MP4
    ``path`` whose presentation time is nearest ``time``), which must be within ``tolerance``
    seconds. One pass per file: seek to the key frame before the earliest time, decode forward
    to the latest."""
    import av

    if not path.is_file():
        raise LeRobotFolderError(f"a video file the dataset names is missing: {path}")
    times = sorted(requests)
    best: dict[int, tuple[float, np.ndarray]] = {}
    try:
        with av.open(str(path)) as container:
            stream = container.streams.video[0]
            base = float(stream.time_base)
            container.seek(max(0, int(times[0][0] / base) - 1), stream=stream, backward=True,
                           any_frame=False)
            for frame in container.decode(stream):
                if frame.pts is None:
                    continue
                at = frame.pts * base
                rgb = None
                for t, slot in times:
                    gap = abs(at - t)
                    if gap <= tolerance and (slot not in best or gap < best[slot][0]):
                        rgb = frame.to_ndarray(format="rgb24") if rgb is None else rgb
                        best[slot] = (gap, rgb)
                if at > times[-1][0] + tolerance:
                    break
    except av.error.FFmpegError as exc:  # type: ignore[attr-defined]
        raise LeRobotFolderError(f"{path}: cannot decode the video: {exc}") from None
    for t, slot in times:
        if slot not in best:
            raise LeRobotFolderError(f"{path}: no frame within {tolerance:.4g} s of time "
                                     f"{t:.4g} s")
        yield slot, best[slot][1]


def open_lerobot_folder(root: str | Path) -> LeRobotFolder:
    """Read the LeRobot dataset folder ``root`` (v2.1 or v3.0); ``LeRobotFolderError`` names
    what is wrong with a folder it cannot read."""
    return LeRobotFolder(root)
