"""A message's token count is kept beside it (migration 0011_message_tokens), so the next process
measures a long chat against its window without loading the tokenizer (issue 22: ``deferchat ask
--chat`` paid ~0.25 s for it on every run past the byte bound):

* a turn that had to count the history keeps each count with the key it was made for;
* the next process (a new engine on the same file) measures the chat with those counts and the
  sizes of what is new, and sends its turn without the tokenizer;
* a count whose key is not the message's own (another text, another encoding, a rewritten
  message) is never read: the message is counted again, and the right count kept;
* a store this process may only read keeps nothing and says nothing.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

import core.tokens
from core.chat.history import Entry
from core.engine import ChatOptions
from core.pipeline.approvals import Decision, FixedApprover
from core.store import Store
from core.store.errors import StoreReadOnly
from core.tokens import _encoding, content_key
from core.tools import canonical_json
from tests.streaming_server import StreamingServer
from tests.unit.test_compaction import ROSTER, WINDOW, answer, chat_of, engine_for, long_text

TURNS = 12  # of 120 words: past what sizes in bytes settle in an 8,192-token window, short of a summary


@pytest.fixture
def roster(tmp_path: Path) -> str:
    path = tmp_path / "roster.json"
    path.write_text(json.dumps(ROSTER))
    return str(path)


def tokenized(text: str) -> int:
    return len(_encoding().encode(text, disallowed_special=()))


def refuse_the_tokenizer(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse() -> None:
        raise AssertionError("the tokenizer was loaded: the kept counts should have settled the budget")

    monkeypatch.setattr(core.tokens, "_encoding", refuse)


def kept(db: Path) -> list[tuple[str, str, int | None, str | None]]:
    conn = sqlite3.connect(db)
    try:
        return conn.execute("select id, content, tokens, tokens_key from messages order by seq").fetchall()
    finally:
        conn.close()


async def one_more_turn(home: Path, server: StreamingServer, roster_file: str, chat_id: str, text: str) -> str:
    engine = engine_for(home)
    opts = ChatOptions(base_url=server.url_for("openai-chat"), roster=roster_file, start_demo_servers=False)
    session = await engine.open_chat(chat_id, opts, approver=FixedApprover(Decision.ALLOW_ONCE))
    try:
        return (await session.send(text)).status
    finally:
        await session.close()
        engine.store.db.close()


async def test_the_next_process_measures_the_chat_with_the_kept_counts(
    home: Path, roster: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = home / "deferchat.db"
    with StreamingServer({"responses": [answer("Noted.")], "repeat": True, "context_window": WINDOW}) as server:
        engine = engine_for(home)
        session, _ = await chat_of(engine, server, roster, TURNS)
        engine.store.db.close()
        rows = kept(db)
        # every message the last request carried was counted; the answer to it came after
        assert rows[-1][2] is None and all(tokens is not None for _, _, tokens, _ in rows[:-1])
        for msg_id, _content, tokens, key in rows[:-1]:
            entry = next(e for e in session.turns.history.entries() if e.id == msg_id)
            assert key == content_key(entry.text) and tokens == tokenized(entry.text)
        refuse_the_tokenizer(monkeypatch)  # as a new process that never loaded it
        status = await one_more_turn(home, server, roster, session.chat_id, "and one more question")
        assert status == "done"
        assert server.requests[-1].get("outcome") != "refused"


async def test_a_count_for_another_text_is_never_read(home: Path, roster: str) -> None:
    db = home / "deferchat.db"
    with StreamingServer({"responses": [answer("Noted.")], "repeat": True, "context_window": WINDOW}) as server:
        engine = engine_for(home)
        session, _ = await chat_of(engine, server, roster, TURNS)
        engine.store.db.close()
        conn = sqlite3.connect(db)
        # a count of 1 under a key of another text: were it read, the chat would look tiny
        conn.execute("update messages set tokens = 1, tokens_key = ?", [content_key("another text")])
        conn.commit()
        conn.close()
        assert await one_more_turn(home, server, roster, session.chat_id, long_text(99)) == "done"
    rows = kept(db)
    older = rows[:-2]  # the new turn's own two messages were measured by size
    assert older and all(tokens is not None and tokens > 1 for _, _, tokens, _ in older)
    assert all(key != content_key("another text") for _, _, _, key in older)


@given(
    text=st.text(max_size=200),
    count=st.integers(min_value=1, max_value=10**6),
    other=st.text(max_size=200),
)
def test_an_entry_reads_a_kept_count_only_under_its_own_key(text: str, count: int, other: str) -> None:
    message = {"role": "user", "content": [{"type": "text", "text": text}]}
    own = content_key(canonical_json(message))
    assert Entry("m", None, message, kept=(count, own)).known_tokens() == count
    foreign = content_key(canonical_json({"role": "user", "content": [{"type": "text", "text": other}]}))
    entry = Entry("m", None, message, kept=(count, foreign))
    assert entry.known_tokens() == (count if foreign == own else None)
    assert Entry("m", None, message).known_tokens() is None


def test_a_store_this_process_may_only_read_keeps_nothing(home: Path) -> None:
    store = Store(home / "deferchat.db")
    chat_id = store.create_chat(title="t", provider="demo", model="demo", roster="production")
    msg_id = store.add_message(chat_id, "user", [{"type": "text", "text": "hi"}], turn_id=None, parent_id=None)
    store.file.refusal = StoreReadOnly(home / "deferchat.db", "a test says so")
    store.keep_token_counts([(msg_id, 3, "k")])  # quietly: a cache
    store.file.refusal = None
    store.keep_token_counts([(msg_id, 3, "k")])
    row = store.message(msg_id)
    assert row is not None and (row.tokens, row.tokens_key) == (3, "k")
