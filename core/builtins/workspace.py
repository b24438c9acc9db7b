"""``workspace.read_file``, ``workspace.search`` and ``workspace.write_file``: text files in the owner's
workspace folder (``ctx.workspace``). Nothing that resolves outside it, through ``..`` or a
symbolic link, is read or written; file work runs in a thread (asyncio is imported when a tool
runs: the roster loader imports this module for its schemas only)."""

from __future__ import annotations

import fnmatch
import os
import re
import tempfile
from pathlib import Path
from typing import Annotated, Any

from pydantic import Field, StringConstraints

from core.builtins import ToolContext
from core.builtins.shared import Args, Text, ToolError, tool
from core.tools import ToolResult


class WorkspaceReadArgs(Args):
    path: Text = Field(description="Path relative to the workspace root.")
    offset: int = Field(1, ge=1, description="First line to return, counting from 1.")
    limit: int = Field(400, ge=1, le=5000, description="Maximum number of lines.")


class WorkspaceSearchArgs(Args):
    pattern: Annotated[str, StringConstraints(min_length=1, max_length=1000)] = Field(
        description="Text or regular expression to look for."
    )
    glob: str | None = Field(None, description="Only files whose path matches this glob, e.g. '*.md'.")


class WorkspaceWriteArgs(Args):
    path: Text = Field(description="Path relative to the workspace root.")
    content: Annotated[str, StringConstraints(max_length=5_000_000)] = Field(description="Full text of the file.")
    overwrite: bool = Field(False, description="Replace the file if it exists.")


_SKIP_DIRS = frozenset(
    {".git", ".hg", ".svn", "node_modules", "__pycache__", ".venv", "venv", ".mypy_cache", ".pytest_cache", ".tox"}
)
MAX_LINE_CHARS = 2000
SEARCH_MAX_FILE_BYTES = 2_000_000
SEARCH_MAX_FILES = 10_000
SEARCH_MAX_LINES = 200
SEARCH_LINES_PER_FILE = 20
SEARCH_PATTERN_SECONDS = 2.0  # the time one search may spend matching its pattern, all lines together


class _OutOfTime(Exception):
    """The search's pattern used up its time (one that backtracks)."""


class _BoundedPattern:
    """The model's pattern run with the ``regex`` package under one time budget for the whole
    search, letting go of the GIL while it matches (Python's ``re`` can be neither interrupted
    nor shared: a pattern that backtracks would hold the process)."""

    def __init__(self, compiled: Any, seconds: float):
        import time

        self._compiled = compiled
        self._clock = time.monotonic
        self._deadline = time.monotonic() + seconds

    def search(self, text: str) -> Any:
        left = self._deadline - self._clock()
        if left <= 0:
            raise _OutOfTime
        try:
            return self._compiled.search(text, timeout=left, concurrent=True)
        except TimeoutError:
            raise _OutOfTime from None


def _workspace_root(ctx: ToolContext) -> Path:
    return Path(ctx.workspace).expanduser().resolve()


def _inside(root: Path, path: Path) -> bool:
    return path == root or path.is_relative_to(root)


def _workspace_path(ctx: ToolContext, raw: str) -> tuple[Path, Path, str]:
    """``(root, resolved target, relative path)``; refuses anything that resolves outside the root."""
    root = _workspace_root(ctx)
    if "\x00" in raw:
        raise ToolError("The path contains a NUL character.")
    if raw.startswith(("/", "\\", "~")) or re.match(r"^[A-Za-z]:[\\/]", raw):
        raise ToolError(f"Path {raw!r} is absolute; give a path relative to the workspace root.")
    target = (root / raw).resolve()  # follows every symlink that exists along the way
    if not _inside(root, target):
        raise ToolError(
            f"Path {raw!r} is outside the workspace (it resolves to a place outside the workspace "
            "folder, through '..' or a symbolic link); only files inside the workspace can be used."
        )
    return root, target, target.relative_to(root).as_posix() if target != root else "."


def _is_binary(path: Path) -> bool:
    with path.open("rb") as fh:
        return b"\x00" in fh.read(8192)


def _read_window(target: Path, rel: str, offset: int, limit: int) -> ToolResult:
    if not target.exists():
        raise ToolError(f"No file {rel!r} in the workspace. Use workspace.search to find files.")
    if target.is_dir():
        raise ToolError(f"{rel!r} is a folder, not a file. Use workspace.search with a glob to list its files.")
    if _is_binary(target):
        raise ToolError(
            f"{rel!r} is a binary file ({target.stat().st_size} bytes); workspace.read_file reads text only."
        )
    window: list[str] = []
    total = 0
    with target.open("r", encoding="utf-8", errors="replace", newline=None) as fh:
        for total, line in enumerate(fh, start=1):
            if offset <= total < offset + limit:
                line = line.rstrip("\n")
                if len(line) > MAX_LINE_CHARS:
                    line = line[:MAX_LINE_CHARS] + f" [... line cut at {MAX_LINE_CHARS} characters]"
                window.append(f"{total:>6}\t{line}")
    if total == 0:
        return ToolResult(
            content=[{"type": "text", "text": f"{rel} is empty."}],
            structured={"path": rel, "total_lines": 0, "first_line": None, "last_line": None},
        )
    if offset > total:
        raise ToolError(f"offset {offset} is past the end of {rel!r}, which has {total} lines.")
    last = offset + len(window) - 1
    header = f"{rel}: lines {offset}-{last} of {total}"
    footer = f"\n[{total - last} more lines; call again with offset={last + 1} to read on.]" if last < total else ""
    return ToolResult(
        content=[{"type": "text", "text": header + "\n" + "\n".join(window) + footer}],
        structured={"path": rel, "total_lines": total, "first_line": offset, "last_line": last},
    )


@tool(
    "workspace.read_file",
    WorkspaceReadArgs,
    "Read a text file from the owner's workspace folder, optionally a range of lines.",
)
async def workspace_read_file(args: WorkspaceReadArgs, ctx: ToolContext) -> ToolResult:
    import asyncio

    _, target, rel = _workspace_path(ctx, args.path)
    return await asyncio.to_thread(_read_window, target, rel, args.offset, args.limit)


def _glob_matches(rel: str, pattern: str) -> bool:
    if "/" not in pattern:
        return fnmatch.fnmatch(rel.rsplit("/", 1)[-1], pattern)
    return fnmatch.fnmatch(rel, pattern) or ("**/" in pattern and fnmatch.fnmatch(rel, pattern.replace("**/", "")))


def _search(root: Path, pattern: str, glob: str | None) -> dict[str, Any]:
    import regex as engine  # type: ignore[import-untyped]

    flags = 0 if any(c.isupper() for c in pattern) else engine.IGNORECASE  # smart case, as in ripgrep
    try:
        compiled, mode = engine.compile(pattern, flags), "regex"
    except (engine.error, ValueError):
        compiled, mode = engine.compile(engine.escape(pattern), flags), "text"
    regex = _BoundedPattern(compiled, SEARCH_PATTERN_SECONDS)
    timed_out = False
    matches: list[dict[str, Any]] = []
    scanned = lines_found = 0
    truncated = False
    skipped: dict[str, int] = {"outside_workspace": 0, "binary": 0, "too_large": 0}
    try:
        if root.is_dir():
            for folder, dirnames, filenames in os.walk(root):
                dirnames[:] = sorted(d for d in dirnames if d not in _SKIP_DIRS)
                for name in sorted(filenames):
                    path = Path(folder) / name
                    rel = path.relative_to(root).as_posix()
                    if glob and not _glob_matches(rel, glob):
                        continue
                    real = path.resolve()
                    if not _inside(root, real) or not real.is_file():
                        skipped["outside_workspace"] += 1
                        continue
                    if scanned >= SEARCH_MAX_FILES or lines_found >= SEARCH_MAX_LINES:
                        truncated = True
                        break
                    scanned += 1
                    hit: dict[str, Any] = {"path": rel, "name_match": bool(regex.search(rel)), "lines": []}
                    size = real.stat().st_size
                    if size > SEARCH_MAX_FILE_BYTES:
                        skipped["too_large"] += 1
                    elif _is_binary(real):
                        skipped["binary"] += 1
                    else:
                        with real.open("r", encoding="utf-8", errors="replace") as fh:
                            for number, line in enumerate(fh, start=1):
                                if regex.search(line):
                                    if len(hit["lines"]) < SEARCH_LINES_PER_FILE and lines_found < SEARCH_MAX_LINES:
                                        hit["lines"].append({"line": number, "text": line.rstrip("\n")[:300]})
                                        lines_found += 1
                                    else:
                                        hit["more_lines"] = hit.get("more_lines", 0) + 1
                    if hit["name_match"] or hit["lines"]:
                        matches.append(hit)
                if truncated:
                    break
    except _OutOfTime:
        truncated = timed_out = True
    return {
        "pattern": pattern,
        "mode": mode,
        "case_sensitive": not flags,
        "glob": glob,
        "files_scanned": scanned,
        "files_matched": len(matches),
        "matches": matches,
        "truncated": truncated,
        "skipped": {k: v for k, v in skipped.items() if v},
        **(
            {
                "stopped": f"the pattern took longer than {SEARCH_PATTERN_SECONDS:g} s to match (it backtracks); "
                "these are the matches found until then"
            }
            if timed_out
            else {}
        ),
    }


@tool(
    "workspace.search",
    WorkspaceSearchArgs,
    "Find files in the owner's workspace whose name or contents match a pattern. Returns paths with matching lines.",
)
async def workspace_search(args: WorkspaceSearchArgs, ctx: ToolContext) -> ToolResult:
    import asyncio

    root = _workspace_root(ctx)
    if not root.is_dir():
        raise ToolError("The workspace folder does not exist yet; write a file with workspace.write_file first.")
    glob = args.glob.strip() if args.glob and args.glob.strip() else None
    return ToolResult.of_json(await asyncio.to_thread(_search, root, args.pattern, glob))


def _write(root: Path, raw: str, target: Path, rel: str, content: str, overwrite: bool) -> dict[str, Any]:
    if target == root or target.is_dir():
        raise ToolError(f"{raw!r} is a folder; give a file path.")
    existed = target.exists()
    if existed and not overwrite:
        raise ToolError(f"{rel!r} already exists; pass overwrite=true to replace it.")
    target.parent.mkdir(parents=True, exist_ok=True)
    if not _inside(root, target.parent.resolve()):  # a folder swapped for a link meanwhile
        raise ToolError(f"Path {raw!r} is outside the workspace.")
    data = content.encode("utf-8")
    if overwrite:
        # Write beside the target, then rename over it: readers never see half a file.
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    else:
        try:  # O_EXCL: a file that appeared since the check is still not replaced
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o644)
        except FileExistsError:
            raise ToolError(f"{rel!r} already exists; pass overwrite=true to replace it.") from None
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
    return {
        "path": rel,
        "created": not existed,
        "replaced": existed,
        "bytes": len(data),
        "lines": content.count("\n") + (1 if content and not content.endswith("\n") else 0),
    }


@tool(
    "workspace.write_file",
    WorkspaceWriteArgs,
    "Write a text file in the owner's workspace folder, creating folders as needed. Refuses to replace an "
    "existing file unless overwrite is true.",
)
async def workspace_write_file(args: WorkspaceWriteArgs, ctx: ToolContext) -> ToolResult:
    import asyncio

    root, target, rel = _workspace_path(ctx, args.path)
    if args.path.endswith(("/", "\\")):
        raise ToolError(f"{args.path!r} names a folder; give a file path.")
    return ToolResult.of_json(
        await asyncio.to_thread(_write, root, args.path, target, rel, args.content, args.overwrite)
    )
