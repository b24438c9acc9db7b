"""``deferchat ask --chat ID --provider P --model M`` continues a chat on another provider; the
next answer streams from it (the loopback server), and the chat row records the switch."""

from __future__ import annotations

import json

from core.cli import main
from core.store import Store
from tests import api_rules
from tests.streaming_server import StreamingServer


def chat_of(out: str) -> str:
    return next(e["chat_id"] for e in map(json.loads, out.splitlines()) if e["type"] == "plan")


def test_ask_with_chat_and_provider_continues_the_chat_elsewhere(home, capsys):
    assert main(["ask", "--provider", "demo", "--json", "hello"]) == 0
    chat_id = chat_of(capsys.readouterr().out)
    with StreamingServer([{"parts": [{"text": "Answered by the compatible endpoint."}]}]) as server:
        argv = ["ask", "--chat", chat_id, "--provider", "openai-chat", "--model", "local-model"]
        code = main([*argv, "--base-url", server.url_for("openai-chat"), "--json", "and now?"])
        assert code == 0
        events = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
        [switched] = [e for e in events if e["type"] == "provider.switched"]
        assert (switched["from_provider"], switched["provider"], switched["model"]) == (
            "demo",
            "openai-chat",
            "local-model",
        )
        assert switched["strategy"] == "active-tools" and switched["cause"] == "owner"
        assert [e["text"] for e in events if e["type"] == "model.text"] == ["Answered by the compatible endpoint."]
        [request] = server.requests
        assert request["wire"] == "openai-chat" and api_rules.check("openai-chat", request["body"]) == []
    row = Store().chat(chat_id)
    assert row is not None and (row.provider, row.model, row.strategy) == ("openai-chat", "local-model", "active-tools")


def test_fallback_flags_are_kept_with_a_new_chat(home, capsys):
    assert main(["ask", "--provider", "demo", "--fallback", "openai:gpt-5.4", "--json", "hello"]) == 0
    chat_id = chat_of(capsys.readouterr().out)
    row = Store().chat(chat_id)
    assert row is not None and row.sources_dict()["fallback"] == ["openai:gpt-5.4"]
