"""README.md's "Layout" names every package of ``src/transformer_math`` in the layer
``tests/test_import_graph.py`` enforces (issue 37, item 5), and the README points a newcomer at
the VLA commands and the LeRobot guides (issue 38, item 1)."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
PACKAGE = ROOT / "src" / "transformer_math"
NAME = re.compile(r"([a-z][a-z0-9_]*)(/|\.py):?")


def _enforced_layers() -> dict[str, int]:
    spec = importlib.util.spec_from_file_location("import_graph_layers",
                                                  ROOT / "tests" / "test_import_graph.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return {name: i for i, names in enumerate(module.LAYERS) for name in names}


def readme_layers(text: str) -> dict[str, int]:
    """``{package or module: layer}`` from the Layout section's text block: a line that starts
    with a digit opens that layer; every whole word ending in ``/`` or ``.py`` on a line belongs
    to the layer open there."""
    section = text.split("## Layout", 1)[1]
    block = re.search(r"```text\n(.*?)```", section, re.S)
    assert block, "the Layout section has no text block"
    layers: dict[str, int] = {}
    layer = -1
    for line in block.group(1).splitlines():
        if line[:1].isdigit():
            layer = int(line.split()[0])
        for word in line.split():
            found = NAME.fullmatch(word)
            if found:
                assert layer >= 0, line
                layers[found.group(1)] = layer
    return layers


def test_layout_lists_every_package_in_its_enforced_layer() -> None:
    shown = readme_layers(README.read_text(encoding="utf-8"))
    present = {p.stem for p in PACKAGE.iterdir()
               if (p.is_dir() and (p / "__init__.py").exists())
               or (p.suffix == ".py" and p.name != "__init__.py")}
    assert present <= set(shown), f"the README's Layout leaves out {sorted(present - set(shown))}"
    assert set(shown) <= present, f"the README's Layout names {sorted(set(shown) - present)}"
    enforced = _enforced_layers()
    wrong = {name: (layer, enforced.get(name)) for name, layer in shown.items()
             if enforced.get(name) != layer}
    assert not wrong, f"README layer vs tests/test_import_graph.py LAYERS: {wrong}"


def test_the_layout_parser_reads_a_layer_per_digit() -> None:
    text = "## Layout\n```text\n0 a.py b/: words\n  c/   more --log/--resume\n1 d/  x\n```\n"
    assert readme_layers(text) == {"a": 0, "b": 0, "c": 0, "d": 1}


def test_readme_points_at_the_vla_commands_and_the_lerobot_guides() -> None:
    text = " ".join(README.read_text(encoding="utf-8").split())
    for needle in ("tmath train vla", "tmath rollout vla-push", "(docs/vla.md)",
                   "(docs/lerobot.md)", "(docs/lerobot_datasets.md)", "**From LeRobot**"):
        assert needle in text, needle
    lerobot = (ROOT / "docs" / "lerobot.md").read_text(encoding="utf-8")
    assert lerobot.splitlines()[0] == "# From LeRobot"
