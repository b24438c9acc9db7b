"""What can go wrong with the database, each as one line that names the file and what to do.

All are :class:`~core.errors.UserFacingError`: the CLI's ``guarded()`` and the app's start print
the line (``deferchat: ...``) instead of a traceback, and exit 1.
"""

from __future__ import annotations

from pathlib import Path

from core.errors import UserFacingError

ELSEWHERE = "or point DEFERCHAT_HOME at another folder"


class StoreError(UserFacingError):
    """The database cannot be used as asked."""

    def __init__(self, path: Path | str | None, message: str):
        self.path = path
        super().__init__(message)


class StoreUnusable(StoreError):
    """The file cannot be opened at all: a directory, unreadable, or it cannot be created."""


class StoreCorrupt(StoreError):
    """The file is damaged (or not a database). Nothing more is written to it."""

    def __init__(self, path: Path | str | None, detail: str):
        self.detail = detail
        super().__init__(
            path,
            f"{path} is damaged ({detail}); deferchat writes nothing more to it. Run "
            "`deferchat doctor`, then restore a backup or move the file out of the way (a new "
            "one is made)",
        )


class StoreReadOnly(StoreError):
    """A write on a database this process may only read."""

    def __init__(self, path: Path | str | None, why: str):
        self.why = why
        super().__init__(
            path, f"{path} is read-only ({why}): chats can be read, not written; make it writable to chat, {ELSEWHERE}"
        )


class StoreTooNew(StoreError):
    """A write on a database a newer deferchat has migrated: this version may only read it."""

    def __init__(self, path: Path | str | None, unknown: list[str]):
        self.unknown = unknown
        super().__init__(
            path,
            f"{path} was written by a newer deferchat (migrations this version does not know: "
            f"{', '.join(unknown)}); this version only reads it. Upgrade deferchat to chat",
        )

    def warning(self) -> str:
        return (
            f"deferchat: warning: {self.path} was written by a newer deferchat ({', '.join(self.unknown)}); "
            "reading only, writes are refused. Upgrade deferchat to chat"
        )


class ChatBusy(UserFacingError):
    """A turn of this chat runs in another process (it holds the chat's turn lease). Its own
    exit code, 4, so a script can tell "try again later" from a failure."""

    exit_code = 4

    def __init__(self, chat_id: str, holder: str, expires_in: float):
        self.chat_id = chat_id
        self.holder = holder
        self.expires_in = expires_in
        super().__init__(
            f"chat {chat_id} is busy: a turn of it is running in another deferchat ({holder}); try "
            f"again when it ends, or pass --wait to wait for it (if that process is gone, its lease "
            f"runs out within {max(1, round(expires_in))} s)"
        )
