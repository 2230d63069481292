"""The package's import graph has no cycle (issue 13), found by reading every module's imports."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
PACKAGE = "transformer_math"


def _module_name(path: Path) -> str:
    parts = path.relative_to(SRC).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path, modules: set[str]) -> set[str]:
    """Project modules imported at module level (imports inside functions are lazy: excluded)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in tree.body:
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        for name in names:
            while name and name not in modules:
                name = name.rpartition(".")[0]
            if name.startswith(PACKAGE + "."):
                found.add(name)
    return found


def import_graph() -> dict[str, set[str]]:
    files = sorted((SRC / PACKAGE).rglob("*.py"))
    modules = {_module_name(f) for f in files}
    return {_module_name(f): _imports(f, modules) - {_module_name(f)} for f in files}


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return [*stack[stack.index(nxt):], nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_no_import_cycle() -> None:
    cycle = _cycle({k: {v for v in vs if not k.startswith(v + ".")} for k, vs in
                    import_graph().items()})  # a package's __init__ importing its child is fine
    assert cycle is None, " -> ".join(cycle or [])


def test_the_cycle_finder_finds_a_planted_cycle() -> None:
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None


def test_lower_layers_do_not_import_higher_ones() -> None:
    """ARCHITECTURE.md's one-way layers, for the layers this issue touches."""
    forbidden = {
        "transformer_math.functional": ("nn", "checkpoints", "claims", "experiments"),
        "transformer_math.nn": ("checkpoints", "claims", "experiments", "robotics"),
        "transformer_math.checkpoints": ("claims", "experiments"),
    }
    for module, deps in import_graph().items():
        for layer, banned in forbidden.items():
            if module.startswith(layer + ".") or module == layer:
                bad = [d for d in deps if any(d.startswith(f"{PACKAGE}.{b}") for b in banned)]
                assert not bad, f"{module} imports {bad}"
