"""The store's side of edit and retry, and the input history (migration 0004): a replaced
message and what followed it leave the chat's branch (what the model is sent) without leaving
the store; what the owner typed is kept per chat, read this chat's first, and goes with its chat."""

from __future__ import annotations

from pathlib import Path

from sqlite_utils import Database

from core.store import SCHEMA, Store, open_db
from core.store.rows import MessageRow
from core.store.store import branch


def row(id_: str, parent: str | None, replaces: str | None = None) -> MessageRow:
    return MessageRow(id=id_, parent_id=parent, replaces=replaces, content=[{"type": "text", "text": id_}])


def test_the_branch_leaves_out_replaced_messages_and_what_followed_them() -> None:
    chain = [row("a", None), row("b", "a"), row("c", "b")]
    assert branch(chain) == chain
    replaced = [*chain, row("d", "c"), row("b2", "a", replaces="b"), row("c2", "b2")]
    assert [r.id for r in branch(replaced)] == ["a", "b2", "c2"]
    twice = [*replaced, row("b3", "a", replaces="b2")]
    assert [r.id for r in branch(twice)] == ["a", "b3"]
    first_replaced = [row("a", None), row("b", "a"), row("a2", None, replaces="a")]
    assert [r.id for r in branch(first_replaced)] == ["a2"]
    # rows written without parents (older tools, benchmarks) are all kept
    flat = [row(str(i), None) for i in range(5)]
    assert branch(flat) == flat and branch([]) == []


def test_input_history_is_this_chats_first_then_the_others_and_goes_with_its_chat(tmp_path: Path) -> None:
    store = Store(tmp_path / "db.sqlite")
    one, two = store.create_chat(), store.create_chat()
    for chat, text in ((one, "one a"), (two, "two a"), (one, "one b"), (two, "two b")):
        store.add_input(chat, text)
    assert store.input_history(one) == ["one b", "one a", "two b", "two a"]
    assert store.input_history(two) == ["two b", "two a", "one b", "one a"]
    assert store.input_history(None, limit=2) == ["two b", "one b"]
    store.delete_chat(one)
    assert store.input_history(two) == ["two b", "two a"]


def test_the_input_history_migration_fills_in_what_was_typed_before(tmp_path: Path) -> None:
    old = Database(tmp_path / "old.db")
    SCHEMA.apply(old, stop_before="0004_branches_input_history")
    store = Store(old)
    chat = store.create_chat()
    for text in ("earlier question", "later question"):
        msg = store.add_message(
            chat, "user", [{"type": "text", "text": text}], turn_id=None, parent_id=store.last_message_id(chat)
        )
        store.set_message_turn(msg, store.start_turn(chat, msg))
        store.add_message(
            chat,
            "user",
            [{"type": "tool_result", "tool_use_id": "x", "content": "r"}],
            turn_id=None,
            parent_id=store.last_message_id(chat),
        )
    old.close()
    migrated = Store(open_db(tmp_path / "old.db"))
    assert migrated.input_history(chat) == ["later question", "earlier question"]


def test_a_replacing_message_takes_the_replaced_ones_place_in_what_the_store_reads(tmp_path: Path) -> None:
    store = Store(tmp_path / "db.sqlite")
    chat = store.create_chat()

    def add(role: str, text: str, parent: str | None, replaces: str | None = None) -> str:
        return store.add_message(
            chat, role, [{"type": "text", "text": text}], turn_id=None, parent_id=parent, replaces=replaces
        )

    a = add("user", "first", None)
    b = add("assistant", "answer", a)
    c = add("user", "typo", b)
    add("assistant", "answer to the typo", c)
    c2 = add("user", "fixed", b, replaces=c)
    assert [m.blocks[0]["text"] for m in store.messages(chat)] == ["first", "answer", "fixed"]
    assert store.last_message_id(chat) == c2
    replaced = store.message(c)
    assert replaced is not None and replaced.blocks[0]["text"] == "typo"
    assert store.message(c2).replaces == c
