"""The model picker: every provider usable now and its models (from the provider profiles), or
any model name typed in. It returns ``(provider, model)``; the app switches the chat
(``ChatSession.switch``) and the header follows."""

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


def choices(usable: list[str], models_of: dict[str, list[str]]) -> list[tuple[str, str]]:
    """``(provider, model)`` rows, provider by provider, in the order given."""
    return [(p, m) for p in usable for m in models_of.get(p, [])]


def parse_typed(text: str, current_provider: str, usable: list[str]) -> tuple[str, str] | None:
    """``provider:model``, ``provider/model`` or a bare model name (on the current provider)."""
    text = text.strip()
    for sep in (":", "/"):
        provider, found, model = text.partition(sep)
        if found and provider in usable and model.strip():
            return provider, model.strip()
    return (current_provider, text) if text else None


class ModelPicker(ModalScreen[tuple[str, str] | None]):
    """Pick a provider's model, or type one; Escape cancels (None)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel", id="model_picker_cancel"),
        Binding("down", "to_list", "Models", show=False, id="model_picker_list"),
    ]

    def __init__(self, current: tuple[str, str], usable: list[str], models_of: dict[str, list[str]]) -> None:
        super().__init__(classes="dialog-screen")
        self.current = current
        self.usable = usable
        self.rows = choices(usable, models_of)

    def compose(self) -> ComposeResult:
        provider, model = self.current
        with Vertical(classes="dialog"):
            yield Static(Content(f"Switch model (now {safe(provider)}/{safe(model)})"), classes="dialog-title")
            yield Input(placeholder="type provider:model or a model name, or ↓ to pick", id="model-typed")
            yield OptionList(
                *(
                    Option(Content(f"{p}/{m}" + ("  (current)" if (p, m) == self.current else "")), id=f"{i}")
                    for i, (p, m) in enumerate(self.rows)
                ),
                id="model-list",
            )
            yield Static(
                Content("Enter picks \u00b7 the plan stays pinned; the strategy follows the provider \u00b7 Escape"),
                classes="dialog-help",
            )

    def on_mount(self) -> None:
        self.query_one(Input).focus()

    def action_to_list(self) -> None:
        """Down from the typed name moves into the list (the list keeps its own arrow keys)."""
        self.query_one(OptionList).focus()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.dismiss(self.rows[int(event.option.id or 0)])

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        picked = parse_typed(event.value, self.current[0], self.usable)
        if picked is not None:
            self.dismiss(picked)

    def action_cancel(self) -> None:
        self.dismiss(None)
