"""Property tests for how the demo model links a request's words to the demo's data
(core/demo/world.py, core/demo/reading.py) and what it does with them through the real engine:

- a thing's name inside any surrounding sentence is found (the linker);
- words the request adds around an ask never become an argument: no target, query, date,
  recipient or id the demo calls a tool with holds one of them (content it was given to write,
  a title or a body, is what the owner said and is left out of the check);
- a write only ever targets a thing the request names: the id it writes to is the id of a row
  whose name the request said, and a request that names no such thing gets no write at all.

The filler is made of words no name in the demo's data has, so it can only be leftover. Writes
are denied (the data stays as seeded, every example sees the same world) and still show what
the demo asked to call.
"""

from __future__ import annotations

import asyncio
import json
import re
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.demo.world import World, load_world, terms
from core.tools import SideEffect
from tests.demo.harness import NOW
from tests.helpers import DEVELOPER_ENV

# Everyday words that are in no name of the demo's data, its tools' vocabulary for kinds of things,
# nor any date: what a person adds around an ask ("honestly", "quickly", "lovely").
_CANDIDATE_FILLER = (
    "honestly",
    "quickly",
    "basically",
    "lovely",
    "cheers",
    "frankly",
    "kindly",
    "marvellous",
    "obviously",
    "apparently",
    "anyway",
    "gosh",
    "wow",
    "hmm",
    "awesome",
    "brilliant",
    "fantastic",
    "splendid",
    "purple",
    "yellow",
    "orange",
    "banana",
    "pancake",
    "giraffe",
    "umbrella",
    "volcano",
    "saxophone",
    "trombone",
    "galaxy",
    "nebula",
    "pebble",
    "meadow",
    "lantern",
    "velvet",
    "harbour",
    "canyon",
    "quartz",
    "cobalt",
    "walnut",
    "pretzel",
    "waffle",
    "noodle",
    "mango",
    "kiwi",
    "zebra",
    "penguin",
    "koala",
    "otter",
    "badger",
    "heron",
    "swiftly",
    "gently",
    "boldly",
    "calmly",
    "eagerly",
    "fondly",
    "lazily",
    "merrily",
    "neatly",
    "oddly",
    "proudly",
    "quietly",
    "rarely",
)

HOME: dict[str, Path] = {}


@pytest.fixture(scope="module")
def demo_world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[World, Path]]:
    """The demo's data, seeded in a home of this module's own: its world and database."""
    home = tmp_path_factory.mktemp("home")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("DEFERCHAT_HOME", str(home))
        mp.setenv("TZ", "UTC")
        mp.setenv("DEFERCHAT_DEMO_NOW", NOW)
        for var in DEVELOPER_ENV:
            mp.delenv(var, raising=False)
        from core.demo import demo_db_path
        from core.demo.db import connect
        from core.demo.servers import implementations

        conn = connect(demo_db_path())
        for server in ("gmail_work", "gmail_personal", "bland_read"):
            implementations(server, conn, call_seconds=0.1)
        world = load_world(seeded=True)
        HOME["path"] = home
        yield world, demo_db_path()


def _filler_words(world: World) -> list[str]:
    named = {t for e in world.entities for name in e.names for t in terms(name)}
    return [w for w in _CANDIDATE_FILLER if not set(terms(w)) & named]


def _filler(world: World) -> st.SearchStrategy[list[str]]:
    return st.lists(st.sampled_from(_filler_words(world)), min_size=1, max_size=4)


# -- the linker ------------------------------------------------------------------------------------

_LINKED_KINDS = ("person", "schedule", "event", "task", "note", "newsletter", "file", "folder", "thread")


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_a_name_is_found_in_any_sentence(demo_world: tuple[World, Path], data: st.DataObject) -> None:
    world, _ = demo_world
    entity = data.draw(st.sampled_from([e for e in world.entities if e.kind in _LINKED_KINDS]))
    name = data.draw(st.sampled_from(entity.names))
    before = data.draw(_filler(world))
    after = data.draw(_filler(world))
    sentence = " ".join([*before, name, *after])
    found = {link.entity for link in world.link(sentence)}
    assert entity in found, (sentence, [e.label for e in found])
    filler = {t for w in before + after for t in terms(w)}
    for link in world.link(sentence):
        assert not link.words & filler, (sentence, link.entity.label, link.words)


# -- through the engine -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def denied_chat(demo_world: tuple[World, Path]) -> Iterator[tuple[asyncio.AbstractEventLoop, Any, list[Any]]]:
    """One chat on the demo model whose writes are all denied, driven from plain (hypothesis) tests."""
    from core.engine import ChatOptions, Engine
    from core.pipeline.approvals import Decision, FixedApprover
    from core.store import Store

    home = HOME["path"]
    loop = asyncio.new_event_loop()
    events: list[Any] = []
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("DEFERCHAT_HOME", str(home))
        mp.setenv("TZ", "UTC")
        mp.setenv("DEFERCHAT_DEMO_NOW", NOW)
        engine = Engine(Store(home / "deferchat.db"))
        session = loop.run_until_complete(
            engine.open_chat(
                None,
                ChatOptions(roster="production", provider="demo", start_demo_servers=True),
                approver=FixedApprover(Decision.DENY),
                subscribers=[events.append],
            )
        )
        yield loop, session, events
        loop.run_until_complete(session.close())
    loop.close()


def _ask(chat: tuple[asyncio.AbstractEventLoop, Any, list[Any]], prompt: str) -> list[Any]:
    loop, session, events = chat
    events.clear()
    result = loop.run_until_complete(session.send(prompt))
    assert result.status == "done", (prompt, result)
    return [e for e in events if e.type == "tool.requested"]


_CONTENT = {"title", "body", "content", "fact", "task", "message", "subject", "notes", "first_sentence"}

# Asks over things the demo's data holds, each with the name of the thing it is about.
_ASKS = (
    ("what's {}'s phone number", "person"),
    ("where does {} work", "person"),
    ("when is {}", "event"),
    ("how long is {}", "event"),
    ("search my notes for {}", "note"),
    ("open {}", "file"),
    ("what files are in my {} folder", "folder"),
    ("what time is {}", "schedule"),
    ("show me the email about {}", "thread"),
    ("email {} saying hello", "person"),
    ("pause {}", "schedule"),
    ("unsubscribe me from {}", "newsletter"),
    ("mark {} as done", "task"),
    ("what's on my calendar tomorrow", ""),
    ("what time is it in Tokyo", ""),
)


def _words_of(value: Any) -> set[str]:
    return {w.lower() for w in re.findall(r"[A-Za-z]+", json.dumps(value))}


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_leftover_words_never_become_arguments(
    denied_chat: Any, demo_world: tuple[World, Path], data: st.DataObject
) -> None:
    world, _ = demo_world
    template, kind = data.draw(st.sampled_from(_ASKS))
    name = ""
    if kind:
        entity = data.draw(st.sampled_from(world.of(kind)))
        name = entity.names[0] if kind != "person" else entity.key.split()[0]
    filler = data.draw(_filler(world))
    where = data.draw(st.sampled_from(("before", "after", "both")))
    ask = template.format(name)
    words = [*filler] if where != "after" else []
    prompt = " ".join([*words, ask, *(filler if where != "before" else [])])
    for call in _ask(denied_chat, prompt):
        args = {k: v for k, v in (call.arguments or {}).items() if k not in _CONTENT}
        if call.name == "tool.search":
            continue  # asking the tool search is not an argument to a tool of the demo's data
        leaked = _words_of(args) & {w.lower() for w in filler}
        assert not leaked, (prompt, call.name, call.arguments)


_READS = (
    "what's {}'s phone number",
    "where does {} work",
    "show me the email about {}",
    "when is {}",
    "how long is {}",
    "what's in {}",
    "what time is {}",
    "do I have anything with {} this week",
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_a_question_never_gets_a_write(denied_chat: Any, demo_world: tuple[World, Path], data: st.DataObject) -> None:
    world, _ = demo_world
    _, session, _ = denied_chat
    writes = {t.name for t in session.plan.tools if not SideEffect(t.side_effect).is_read}
    template = data.draw(st.sampled_from(_READS))
    entity = data.draw(st.sampled_from([e for e in world.entities if e.kind in _LINKED_KINDS]))
    filler = data.draw(_filler(world))
    prompt = " ".join([*filler[:1], template.format(entity.names[0]), *filler[1:]])
    called = [call.name for call in _ask(denied_chat, prompt)]
    assert not [name for name in called if name in writes], (prompt, called)


_WRITES = {
    "schedule.pause": ("schedule", "schedule_id"),
    "schedule.cancel": ("schedule", "schedule_id"),
    "schedule.resume": ("schedule", "schedule_id"),
    "schedule.update": ("schedule", "schedule_id"),
    "tasks.complete": ("task", "task_id"),
    "email.unsubscribe": ("newsletter", "subscription_id"),
}
_VERBS = {
    "schedule": ("pause {}", "cancel {}", "resume {}", "stop {} for good", "put {} on hold"),
    "task": ("mark {} as done", "tick off {}", "I finished {}"),
    "newsletter": ("unsubscribe me from {}", "stop sending me {}", "get me off {}"),
}


def _named_row(db: Path, tool: str, row_id: str) -> str:
    """The name of the row ``row_id`` is the id of (a schedule's or task's title, a list's name)."""
    table, column = {
        "schedule": ("schedules", "title"),
        "task": ("tasks", "title"),
        "newsletter": ("email_subscriptions", "list_name"),
    }[_WRITES[tool][0]]
    number = int(row_id.rsplit("_", 1)[-1])
    with sqlite3.connect(db) as conn:
        row = conn.execute(f"select {column} from {table} where id = ?", (number,)).fetchone()
    return str(row[0]) if row else ""


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_a_write_targets_only_what_the_request_names(
    denied_chat: Any, demo_world: tuple[World, Path], data: st.DataObject
) -> None:
    world, db = demo_world
    kind = data.draw(st.sampled_from(sorted(_VERBS)))
    template = data.draw(st.sampled_from(_VERBS[kind]))
    named = data.draw(st.booleans())
    filler = data.draw(_filler(world))
    if named:
        entity = data.draw(st.sampled_from(world.of(kind)))
        thing = f"the {entity.names[0]}"
    else:  # a thing of that kind the data does not have
        thing = "the " + " ".join(filler[:2])
    prompt = " ".join([template.format(thing), *filler[2:]])
    said = set(terms(prompt))
    for call in _ask(denied_chat, prompt):
        if call.name not in _WRITES:
            continue
        assert named, (prompt, call.name, call.arguments)
        target = _named_row(db, call.name, str(call.arguments[_WRITES[call.name][1]]))
        assert target and set(terms(target)) & said, (prompt, call.name, call.arguments, target)
        assert entity.key == target or entity.label == target, (prompt, target, entity.label)
