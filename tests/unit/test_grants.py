"""Grants a person can see and take back (issue 19, item 3).

An "allow for this chat" grant is listed with its tool, when it was given and by whom; revoking it
(the app, ``deferchat chats grants ID --revoke TOOL|--all``) makes the tool ask again at its next
call, in the same process or another; the revoked grant is still shown, as revoked, after a
restart; granting the tool again makes it active again.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from core.events import GrantRevoked
from core.pipeline import grants
from core.pipeline.approvals import Decision, FixedApprover
from core.pipeline.pipeline import Pipeline, RunContext
from core.pipeline.policy import default_policy
from core.store import Store
from core.tools import SideEffect, ToolResult
from tests.helpers import configured, deferchat, plan

WRITE = configured(
    "notes.create",
    SideEffect.WORKSPACE_WRITE,
    params={"title": {"type": "string"}, "body": {"type": "string"}},
    required=("title",),
)
OTHER = configured("tasks.create", SideEffect.WORKSPACE_WRITE, params={"title": {"type": "string"}})


class Host:
    def __init__(self) -> None:
        self.ran: list[str] = []

    async def run(self, spec: Any, arguments: dict[str, Any], call_id: str) -> ToolResult:
        self.ran.append(spec.name)
        return ToolResult.of_json({"ok": True})

    def live_pin(self, name: str) -> str | None:
        return None


class Asker:
    """Answers as the app's person would, and counts the times it was asked."""

    who = "app"

    def __init__(self, decision: Decision) -> None:
        self.decision = decision
        self.asked: list[str] = []

    async def decide(self, request: Any) -> Decision:
        self.asked.append(request.tool)
        return self.decision


def context(store: Store, chat_id: str, approver: Any, events: list[Any]) -> RunContext:
    return RunContext(
        chat_id=chat_id,
        turn_id="turn_1",
        store=store,
        plan=plan([WRITE, OTHER]),
        policy=default_policy(),
        approver=approver,
        tools=Host(),
        emit=events.append,
    )


async def call(ctx: RunContext, name: str, call_id: str) -> Any:
    return await Pipeline(ctx).run({"type": "tool_use", "id": call_id, "name": name, "input": {"title": call_id}})


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store(tmp_path / "deferchat.db")


def new_chat(store: Store) -> str:
    return store.create_chat(title="t", provider="script", model="m", strategy="wrapper")


async def test_a_grant_is_listed_with_its_tool_time_and_who_gave_it(store: Store) -> None:
    chat = new_chat(store)
    asker = Asker(Decision.ALLOW_CHAT)
    await call(context(store, chat, asker, []), "notes.create", "c1")
    [g] = grants.chat_grants(store, chat)
    assert (g.tool, g.active, g.granted_by) == ("notes.create", True, "app")
    assert g.approval_id and store.approval(g.approval_id) is not None
    assert grants.who(g.granted_by) == "you, in the app" and grants.when(g.created_at)


async def test_a_revoked_grant_asks_again_and_is_shown_as_revoked_after_a_restart(store: Store, tmp_path: Path) -> None:
    chat = new_chat(store)
    asker = Asker(Decision.ALLOW_CHAT)
    events: list[Any] = []
    ctx = context(store, chat, asker, events)
    await call(ctx, "notes.create", "c1")
    await call(ctx, "notes.create", "c2")
    assert asker.asked == ["notes.create"]  # granted: the second call did not ask

    revoked = grants.revoke(store, chat, ["notes.create"], by="app", emit=events.append)
    assert [r.tool for r in revoked] == ["notes.create"]
    assert [e for e in events if isinstance(e, GrantRevoked)] == [
        GrantRevoked(chat_id=chat, tool="notes.create", by="app")
    ]

    asker.decision = Decision.ALLOW_ONCE
    await call(ctx, "notes.create", "c3")
    assert asker.asked == ["notes.create", "notes.create"]  # asks again

    again = Store(tmp_path / "deferchat.db")  # another process, after a restart
    [g] = grants.chat_grants(again, chat)
    assert (g.active, g.revoked_by) == (False, "app") and g.revoked_at
    assert not again.granted(chat, "notes.create")
    assert again.grants(chat) == []  # no active grant


async def test_granting_again_after_a_revoke_makes_it_active_and_records_the_new_answer(store: Store) -> None:
    chat = new_chat(store)
    asker = Asker(Decision.ALLOW_CHAT)
    ctx = context(store, chat, asker, [])
    await call(ctx, "notes.create", "c1")
    grants.revoke(store, chat, None, by="cli")
    await call(ctx, "notes.create", "c2")
    [g] = grants.chat_grants(store, chat)
    assert g.active and g.revoked_at is None and g.revoked_by is None
    assert g.approval_id == store.approval_for_call(chat, "c2").id  # type: ignore[union-attr]


async def test_revoking_all_takes_back_every_grant_of_that_chat_only(store: Store) -> None:
    one, two = new_chat(store), new_chat(store)
    for chat in (one, two):
        ctx = context(store, chat, Asker(Decision.ALLOW_CHAT), [])
        await call(ctx, "notes.create", "a")
        await call(ctx, "tasks.create", "b")
    revoked = grants.revoke(store, one, None, by="cli")
    assert sorted(r.tool for r in revoked) == ["notes.create", "tasks.create"]
    assert grants.revoke(store, one, None, by="cli") == []  # nothing left to revoke
    assert [g.tool for g in store.grants(two)] == ["notes.create", "tasks.create"]
    stored = [e for e in store.events(one) if e["type"] == "grant.revoked"]
    assert sorted(e["tool"] for e in stored) == ["notes.create", "tasks.create"]


async def test_a_fixed_approver_never_grants_and_a_terminal_grant_says_so(store: Store) -> None:
    chat = new_chat(store)
    await call(context(store, chat, FixedApprover(Decision.ALLOW_ONCE), []), "notes.create", "c1")
    assert store.grants(chat, revoked=True) == []
    from core.cli.approver import TtyApprover

    assert TtyApprover.who == "terminal" and grants.who("terminal").startswith("you, at the terminal")


def test_a_grant_from_before_the_grant_history_upgrades_and_is_listed_as_given_by_unknown(tmp_path: Path) -> None:
    from sqlite_utils import Database

    from core.store import SCHEMA, open_db

    old = Database(tmp_path / "old.db")
    SCHEMA.apply(old, stop_before="0008_grant_history")  # as the release before the grant history left it
    old["chats"].insert({"id": "chat_old", "title": "kept", "created_at": 1.0, "status": "idle", "deleted": 0})
    old["grants"].insert({"chat_id": "chat_old", "tool": "notes.create", "created_at": 1.0})
    old.close()
    store = Store(open_db(tmp_path / "old.db"))
    [g] = grants.chat_grants(store, "chat_old")
    assert g.active and g.granted_by is None and grants.who(g.granted_by) == "unknown"
    assert store.granted("chat_old", "notes.create")
    assert [r.tool for r in grants.revoke(store, "chat_old", None, by="cli")] == ["notes.create"]


# -- the CLI, as a real process ---------------------------------------------------------------
async def test_chats_grants_lists_and_revokes_as_real_processes(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    store = Store(home / "deferchat.db")
    chat = new_chat(store)
    ctx = context(store, chat, Asker(Decision.ALLOW_CHAT), [])
    await call(ctx, "notes.create", "a")
    await call(ctx, "tasks.create", "b")

    listed = deferchat(home, "chats", "grants", chat)
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    assert [ln.split()[0] for ln in lines] == ["notes.create", "tasks.create"]
    assert all("by you, in the app" in ln for ln in lines)

    bad = deferchat(home, "chats", "grants", chat, "--revoke", "nope.tool")
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1
    assert "no active grant of nope.tool" in bad.stderr and "notes.create, tasks.create" in bad.stderr

    gone = deferchat(home, "chats", "grants", chat, "--revoke", "notes.create")
    assert gone.returncode == 0, gone.stderr
    assert gone.stdout.startswith("revoked notes.create")
    assert not store.granted(chat, "notes.create") and store.granted(chat, "tasks.create")

    asker = Asker(Decision.ALLOW_ONCE)
    await call(context(store, chat, asker, []), "notes.create", "c")
    assert asker.asked == ["notes.create"]  # this process sees the other's revoke at the next call

    everything = deferchat(home, "chats", "grants", chat, "--all", "--json")
    assert json.loads(everything.stdout) == {"chat_id": chat, "revoked": ["tasks.create"]}
    shown = json.loads(deferchat(home, "chats", "grants", chat, "--json").stdout)
    assert [(g["tool"], g["active"], g["revoked_by"]) for g in shown["grants"]] == [
        ("notes.create", False, "cli"),
        ("tasks.create", False, "cli"),
    ]
    text = deferchat(home, "chats", "grants", chat).stdout
    assert "revoked" in text and "by deferchat chats grants" in text
