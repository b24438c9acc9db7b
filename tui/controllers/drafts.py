"""What the owner typed and has not seen answered yet: the input history (↑), the queue of
messages sent while a turn runs, each chat's unsent text, and the last message being edited.

Nothing typed is lost: a queued message that will not be sent goes back to the box, a chat's
unsent text waits for the owner to come back to that chat, and the history outlives the app
(the store keeps it).
"""

from __future__ import annotations

import logging

from tui.controllers.host import Host
from tui.editor import edit_in, editor_command

log = logging.getLogger("deferchat.tui")


class Drafts:
    def __init__(self, host: Host) -> None:
        self.host = host
        self.queued: list[str] = []  # messages sent while a turn runs, sent when it ends
        self.drafts: dict[str, tuple[str, tuple[int, int]]] = {}  # chat id -> its unsent text and cursor
        self.editing: str | None = None  # the user message that sending replaces (Edit last message)
        self.edit_draft = ""  # what the box held before the edit began (f4 again gives it back)

    # -- the input history ------------------------------------------------------------------------
    def remember(self, chat_id: str, text: str) -> None:
        """A sent message joins the input history (↑), in the store so it outlives the app."""
        self.host.composer.remember(text)
        try:
            self.host.store.add_input(chat_id, text)
        except Exception:  # the history is a convenience: it never stops a message
            log.exception("could not store the input history")

    def load_history(self, chat_id: str) -> None:
        try:
            entries = self.host.store.input_history(chat_id)
        except Exception:
            log.exception("could not read the input history")
            entries = []
        self.host.composer.set_history(entries)

    # -- the queue ----------------------------------------------------------------------------------
    def queue(self, text: str) -> None:
        self.queued.append(text)
        self.show_queue()

    def show_queue(self) -> None:
        self.host.composer.queued = len(self.queued)
        until = "this turn ends" if self.host.session is not None else "the chat is open"
        self.host.queued_note.show(self.queued, editing=self.editing is not None, until=until)

    def next_queued(self) -> str | None:
        """The first queued message, taken off the queue to be sent now."""
        if not self.queued:
            return None
        text = self.queued.pop(0)
        self.show_queue()
        return text

    def give_back_queue(self, why: str = "") -> None:
        """Queued messages that will not be sent go back to the box, nothing lost."""
        if not self.queued:
            return
        waiting, self.queued = self.queued, []
        composer = self.host.composer
        current = composer.text
        composer.put("\n\n".join([*([current] if current.strip() else []), *waiting]))
        self.show_queue()
        if why:
            self.host.notify(f"{why}: your queued message is back in the box.", severity="warning")

    def take_queued(self) -> None:
        """The last queued message comes back to the box, before what it holds."""
        if not self.queued:
            self.host.notify("No message is queued.")
            return
        text = self.queued.pop()
        composer = self.host.composer
        current = composer.text
        composer.put(f"{text}\n\n{current}" if current.strip() else text)
        self.show_queue()
        composer.focus()

    # -- each chat's unsent text ----------------------------------------------------------------------
    def stash(self, chat_id: str | None) -> None:
        """The unsent text belongs to the chat it was typed in (and its queue, given back)."""
        self.give_back_queue()
        self.editing = None
        if chat_id is not None:
            composer = self.host.composer
            text = composer.text
            if text.strip():
                self.drafts[chat_id] = (text, composer.cursor_location)
            else:
                self.drafts.pop(chat_id, None)
            composer.put("")
        self.show_queue()

    def restore(self, chat_id: str) -> None:
        draft = self.drafts.pop(chat_id, None)
        if draft is not None and not self.host.composer.text.strip():
            self.host.composer.put(*draft)

    def has_draft(self, chat_id: str) -> bool:
        return chat_id in self.drafts

    # -- editing the last message -------------------------------------------------------------------
    def start_editing(self, message_id: str, text: str) -> None:
        composer = self.host.composer
        self.edit_draft = composer.text
        self.editing = message_id
        composer.put(text)
        composer.focus()
        self.show_queue()

    def stop_editing(self) -> None:
        """f4 again: the box gets back what it held before the edit."""
        self.editing = None
        self.host.composer.put(self.edit_draft)
        self.show_queue()

    def take_editing(self) -> str | None:
        """The message a send replaces (None: a new message); the edit ends with the send."""
        editing, self.editing = self.editing, None
        return editing

    # -- the owner's editor ---------------------------------------------------------------------------
    def external_editor(self) -> None:
        """Write the message in $VISUAL / $EDITOR: the app steps aside until the editor exits."""
        host = self.host
        command = editor_command()
        if command is None:
            host.notify("Set $EDITOR (or $VISUAL) to write messages in your editor.", severity="warning")
            return
        text, error = edit_in(host, command, host.composer.text)
        if error:
            host.notify(f"The editor did not run: {error}", severity="error")
            return
        if text is not None:
            host.composer.put(text.rstrip("\n"))
        host.composer.focus()
