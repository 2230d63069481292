"""Hostile and careless checkpoints (issue 15): every folder of ``hostile_corpus.py`` is refused
with its message, ``tmath inspect`` prints one line and exits 2 on it, nothing outside a folder
is opened, and the valid folders still load with the same logits. The corpus runs in ONE
subprocess under an address-space limit of (torch's address space + 2 GiB) with a hard timeout
guarding hangs (``hostile_corpus.run``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from transformer_math.checkpoints.adapters.keys import bool_key, float_key, int_key, str_key
from transformer_math.checkpoints.files import check_name, inside, read_header

CORPUS = Path(__file__).with_name("hostile_corpus.py")


def _expected() -> tuple[dict[str, Any], dict[str, str]]:
    """``EXPECTED`` and ``GOOD`` of the corpus module (loaded by path: tests cannot import
    sibling modules under ``--import-mode=importlib``)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("hostile_corpus", CORPUS)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.EXPECTED, module.GOOD


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    work = tmp_path_factory.mktemp("hostile") / "corpus"
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    done = subprocess.run([sys.executable, str(CORPUS), str(work)], capture_output=True,
                          text=True, timeout=600, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    out = {d["name"]: d for d in lines}
    out["_pickle_ran"] = {"value": (work / "PWNED").exists()}
    return out


def test_every_hostile_folder_is_refused_with_its_message(corpus):
    expected, good = _expected()
    assert set(corpus) == set(expected) | set(good) | {"_pickle_ran"}
    assert not corpus["_pickle_ran"]["value"]  # weights_only: the exploit never ran
    wrong = []
    for name, (_, types, needle) in expected.items():
        d = corpus[name]
        if d["ok"] or d["type"] not in types or needle not in d["msg"].lower():
            wrong.append((name, d.get("type"), d.get("msg")))
    assert not wrong, wrong


def test_nothing_outside_a_folder_is_opened(corpus):
    assert {n: d["outside_opened"] for n, d in corpus.items() if d.get("outside_opened")} == {}


def test_inspect_refuses_with_one_line(corpus):
    expected, _ = _expected()
    for name, (loader, _, needle) in expected.items():
        if loader != "hf":
            continue
        d = corpus[name]
        err = d["inspect_err"]
        assert d["inspect_code"] == 2, (name, err)
        assert err.startswith("tmath inspect: error: ") and err.count("\n") == 1, (name, err)
        assert "Traceback" not in err and needle in err.lower(), (name, err)


def test_valid_folders_still_load_with_the_same_logits(corpus):
    _, good = _expected()
    for name, loader in good.items():
        d = corpus[name]
        assert d["ok"], (name, d.get("msg"))
        assert d["max_abs_diff"] == 0.0, (name, d["max_abs_diff"])
        if loader == "hf":
            assert d["inspect_code"] == 0, (name, d["inspect_err"])


# ----------------------------------------------------------------------- the helpers directly


@pytest.mark.parametrize("reader, value, needle", [
    (bool_key, "false", "must be a JSON boolean"),
    (bool_key, 0, "must be a JSON boolean"),
    (int_key, 64.0, "must be a JSON integer"),
    (int_key, True, "must be a JSON integer"),
    (int_key, 2**21, "in [1, 1048576]"),
    (float_key, "1e-5", "finite number"),
    (float_key, float("inf"), "finite number"),
    (float_key, False, "finite number"),
    (str_key, 3, "must be a string"),
])
def test_typed_readers_name_the_key(reader, value, needle):
    with pytest.raises(ValueError, match=r"the_key in cfg\.json") as err:
        reader({"the_key": value}, "the_key", source="cfg.json")
    assert needle in str(err.value)


def test_typed_readers_accept_good_values():
    cfg = {"b": False, "i": 64, "f": 10000, "s": "x", "n": None}
    assert bool_key(cfg, "b") is False and int_key(cfg, "i") == 64
    assert float_key(cfg, "f") == 10000.0 and str_key(cfg, "s") == "x"
    assert int_key(cfg, "n", None) is None and bool_key(cfg, "absent", True) is True
    with pytest.raises(ValueError, match="lacks the required key 'absent'"):
        int_key(cfg, "absent")


@pytest.mark.parametrize("name", ["../x", "/etc/passwd", "a/b", ".", "..", "", "a\\b", 3])
def test_names_that_are_not_plain_file_names_are_refused(name):
    with pytest.raises(ValueError, match="shard"):
        check_name(name, "shard")


def test_symlinks_resolve_only_inside(tmp_path: Path):
    root = tmp_path / "ckpt"
    root.mkdir()
    (root / "real").write_text("x")
    os.symlink("real", root / "link_in")
    os.symlink(tmp_path / "elsewhere", root / "link_out")  # the target need not exist
    os.symlink("../elsewhere", root / "link_up")
    assert inside(root, "link_in", "file") == (root / "real").resolve()
    for name in ("link_out", "link_up"):
        with pytest.raises(ValueError, match="outside the checkpoint folder"):
            inside(root, name, "file")
    # same message whether the outside target exists or not
    (tmp_path / "elsewhere").write_text("secret")
    with pytest.raises(ValueError, match="link_out' is a symbolic link pointing outside"):
        inside(root, "link_out", "file")


def test_read_header_of_a_saved_file(tmp_path: Path):
    import torch
    from safetensors.torch import save_file

    save_file({"a": torch.zeros(2, 3), "b": torch.ones(4, dtype=torch.bfloat16)},
              str(tmp_path / "x.safetensors"))
    header = read_header(tmp_path / "x.safetensors")
    assert {k: (h.dtype, h.shape, h.floating) for k, h in header.items()} == {
        "a": ("F32", (2, 3), True), "b": ("BF16", (4,), True)}


@pytest.mark.parametrize("metadata", [{"format": 1}, [1, 2], {"a": None}])
def test_read_header_refuses_what_safetensors_refuses(tmp_path: Path, metadata: Any):
    """Issue 40.6: ``inspect`` and ``doctor --static`` said ok on headers whose __metadata__ is
    not a str -> str map, which safetensors rejects once the model is allocated."""
    import struct

    from safetensors.torch import load_file

    header = json.dumps({"__metadata__": metadata,
                         "a": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}}).encode()
    path = tmp_path / "model.safetensors"
    path.write_bytes(struct.pack("<Q", len(header)) + header + bytes(16))
    with pytest.raises(Exception):  # noqa: B017  (safetensors' own error type)
        load_file(str(path))
    with pytest.raises(ValueError, match="__metadata__ must map names to strings"):
        read_header(path)


@pytest.mark.parametrize("rope_type, params, error, needle", [
    (["linear"], {"factor": 2.0}, ValueError, "rope_type must be one of"),
    ("linear", [("factor", 2.0)], TypeError, "must be a mapping"),
    ("linear", {"factor": "2"}, ValueError, "factor must be a finite number"),
    ("linear", {"factor": -2.0}, ValueError, "factor must be >= 1.0"),
    ("longrope", {"short_factor": "ab", "long_factor": [1.0] * 4,
                  "original_max_position_embeddings": 16}, ValueError, "short_factor must be"),
    ("longrope", {"short_factor": ["1"] * 4, "long_factor": [1.0] * 4,
                  "original_max_position_embeddings": 16}, ValueError, "every entry of"),
])
def test_rope_scaling_values_are_checked(rope_type, params, error, needle):
    """``functional.rope_scaling`` refuses malformed types and values by name (no coercion of
    ``"1"`` or of a list of pairs, no unhashable-type TypeError)."""
    from transformer_math.functional.rope_scaling import compute_rope_frequencies

    with pytest.raises(error, match=needle):
        compute_rope_frequencies(rope_type, 8, 10000.0, params, 32)
