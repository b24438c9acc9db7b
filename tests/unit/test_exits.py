"""``guarded``: how every command ends when something goes wrong (issue 11, item 7). One line on
stderr and an exit code, never a traceback: 2 for usage and configuration errors, 1 for failures,
environment faults and bugs (whose traceback goes to a file the line names)."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path
from typing import NoReturn

import pytest

from core.cli.exits import EXIT_FAILED, EXIT_OK, EXIT_USAGE, guarded
from core.errors import UsageError, UserFacingError, one_line, read_text


def ended(capsys: pytest.CaptureFixture[str], fail: BaseException) -> tuple[int, list[str]]:
    def run() -> NoReturn:
        raise fail

    code = guarded(run)
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return code, err.splitlines()


def test_a_usage_error_is_one_line_exit_2_even_when_its_message_has_several(capsys) -> None:
    code, lines = ended(
        capsys,
        UsageError(
            "mcp.json: invalid MCP server configuration\n  a.command: not a string\n"
            "    For further information visit https://errors.pydantic.dev/x"
        ),
    )
    assert code == EXIT_USAGE
    assert lines == ["deferchat: mcp.json: invalid MCP server configuration; a.command: not a string"]


def test_a_failure_the_user_must_know_about_is_exit_1(capsys) -> None:
    assert ended(capsys, UserFacingError("the store is read-only")) == (
        EXIT_FAILED,
        ["deferchat: the store is read-only"],
    )


def test_an_environment_fault_is_one_line_exit_1(capsys) -> None:
    code, lines = ended(capsys, IsADirectoryError(21, "Is a directory", "/tmp/x"))
    assert (code, lines) == (EXIT_FAILED, ["deferchat: Is a directory: /tmp/x"])
    code, lines = ended(capsys, sqlite3.OperationalError("disk I/O error"))
    assert code == EXIT_FAILED and len(lines) == 1 and "disk I/O error" in lines[0]


def test_a_bug_is_one_line_naming_the_file_that_holds_its_traceback(capsys) -> None:
    code, lines = ended(capsys, KeyError("choices"))
    assert code == EXIT_FAILED and len(lines) == 1
    assert lines[0].startswith("deferchat: internal error: KeyError: 'choices'")
    saved = Path(re.search(r"the traceback is in (\S+);", lines[0]).group(1))  # type: ignore[union-attr]
    try:
        text = saved.read_text()
        assert text.startswith("Traceback") and "KeyError: 'choices'" in text
    finally:
        saved.unlink()


def test_deferchat_debug_raises_a_bug_instead(capsys, monkeypatch) -> None:
    monkeypatch.setenv("DEFERCHAT_DEBUG", "1")
    with pytest.raises(KeyError):
        ended(capsys, KeyError("choices"))
    assert ended(capsys, UsageError("still one line")) == (EXIT_USAGE, ["deferchat: still one line"])


def test_a_broken_pipe_that_is_not_stdout_is_a_failure(capsys) -> None:
    # stdout (the test's capture) is fine: the pipe that broke was another one (an MCP server's)
    assert ended(capsys, BrokenPipeError(32, "Broken pipe")) == (EXIT_FAILED, ["deferchat: Broken pipe"])


def test_ctrl_c_is_130_without_a_word(capsys) -> None:
    assert ended(capsys, KeyboardInterrupt()) == (130, [])
    assert guarded(lambda: 0) == EXIT_OK


def test_one_line() -> None:
    assert one_line("a\n\n  b  \nFor further information visit x") == "a; b"
    assert one_line("plain") == "plain"


@pytest.mark.parametrize(
    "make, says",
    [
        (lambda p: p.write_bytes(b"\xff\xfe"), "not UTF-8 text (byte 0); save it as UTF-8"),
        (lambda p: p.mkdir(), "is a directory, not a file"),
        (lambda p: None, "no such file"),
    ],
)
def test_read_text_says_what_keeps_a_file_from_being_read(tmp_path: Path, make, says: str) -> None:
    path = tmp_path / "config.toml"
    make(path)
    with pytest.raises(UsageError) as caught:
        read_text(path, str(path))
    assert str(caught.value) == f"{path}: {says}" and caught.value.usage
    with pytest.raises(UsageError, match=r"^gone$"):
        read_text(tmp_path / "missing", "x", missing="gone")
