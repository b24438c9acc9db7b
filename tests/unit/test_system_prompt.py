"""A chat's own system prompt (core/chat/prompting.py): where it goes in the system text (beside
the agent's instructions; the calling convention and the index byte-identical with or without
it), config.toml's default for new chats only, and an edit after the first message recorded as
chat.system_prompt with a "system" prefix break on the next request."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core.config import Settings
from core.context.prompt import CHAT_PROMPT_HEADING, assemble_system
from core.engine import ChatOptions, Engine
from core.errors import UsageError
from core.store import Store
from core.tokens import TokenEstimator

INDEX = "<deferred_tools>\nemail.subscriptions: mailing lists\n</deferred_tools>\n"
NOTE = "To use a deferred tool, call tool.call with its exact name and arguments."


def system(chat_prompt: str | None, est: TokenEstimator) -> str:
    return assemble_system(
        instructions="Be useful.",
        agent_name="chat",
        owner="Ada",
        timezone="UTC",
        strategy_note=NOTE,
        index_text=INDEX,
        est=est,
        chat_prompt=chat_prompt,
    )


def test_the_chat_prompt_goes_beside_the_instructions_and_nothing_else_moves() -> None:
    est = TokenEstimator()
    plain, with_prompt = system(None, est), system("Answer in French.\n", est)
    assert system("", est) == plain == system("   ", est)  # no prompt: the same bytes as before there were any
    head, tail = plain.split("\n\nAgent: ", 1)
    head2, tail2 = with_prompt.split("\n\nAgent: ", 1)
    assert tail2 == tail  # the profile, the calling convention and the index: byte-identical
    assert tail.endswith(f"{NOTE}\n\n{INDEX.rstrip()}")
    assert head == "Be useful." and head2 == f"Be useful.\n\n{CHAT_PROMPT_HEADING}\nAnswer in French."


def test_a_long_chat_prompt_is_cut_before_the_agents_instructions_are() -> None:
    est = TokenEstimator()
    long = "\n".join(f"Rule {i}: always say the word number {i} twice." for i in range(2000))
    head = system(long, est).split("\n\nAgent: ", 1)[0]
    assert head.startswith("Be useful.\n\n" + CHAT_PROMPT_HEADING) and "cut to its 2,500-token cap" in head
    assert est.count(head) <= 2_500


@pytest.fixture
def engine(home: Path) -> Engine:
    return Engine(store=Store(home / "deferchat.db"), settings=Settings(system_prompt="Default prompt."), demo_delay=0)


OPTS = ChatOptions(start_demo_servers=False)


def recorded(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


async def test_a_new_chat_takes_the_default_and_an_edit_before_the_first_message_is_free(
    engine: Engine, tmp_path: Path
) -> None:
    record = tmp_path / "requests.jsonl"
    session = await engine.open_chat(None, OPTS, record=str(record))
    try:
        assert session.prompt.text() == "Default prompt." and session.chat().system_prompt == "Default prompt."
        changed = session.prompt.set("Answer in French.")
        assert changed is not None and changed.before_first_message and changed.text == "Answer in French."
        assert session.prompt.set("Answer in French.") is None  # no change, no event
        await session.send("hello")
    finally:
        await session.close()
    store = engine.store
    (event,) = store.events(session.chat_id, ("chat.system_prompt",))
    assert event["before_first_message"] is True
    assert store.events(session.chat_id, ("prefix.break",)) == []
    assert all(f"{CHAT_PROMPT_HEADING}\nAnswer in French." in r["system"] for r in recorded(record))


async def test_an_edit_after_the_first_message_is_recorded_and_breaks_the_next_prefix_once(
    engine: Engine, tmp_path: Path
) -> None:
    record = tmp_path / "requests.jsonl"
    session = await engine.open_chat(None, OPTS, record=str(record))
    try:
        await session.send("hello")
        sent_before = len(recorded(record))
        changed = session.prompt.set("From now on, answer in one line.")
        assert changed is not None and changed.before_first_message is False
        await session.send("and now?")
        await session.send("once more")
    finally:
        await session.close()
    store, chat_id = engine.store, session.chat_id
    (event,) = store.events(chat_id, ("chat.system_prompt",))
    assert event["text"] == "From now on, answer in one line." and event["before_first_message"] is False
    (brk,) = store.events(chat_id, ("prefix.break",))  # once: the request after the edit
    assert brk["cause"] == "system"
    kinds = [e["type"] for e in store.events(chat_id, ("chat.system_prompt", "prefix.break", "usage"))]
    assert kinds.index("chat.system_prompt") < kinds.index("prefix.break")
    requests = recorded(record)
    before, after = requests[sent_before - 1]["system"], requests[sent_before]["system"]
    assert "Default prompt." in before and "answer in one line." in after
    assert before.split("\n\nAgent: ", 1)[1] == after.split("\n\nAgent: ", 1)[1]  # the index did not move
    assert requests[sent_before]["tools"] == requests[0]["tools"]


async def test_a_chat_from_before_chat_prompts_keeps_its_prefix_and_a_prompt_is_capped(engine: Engine) -> None:
    session = await engine.open_chat(None, OPTS)
    try:
        await session.send("hello")
    finally:
        await session.close()
    engine.store.update_chat(session.chat_id, system_prompt=None)  # as migration 0006 leaves an old chat
    again = await engine.open_chat(session.chat_id, ChatOptions())
    try:
        assert again.prompt.text() == "" and again.chat().system_prompt is None  # no default after the fact
        assert CHAT_PROMPT_HEADING not in again.strategy.surface([]).system
        with pytest.raises(UsageError, match="at most"):
            again.prompt.set("x" * 20_001)
    finally:
        await again.close()


def test_ask_system_sets_a_new_chats_prompt_and_with_chat_changes_it(home: Path, capsys) -> None:
    from core.cli import main

    def events(out: str) -> list[dict]:
        return [json.loads(line) for line in out.splitlines()]

    assert main(["ask", "--provider", "demo", "--system", "Answer in French.", "--json", "hello"]) == 0
    first = events(capsys.readouterr().out)
    chat_id = next(e["chat_id"] for e in first if e["type"] == "plan")
    [set_] = [e for e in first if e["type"] == "chat.system_prompt"]
    assert set_["text"] == "Answer in French." and set_["before_first_message"] is True
    assert not [e for e in first if e["type"] == "prefix.break"]
    assert main(["ask", "--chat", chat_id, "--system", "Answer in German.", "--json", "again"]) == 0
    second = events(capsys.readouterr().out)
    [changed] = [e for e in second if e["type"] == "chat.system_prompt"]
    assert changed["before_first_message"] is False
    [brk] = [e for e in second if e["type"] == "prefix.break"]  # the first request after the change
    assert brk["cause"] == "system"
    kinds = [e["type"] for e in second]
    assert kinds.index("chat.system_prompt") < kinds.index("prefix.break") < kinds.index("usage")
    assert Store().chat(chat_id).system_prompt == "Answer in German."
    # the transcript says so in words
    assert main(["ask", "--chat", chat_id, "--system", "", "once more"]) == 0
    err = capsys.readouterr().err
    assert "[system prompt changed: the cached prefix breaks]" in err and "[prefix break (system): " in err
    assert Store().chat(chat_id).system_prompt == ""


async def test_the_system_text_is_assembled_again_only_when_what_it_is_built_from_changed(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    import core.chat.session as session_module

    built: list[str | None] = []

    def counting(**kw):
        built.append(kw["chat_prompt"])
        return assemble_system(**kw)

    monkeypatch.setattr(session_module, "assemble_system", counting)
    session = await engine.open_chat(None, OPTS)
    try:
        first = session.strategy.system
        assert session.strategy.system == first and built == ["Default prompt."]  # the same inputs: kept
        engine.store.update_chat(session.chat_id, system_prompt="Edited elsewhere.")  # another process's edit
        edited = session.strategy.system
        assert f"{CHAT_PROMPT_HEADING}\nEdited elsewhere." in edited
        assert built == ["Default prompt.", "Edited elsewhere."]
        engine.store.update_chat(session.chat_id, system_prompt="Default prompt.")
        assert session.strategy.system == first  # the same bytes as before the edit
    finally:
        await session.close()
