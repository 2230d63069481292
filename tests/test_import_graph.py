"""The package's import graph has no cycle and no upward arrow, found by reading every import.

Issue 13 forbade cycles among module-level imports; issue 37 (item 3) counts imports inside
functions and relative imports too, and checks the whole of ARCHITECTURE.md's one-way layers.
"""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
PACKAGE = "transformer_math"


def _module_name(path: Path, src: Path = SRC) -> str:
    parts = path.relative_to(src).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imported_names(path: Path, src: Path) -> list[tuple[str, int]]:
    """Every module name an import statement of ``path`` names, anywhere in the file (module
    level, inside functions and ``if TYPE_CHECKING:`` blocks), with its line; relative imports
    (``from . import x``) are resolved against the file's package."""
    me = _module_name(path, src)
    package = me if path.name == "__init__.py" else me.rpartition(".")[0]
    found: list[tuple[str, int]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(a.name, node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, *([node.module] if node.module else [])])
            found.append((base, node.lineno))
            found += [(f"{base}.{a.name}", node.lineno) for a in node.names]
    return found


def _imports(path: Path, modules: set[str], src: Path) -> dict[str, int]:
    """Project modules ``path`` imports (anywhere in the file), each with a line that does."""
    found: dict[str, int] = {}
    for name, line in _imported_names(path, src):
        while name and name not in modules:
            name = name.rpartition(".")[0]
        if name.startswith(PACKAGE + "."):
            found.setdefault(name, line)
    return found


def import_graph_with_lines(src: Path = SRC) -> dict[str, dict[str, int]]:
    files = sorted((src / PACKAGE).rglob("*.py"))
    modules = {_module_name(f, src) for f in files}
    graph = {}
    for f in files:
        me = _module_name(f, src)
        graph[me] = {m: line for m, line in _imports(f, modules, src).items() if m != me}
    return graph


def import_graph(src: Path = SRC) -> dict[str, set[str]]:
    """Module -> the project modules it imports, at module level or inside functions (a lazy
    import still makes the two modules depend on each other, issue 37 item 3)."""
    return {m: set(deps) for m, deps in import_graph_with_lines(src).items()}


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


LAYERS: tuple[tuple[str, ...], ...] = (
    # 0: used by every layer (ARCHITECTURE.md: "registry.py and bugs.py live at this level")
    ("registry", "bugs", "safe_write", "clocks", "typed_json", "chapters", "i18n", "html_style"),
    ("functional",),
    ("nn",),
    ("theory",),
    ("diagnostics",),
    ("data", "robotics", "checkpoints"),
    ("experiments", "doctor"),
    ("claims",),
    ("execution", "report", "seed_annotation", "bench", "commands", "cli"),
)
"""ARCHITECTURE.md's one-way layers, lowest first: a module imports only from its own layer
and the layers below it. Every subpackage and top-level module of the package has a layer."""


def _layer(module: str) -> int:
    top = module.split(".")[1] if "." in module else ""
    for i, names in enumerate(LAYERS):
        if top in names:
            return i
    raise AssertionError(f"{module}: its top-level name {top!r} has no layer in LAYERS")


def upward_arrows() -> list[str]:
    arrows = []
    for module, deps in import_graph_with_lines().items():
        if module == PACKAGE:
            continue
        for dep, line in sorted(deps.items()):
            if _layer(dep) > _layer(module):
                arrows.append(f"{module} (line {line}) -> {dep}")
    return arrows


def test_every_module_has_a_layer() -> None:
    for module in import_graph():
        if module != PACKAGE:
            _layer(module)


def test_lower_layers_do_not_import_higher_ones() -> None:
    """No module imports a higher layer, inside functions included (``theory.latency`` once
    imported ``diagnostics.timing`` lazily; ``doctor.report`` the report's JSON writer)."""
    assert upward_arrows() == []


def test_lazy_and_relative_imports_are_read(tmp_path: Path) -> None:
    """The reader sees an import inside a function and resolves a relative one."""
    pkg = tmp_path / PACKAGE / "sub"
    pkg.mkdir(parents=True)
    (tmp_path / PACKAGE / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("from . import a\n")
    (pkg / "a.py").write_text("def f():\n    from ..sub import b\n    return b\n")
    (pkg / "b.py").write_text("from .a import f\n")
    graph = import_graph(tmp_path)
    assert graph[f"{PACKAGE}.sub.a"] == {f"{PACKAGE}.sub", f"{PACKAGE}.sub.b"}
    assert graph[f"{PACKAGE}.sub.b"] == {f"{PACKAGE}.sub.a"}
    assert _cycle(graph) is not None
