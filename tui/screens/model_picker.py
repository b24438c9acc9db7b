"""The model picker: every provider usable now with the models its server lists (each with its
window where the server says it), or any model name typed in.

It opens at once: what is known without asking anyone (the demo's own model, a listing the
cache holds from the last few minutes) shows straight away; every other provider shows
*listing…* while a worker asks its server (:func:`core.providers.listing.list_now`, in a thread:
the SDK's import and the request never hold the screen), and its models appear when the answer
comes. A server that cannot be listed shows the profile's names, marked, with the reason. Typing
filters the list; Enter on the typed text takes it as it is: ``provider:model``, or a bare model
name, which goes where the naming rule says (:func:`core.providers.naming.resolve_switch`: a name
that says its provider goes there, another stays on the chat's). F5 lists again.

It returns ``(provider, model)``, or ``("", model)`` for a bare name; the app switches the chat
(``core.chat.switch.owner_target``, ``ChatSession.switch``) and the header follows.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Input, OptionList, Static
from textual.widgets.option_list import Option

from core.display import safe
from core.providers.profiles import PROFILES

if TYPE_CHECKING:
    from core.providers.listing import Listing

Picked = tuple[str, str]
"""``(provider, model)``; the provider is "" for a bare name (the naming rule finds it)."""
Lister = Callable[[str, bool], "Listing"]
"""``(provider, refresh)`` -> its listing; called in a thread."""

LISTING = "listing\u2026"


def choices(usable: list[str], models_of: Mapping[str, list[str]]) -> list[tuple[str, str]]:
    """``(provider, model)`` rows, provider by provider, in the order given."""
    return [(p, m) for p in usable for m in models_of.get(p, [])]


def parse_typed(text: str) -> Picked | None:
    """``provider:model`` (a provider deferchat knows; ``openai-chat:qwen3:8b`` keeps the rest as
    the model), else the whole text as a bare model name (``qwen3:8b``, a gateway's
    ``openai/gpt-4.1``) whose provider the naming rule finds; None for nothing typed."""
    text = text.strip()
    provider, found, model = text.partition(":")
    if found and provider in PROFILES and model.strip():
        return provider, model.strip()
    return ("", text) if text else None


def window_words(tokens: int | None) -> str:
    return f"{tokens:,} tokens" if tokens else ""


class ModelPicker(ModalScreen[Picked | None]):
    """Pick a provider's model, or type one; Escape cancels (None)."""

    DEFAULT_CSS = """
    ModelPicker #model-list { height: auto; max-height: 18; }
    """
    WIDTH = 100
    """Wider than the other dialogs: a server's model ids and the reason a listing failed are long."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel", id="model_picker_cancel"),
        Binding("down", "to_list", "Models", show=False, id="model_picker_list"),
        Binding("f5", "refresh", "List again", id="model_picker_refresh"),
    ]

    def __init__(
        self,
        current: tuple[str, str],
        usable: list[str],
        listings: Mapping[str, Listing | list[str] | None],
        lister: Lister | None = None,
        *,
        refresh: bool = False,
    ) -> None:
        """``listings``: what is known now per usable provider (None: ask its server with
        ``lister``; a list of names: those, as the profile's); ``refresh``: ask every server
        again, whatever is known."""
        from core.providers.listing import ListedModel, Listing

        super().__init__(classes="dialog-screen")
        self.current = current
        self.usable = usable
        self.listings: dict[str, Listing | None] = {}
        for p in usable:
            known = listings.get(p)
            if isinstance(known, list):
                known = Listing(provider=p, source="profile", models=tuple(ListedModel(m) for m in known))
            self.listings[p] = known
        self.lister = lister
        self.refresh_all = refresh
        self.rows: list[tuple[str, str]] = []
        self.filter = ""

    def compose(self) -> ComposeResult:
        provider, model = self.current
        with Vertical(classes="dialog"):
            yield Static(Content(f"Switch model (now {safe(provider)}/{safe(model)})"), classes="dialog-title")
            yield Input(placeholder="type to filter, or provider:model and Enter; \u2193 to pick", id="model-typed")
            yield OptionList(id="model-list")
            yield Static(
                Content(
                    "Enter picks \u00b7 the plan stays pinned; the strategy follows the provider \u00b7 "
                    "F5 lists again \u00b7 Escape"
                ),
                classes="dialog-help",
            )

    def on_mount(self) -> None:
        self.query_one(".dialog").styles.width = self.WIDTH  # over the app's .dialog (max-width 95% still holds)
        self.query_one(Input).focus()
        self._show()
        for provider in self.usable:
            if self.refresh_all or self.listings.get(provider) is None:
                self._list(provider, self.refresh_all)

    # -- listings --

    def _list(self, provider: str, refresh: bool) -> None:
        if self.lister is None:
            return
        lister = self.lister
        self.listings[provider] = None
        self._show()

        async def ask() -> None:
            listing = await asyncio.to_thread(lister, provider, refresh)
            self.show_listing(provider, listing)

        self.run_worker(ask(), group=f"listing-{provider}", exclusive=True)

    def show_listing(self, provider: str, listing: Listing) -> None:
        """A provider's listing arrived: its models replace *listing…*."""
        self.listings[provider] = listing
        self._show()

    def action_refresh(self) -> None:
        for provider in self.usable:
            self._list(provider, True)

    # -- the list --

    def _heading(self, provider: str, listing: Listing | None) -> str:
        if listing is None:
            return f"{provider} \u00b7 {LISTING}"
        where = f" \u00b7 {listing.base_url}" if listing.base_url else ""
        return f"{provider}{where} \u00b7 {listing.came_from()}"

    def _show(self) -> None:
        """Rebuild the list: each provider's heading, then its models that match the filter
        (the highlighted model stays highlighted when it is still shown)."""
        options = self.query_one("#model-list", OptionList)
        highlighted = options.highlighted_option
        keep = self.rows[int(highlighted.id)] if highlighted is not None and highlighted.id else None
        wanted = self.filter.lower()
        self.rows = []
        shown: list[Option] = []
        for provider in self.usable:
            listing = self.listings.get(provider)
            shown.append(Option(Content(safe(self._heading(provider, listing))), disabled=True))
            if listing is None:
                continue
            for m in listing.models:
                label = f"{provider}/{m.id}"
                if wanted and wanted not in label.lower():
                    continue
                notes = [window_words(m.context_window)]
                if listing.from_profile:
                    notes.append("(profile)")
                if (provider, m.id) == self.current:
                    notes.append("(current)")
                text = "  ".join([f"  {label}", *(n for n in notes if n)])
                shown.append(Option(Content(safe(text)), id=str(len(self.rows))))
                self.rows.append((provider, m.id))
        options.set_options(shown)
        if keep in self.rows:
            options.highlighted = next(i for i, o in enumerate(options.options) if o.id == str(self.rows.index(keep)))

    def on_input_changed(self, event: Input.Changed) -> None:
        event.stop()
        typed = parse_typed(event.value)
        self.filter = typed[1] if typed else ""
        self._show()

    def action_to_list(self) -> None:
        """Down from the typed name moves into the list (the list keeps its own arrow keys)."""
        options = self.query_one(OptionList)
        options.focus()
        if options.highlighted is None and self.rows:
            options.highlighted = next(i for i, o in enumerate(options.options) if not o.disabled)

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        if event.option.id is not None:
            self.dismiss(self.rows[int(event.option.id)])

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        picked = parse_typed(event.value)
        if picked is not None:
            self.dismiss(picked)

    def action_cancel(self) -> None:
        self.dismiss(None)
