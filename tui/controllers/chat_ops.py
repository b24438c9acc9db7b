"""Chat management: the chats list, and renaming, deleting and exporting a chat; the open
chat's model and its own system prompt.

:class:`ChatOps` is the chats list's :class:`~tui.screens.chats.ChatOperations`: each operation
asks the owner what it needs (a title, a confirmation, a path) and says whether it did it. File
I/O runs off the event loop.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import TYPE_CHECKING

from core.errors import UserFacingError
from tui.controllers.host import Host
from tui.controllers.sessions import Sessions

if TYPE_CHECKING:
    from core.store import ChatRow


class ChatOps:
    def __init__(self, host: Host, sessions: Sessions) -> None:
        self.host = host
        self.sessions = sessions

    # -- the chats list -----------------------------------------------------------------------------
    def show_chats(self) -> None:
        def chosen(result: tuple[str, str] | None) -> None:
            if result is None:
                return
            what, chat_id = result
            self.host.open_session(chat_id if what == "open" else None)

        from tui.screens.chats import ChatsScreen

        session = self.host.session
        self.host.push_screen(ChatsScreen(self, session.chat_id if session else None), chosen)

    def on_current(self, operation: str) -> None:
        """``rename``, ``delete`` or ``export`` the open chat (a worker: it asks the owner)."""
        session = self.host.session
        if session is None:
            return
        work = {"rename": self.rename_chat, "delete": self.delete_chat, "export": self.export_chat}[operation]
        self.host.run_worker(work(session.chat_id), exit_on_error=False)

    # -- ChatOperations -----------------------------------------------------------------------------
    def list_chats(self) -> list[ChatRow]:
        return self.host.store.chats()

    async def rename_chat(self, chat_id: str) -> bool:
        from tui.screens.dialogs import TextPrompt

        host = self.host
        row = host.store.chat(chat_id)
        if row is None:
            return False
        title = await host.push_screen_wait(TextPrompt("Rename the chat", row.title or ""))
        if not title:
            return False
        host.store.update_chat(chat_id, title=title[:80])
        if host.session is not None and host.session.chat_id == chat_id:
            host.header_bar.set_title(title[:80])
        return True

    async def delete_chat(self, chat_id: str) -> bool:
        from tui.screens.dialogs import Confirm

        host = self.host
        row = host.store.chat(chat_id)
        if row is None:
            return False
        if not await host.push_screen_wait(
            Confirm(f"Delete \u201c{row.title}\u201d for good? Its messages and tool calls go with it.", yes="Delete")
        ):
            return False
        current = host.session is not None and host.session.chat_id == chat_id
        if current:
            await self.sessions.close()
        host.store.delete_chat(chat_id)
        host.notify("Chat deleted.")
        if current:
            host.open_session(None)
        return True

    async def export_chat(self, chat_id: str) -> Path | None:
        from core.export import chat_markdown
        from tui.screens.dialogs import Confirm, TextPrompt

        host = self.host
        row = host.store.chat(chat_id)
        if row is None:
            return None
        default = host.export_dir / f"{slug(row.title or 'chat')}.md"
        answer = await host.push_screen_wait(TextPrompt("Export to Markdown (tool calls included)", str(default)))
        if not answer:
            return None
        if await asyncio.to_thread(exists, answer) and not await host.push_screen_wait(
            Confirm(f"{answer} exists. Overwrite it with this chat?", yes="Overwrite", default_no=True)
        ):
            host.notify("Not exported: the file is unchanged.")
            return None
        path, error = await asyncio.to_thread(write_file, answer, chat_markdown(host.store, chat_id))
        if error is not None:
            host.notify(f"Could not write {path}: {error}", severity="error")
            return None
        host.notify(f"Exported to {path}")
        return path

    # -- the open chat's model and system prompt ----------------------------------------------------
    def pick_model(self) -> None:
        host = self.host
        session = host.session
        if session is None:
            host.notify("No chat is open.", severity="warning")
            return
        from core.chat.switch import models_of, owner_target, usable_providers

        usable = usable_providers(host.engine.settings)
        current = (session.provider_name, session.provider.model)
        if current[0] not in usable:
            usable.insert(0, current[0])

        def picked(choice: tuple[str, str] | None) -> None:
            if choice is None or host.session is not session or choice == current:
                return
            try:
                # a provider offered for its configured base URL is built with it
                session.switch(*owner_target(session, *choice))  # provider.switched: the log, the header
            except UserFacingError as exc:
                host.notify(str(exc), severity="error")

        from tui.screens.model_picker import ModelPicker

        host.push_screen(ModelPicker(current, usable, {p: models_of(p) for p in usable}), picked)

    def edit_system_prompt(self) -> None:
        host = self.host
        session = host.session
        if session is None:
            host.notify("No chat is open.", severity="warning")
            return
        prompt = session.prompt

        def saved(text: str | None) -> None:
            if text is not None and host.session is session:
                try:
                    changed = prompt.set(text)  # its chat.system_prompt event reaches the log
                except UserFacingError as exc:
                    host.notify(str(exc), severity="error")
                    return
                host.notify("System prompt saved." if changed else "The system prompt is unchanged.", timeout=3)

        from tui.screens.system_prompt import SystemPromptScreen

        host.push_screen(SystemPromptScreen(prompt.text(), started=not prompt.before_first_message()), saved)


def exists(where: str) -> bool:
    """Whether ``where`` (``~`` expanded) names an existing file: export asks before it overwrites."""
    return Path(where).expanduser().exists()


def write_file(where: str, text: str) -> tuple[Path, OSError | None]:
    """Write ``text`` to ``where`` (``~`` expanded, folders made): the path, and the error if
    it failed. File I/O, so the app runs it off the event loop."""
    path = Path(where).expanduser()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        return path, exc
    return path, None


def slug(title: str) -> str:
    s = re.sub(r"[^A-Za-z0-9]+", "-", title).strip("-").lower()
    return (s or "chat")[:60]
