"""The TUI's modules import on their own, and none of them imports another in a circle.

The graph is read from the source with ``ast``, so it counts the imports that only a type
checker runs (under ``if TYPE_CHECKING:``) and the ones inside functions: a circle hidden
there is still a circle in the design."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TUI = ROOT / "tui"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = sorted(module_name(p) for p in TUI.rglob("*.py"))


def imported(path: Path, known: set[str]) -> set[str]:
    """The tui modules ``path`` imports, wherever in the file the import stands."""
    package = module_name(path) if path.name == "__init__.py" else module_name(path).rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                source = ".".join([*base, node.module] if node.module else base)
            else:
                source = node.module or ""
            # `from tui.widgets import roster` names a module; `from tui.state import clip` does not
            names = [source, *(f"{source}.{alias.name}" for alias in node.names)]
        else:
            continue
        for name in names:
            # `import tui.widgets.roster` depends on the module itself, not on its packages
            if name in known:
                found.add(name)
    found.discard(module_name(path))
    return found


def import_graph() -> dict[str, set[str]]:
    known = set(MODULES)
    return {module_name(p): imported(p, known) for p in TUI.rglob("*.py")}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import circle (as the modules along it, the first repeated at the end), or None."""
    done: set[str] = set()
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        if node in path:
            return [*path[path.index(node) :], node]
        if node in done:
            return None
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            cycle = visit(nxt)
            if cycle:
                return cycle
        path.pop()
        done.add(node)
        return None

    for start in sorted(graph):
        cycle = visit(start)
        if cycle:
            return cycle
    return None


def test_the_graph_sees_the_edges_that_matter() -> None:
    graph = import_graph()
    assert "tui.screens.chats" in graph["tui.controllers.chat_ops"]
    assert "tui.widgets.chat_log" in graph["tui.router"]  # a TYPE_CHECKING import counts
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set(), "c": {"a", "b"}}) is None


def test_no_import_circle_among_tui_modules() -> None:
    cycle = find_cycle(import_graph())
    assert cycle is None, "import circle: " + " -> ".join(cycle or [])


@pytest.mark.parametrize("module", MODULES)
def test_each_module_imports_on_its_own(module: str) -> None:
    run = subprocess.run(
        [sys.executable, "-c", f"import {module}"], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert run.returncode == 0, run.stderr
