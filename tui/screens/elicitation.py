"""A form an MCP server asks the person to fill in (MCP elicitation), and the same form for a
prompt's arguments or a resource template's variables.

The server is named as the author at the top, in words a person reads ("… asks you; this is its
text, not deferchat's"), and every string it wrote passes :func:`core.display.safe`. The fields
are built from the parsed schema (:class:`core.mcp.elicitation.ElicitField`): a text box (with
its format and bounds in the hint), a number box, a switch, a single choice, several choices.
*Send* checks the answer (:func:`core.mcp.elicitation.check_answer`) and says what is wrong
beside the form; *Decline* and Escape (*cancel*) answer at once. URL mode shows the address and
offers to open it in the browser."""

from __future__ import annotations

from typing import Any, ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Button, Checkbox, Input, Select, SelectionList, Static

from core.display import safe
from core.mcp.elicitation import ElicitationAnswer, ElicitationRequest, ElicitField, check_answer, coerce


def _hint(field: ElicitField) -> str:
    bits: list[str] = []
    if field.kind in ("integer", "number"):
        bits.append("a whole number" if field.kind == "integer" else "a number")
        if field.minimum is not None or field.maximum is not None:
            low = "" if field.minimum is None else f"{field.minimum:g}"
            high = "" if field.maximum is None else f"{field.maximum:g}"
            bits.append(f"{low}\u2013{high}")
    if field.format:
        bits.append({"date": "YYYY-MM-DD", "date-time": "YYYY-MM-DDTHH:MM:SSZ"}.get(field.format, field.format))
    if field.max_length is not None:
        bits.append(f"at most {field.max_length} characters")
    return ", ".join(bits)


class FormScreen(ModalScreen[ElicitationAnswer]):
    """Asks for the fields of ``request``; dismisses with the person's answer."""

    DEFAULT_CSS = """
    FormScreen .form-dialog { width: 80; max-height: 100%; }
    FormScreen .form-fields { height: auto; max-height: 40vh; }
    FormScreen .form-message { margin: 0 0 1 0; }
    FormScreen .form-label { margin: 1 0 0 0; }
    FormScreen .form-description { color: $text-muted; }
    FormScreen .form-error { height: auto; }
    FormScreen Select, FormScreen SelectionList { height: auto; max-height: 10; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel", id="form_cancel"),
        Binding("ctrl+s", "send", "Send", id="form_send"),
    ]

    def __init__(self, request: ElicitationRequest, *, title: str | None = None, send: str = "Send") -> None:
        super().__init__(classes="dialog-screen")
        self.request = request
        self.form_title = title
        self.send_label = send

    def compose(self) -> ComposeResult:
        r = self.request
        with Vertical(classes="dialog form-dialog"):
            title = self.form_title or f"MCP server {safe(r.server)} asks you \u2014 its words, not deferchat's"
            yield Static(Content(title), classes="dialog-title")
            if r.message:
                yield Static(Content(safe(r.message, multiline=True)), classes="form-message")
            with VerticalScroll(classes="form-fields"):
                if r.mode == "url":
                    yield Static(Content.assemble(("It asks you to open ", "dim"), safe(r.url or "")), id="form-url")
                for f in r.fields:
                    yield from self._field(f)
            yield Static("", id="form-error", classes="form-error")
            with Horizontal(classes="dialog-buttons"):
                if r.mode == "url":
                    yield Button("Open in the browser", id="form-open", variant="primary")
                else:
                    yield Button(self.send_label, id="form-send", variant="primary")
                yield Button("Decline", id="form-decline")
                yield Button("Cancel (Esc)", id="form-cancel")

    def _field(self, f: ElicitField) -> ComposeResult:
        label = safe(f.label) + ("" if f.required else " (optional)")
        yield Static(Content.assemble((label, "bold")), classes="form-label")
        if f.description:
            yield Static(Content(safe(f.description, max_len=300)), classes="form-description")
        wid = f"field-{f.name.encode().hex()}"  # the server's name is not an id Textual accepts
        if f.kind == "boolean":
            yield Checkbox(safe(f.label), value=bool(f.default), id=wid)
        elif f.kind == "choice":
            options = [(safe(o.label), o.value) for o in f.options]
            yield Select(
                options,
                value=f.default if f.default is not None else Select.BLANK,
                allow_blank=not f.required or f.default is None,
                id=wid,
            )
        elif f.kind == "choices":
            chosen = set(f.default or [])
            yield SelectionList[str](*[(safe(o.label), o.value, o.value in chosen) for o in f.options], id=wid)
        else:
            value = "" if f.default is None else str(f.default)
            yield Input(value, placeholder=_hint(f), id=wid)

    def on_mount(self) -> None:
        self.call_after_refresh(self._focus_first)

    def _focus_first(self) -> None:
        for widget in self.query("Input, Select, Checkbox, SelectionList, Button"):
            widget.focus()
            return

    def _values(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for f in self.request.fields:
            widget = self.query_one(f"#field-{f.name.encode().hex()}")
            if isinstance(widget, Checkbox):
                out[f.name] = widget.value
            elif isinstance(widget, Select):
                out[f.name] = None if widget.value is Select.BLANK else widget.value
            elif isinstance(widget, SelectionList):
                out[f.name] = list(widget.selected)
            elif isinstance(widget, Input):
                text = widget.value.strip()
                out[f.name] = coerce(f, text) if text else None
        return out

    def action_send(self) -> None:
        if self.request.mode == "url":
            self._open()
            return
        error = self.query_one("#form-error", Static)
        try:
            content = check_answer(self.request.fields, self._values())
        except ValueError as exc:
            error.update(Content.styled(safe(str(exc)), "bold red"))
            return
        self.dismiss(ElicitationAnswer(action="accept", content=content))

    def _open(self) -> None:
        import webbrowser

        url = self.request.url or ""
        try:
            opened = webbrowser.open(url)
        except Exception:
            opened = False
        if not opened:
            self.app.notify(f"No browser opened; open this address yourself: {safe(url)}", timeout=30)
        self.dismiss(ElicitationAnswer(action="accept"))

    def action_cancel(self) -> None:
        self.dismiss(ElicitationAnswer(action="cancel"))

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.action_send()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id in ("form-send", "form-open"):
            self.action_send()
        elif event.button.id == "form-decline":
            self.dismiss(ElicitationAnswer(action="decline"))
        else:
            self.action_cancel()
