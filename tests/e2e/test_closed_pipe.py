"""Every command's output to a reader that left ends quietly (issue 19, item 9: ``deferchat chats
list | head -3`` sometimes printed ``deferchat: Broken pipe`` and exited 1).

The class, not the one command: each command the CLI has, with stdout a pipe whose reader has
gone before the first byte (every write fails: the strongest case) and a pipe read by ``head -1``
(the way people meet it). Each ends with its own exit code and nothing on stderr."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from core.store import Store
from tests.helpers import ROOT, subprocess_env

DEFERCHAT = [sys.executable, "-c", "import sys; from tui.main import main; sys.exit(main())"]

COMMANDS = (
    ("--help",),
    ("chats", "list"),
    ("chats", "list", "--json"),
    ("chats", "show", "{chat}"),
    ("chats", "export", "{chat}", "--md"),
    ("plan",),
    ("plan", "--json"),
    ("search", "move a meeting"),
    ("servers",),
    ("doctor",),
    ("ask", "--help"),
)


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    home = tmp_path_factory.mktemp("home")
    store = Store(home / "deferchat.db")
    chats = [
        store.create_chat(
            title=f"a chat with a long enough title, number {i}", provider="demo", model="demo-1", strategy="wrapper"
        )
        for i in range(250)
    ]
    for chat in chats[:1]:
        for n in range(400):  # a transcript longer than a pipe holds
            store.add_message(chat, "user", [{"type": "text", "text": f"line {n} " * 30}], turn_id=None, parent_id=None)
    return home, chats[0]


def argv(command: tuple[str, ...], chat: str) -> list[str]:
    return [*DEFERCHAT, *(part.format(chat=chat) for part in command)]


@pytest.mark.slow
@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_output_to_a_reader_that_left_ends_quietly(home: tuple[Path, str], command: tuple[str, ...]) -> None:
    folder, chat = home
    env = subprocess_env(folder)
    expected = subprocess.run(argv(command, chat), env=env, cwd=ROOT, capture_output=True, timeout=120)
    assert expected.stdout, expected.stderr  # the command writes something to lose

    read, write = os.pipe()
    os.close(read)  # the reader is gone before the first byte
    try:
        gone = subprocess.run(argv(command, chat), env=env, cwd=ROOT, stdout=write, stderr=subprocess.PIPE, timeout=120)
    finally:
        os.close(write)
    assert (gone.returncode, gone.stderr.decode()) == (expected.returncode, "")

    writer = subprocess.Popen(argv(command, chat), env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    head = subprocess.run(["head", "-1"], stdin=writer.stdout, capture_output=True, timeout=120)
    assert writer.stdout is not None
    writer.stdout.close()
    _, err = writer.communicate(timeout=120)
    assert head.stdout and (writer.returncode, err.decode()) == (expected.returncode, "")
