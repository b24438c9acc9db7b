"""Every command fails cleanly (issue 11, item 7).

The real ``deferchat`` program, in a subprocess, over a table of user errors and environment
faults for every command (plan, ask, resume, search, chats, servers, and the full-screen app's
start where it fails before the app draws): no traceback, one line on stderr, exit 2 for a usage
or configuration error and 1 for a failure. A reader that closes stdout early (``| head -1``)
ends the program quietly.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.helpers import subprocess_env

NOT_UTF8 = b"\xff\xfe\x00 not utf-8 \x81"


def deferchat(*args: str) -> list[str]:
    return [sys.executable, "-c", "import sys; from tui.main import main; sys.exit(main())", *args]


@dataclass
class Case:
    """One bad input: the arguments (``{w}`` is the shared work directory), the files the home
    holds, and the exit code expected."""

    name: str
    args: list[str]
    code: int | tuple[int, ...]
    home_files: dict[str, bytes | str] = field(default_factory=dict)
    home_is: Callable[[Path], None] | None = None  # makes the home itself odd
    says: str = ""  # a fragment the one line must carry


def _work(root: Path) -> Path:
    w = root / "work"
    w.mkdir()
    (w / "bad.json").write_text("{bad")
    (w / "list.json").write_text("[]")
    (w / "shape.json").write_text(json.dumps({"mcpServers": {"a": {"command": 5}, "b": {}}}))
    (w / "latin1.json").write_bytes(NOT_UTF8)
    (w / "dir").mkdir()
    (w / "roster_shape.json").write_text(json.dumps({"agent": 5}))
    (w / "roster.json").write_text(json.dumps({"agent": {"name": "t", "version": "1"}}))
    (w / "script_shape.json").write_text(json.dumps({"turns": 5}))
    (w / "script.json").write_text(json.dumps({"turns": [[{"type": "text", "text": "Hello."}]]}))
    (w / "tools_bad.jsonl").write_text('{"name": 5}\n')
    return w


ASK = ["ask", "hi", "--roster", "{w}/roster.json", "--script", "{w}/script.json"]
BAD_TOML = "provider = [unclosed\n"

CASES = [
    # plan
    Case("plan: missing mcp config", ["plan", "--mcp-config", "/nonexistent/mcp.json"], 2, says="mcp.json"),
    Case("plan: malformed mcp config", ["plan", "--mcp-config", "{w}/bad.json"], 2, says="bad.json"),
    Case("plan: mcp config not an object", ["plan", "--mcp-config", "{w}/list.json"], 2, says="list.json"),
    Case("plan: mcp config of the wrong shape", ["plan", "--mcp-config", "{w}/shape.json"], 2, says="shape.json"),
    Case("plan: mcp config not UTF-8", ["plan", "--mcp-config", "{w}/latin1.json"], 2, says="latin1.json"),
    Case("plan: mcp config is a directory", ["plan", "--mcp-config", "{w}/dir"], 2),
    Case("plan: roster of the wrong shape", ["plan", "--roster", "{w}/roster_shape.json"], 2),
    Case("plan: roster not UTF-8", ["plan", "--roster", "{w}/latin1.json"], 2, says="latin1.json"),
    Case("plan: roster is a directory", ["plan", "--roster", "{w}/dir"], 2),
    Case("plan: missing roster", ["plan", "--roster", "/nonexistent/roster.json"], 2),
    Case("plan: a cap out of range", ["plan", "--max-definitions", "-1"], 2, says="max-definitions"),
    Case(
        "plan: a threshold out of range", ["plan", "--policy", "threshold", "--per-server", "-5"], 2, says="per-server"
    ),
    Case(
        "plan auto: config.toml not UTF-8",
        ["plan", "--strategy", "auto"],
        2,
        home_files={"config.toml": NOT_UTF8},
        says="config.toml",
    ),
    Case(
        "plan auto: config.toml not TOML",
        ["plan", "--strategy", "auto"],
        2,
        home_files={"config.toml": BAD_TOML},
        says="config.toml",
    ),
    Case(
        "plan auto: config.toml is a directory",
        ["plan", "--strategy", "auto"],
        2,
        home_files={"config.toml/x": ""},
        says="config.toml",
    ),
    # ask
    Case("ask: malformed mcp config", [*ASK, "--mcp-config", "{w}/bad.json"], 2, says="bad.json"),
    Case("ask: missing mcp config", [*ASK, "--mcp-config", "/nonexistent/mcp.json"], 2),
    Case("ask: script not UTF-8", ["ask", "hi", "--script", "{w}/latin1.json"], 2, says="latin1.json"),
    Case("ask: script is a directory", ["ask", "hi", "--script", "{w}/dir"], 2, says="dir"),
    Case("ask: script of the wrong shape", ["ask", "hi", "--script", "{w}/script_shape.json"], 2),
    Case("ask: missing script", ["ask", "hi", "--script", "/nonexistent/script.json"], 2),
    Case("ask: config.toml not UTF-8", ASK, 2, home_files={"config.toml": NOT_UTF8}, says="config.toml"),
    Case("ask: config.toml not TOML", ASK, 2, home_files={"config.toml": BAD_TOML}, says="config.toml"),
    Case("ask: config.toml with a bad value", ASK, 2, home_files={"config.toml": "max_steps = 0\n"}, says="max_steps"),
    Case("ask: policy.toml not TOML", ASK, 2, home_files={"policy.toml": "[[hardline]\n"}, says="policy"),
    Case("ask: policy.toml not UTF-8", ASK, 2, home_files={"policy.toml": NOT_UTF8}, says="policy"),
    Case(
        "ask: policy.toml of the wrong shape",
        ASK,
        2,
        home_files={"policy.toml": "[[hardline]]\ntool = 5\n"},
        says="policy",
    ),
    Case("ask: user mcp.json malformed", ASK, 2, home_files={"mcp.json": "{bad"}, says="mcp.json"),
    Case("ask: user mcp.json not UTF-8", ASK, 2, home_files={"mcp.json": NOT_UTF8}, says="mcp.json"),
    Case("ask: a provider without a key", ["ask", "hi", "--provider", "anthropic"], 2, says="API key"),
    Case("ask: a fallback naming no provider", [*ASK, "--fallback", "gemini:pro"], 2, says="'gemini:pro'"),
    Case("ask: an unknown chat", [*ASK, "--chat", "chat_nope"], 2, says="chat_nope"),
    Case("ask: --record into a directory", [*ASK, "--record", "{w}/dir"], 2, says="--record"),
    Case("resume: --record into a directory", ["resume", "chat_nope", "--record", "{w}/dir"], 2, says="--record"),
    # resume
    Case("resume: an unknown chat", ["resume", "chat_nope"], 2, says="chat_nope"),
    Case(
        "resume: config.toml not UTF-8",
        ["resume", "chat_nope"],
        2,
        home_files={"config.toml": NOT_UTF8},
        says="config.toml",
    ),
    Case(
        "resume: policy.toml not TOML", ["resume", "chat_nope"], 2, home_files={"policy.toml": "x = \n"}, says="policy"
    ),
    # search
    Case("search: missing catalog", ["search", "x", "--tools", "/nonexistent/tools.jsonl"], 2),
    Case("search: catalog not UTF-8", ["search", "x", "--tools", "{w}/latin1.json"], 2),
    Case("search: catalog of the wrong shape", ["search", "x", "--tools", "{w}/tools_bad.jsonl"], 2),
    Case("search: queries is a directory", ["search", "--queries", "{w}/dir"], 2),
    Case("search: malformed mcp config", ["search", "x", "--mcp-config", "{w}/bad.json"], 2),
    Case("search: no query", ["search"], 2),
    # chats
    Case("chats: show an unknown chat", ["chats", "show", "chat_nope"], 2, says="chat_nope"),
    Case("chats: export without an id", ["chats", "export"], 2),
    Case("chats: a home that is a file", ["chats", "list"], (1, 2), home_is=lambda h: (h.rmdir(), h.write_text(""))),
    # servers
    Case("servers: missing mcp config", ["servers", "--mcp-config", "/nonexistent/mcp.json"], 2, says="mcp.json"),
    Case("servers: malformed mcp config", ["servers", "--mcp-config", "{w}/bad.json"], 2),
    Case("servers: mcp config of the wrong shape", ["servers", "--mcp-config", "{w}/shape.json"], 2),
    Case("servers: mcp config not UTF-8", ["servers", "--mcp-config", "{w}/latin1.json"], 2),
    Case("servers: user mcp.json malformed", ["servers"], 2, home_files={"mcp.json": '{"mcpServers": 3}'}),
    # the full-screen app, where it fails before it draws
    Case("app: config.toml not UTF-8", [], 2, home_files={"config.toml": NOT_UTF8}, says="config.toml"),
    Case("app: config.toml not TOML", [], 2, home_files={"config.toml": BAD_TOML}, says="config.toml"),
    Case("app: policy.toml broken", [], 2, home_files={"policy.toml": "[[hardline]\n"}, says="policy"),
    Case("app: policy.toml not UTF-8", [], 2, home_files={"policy.toml": NOT_UTF8}, says="policy"),
    Case("app: a home that is a file", [], (1, 2), home_is=lambda h: (h.rmdir(), h.write_text(""))),
]


@dataclass
class Ran:
    code: int
    stderr: str
    command: list[str]


def _run(case: Case, root: Path, work: Path, index: int) -> Ran:
    home = root / f"home{index}"
    home.mkdir()
    for rel, data in case.home_files.items():
        path = home / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(data, bytes):
            path.write_bytes(data)
        else:
            path.write_text(data)
    if case.home_is is not None:
        case.home_is(home)
    args = [a.replace("{w}", str(work)) for a in case.args]
    r = subprocess.run(
        deferchat(*args),
        capture_output=True,
        text=True,
        env=subprocess_env(home),
        cwd=work,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    return Ran(r.returncode, r.stderr, args)


@pytest.fixture(scope="module")
def ran(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Ran]:
    """Every case run once, several at a time (each program start costs most of a second)."""
    root = tmp_path_factory.mktemp("clean_failures")
    work = _work(root)
    with ThreadPoolExecutor(max_workers=8) as pool:
        futures = {c.name: pool.submit(_run, c, root, work, i) for i, c in enumerate(CASES)}
        return {name: f.result() for name, f in futures.items()}


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_a_bad_input_is_one_clean_line(case: Case, ran: dict[str, Ran]) -> None:
    r = ran[case.name]
    where = f"deferchat {' '.join(r.command)} -> exit {r.code}\n{r.stderr}"
    assert "Traceback" not in r.stderr, where
    # the transcript's bracketed lines may come first (a turn under way); the failure is one line
    lines = [line for line in r.stderr.splitlines() if line.strip() and not line.startswith("[")]
    assert len(lines) == 1, where
    assert lines[0].startswith("deferchat: "), where
    assert r.code in (case.code if isinstance(case.code, tuple) else (case.code,)), where
    assert case.says in lines[0], where


@pytest.mark.parametrize(
    "args",
    [
        ["ask", "hi", "--roster", "{w}/roster.json", "--script", "{w}/script.json", "--json"],
        ["plan", "--roster", "production", "--json"],
        ["search", "--queries", "{w}/queries.jsonl", "--roster", "production"],
    ],
    ids=["ask --json", "plan --json", "search --queries"],
)
def test_a_reader_that_leaves_early_ends_the_program_quietly(args: list[str], tmp_path: Path, home: Path) -> None:
    """``deferchat ... | head -1``: the program ends with its usual code, and nothing on stderr."""
    work = _work(tmp_path)
    (work / "queries.jsonl").write_text(
        "".join(json.dumps({"id": f"q{i}", "query": "send an email"}) + "\n" for i in range(3000))
    )
    args = [a.replace("{w}", str(work)) for a in args]
    proc = subprocess.Popen(
        deferchat(*args),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=subprocess_env(home),
        cwd=work,
        stdin=subprocess.DEVNULL,
    )
    assert proc.stdout is not None and proc.stderr is not None
    assert proc.stdout.read(1)  # the first byte arrives; then the reader is gone
    proc.stdout.close()
    err = proc.stderr.read().decode()
    code = proc.wait(timeout=120)
    assert "Traceback" not in err and "BrokenPipe" not in err and "Exception ignored" not in err, err
    assert code in (0, 1), (code, err)
