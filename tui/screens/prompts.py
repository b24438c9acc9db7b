"""Pick one of the chat's servers' prompts (the palette's *Use a server's prompt*; ``/server:prompt``
in the message box names one directly). Each is shown as its slash command, with its arguments
and description (the server's words, through ``safe``)."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from core.display import safe
from core.mcp.offers import PromptInfo


class PromptPicker(ModalScreen[PromptInfo | None]):
    DEFAULT_CSS = """
    PromptPicker .resources-dialog { width: 90; }
    PromptPicker #prompts-list { height: auto; max-height: 60vh; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel", id="prompts_cancel")]

    def __init__(self, prompts: list[PromptInfo]) -> None:
        super().__init__(classes="dialog-screen")
        self.prompts = prompts

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog resources-dialog"):
            yield Static(Content.assemble(("Use a server's prompt", "bold")), classes="dialog-title")
            options = OptionList(id="prompts-list")
            for i, p in enumerate(self.prompts):
                args = " ".join(f"{a.name}{'' if a.required else '?'}" for a in p.arguments)
                about = f" \u2014 {safe(p.description, max_len=80)}" if p.description else ""
                options.add_option(
                    Option(Content.assemble((safe(p.command), "bold"), (f" {safe(args)}", "dim"), about), id=str(i))
                )
            if not self.prompts:
                options.add_option(Option(Content.styled("no server offers prompts", "dim"), disabled=True))
            yield options
            yield Static(
                Content("Enter picks \u00b7 what it returns goes in the message box for you to read and send"),
                classes="dialog-help",
            )

    def on_mount(self) -> None:
        self.query_one(OptionList).focus()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        if event.option.id is not None:
            self.dismiss(self.prompts[int(event.option.id)])

    def action_cancel(self) -> None:
        self.dismiss(None)
