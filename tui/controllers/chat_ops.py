"""Chat management: the chats list, and renaming, deleting and exporting a chat; the open
chat's model and its own system prompt.

:class:`ChatOps` is the chats list's :class:`~tui.screens.chats.ChatOperations`: each operation
asks the owner what it needs (a title, a confirmation, a path) and says whether it did it. File
I/O runs off the event loop.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable
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

    def rename_current(self) -> None:
        self._on_current(self.rename_chat)

    def delete_current(self) -> None:
        self._on_current(self.delete_chat)

    def export_current(self) -> None:
        self._on_current(self.export_chat)

    def _on_current(self, operation: Callable[[str], Awaitable[object]]) -> None:
        """Run ``operation`` on the open chat, in a worker (it asks the owner)."""
        session = self.host.session
        if session is not None:
            self.host.run_worker(operation(session.chat_id), exit_on_error=False)

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

    async def export_chat(self, chat_id: str, to: str | None = None) -> Path | None:
        """Export a chat to Markdown: to ``to``, else where the owner says (asked, with a default)."""
        from core.export import chat_markdown
        from tui.screens.dialogs import Confirm, TextPrompt

        host = self.host
        row = host.store.chat(chat_id)
        if row is None:
            return None
        answer = to
        if not answer:
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
    def pick_model(self, refresh: bool = False) -> None:
        """The model picker: each usable provider with what its server lists (what is known at
        once, the rest listed in a worker thread; ``refresh``: every server asked again, the
        palette's *List the provider's models*), any ``provider:model`` or bare name typed."""
        host = self.host
        session = host.session
        if session is None:
            host.notify("No chat is open.", severity="warning")
            return
        from core.chat.switch import usable_providers
        from core.providers.listing import Listing, fresh_listing, list_now

        settings = host.engine.settings
        usable = usable_providers(settings)
        current = (session.provider_name, session.provider.model)
        if current[0] not in usable:
            usable.insert(0, current[0])
        row = session.chat()
        # each provider listed where a switch would take it: the chat's own URL on its provider
        base_urls = {p: row.base_url if p == row.provider else settings.base_url_for(p) for p in usable}
        known = {p: fresh_listing(settings, p, base_urls[p]) for p in usable}  # the cache only: no network

        def lister(provider: str, again: bool) -> Listing:
            return list_now(settings, provider, base_urls.get(provider), refresh=again)

        def picked(choice: tuple[str, str] | None) -> None:
            if choice is not None and host.session is session and choice != current:
                self.switch_to(*choice)

        from tui.screens.model_picker import ModelPicker

        host.push_screen(ModelPicker(current, usable, known, lister, refresh=refresh), picked)

    def switch_to(self, provider: str | None, model: str | None) -> None:
        """Continue the open chat on ``provider`` / ``model`` (what is not named stays as the
        chat has it on its provider, else comes from the settings: ``owner_target``)."""
        host = self.host
        session = host.session
        if session is None:
            host.notify("No chat is open.", severity="warning")
            return
        from core.chat.switch import owner_target

        target = owner_target(session, provider, model)  # a configured base URL comes with its provider
        if target[:2] == (session.provider_name, session.provider.model):
            host.notify(f"This chat is on {target[0]}:{target[1]} already.", timeout=3)
            return
        try:
            session.switch(*target)  # provider.switched: the log, the header
        except UserFacingError as exc:
            host.notify(str(exc), severity="error")

    def model_choices(self) -> list[tuple[str, str]]:
        """(provider, model) pairs a switch can reach now: the current one first."""
        from core.chat.switch import models_of, usable_providers

        usable = usable_providers(self.host.engine.settings)
        session = self.host.session
        pairs = [(p, m) for p in usable for m in models_of(p)]
        if session is not None:
            current = (session.provider_name, session.provider.model)
            pairs = [current, *(p for p in pairs if p != current)]
        return pairs

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
