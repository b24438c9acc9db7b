"""Running a chat's last turn again (*retry*) and replacing it (*edit last message*).

Messages form a tree through ``parent_id``; the model is sent the branch that leads to the
chat's newest message (:meth:`core.store.Store.messages`). Replacing a turn adds a new user
message beside the replaced one (same parent), so the replaced messages drop out of that
branch without being deleted: the events, the invocation rows and the approvals of what
already ran stay where they are.

Retry picks the way that keeps the history valid and runs nothing twice:

- the last turn *failed on its request* (a provider error; the branch ends with what the model
  was asked, the owner's message or the tool results): ask again, in the same turn
  (``continue``); what the turn already ran keeps its results;
- otherwise (it was stopped, or finished, or failed after the model answered): send the turn's
  message again as a new turn in the old one's place (``resend``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from core.errors import UsageError
from core.store import MessageRow, Store

OPEN_STATUSES = ("running", "parked")


@dataclass(frozen=True)
class Prompt:
    """A message of the owner's that started a turn."""

    message_id: str
    turn_id: str
    text: str


@dataclass(frozen=True)
class RetryPlan:
    kind: Literal["continue", "resend"]
    prompt: Prompt
    status: str  # how the retried turn ended

    @property
    def message_id(self) -> str:
        return self.prompt.message_id


def text_of(message: MessageRow) -> str:
    return "\n\n".join(str(b.get("text") or "") for b in message.blocks if b.get("type") == "text" and b.get("text"))


def last_prompt(store: Store, chat_id: str) -> Prompt | None:
    """The owner's message that started the chat's last turn on its current branch."""
    for message in reversed(store.messages(chat_id)):
        if message.role != "user" or not message.turn_id:
            continue
        turn = store.turn(message.turn_id)
        if turn is not None and turn.user_message_id == message.id:
            return Prompt(message_id=message.id, turn_id=turn.id, text=text_of(message))
    return None


def retry_plan(store: Store, chat_id: str) -> RetryPlan:
    prompt = last_prompt(store, chat_id)
    if prompt is None:
        raise UsageError("there is no turn to retry in this chat yet")
    turn = store.turn(prompt.turn_id)
    assert turn is not None
    if turn.status in OPEN_STATUSES:
        raise UsageError("the last turn is not finished: answer its approval or resume it")
    branch = store.messages(chat_id)
    last = branch[-1] if branch else None
    if turn.status == "failed" and last is not None and last.role == "user" and last.turn_id == turn.id:
        return RetryPlan(kind="continue", prompt=prompt, status=turn.status)
    return RetryPlan(kind="resend", prompt=prompt, status=turn.status)
