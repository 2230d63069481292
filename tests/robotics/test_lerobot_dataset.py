"""LeRobot dataset folders (issue 35 item 2): lerobot's own v3.0 folder read back exactly, the
writer's round trip, a v2.1 folder, the clear errors, and a recorded folder training ACT."""

from __future__ import annotations

import importlib.util
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch

from transformer_math.robotics.datasets import lerobot_format
from transformer_math.robotics.datasets.lerobot_format import (
    LeRobotFolderError,
    open_lerobot_folder,
)
from transformer_math.robotics.datasets.lerobot_writer import (
    LeRobotWriter,
    point_mass_expert,
    record_demonstrations,
)
from transformer_math.robotics.datasets.train_from_folder import train_act_on_folder

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "lerobot_dataset"
LEROBOT_V30 = FIXTURE / "v30"
LEROBOT_VIDEO = FIXTURE / "v30_video"
STATE, ACTION, IMAGE = "observation.state", "action", "observation.images.top"


def _make_fixture_module() -> Any:
    spec = importlib.util.spec_from_file_location("make_fixture", FIXTURE / "make_fixture.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # numpy only at import; lerobot only inside main()
    return module


MAKE = _make_fixture_module()


def _episodes() -> list[dict[str, np.ndarray]]:
    """The fixture's frames, rebuilt from its closed form."""
    out = []
    for e, length in enumerate(MAKE.LENGTHS):
        frames = [MAKE.values(e, f) for f in range(length)]
        out.append({STATE: np.stack([f[0] for f in frames]),
                    ACTION: np.stack([f[1] for f in frames]),
                    IMAGE: np.stack([f[2] for f in frames])})
    return out


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The fixture's episodes written again by the project's writer."""
    root = tmp_path_factory.mktemp("written") / "ds"
    features = {STATE: {"dtype": "float32", "shape": [3], "names": ["x", "y", "z"]},
                IMAGE: {"dtype": "image", "shape": [8, 8, 3], "names": None},
                ACTION: {"dtype": "float32", "shape": [2], "names": ["vx", "vy"]}}
    writer = LeRobotWriter(root, fps=10, features=features, robot_type="toy")
    for e, frames in enumerate(_episodes()):
        assert writer.add_episode(frames, MAKE.TASKS[e]) == e
    assert writer.finalize() == root
    return root


def _all_frames(root: Path, chunk: int = 4) -> dict[str, Any]:
    folder = open_lerobot_folder(root)
    return folder.batch(np.arange(len(folder)), chunk)


def _expected_chunks(chunk: int) -> tuple[np.ndarray, np.ndarray]:
    actions, pads = [], []
    for frames in _episodes():
        length = len(frames[ACTION])
        for t in range(length):
            steps = [min(t + j, length - 1) for j in range(chunk)]
            actions.append(frames[ACTION][steps])
            pads.append([t + j >= length for j in range(chunk)])
    return np.stack(actions), np.array(pads)


# ------------------------------------------------------------------------------ lerobot's folder
def test_lerobots_own_v30_folder_reads_exactly() -> None:
    folder = open_lerobot_folder(LEROBOT_V30)
    assert folder.version == "v3.0" and folder.fps == 10 and len(folder) == sum(MAKE.LENGTHS)
    assert [(e.index, e.length, e.tasks) for e in folder.episodes] == [
        (0, 6, (MAKE.TASKS[0],)), (1, 5, (MAKE.TASKS[1],))]
    batch = _all_frames(LEROBOT_V30)
    episodes = _episodes()
    assert torch.equal(batch[STATE], torch.from_numpy(np.concatenate([e[STATE] for e in episodes])))
    actions, pads = _expected_chunks(4)
    assert torch.equal(batch[ACTION], torch.from_numpy(actions))
    assert torch.equal(batch["action_is_pad"], torch.from_numpy(pads))
    images = np.concatenate([e[IMAGE] for e in episodes]).transpose(0, 3, 1, 2) / 255.0
    assert torch.allclose(batch[IMAGE], torch.from_numpy(images).float(), atol=0, rtol=0)
    assert batch["task"] == [MAKE.TASKS[0]] * 6 + [MAKE.TASKS[1]] * 5
    stats = folder.normalization_stats(ACTION)
    every = np.concatenate([e[ACTION] for e in episodes]).astype(np.float64)
    np.testing.assert_allclose(stats["mean"], every.mean(0), atol=1e-7)
    np.testing.assert_allclose(stats["std"], every.std(0), atol=1e-7)


# ------------------------------------------------------------------------------ round trip
def test_the_writer_round_trips_and_equals_lerobots_folder(written: Path) -> None:
    ours, theirs = _all_frames(written), _all_frames(LEROBOT_V30)
    assert set(ours) == set(theirs)
    for key in (STATE, ACTION, IMAGE, "action_is_pad"):
        assert torch.equal(ours[key], theirs[key]), key
    assert ours["task"] == theirs["task"]
    info = json.loads((written / "meta/info.json").read_text())
    lerobot_info = json.loads((LEROBOT_V30 / "meta/info.json").read_text())
    same = ("codebase_version", "total_episodes", "total_frames", "total_tasks", "fps",
            "data_path", "video_path", "splits", "chunks_size")
    assert {k: info[k] for k in same} == {k: lerobot_info[k] for k in same}
    assert info["features"] == lerobot_info["features"] | {IMAGE: info["features"][IMAGE]}
    ours_stats = open_lerobot_folder(written).stats
    theirs_stats = open_lerobot_folder(LEROBOT_V30).stats
    for key in (STATE, ACTION, "frame_index", "index", "task_index"):
        for stat in ("min", "max", "mean", "std", "count"):
            np.testing.assert_allclose(ours_stats[key][stat], theirs_stats[key][stat],
                                       atol=1e-6, err_msg=f"{key} {stat}")
    # images: lerobot's stats come from a sample of the frames (compute_stats.sample_images),
    # ours from every pixel of every frame; the same per-channel (C, 1, 1) layout
    assert {k: v.shape for k, v in ours_stats[IMAGE].items()} == {
        k: v.shape for k, v in theirs_stats[IMAGE].items()}
    every = np.concatenate([e[IMAGE] for e in _episodes()]) / 255.0
    np.testing.assert_allclose(ours_stats[IMAGE]["std"].reshape(-1), every.std(axis=(0, 1, 2)))
    table = pq.read_table(written / "meta/episodes/chunk-000/file-000.parquet")
    lerobot_table = pq.read_table(LEROBOT_V30 / "meta/episodes/chunk-000/file-000.parquet")
    assert set(table.column_names) == set(lerobot_table.column_names)
    data = pq.read_schema(written / "data/chunk-000/file-000.parquet")
    lerobot_data = pq.read_schema(LEROBOT_V30 / "data/chunk-000/file-000.parquet")
    assert [(f.name, f.type) for f in data] == [(f.name, f.type) for f in lerobot_data]


def test_iterating_every_frame_and_sampling(written: Path) -> None:
    folder = open_lerobot_folder(written)
    seen = [b[STATE] for b in folder.batches(3, 4)]
    assert [len(s) for s in seen] == [4, 4, 3]
    assert torch.equal(torch.cat(seen), _all_frames(written)[STATE])
    shuffled = torch.cat([b[STATE] for b in folder.batches(3, 4,
                                                          generator=torch.Generator().manual_seed(0))])
    assert sorted(map(tuple, shuffled.tolist())) == sorted(map(tuple, torch.cat(seen).tolist()))
    sample = folder.sampler(3, 5)
    a, b = sample(torch.Generator().manual_seed(1)), sample(torch.Generator().manual_seed(1))
    assert torch.equal(a[ACTION], b[ACTION]) and a[ACTION].shape == (5, 3, 2)
    assert IMAGE not in a  # the sampler reads state and action only unless cameras are asked
    assert folder.episode(1)[STATE].shape == (5, 3)
    with pytest.raises(LeRobotFolderError, match="no episode 7"):
        folder.episode(7)


# ------------------------------------------------------------------------------ v2.1
def _as_v21(source: Path, root: Path) -> Path:
    """The v3.0 folder ``source`` laid out as v2.1 (one parquet per episode, JSON lines)."""
    folder = open_lerobot_folder(source)
    data = pq.read_table(source / "data/chunk-000/file-000.parquet")
    info = json.loads((source / "meta/info.json").read_text())
    info |= {"codebase_version": "v2.1", "total_chunks": 1, "total_videos": 0,
             "data_path": "data/chunk-{episode_chunk:03d}/episode_{episode_index:06d}.parquet"}
    (root / "meta").mkdir(parents=True)
    (root / "data/chunk-000").mkdir(parents=True)
    (root / "meta/info.json").write_text(json.dumps(info))
    episodes, stats = [], []
    episode_table = pq.read_table(source / "meta/episodes/chunk-000/file-000.parquet")
    for e, row in zip(folder.episodes, episode_table.to_pylist(), strict=True):
        pq.write_table(data.slice(e.start, e.length),
                       root / f"data/chunk-000/episode_{e.index:06d}.parquet")
        episodes.append({"episode_index": e.index, "tasks": list(e.tasks), "length": e.length})
        per = {}
        for key, value in row.items():
            if key.startswith("stats/"):
                _, name, stat = key.split("/")
                per.setdefault(name, {})[stat] = value
        stats.append({"episode_index": e.index, "stats": per})
    lines = lambda rows: "".join(json.dumps(r) + "\n" for r in rows)  # noqa: E731
    (root / "meta/episodes.jsonl").write_text(lines(episodes))
    (root / "meta/tasks.jsonl").write_text(lines(
        [{"task_index": i, "task": t} for i, t in folder.tasks.items()]))
    (root / "meta/episodes_stats.jsonl").write_text(lines(stats))
    return root


def test_a_v21_folder_reads_like_its_v30_conversion(tmp_path: Path) -> None:
    root = _as_v21(LEROBOT_V30, tmp_path / "v21")
    folder = open_lerobot_folder(root)
    assert folder.version == "v2.1"
    ours, theirs = _all_frames(root), _all_frames(LEROBOT_V30)
    for key in (STATE, ACTION, IMAGE, "action_is_pad"):
        assert torch.equal(ours[key], theirs[key]), key
    assert ours["task"] == theirs["task"]
    pooled, whole = folder.normalization_stats(ACTION), open_lerobot_folder(LEROBOT_V30).stats
    for stat in ("mean", "std", "min", "max"):  # pooled episode stats = the whole dataset's
        np.testing.assert_allclose(pooled[stat], whole[ACTION][stat], atol=1e-6)


# ------------------------------------------------------------------------------ errors
def _copy(source: Path, root: Path) -> Path:
    import shutil

    shutil.copytree(source, root)
    return root


def _edit_info(root: Path, **changes: Any) -> None:
    info = json.loads((root / "meta/info.json").read_text())
    (root / "meta/info.json").write_text(json.dumps(info | changes))


def test_bad_folders_name_what_is_wrong(tmp_path: Path) -> None:
    with pytest.raises(LeRobotFolderError, match="does not exist"):
        open_lerobot_folder(tmp_path / "nowhere")
    (tmp_path / "empty").mkdir()
    with pytest.raises(LeRobotFolderError, match=r"meta/info.json is missing"):
        open_lerobot_folder(tmp_path / "empty")
    old = _copy(LEROBOT_V30, tmp_path / "old")
    _edit_info(old, codebase_version="v1.6")
    with pytest.raises(LeRobotFolderError, match=r"unknown codebase_version 'v1.6'.*v2.1, v3.0"):
        open_lerobot_folder(old)
    no_data = _copy(LEROBOT_V30, tmp_path / "no_data")
    (no_data / "data/chunk-000/file-000.parquet").unlink()
    with pytest.raises(LeRobotFolderError, match=r"missing: .*file-000.parquet"):
        open_lerobot_folder(no_data)
    no_tasks = _copy(LEROBOT_V30, tmp_path / "no_tasks")
    (no_tasks / "meta/tasks.parquet").unlink()
    with pytest.raises(LeRobotFolderError, match=r"tasks.parquet"):
        open_lerobot_folder(no_tasks)
    v21 = _as_v21(LEROBOT_V30, tmp_path / "v21")
    (v21 / "meta/episodes.jsonl").unlink()
    with pytest.raises(LeRobotFolderError, match=r"episodes.jsonl is missing"):
        open_lerobot_folder(v21)
    short = _copy(LEROBOT_V30, tmp_path / "short")
    path = short / "meta/episodes/chunk-000/file-000.parquet"
    table = pq.read_table(path)
    lengths = table.column("length").to_pylist()
    table = table.set_column(table.column_names.index("length"), "length",
                             pa.array([lengths[0] + 1, lengths[1]]))
    pq.write_table(table, path)
    with pytest.raises(LeRobotFolderError, match=r"episode 0 has length 7 .* 6 frames"):
        open_lerobot_folder(short)
    with pytest.raises(LeRobotFolderError, match="no statistics for 'missing'"):
        open_lerobot_folder(LEROBOT_V30).normalization_stats("missing")


def test_a_video_feature_without_a_decoder_is_a_clear_error(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = _copy(LEROBOT_V30, tmp_path / "video")
    info = json.loads((root / "meta/info.json").read_text())
    info["features"]["observation.images.wrist"] = {
        "dtype": "video", "shape": [8, 8, 3], "names": ["height", "width", "channels"]}
    info["video_path"] = "videos/{video_key}/chunk-{chunk_index:03d}/file-{file_index:03d}.mp4"
    (root / "meta/info.json").write_text(json.dumps(info))
    _without_video_decoders(monkeypatch)
    folder = open_lerobot_folder(root)  # state, action and the PNG camera still read
    assert folder.image_keys() == [IMAGE, "observation.images.wrist"]
    assert folder.decodable_image_keys() == [IMAGE]
    assert IMAGE in folder.batch([0], 2)
    with pytest.raises(LeRobotFolderError,
                       match=r"'observation\.images\.wrist' is stored as video.*PyAV.*torch"):
        folder.batch([0], 2, cameras=["wrist"])


def _without_video_decoders(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(lerobot_format.importlib.util, "find_spec",
                        lambda name, *a: None if name in ("av", "torchcodec") else real(name, *a))


def test_lerobots_video_folder_without_pyav(monkeypatch: pytest.MonkeyPatch) -> None:
    _without_video_decoders(monkeypatch)
    folder = open_lerobot_folder(LEROBOT_VIDEO)
    assert folder.image_keys() == [IMAGE] and folder.decodable_image_keys() == []
    batch = folder.batch(np.arange(len(folder)), 4)  # state, action, tasks: no camera asked
    assert IMAGE not in batch
    assert torch.equal(batch[ACTION], _all_frames(LEROBOT_V30)[ACTION])
    with pytest.raises(LeRobotFolderError, match=r"stored as video.*PyAV \('pip install av'\)"):
        folder.batch([0], 2, cameras=["top"])


def test_lerobots_video_folder_decodes_with_pyav() -> None:
    """Lossy AV1 frames: each decoded frame is nearest its own original (the 8x8 closed-form
    frame upscaled 4x), in any row order and one row at a time."""
    pytest.importorskip("av")
    folder = open_lerobot_folder(LEROBOT_VIDEO)
    rows = np.arange(len(folder))
    images = folder.batch(rows[::-1], 2)[IMAGE].numpy()[::-1]
    scale = MAKE.VIDEO_SIZE // 8
    originals = np.concatenate([np.repeat(np.repeat(e[IMAGE], scale, 1), scale, 2)
                                for e in _episodes()]).transpose(0, 3, 1, 2) / 255.0
    gaps = np.abs(images[:, None] - originals[None]).mean(axis=(2, 3, 4))
    assert (gaps.argmin(axis=1) == rows).all()
    assert np.diag(gaps).max() < 0.05
    for r in (7, 0, 10):
        assert np.array_equal(folder.batch([r], 2)[IMAGE].numpy()[0], images[r])


def test_the_writer_refuses_bad_episodes(tmp_path: Path) -> None:
    features = {STATE: {"dtype": "float32", "shape": [2]}, ACTION: {"dtype": "float32",
                                                                   "shape": [1]}}
    with pytest.raises(ValueError, match="dtype 'video'"):
        LeRobotWriter(tmp_path / "w", fps=10, features={"cam": {"dtype": "video",
                                                                 "shape": [8, 8, 3]}})
    with pytest.raises(ValueError, match="fps must be an integer"):
        LeRobotWriter(tmp_path / "w", fps=0, features=features)
    writer = LeRobotWriter(tmp_path / "w", fps=10, features=features)
    with pytest.raises(ValueError, match=r"missing \['action'\]"):
        writer.add_episode({STATE: np.zeros((3, 2))}, "t")
    with pytest.raises(ValueError, match="same length"):
        writer.add_episode({STATE: np.zeros((3, 2)), ACTION: np.zeros((4, 1))}, "t")
    with pytest.raises(ValueError, match="must be finite"):
        writer.add_episode({STATE: np.full((3, 2), math.nan), ACTION: np.zeros((3, 1))}, "t")
    with pytest.raises(ValueError, match="no episodes"):
        writer.finalize()
    writer.add_episode({STATE: np.zeros((3, 2)), ACTION: np.zeros(3)}, "t")  # (T,) for shape [1]
    folder = open_lerobot_folder(writer.finalize())
    assert folder.batch([0], 2)[ACTION].shape == (1, 2, 1)


# ------------------------------------------------------------------------------ record, train
def test_a_recorded_point_mass_folder_trains_an_act_policy(tmp_path: Path) -> None:
    import gymnasium as gym

    import transformer_math.robotics.envs  # noqa: F401  (registers the environments)
    from transformer_math.robotics.policies.base import load_policy

    env = gym.make("TransformerMath/PointMassTracking-v0", horizon=12)
    root = record_demonstrations(tmp_path / "demos", env, point_mass_expert, episodes=3,
                                 seed=0, task="track the path", fps=20)
    folder = open_lerobot_folder(root)
    assert [e.length for e in folder.episodes] == [12, 12, 12]
    assert folder.array(STATE).shape == (36, env.observation_space.shape[0])
    small = {"chunk_size": 4, "dim": 16, "num_heads": 2, "encoder_layers": 1,
             "decoder_layers": 1, "latent_dim": 4}
    policy, losses = train_act_on_folder(root, steps=30, seed=0, batch_size=16, **small)
    _, losses_again = train_act_on_folder(root, steps=30, seed=0, batch_size=16, **small)
    assert losses == losses_again and all(math.isfinite(x) for x in losses)
    assert losses[-1] < losses[0]
    stats = folder.normalization_stats(ACTION)
    assert torch.allclose(policy.action_mean, torch.tensor(stats["mean"], dtype=torch.float32))
    policy.save_pretrained(tmp_path / "policy")
    loaded = load_policy(tmp_path / "policy")
    obs = torch.as_tensor(folder.array(STATE)[:1])
    loaded.reset()
    policy.reset()
    with torch.no_grad():
        assert torch.equal(loaded.select_action({STATE: obs}), policy.select_action({STATE: obs}))


def test_the_documented_example_runs(monkeypatch: pytest.MonkeyPatch,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    """docs/lerobot_datasets.md's python block (record, train, save), from the repository root."""
    import re

    root = FIXTURE.parents[2]
    text = (root / "docs" / "lerobot_datasets.md").read_text(encoding="utf-8")
    (block,) = re.findall(r"```python\n(.*?)```", text, re.S)
    monkeypatch.chdir(root)
    exec(compile(block, "docs/lerobot_datasets.md", "exec"), {})
    out = capsys.readouterr().out
    assert "Episode(index=0, length=20" in out and "loss " in out


def test_recorded_vla_push_keeps_pixels_and_instructions_and_trains_with_a_camera(
        tmp_path: Path) -> None:
    """LeRobot's gym keys: ``agent_pos`` -> observation.state, ``pixels`` -> a PNG camera
    (lossless), ``info["task"]`` -> the episode's task."""
    import gymnasium as gym

    import transformer_math.robotics.envs  # noqa: F401  (registers the environments)
    from transformer_math.robotics.datasets.lerobot_writer import SCRIPTED_EXPERTS

    env = gym.make("TransformerMath/VLAPush-v0")
    root = record_demonstrations(tmp_path / "vla", env, SCRIPTED_EXPERTS["vla-push"],
                                 episodes=2, seed=3, fps=10)
    folder = open_lerobot_folder(root)
    obs, info = env.reset(seed=3)
    first = folder.batch([0], 2)
    assert torch.equal(first[IMAGE][0], torch.from_numpy(obs["pixels"]).permute(2, 0, 1) / 255.0)
    assert torch.equal(first[STATE][0], torch.from_numpy(obs["agent_pos"]))
    assert folder.episodes[0].tasks == (info["task"],) and first["task"] == [info["task"]]
    small = {"chunk_size": 4, "dim": 16, "num_heads": 2, "encoder_layers": 1,
             "decoder_layers": 1, "latent_dim": 4}
    policy, losses = train_act_on_folder(root, steps=6, seed=0, batch_size=8, cameras=True,
                                         **small)
    assert policy.config.cameras == "top" and policy.config.image_height == 32
    assert all(math.isfinite(x) for x in losses)


def test_episodes_spread_over_several_data_files_read_back(tmp_path: Path) -> None:
    features = {STATE: {"dtype": "float32", "shape": [2]}, ACTION: {"dtype": "float32",
                                                                   "shape": [1]}}
    writer = LeRobotWriter(tmp_path / "many", fps=5, features=features,
                           data_file_mb=40 / (1024 * 1024))  # 40 bytes: a file per episode
    rng = np.random.default_rng(0)
    episodes = [{STATE: rng.normal(size=(n, 2)), ACTION: rng.normal(size=(n, 1))}
                for n in (4, 3, 5)]
    for e in episodes:
        writer.add_episode(e, "t")
    root = writer.finalize()
    assert sorted(p.name for p in (root / "data/chunk-000").iterdir()) == [
        "file-000.parquet", "file-001.parquet", "file-002.parquet"]
    folder = open_lerobot_folder(root)
    expected = np.concatenate([e[STATE] for e in episodes]).astype(np.float32)
    assert np.array_equal(folder.array(STATE), expected)
    assert [(e.length, e.start) for e in folder.episodes] == [(4, 0), (3, 4), (5, 7)]
