"""Writes that cannot be redirected or cut (issue 39): every file the project writes goes through
``transformer_math.safe_write``. Links planted where a file or a folder goes are replaced, never
followed (the file they point at is untouched); a writer killed mid-way (a file-size limit,
SIGKILL) leaves the old complete file or folder, which still loads.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch
from typer.testing import CliRunner

from transformer_math import safe_write
from transformer_math.cli import app
from transformer_math.report.results import write_json

OUTSIDE = "precious: not the project's file\n"


def _outside(tmp_path: Path, name: str = "precious.txt") -> Path:
    victim = tmp_path / "elsewhere" / name
    victim.parent.mkdir(exist_ok=True)
    victim.write_text(OUTSIDE)
    return victim


def _link(at: Path, to: Path) -> Path:
    at.parent.mkdir(parents=True, exist_ok=True)
    at.symlink_to(to)
    return at


def test_a_link_at_the_target_is_replaced_not_followed(tmp_path):
    victim = _outside(tmp_path)
    link = _link(tmp_path / "out" / "results.json", victim)
    write_json({"a": 1}, link)
    assert victim.read_text() == OUTSIDE
    assert not link.is_symlink() and json.loads(link.read_text()) == {"a": 1}


def test_figures_through_a_linked_folder_delete_nothing_outside(tmp_path):
    elsewhere = tmp_path / "photos"
    elsewhere.mkdir()
    (elsewhere / "holiday.png").write_bytes(b"\x89PNG not ours")
    figures = _link(tmp_path / "report" / "figures", elsewhere)
    real = safe_write.real_dir(figures)
    safe_write.remove_own_files(real, keep=lambda p: p.suffix != ".png")
    assert (elsewhere / "holiday.png").read_bytes() == b"\x89PNG not ours"
    assert real.is_dir() and not real.is_symlink() and not list(real.iterdir())


def test_save_figure_replaces_a_link(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    victim = _outside(tmp_path, "victim.png")
    link = _link(tmp_path / "plot.png", victim)
    fig, ax = plt.subplots()
    ax.plot([0, 1], [1, 0])
    safe_write.save_figure(fig, link)
    plt.close(fig)
    assert victim.read_text() == OUTSIDE
    assert link.read_bytes().startswith(b"\x89PNG")


def test_append_refuses_a_link(tmp_path):
    victim = _outside(tmp_path)
    link = _link(tmp_path / "rows.jsonl", victim)
    with pytest.raises(safe_write.UnsafeTargetError, match="symbolic link"):
        safe_write.append_line(link, "{}")
    assert victim.read_text() == OUTSIDE


def test_a_failed_write_leaves_the_old_file_whole(tmp_path):
    target = tmp_path / "index.html"
    target.write_text("old complete page")

    class BoomError(RuntimeError):
        pass

    with pytest.raises(BoomError), safe_write.replacing(target) as f:
        f.write(b"half a new pa")
        raise BoomError
    assert target.read_text() == "old complete page"
    assert [p.name for p in tmp_path.iterdir()] == ["index.html"]  # no temporary left


def test_a_lone_surrogate_does_not_cut_the_old_file(tmp_path):
    target = tmp_path / "index.html"
    target.write_text("old complete page")
    with pytest.raises(UnicodeEncodeError):
        safe_write.write_text(target, "bad \ud800 text")
    assert target.read_text() == "old complete page"


_FSIZE = textwrap.dedent("""
    import resource, signal, sys
    from transformer_math import safe_write
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))
    try:
        safe_write.write_bytes(sys.argv[1], b"n" * 100_000)
    except OSError as exc:
        print("refused", exc.errno)
""")


def test_a_file_size_limit_mid_write_leaves_the_old_file(tmp_path):
    target = tmp_path / "results.json"
    target.write_text('{"old": true}')
    out = subprocess.run([sys.executable, "-c", _FSIZE, str(target)], capture_output=True,
                         text=True, timeout=120)
    assert "refused" in out.stdout, out.stderr
    assert json.loads(target.read_text()) == {"old": True}


# A writer killed by SIGKILL half-way through a folder save: the first save is what loads.
_KILLED_SAVE = textwrap.dedent("""
    import os, signal, sys
    import torch
    sys.path.insert(0, sys.argv[3])
    from hostile_corpus import _tiny_llama
    from transformer_math.checkpoints import io
    import safetensors.torch as st
    real = st.save_file
    def dying(tensors, filename, metadata=None):
        with open(filename, "wb") as f:
            f.write(b"half a safetensors file")
            f.flush()
        os.kill(os.getpid(), signal.SIGKILL)
    st.save_file = dying
    model = _tiny_llama(int(sys.argv[2]))
    io.save_pretrained(model, sys.argv[1])
""")


def test_a_checkpoint_save_killed_mid_way_leaves_the_old_save(tmp_path):
    sys.path.insert(0, str(Path(__file__).parent / "checkpoints"))
    from hostile_corpus import _tiny_llama

    from transformer_math.checkpoints.io import from_pretrained, save_pretrained

    folder = tmp_path / "ckpt"
    first = _tiny_llama(0)
    save_pretrained(first, folder)
    (folder / "tokenizer.json").write_text("{}")
    before = sorted(p.name for p in folder.iterdir())
    out = subprocess.run([sys.executable, "-c", _KILLED_SAVE, str(folder), "1",
                          str(Path(__file__).parent / "checkpoints")],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == -signal.SIGKILL, out.stderr[-2000:]
    ids = torch.tensor([[1, 2, 3, 4]])
    with torch.no_grad():
        assert torch.equal(from_pretrained(folder)(ids).logits, first(ids))
    assert sorted(p.name for p in folder.iterdir()) == before
    # what the killed writer left is a hidden sibling no loader looks at
    assert all(p.name.startswith(".ckpt.") for p in tmp_path.iterdir() if p.name != "ckpt")


def test_a_checkpoint_save_replaces_links_and_keeps_other_files(tmp_path):
    sys.path.insert(0, str(Path(__file__).parent / "checkpoints"))
    from hostile_corpus import _tiny_llama

    from transformer_math.checkpoints.io import from_pretrained, save_pretrained

    victim = _outside(tmp_path)
    folder = tmp_path / "ckpt"
    folder.mkdir()
    _link(folder / "config.json", victim)
    (folder / "notes.txt").write_text("kept")
    model = _tiny_llama(0)
    save_pretrained(model, folder)
    assert victim.read_text() == OUTSIDE
    assert not (folder / "config.json").is_symlink()
    assert (folder / "notes.txt").read_text() == "kept"
    ids = torch.tensor([[1, 2, 3]])
    with torch.no_grad():
        assert torch.equal(from_pretrained(folder)(ids).logits, model(ids))
    # a link at the folder itself is replaced by the new folder
    other = tmp_path / "other"
    other.mkdir()
    (other / "precious.txt").write_text(OUTSIDE)
    linked = _link(tmp_path / "linked", other)
    save_pretrained(model, linked)
    assert not linked.is_symlink() and (other / "precious.txt").read_text() == OUTSIDE
    assert sorted(p.name for p in other.iterdir()) == ["precious.txt"]


def test_cli_json_through_a_link_leaves_the_outside_file(tmp_path):
    victim = _outside(tmp_path)
    link = _link(tmp_path / "chapters.json", victim)
    result = CliRunner().invoke(app, ["chapters", "--json", str(link)])
    assert result.exit_code == 0, result.output
    assert victim.read_text() == OUTSIDE
    assert "sections" in json.loads(link.read_text())


def test_no_module_writes_around_safe_write():
    """Every write of ``src/`` goes through ``safe_write`` (or writes inside a temporary folder
    that ``replacing_folder`` swaps in): a new ``write_text``/``savefig``/``save_file`` call is
    reviewed here."""
    src = Path(__file__).resolve().parents[1] / "src" / "transformer_math"
    allowed = {
        "safe_write.py",
        "checkpoints/io.py",  # inside replacing_folder's temporary folder
        "robotics/policies/base.py",  # inside replacing_folder's temporary folder
        "report/browser.py",  # a probe page in a private temporary folder
        "diagnostics/memory.py",  # /proc/self/clear_refs
        "robotics/policies/lerobot_act_adapter.py",  # inside replacing_folder's temporary folder
        "bench/load_bench.py",  # the load benchmark's scratch folder of random weights
    }
    offenders = []
    for path in sorted(src.rglob("*.py")):
        rel = path.relative_to(src).as_posix()
        if rel in allowed or rel.startswith("claims/"):
            continue
        text = path.read_text(encoding="utf-8")
        for needle in (r"(?<!safe_write)\.write_text\(", r"(?<!safe_write)\.write_bytes\(",
                       r"\bfig\.savefig\(", r"\bsave_file\(", r"open\(path, \"w"):
            if re.search(needle, text):
                offenders.append(f"{rel}: {needle}")
    assert not offenders, offenders


def test_env_has_no_stray_temporaries_after_a_save(tmp_path):
    folder = tmp_path / "f"
    with safe_write.replacing_folder(folder) as tmp:
        (tmp / "a.txt").write_text("a")
    with safe_write.replacing_folder(folder) as tmp:
        (tmp / "b.txt").write_text("b")
    assert sorted(os.listdir(tmp_path)) == ["f"]
    assert sorted(os.listdir(folder)) == ["b.txt"]
