"""``workspace.read_file``, ``workspace.search`` and ``workspace.write_file``: text files in the owner's
workspace folder (``ctx.workspace``). Nothing that resolves outside it, through ``..`` or a
symbolic link, is read or written; file work runs in a thread (asyncio is imported when a tool
runs: the roster loader imports this module for its schemas only).

A path argument (``WorkspacePath``) reaches the tool in its canonical form in the workspace,
as the pipeline checked hardline rules on it (``core.pipeline.canonical``): the tool refuses one
that resolves elsewhere now, and opens it one folder at a time with ``O_NOFOLLOW``, so the file
it reads or writes is the one that was checked even if a link is swapped in meanwhile."""

from __future__ import annotations

import contextlib
import errno
import fnmatch
import io
import os
import posixpath
import secrets
import stat
from pathlib import Path
from typing import Annotated, Any

from pydantic import Field, StringConstraints

from core.builtins import ToolContext
from core.builtins.shared import Args, ToolError, WorkspacePath, tool, will_fail
from core.pipeline.preview import ActionPreview, change, decisive, detail
from core.tools import ToolResult


class WorkspaceReadArgs(Args):
    path: WorkspacePath = Field(description="Path relative to the workspace root.")
    offset: int = Field(1, ge=1, description="First line to return, counting from 1.")
    limit: int = Field(400, ge=1, le=5000, description="Maximum number of lines.")


class WorkspaceSearchArgs(Args):
    pattern: Annotated[str, StringConstraints(min_length=1, max_length=1000)] = Field(
        description="Text or regular expression to look for."
    )
    glob: str | None = Field(None, description="Only files whose path matches this glob, e.g. '*.md'.")


class WorkspaceWriteArgs(Args):
    path: WorkspacePath = Field(description="Path relative to the workspace root.")
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


def _workspace_path(ctx: ToolContext, raw: str) -> tuple[Path, str]:
    """``(root, relative path)`` for the path the tool was given, which the pipeline put in its
    canonical form in the workspace (:func:`core.pipeline.canonical.canonical_workspace_path`)
    and checked hardline rules on. Resolving it again must give it back, but for ``.``, ``..`` and
    doubled slashes: a path that follows a link (a folder swapped for a link since the check;
    the canonical form has none) is refused, not followed."""
    from core.pipeline.canonical import CanonicalError, PathBase, canonical_workspace_path

    base = PathBase.of(ctx.workspace)
    try:
        rel = canonical_workspace_path(raw, base)
    except CanonicalError as exc:
        raise ToolError(str(exc)) from None
    if rel != raw.strip() and rel != _lexical(raw.strip()):
        raise ToolError(
            f"Path {raw!r} is not the path that was checked: it resolves to {rel!r} now (a link or folder "
            "in the workspace changed since the call was checked); nothing was read or written. Call the "
            "tool again."
        )
    return Path(base.root), rel


def _lexical(raw: str) -> str:
    """``raw`` with ``.``, ``..`` and doubled slashes resolved as text, following nothing."""
    normal = posixpath.normpath(raw)
    return normal + "/" if raw.endswith("/") and normal != "." else normal


def _is_binary(path: Path) -> bool:
    with path.open("rb") as fh:
        return b"\x00" in fh.read(8192)


def _changed(rel: str) -> ToolError:
    return ToolError(
        f"{rel!r} changed while it was being opened (a folder or file became a link); nothing was read "
        "or written. Call the tool again."
    )


def _open_folder(root: Path, rel: str, *, create: bool) -> int:
    """A descriptor of the folder holding ``rel`` (a canonical path under ``root``), reached one
    component at a time from the root with ``O_NOFOLLOW``: no link is followed, so the folder is
    the one the check resolved (``create`` makes the missing ones)."""
    flags = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(root, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    names = rel.split("/")[:-1]
    try:
        for i, name in enumerate(names):
            try:
                try:
                    nxt = os.open(name, flags, dir_fd=fd)
                except FileNotFoundError:
                    if not create:
                        raise
                    with contextlib.suppress(FileExistsError):
                        os.mkdir(name, 0o755, dir_fd=fd)
                    nxt = os.open(name, flags, dir_fd=fd)
            except OSError as exc:
                if exc.errno not in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
                    raise
                if stat.S_ISLNK(os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode):
                    raise _changed(rel) from None
                raise ToolError(f"{'/'.join(names[: i + 1])!r} is a file, not a folder.") from None
            os.close(fd)
            fd = nxt
    except BaseException:
        os.close(fd)
        raise
    return fd


def _read_window(root: Path, rel: str, offset: int, limit: int) -> ToolResult:
    missing = ToolError(f"No file {rel!r} in the workspace. Use workspace.search to find files.")
    try:
        folder = _open_folder(root, rel, create=False)
    except FileNotFoundError:
        raise missing from None
    try:
        fd = os.open(rel.rsplit("/", 1)[-1], os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0), dir_fd=folder)
    except FileNotFoundError:
        raise missing from None
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.EMLINK):
            raise _changed(rel) from None
        raise
    finally:
        os.close(folder)
    info = os.fstat(fd)
    if stat.S_ISDIR(info.st_mode):
        os.close(fd)
        raise ToolError(f"{rel!r} is a folder, not a file. Use workspace.search with a glob to list its files.")
    with os.fdopen(fd, "rb") as raw:
        if b"\x00" in raw.read(8192):
            raise ToolError(f"{rel!r} is a binary file ({info.st_size} bytes); workspace.read_file reads text only.")
        raw.seek(0)
        window: list[str] = []
        total = 0
        with io.TextIOWrapper(raw, encoding="utf-8", errors="replace", newline=None) as fh:
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

    root, rel = _workspace_path(ctx, args.path)
    if rel == ".":
        raise ToolError("'.' is the workspace folder, not a file. Use workspace.search with a glob to list its files.")
    return await asyncio.to_thread(_read_window, root, rel, args.offset, args.limit)


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


def _write(root: Path, raw: str, rel: str, content: str, overwrite: bool) -> dict[str, Any]:
    if rel == "." or rel.endswith("/"):
        raise ToolError(f"{raw!r} is a folder; give a file path.")
    root.mkdir(parents=True, exist_ok=True)
    name = rel.rsplit("/", 1)[-1]
    folder = _open_folder(root, rel, create=True)
    try:
        try:
            info: os.stat_result | None = os.stat(name, dir_fd=folder, follow_symlinks=False)
        except FileNotFoundError:
            info = None
        if info is not None and stat.S_ISDIR(info.st_mode):
            raise ToolError(f"{raw!r} is a folder; give a file path.")
        if info is not None and stat.S_ISLNK(info.st_mode):
            raise _changed(rel)  # the check resolved every link: one here appeared since
        existed = info is not None
        if existed and not overwrite:
            raise ToolError(f"{rel!r} already exists; pass overwrite=true to replace it.")
        data = content.encode("utf-8")
        create = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
        if overwrite:
            # Write beside the target, then rename over it: readers never see half a file.
            tmp = f".{name}.{secrets.token_hex(6)}.tmp"
            fd = os.open(tmp, create, 0o644, dir_fd=folder)
            try:
                with os.fdopen(fd, "wb") as fh:
                    fh.write(data)
                os.replace(tmp, name, src_dir_fd=folder, dst_dir_fd=folder)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(tmp, dir_fd=folder)
                raise
        else:
            try:  # O_EXCL: a file that appeared since the check is still not replaced
                fd = os.open(name, create, 0o644, dir_fd=folder)
            except FileExistsError:
                raise ToolError(f"{rel!r} already exists; pass overwrite=true to replace it.") from None
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
    finally:
        os.close(folder)
    return {
        "path": rel,
        "created": not existed,
        "replaced": existed,
        "bytes": len(data),
        "lines": content.count("\n") + (1 if content and not content.endswith("\n") else 0),
    }


def _write_target(ctx: ToolContext, raw: str) -> tuple[Path, Path, str]:
    """Where a workspace.write_file call writes: the root, the resolved file, its relative path."""
    if raw.endswith(("/", "\\")):
        raise ToolError(f"{raw!r} names a folder; give a file path.")
    root, rel = _workspace_path(ctx, raw)
    return root, root / rel, rel


def _size_words(data: bytes | str) -> str:
    raw = data.encode("utf-8") if isinstance(data, str) else data
    lines = raw.count(b"\n") + (1 if raw and not raw.endswith(b"\n") else 0)
    return f"{len(raw):,} byte{'s' if len(raw) != 1 else ''}, {lines:,} line{'s' if lines != 1 else ''}"


def _file_words(path: Path) -> str:
    """An existing file's size in words (its lines counted when it is small enough to read)."""
    try:
        size = path.stat().st_size
        if size > SEARCH_MAX_FILE_BYTES:
            return f"{size:,} bytes"
        return _size_words(path.read_bytes())
    except OSError as exc:
        return f"a file deferchat cannot read ({exc.strerror or exc})"


def _describe_write(args: WorkspaceWriteArgs, ctx: ToolContext) -> ActionPreview:
    try:
        root, target, rel = _write_target(ctx, args.path)
    except ToolError as exc:
        return ActionPreview(
            summary=f"Write the file {args.path} in your workspace",
            fields=[decisive("Path", args.path, kind="path", note="not in the workspace", argument="path")],
            problems=[will_fail(str(exc))],
        )
    spelled = "" if rel == args.path else f"written {args.path!r}; "
    where = decisive("Path", str(target), kind="path", note=f"{spelled}{rel} in your workspace {root}", argument="path")
    after = _size_words(args.content)
    content = detail("Content", args.content, argument="content")
    overwrite = detail("Overwrite", "yes" if args.overwrite else "no", argument="overwrite")
    if target.is_dir():
        problem = will_fail(f"{rel!r} is a folder; give a file path.")
        return ActionPreview(
            summary=f"Write the file {rel} in your workspace", fields=[where, content], problems=[problem]
        )
    if target.exists():
        before = _file_words(target)
        fields = [where, change("File", before, after), overwrite, content]
        if not args.overwrite:
            problem = will_fail(f"{rel!r} already exists and overwrite is false.")
            return ActionPreview(summary=f"Write the file {rel} in your workspace", fields=fields, problems=[problem])
        return ActionPreview(summary=f"Replace the file {rel} in your workspace", fields=fields)
    folders = [p for p in target.relative_to(root).parents if p != Path(".") and not (root / p).exists()]
    made = f"; creates the folder{'s' if len(folders) > 1 else ''} {', '.join(p.as_posix() for p in reversed(folders))}"
    fields = [where, change("File", "(does not exist)", after, note=made[2:] if folders else ""), overwrite, content]
    return ActionPreview(summary=f"Create the file {rel} in your workspace", fields=fields)


@tool(
    "workspace.write_file",
    WorkspaceWriteArgs,
    "Write a text file in the owner's workspace folder, creating folders as needed. Refuses to replace an "
    "existing file unless overwrite is true.",
    preview=_describe_write,
)
async def workspace_write_file(args: WorkspaceWriteArgs, ctx: ToolContext) -> ToolResult:
    import asyncio

    root, _target, rel = _write_target(ctx, args.path)
    return ToolResult.of_json(await asyncio.to_thread(_write, root, args.path, rel, args.content, args.overwrite))
