"""Pick a resource of the chat's MCP servers to attach to the next message (the palette's
*Attach a resource*): a filter over every server's resources and resource templates, each shown
with its server (the author of its name and description, both passed through ``safe``)."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Input, OptionList, Static
from textual.widgets.option_list import Option

from core.display import safe
from core.mcp.offers import ResourceInfo


def matches(r: ResourceInfo, query: str) -> bool:
    text = " ".join((r.server, r.uri, r.name, r.title, r.description)).lower()
    return all(word in text for word in query.lower().split())


class ResourcePicker(ModalScreen[ResourceInfo | None]):
    DEFAULT_CSS = """
    ResourcePicker .resources-dialog { width: 90; }
    ResourcePicker #resources-list { height: auto; max-height: 60vh; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel", id="resources_cancel")]

    def __init__(self, resources: list[ResourceInfo]) -> None:
        super().__init__(classes="dialog-screen")
        self.resources = resources

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog resources-dialog"):
            yield Static(Content.assemble(("Attach a resource", "bold")), classes="dialog-title")
            yield Input(placeholder="filter (server, name, address)", id="resources-filter")
            yield OptionList(id="resources-list")
            yield Static(
                Content("Enter attaches \u00b7 Escape cancels \u00b7 the model reads it as the server's text"),
                classes="dialog-help",
            )

    def on_mount(self) -> None:
        self._fill("")
        self.query_one(Input).focus()

    def _fill(self, query: str) -> None:
        shown = self.query_one(OptionList)
        shown.clear_options()
        self.shown = [r for r in self.resources if matches(r, query)]
        if not self.shown:
            shown.add_option(
                Option(
                    Content.styled("no resource matches" if self.resources else "no server offers resources", "dim"),
                    disabled=True,
                )
            )
            return
        for i, r in enumerate(self.shown):
            kind = "template " if r.template else ""
            about = f" \u2014 {safe(r.description, max_len=80)}" if r.description else ""
            shown.add_option(
                Option(
                    Content.assemble(
                        (safe(r.label), "bold"),
                        (f"  {kind}{safe(r.uri)}", "dim"),
                        (f"  {safe(r.server)}", "cyan"),
                        about,
                    ),
                    id=str(i),
                )
            )
        shown.highlighted = 0

    def on_input_changed(self, event: Input.Changed) -> None:
        self._fill(event.value)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        index = self.query_one(OptionList).highlighted
        if self.shown and index is not None:
            self.dismiss(self.shown[index])

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        if event.option.id is not None:
            self.dismiss(self.shown[int(event.option.id)])

    def action_cancel(self) -> None:
        self.dismiss(None)
