"""A chat's own system prompt: what the owner wants this chat to do, beside the agent's instructions.

It is stored with the chat (``chats.system_prompt``, migration 0006) and read from the store at
each request (:meth:`ChatPrompt.text`), so an edit made anywhere (the TUI's editor, ``deferchat
ask --chat ID --system ...``) is in the next request. A new chat opens with config.toml's
``system_prompt``; a chat made before there were chat prompts has none (its prefix stays as it was).

Before the first message an edit is free. After it, an edit is allowed, and is what it is: the
system prompt is part of the cached prefix, so the next request's prefix breaks (the meter counts
a ``system`` break) and a ``chat.system_prompt`` event says so in the log, as a switch does.
Where the text goes in the system prompt is :func:`core.context.prompt.assemble_system`'s: in the
instructions class, after the agent's own; the strategy's note and the deferred-tool index stay
where the plan puts them.
"""

from __future__ import annotations

from core import events as ev
from core.store import Store

MAX_CHARS = 20_000  # a prompt longer than this is refused (the instructions class is capped anyway)


class ChatPrompt:
    """One chat's own system prompt, read and written through the store."""

    def __init__(self, store: Store, chat_id: str, emit: ev.EventSink, default: str | None = None):
        self.store = store
        self.chat_id = chat_id
        self.emit = emit
        row = store.chat(chat_id)
        if default and row is not None and row.system_prompt is None and self.before_first_message():
            store.update_chat(chat_id, system_prompt=default)  # a new chat takes config.toml's

    def text(self) -> str:
        """The chat's prompt as the next request carries it ("" for none)."""
        row = self.store.chat(self.chat_id)
        return (row.system_prompt or "") if row is not None else ""

    def before_first_message(self) -> bool:
        return self.store.last_message_id(self.chat_id) is None

    def set(self, text: str) -> ev.SystemPromptChanged | None:
        """Set the chat's prompt to ``text`` ("" removes it). None when nothing changes; else the
        ``chat.system_prompt`` event, emitted (and so stored and shown)."""
        text = text.strip()
        if len(text) > MAX_CHARS:
            from core.errors import UsageError

            raise UsageError(f"a system prompt is at most {MAX_CHARS:,} characters (this one has {len(text):,})")
        if text == self.text():
            return None
        before = self.before_first_message()
        self.store.update_chat(self.chat_id, system_prompt=text)
        event = ev.SystemPromptChanged(text=text, before_first_message=before)
        self.emit(event)
        return event
