"""The layers, read from the source with ``ast``: behaviour code (``core``) never imports a
presentation (the headless CLI in ``core/cli``, the TUI in ``tui``, or Textual)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CORE = ROOT / "core"
CLI = CORE / "cli"


def imported_modules(path: Path, root: Path = ROOT) -> set[str]:
    """Every module a file imports, relative imports resolved: ``import a.b``, ``from a import b``
    (``a`` and ``a.b``, as ``b`` may be a module), and ``importlib.import_module("a.b")``."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    package = parts[:-1]  # a package's __init__ is in the package it names
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                anchor = package[: len(package) - node.level + 1]
                base = ".".join(anchor + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name in ("import_module", "__import__") and isinstance(node.args[0].value, str):
                found.add(node.args[0].value)
    return found


def reaches(module: str, target: str) -> bool:
    return module == target or module.startswith(target + ".")


def offenders(paths: list[Path], targets: tuple[str, ...]) -> dict[str, list[str]]:
    bad: dict[str, list[str]] = {}
    for path in paths:
        hits = sorted(m for m in imported_modules(path) if any(reaches(m, t) for t in targets))
        if hits:
            bad[str(path.relative_to(ROOT))] = hits
    return bad


def core_files() -> list[Path]:
    files = sorted(CORE.rglob("*.py"))
    assert len(files) > 20 and any(CLI in f.parents for f in files)
    return files


def test_behaviour_code_never_imports_the_headless_cli() -> None:
    behaviour = [f for f in core_files() if CLI not in f.parents]
    assert offenders(behaviour, ("core.cli",)) == {}


def test_no_module_of_core_imports_the_tui_or_textual() -> None:
    assert offenders(core_files(), ("tui", "textual")) == {}


def test_the_scan_finds_every_form_of_import(tmp_path: Path) -> None:
    pkg = tmp_path / "core" / "deferral"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("from . import names\n")
    module = pkg / "x.py"
    module.write_text(
        "import json\nfrom ..cli import entry\nfrom core import cli\nfrom . import names\n"
        "def f():\n    import tui.app\n    importlib.import_module('textual.widgets')\n"
    )
    found = imported_modules(module, root=tmp_path)
    assert {"json", "core.cli.entry", "core.cli", "core.deferral.names", "tui.app", "textual.widgets"} <= found
    assert imported_modules(pkg / "__init__.py", root=tmp_path) >= {"core.deferral", "core.deferral.names"}
    assert reaches("core.cli.plan", "core.cli") and not reaches("core.client", "core.cli")
    # and on the real tree: the CLI's parser imports its command modules; the script imports the CLI
    assert "core.cli.plan" in imported_modules(CLI / "parser.py")
    assert "core.cli.entry" in imported_modules(ROOT / "tui" / "main.py")
