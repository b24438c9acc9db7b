"""`deferchat ask` end to end against recorded real provider traffic served on 127.0.0.1.

Each test runs the real CLI (``core.cli.main``, in-process; one test runs the installed
script in a subprocess) with ``--provider X --base-url http://127.0.0.1:PORT``. A
:class:`ReplayServer` serves the recorded responses in order and keeps every request body the
SDK sent, so the tests check both sides: the events deferchat prints, and what it sent on
each request, compared with what the recording's own client sent where the recording has it
(the pydantic-ai cassettes).

The tools of the pydantic-ai cassettes are served by a small MCP server
(``tests/mcp_servers/fx.py``) as ``mcp.fx.<tool>``; the recordings are renamed to the wire
forms of those names (``get_exchange_rate`` -> ``mcp__fx__get_exchange_rate``) with the
rename helpers of ``tests/provider_replay.py``. The vercel recordings' tools are roster tools
with no implementation: their calls fail with a clear error and the turn carries on.
"""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from core.cli import main
from core.providers.wirenames import encode
from tests.helpers import subprocess_env
from tests.mcp_servers.fx import TOOLS as FX_TOOLS
from tests.provider_replay import Recording, chunk_lines, rename, rename_lines, rename_sse_text, split_sessions, sse
from tests.replay_server import ReplayServer

ROOT = Path(__file__).resolve().parents[2]
SSE = "text/event-stream"
JSON = "application/json"
FX = {t["name"]: f"mcp.fx.{t['name']}" for t in FX_TOOLS}  # recorded name -> internal name
SECRET = "sk-ant-test-SECRET"


# --- set-up ---------------------------------------------------------------------------------------


@pytest.fixture
def home(home, monkeypatch):
    """The shared isolated home (tests/conftest.py) is ``home / "home"`` here: this file's tests
    work in its parent, where they write their rosters, configs and scripts."""
    monkeypatch.chdir(home.parent)
    return home.parent


def write_config(home: Path, **settings: Any) -> None:
    lines = [f"{k} = {json.dumps(v)}" for k, v in settings.items()]
    (home / "home").mkdir(exist_ok=True)
    (home / "home" / "config.toml").write_text("\n".join(lines) + "\n")


def fx_roster(home: Path, *, deferred: tuple[str, ...], defined: tuple[str, ...] = ()) -> list[str]:
    """Roster + MCP config: the fx server's tools, ``deferred`` ones deferred. Returns CLI options."""
    tools = [
        dict(t, annotations={"read_only_hint": True, "open_world_hint": True})
        for t in FX_TOOLS
        if t["name"] in deferred + defined
    ]
    (home / "roster.json").write_text(
        json.dumps(
            {
                "agent": {"name": "fx", "version": "1", "deferred": [FX[n] for n in deferred]},
                "configured": [],
                "servers": [{"name": "fx", "tools": tools}],
            }
        )
    )
    (home / "mcp.json").write_text(
        json.dumps(
            {
                "mcpServers": {
                    "fx": {
                        "command": sys.executable,
                        "args": ["-m", "tests.mcp_servers.fx"],
                        "env": {"PYTHONPATH": str(ROOT), "FX_TOOLS": ",".join(deferred + defined)},
                    }
                }
            }
        )
    )
    return ["--roster", str(home / "roster.json"), "--mcp-config", str(home / "mcp.json")]


def notes_roster(home: Path) -> list[str]:
    """The vercel recordings' tools as roster tools with no implementation here."""
    (home / "notes.json").write_text(
        json.dumps(
            {
                "agent": {"name": "notes", "version": "1", "deferred": ["editor.execute_operation"]},
                "configured": [
                    {
                        "name": "notes.read_tree",
                        "description": "Read the tree of blocks of a note.",
                        "side_effect": "NONE",
                        "input_schema": {
                            "type": "object",
                            "properties": {"noteId": {"type": "string"}},
                            "required": ["noteId"],
                        },
                    },
                    {
                        "name": "editor.execute_operation",
                        "description": "Insert, update or delete blocks of a note.",
                        "side_effect": "WORKSPACE_WRITE",
                        "input_schema": {
                            "type": "object",
                            "properties": {"noteId": {"type": "string"}, "operations": {"type": "array"}},
                            "required": ["noteId", "operations"],
                        },
                    },
                ],
            }
        )
    )
    return ["--roster", str(home / "notes.json")]


NOTES = {"readNoteTree": encode("notes.read_tree"), "executeEditorOperation": encode("editor.execute_operation")}


def ask(capsys, prompt: str, *argv: str) -> tuple[int, list[dict[str, Any]]]:
    code = main(["ask", prompt, *argv, "--approve", "yes", "--json"])
    captured = capsys.readouterr()
    return code, [json.loads(line) for line in captured.out.splitlines()]


def of(events: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [e for e in events if e["type"] == kind]


def cassette_replies(rec: Recording) -> list[tuple[int, str, bytes]]:
    """A cassette's responses, renamed, as the replay server serves them."""
    out = []
    for interaction in rec.interactions:
        response = interaction["response"]
        if "parsed_body" in response:
            out.append(
                (response["status"]["code"], JSON, json.dumps(rename(response["parsed_body"], rec.to_wire)).encode())
            )
        else:
            out.append(
                (response["status"]["code"], SSE, rename_sse_text(response["body"]["string"], rec.to_wire).encode())
            )
    return out


def vercel_replies(name: str, renames: dict[str, str]) -> list[tuple[int, str, bytes]]:
    return [(200, SSE, sse(rename_lines(s, renames))) for s in split_sessions(chunk_lines(name), "message_stop")]


def without(obj: Any, *keys: str) -> Any:
    """``obj`` with every ``keys`` entry removed at any depth (cache_control, strict...)."""
    if isinstance(obj, dict):
        return {k: without(v, *keys) for k, v in obj.items() if k not in keys}
    if isinstance(obj, list):
        return [without(v, *keys) for v in obj]
    return obj


def by_name(tools: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {t.get("name") or t.get("function", {}).get("name") or t["type"]: t for t in tools}


def assert_tools_constant(bodies: list[dict[str, Any]]) -> None:
    first = json.dumps(bodies[0]["tools"])
    for body in bodies[1:]:
        assert json.dumps(body["tools"]) == first, "the tools array changed between requests"


# --- Anthropic native ---------------------------------------------------------------------------


def test_anthropic_native_search_end_to_end_and_across_two_turns(home, capsys):
    """The pydantic-ai cassette: server BM25 search, its result and the deferred tool's call in
    one response; the tool runs on a real MCP server; then a second turn in the same chat."""
    rec = Recording("test_anthropic_native_tool_search_streaming.yaml", FX)
    prompt = rec.requests[0]["messages"][0]["content"][0]["text"]
    opts = fx_roster(home, deferred=("get_exchange_rate", "stock_lookup"))
    replies = cassette_replies(rec)
    with ReplayServer([*replies, replies[-1]]) as server:
        common = ["--provider", "anthropic", "--model", "claude-sonnet-4-6", "--base-url", server.url]
        code, events = ask(capsys, prompt, *common, "--strategy", "anthropic", *opts)
        assert code == 0, events
        chat_id = of(events, "plan")[0]["chat_id"]
        code2, events2 = ask(capsys, "And in a minute?", "--chat", chat_id, *opts)
    assert code2 == 0, events2
    plan = of(events, "plan")[0]
    assert plan["strategy"] == "anthropic" and "explicitly" in plan["strategy_reason"]
    assert plan["deferred_tool_names"] == ["mcp.fx.get_exchange_rate", "mcp.fx.stock_lookup"]
    searches = of(events, "model.tool_search")
    assert [(s["executor"], s["query"], s["references"]) for s in searches] == [
        ("server", "USD EUR exchange rate currency conversion", []),
        ("server", "USD EUR exchange rate currency conversion", ["mcp.fx.get_exchange_rate"]),
    ]
    [requested] = of(events, "tool.requested")
    [completed] = of(events, "tool.completed")
    assert requested["name"] == completed["name"] == "mcp.fx.get_exchange_rate"
    assert requested["call_id"] == "toolu_01EFn5wTNBYA8Reni8rbmnHT" and requested["via"] is None
    assert "1 USD = 0.92 EUR" in json.dumps(completed["result"])
    assert of(events, "turn.completed")[0]["status"] == "done"

    sent = [r["body"] for r in server.requests]
    assert [r["path"] for r in server.requests] == ["/v1/messages"] * 3
    # What a correct client sent (the cassette), and what deferchat sent, are the same tools:
    # every deferred tool declared with defer_loading, and the BM25 search tool injected.
    assert without(sent[0]["tools"], "cache_control") == rec.requests[0]["tools"]
    assert sent[0]["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": prompt, "cache_control": {"type": "ephemeral"}}]}
    ]
    # The next request echoes the whole assistant turn: server_tool_use, its result, the call.
    assert without(sent[1]["messages"][1], "cache_control") == rec.requests[1]["messages"][1]
    [answer] = sent[1]["messages"][2]["content"]
    assert answer["tool_use_id"] == "toolu_01EFn5wTNBYA8Reni8rbmnHT" and "1 USD = 0.92 EUR" in answer["content"]
    assert "is_error" not in answer
    # The second turn reuses the pinned plan: same tools, same system prefix, history echoed.
    assert of(events2, "plan")[0]["pinned"] is True
    assert_tools_constant(sent)
    assert sent[2]["system"] == sent[0]["system"]
    assert without(sent[2]["messages"][:3], "cache_control") == without(sent[1]["messages"], "cache_control")


@pytest.mark.parametrize("flavour", ["bm25", "regex"])
def test_anthropic_deferred_search_result_through_auto_and_a_declared_gateway(home, capsys, flavour):
    """The vercel deferred recording: a client tool_use and a server_tool_use in one response,
    the search result opening the next one. ``auto`` resolves to anthropic because the base
    URL is a gateway declared in config.toml; the search flavour comes from config.toml."""
    replies = vercel_replies(f"anthropic-tool-search-deferred-{flavour}.chunks.txt", NOTES)
    assert len(replies) == 3
    with ReplayServer(replies) as server:
        write_config(home, anthropic_gateways=[server.url], anthropic_tool_search=flavour)
        code, events = ask(
            capsys,
            "Add a bullet 'bye' after 'hi' in my note.",
            "--provider",
            "anthropic",
            "--model",
            "claude-sonnet-4-6",
            "--base-url",
            server.url,
            "--strategy",
            "auto",
            *notes_roster(home),
        )
    assert code == 0, events
    plan = of(events, "plan")[0]
    assert plan["strategy"] == "anthropic"
    assert "declared gateway" in plan["strategy_reason"] and server.url in plan["strategy_reason"]
    sent = [r["body"] for r in server.requests]
    assert len(sent) == 3

    # tools: the deferred tool declared with defer_loading, the flavour's search tool injected
    tools = by_name(sent[0]["tools"])
    assert tools["editor__execute_operation"]["defer_loading"] is True
    assert "defer_loading" not in tools["notes__read_tree"]
    assert sent[0]["tools"][-1]["type"] == f"tool_search_tool_{flavour}_20251119"
    assert_tools_constant(sent)

    # response 1: a client call and a server search; the search's result opens response 2
    searches = of(events, "model.tool_search")
    assert searches[0]["references"] == [] and "editor.execute_operation" in searches[1]["references"]
    assert searches[0]["id"] == searches[1]["id"] and searches[1]["query"] == searches[0]["query"] != ""
    first_call, second_call = of(events, "tool.requested")
    assert first_call["name"] == "notes.read_tree" and second_call["name"] == "editor.execute_operation"
    failed = of(events, "tool.failed")
    assert [f["name"] for f in failed] == ["notes.read_tree", "editor.execute_operation"]
    assert all("no implementation" in f["message"] for f in failed)

    # request 2 echoes the server block without a result, and answers the client call
    echo = sent[1]["messages"][1]["content"]
    assert [b["type"] for b in echo] == ["text", "tool_use", "server_tool_use"]
    assert echo[1]["name"] == "notes__read_tree" and echo[2]["id"] == searches[0]["id"]
    [result] = sent[1]["messages"][2]["content"]
    assert result["tool_use_id"] == echo[1]["id"] == first_call["call_id"] and result["is_error"] is True
    # request 3 echoes the result that opened response 2, references in wire form
    echo2 = sent[2]["messages"][3]["content"]
    assert echo2[0]["type"] == "tool_search_tool_result" and echo2[0]["tool_use_id"] == searches[0]["id"]
    assert echo2[0]["content"]["tool_references"] == [
        {"type": "tool_reference", "tool_name": encode(n)} for n in searches[1]["references"]
    ]
    assert echo2[-1]["type"] == "tool_use" and echo2[-1]["name"] == "editor__execute_operation"
    assert sent[2]["messages"][4]["content"][0]["tool_use_id"] == second_call["call_id"]
    assert of(events, "turn.completed")[0]["status"] == "done"


# --- OpenAI native (Responses) ------------------------------------------------------------------


def test_openai_hosted_search_end_to_end(home, capsys):
    rec = Recording("test_openai_native_tool_search_streaming.yaml", FX)
    prompt = rec.requests[0]["input"][0]["content"]
    opts = fx_roster(home, deferred=("get_exchange_rate", "stock_lookup"))
    with ReplayServer(cassette_replies(rec)) as server:
        code, events = ask(
            capsys,
            prompt,
            "--provider",
            "openai",
            "--model",
            "gpt-5.4",
            "--base-url",
            server.url + "/v1",
            "--strategy",
            "openai",
            *opts,
        )
    assert code == 0, events
    assert of(events, "plan")[0]["strategy"] == "openai"
    sent = [r["body"] for r in server.requests]
    assert [r["path"] for r in server.requests] == ["/v1/responses"] * 2
    # the recorded client's tools (it adds strict) and ours, search tool included
    assert by_name(sent[0]["tools"]) == without(by_name(rec.requests[0]["tools"]), "strict")
    assert_tools_constant(sent)
    searches = of(events, "model.tool_search")
    assert searches[-1]["references"] == ["mcp.fx.get_exchange_rate"] and searches[-1]["executor"] == "server"
    [completed] = of(events, "tool.completed")
    assert completed["name"] == "mcp.fx.get_exchange_rate" and completed["call_id"] == "call_CeXueyTqEJ1rgm84BHSwNPz8"
    # request 2 echoes the hosted search items verbatim, the call exactly as the recorded client did
    items = sent[1]["input"]
    assert [i.get("type", "message") for i in items] == [
        "message",
        "tool_search_call",
        "tool_search_output",
        "function_call",
        "function_call_output",
    ]
    assert items[3] == rec.requests[1]["input"][2]
    assert items[4]["call_id"] == "call_CeXueyTqEJ1rgm84BHSwNPz8" and "1 USD = 0.92 EUR" in items[4]["output"]
    assert of(events, "model.text")[-1]["text"] == "1 USD = 0.92 EUR"


def test_openai_client_executed_search_end_to_end(home, capsys):
    """``openai_tool_search = "client"``: the model's tool_search_call is answered by our own
    index with a tool_search_output holding the found tools' definitions, exactly what the
    recording's client sent."""
    write_config(home, openai_tool_search="client")
    rec = Recording("test_openai_client_tool_search_streaming.yaml", FX)
    prompt = rec.requests[0]["input"][0]["content"]
    opts = fx_roster(home, deferred=("get_exchange_rate", "stock_lookup"), defined=("get_weather",))
    with ReplayServer(cassette_replies(rec)) as server:
        code, events = ask(
            capsys,
            prompt,
            "--provider",
            "openai",
            "--model",
            "gpt-5.4",
            "--base-url",
            server.url + "/v1",
            "--strategy",
            "openai",
            *opts,
        )
    assert code == 0, events
    sent = [r["body"] for r in server.requests]
    assert len(sent) == 3
    ours, theirs = by_name(sent[0]["tools"]), without(by_name(rec.requests[0]["tools"]), "strict")
    assert {k: v for k, v in ours.items() if k != "tool_search"} == {
        k: v for k, v in theirs.items() if k != "tool_search"
    }
    search_tool = ours["tool_search"]
    assert search_tool["execution"] == "client" and set(search_tool) == set(theirs["tool_search"])
    assert search_tool["parameters"]["properties"]["queries"]["items"] == {"type": "string"}
    assert_tools_constant(sent)

    [asked, answered] = of(events, "model.tool_search")
    assert asked["executor"] == answered["executor"] == "client" and asked["id"] == answered["id"]
    assert answered["query"] == (
        "exchange rate currency converter USD EUR current | foreign exchange USD to EUR live rate"
    )
    assert answered["references"] == ["mcp.fx.get_exchange_rate"]
    # the search call echoed and answered exactly as the recorded client did
    assert sent[1]["input"][1:] == without(rec.requests[1]["input"][1:], "strict")
    [completed] = of(events, "tool.completed")
    assert completed["name"] == "mcp.fx.get_exchange_rate"
    assert [i.get("type") for i in sent[2]["input"][3:]] == ["function_call", "function_call_output"]
    assert sent[2]["input"][3] == rec.requests[2]["input"][3]
    assert of(events, "turn.completed")[0]["status"] == "done"


# --- active-tools on an OpenAI-compatible endpoint (Chat Completions) ---------------------------


def chat_sse(completion: dict[str, Any]) -> bytes:
    """A recorded (non-streamed) chat.completion as the chunks a streaming server sends."""
    choice = completion["choices"][0]
    message = choice["message"]
    delta: dict[str, Any] = {"role": "assistant", "content": message.get("content")}
    if message.get("tool_calls"):
        delta["tool_calls"] = [{"index": i, **call} for i, call in enumerate(message["tool_calls"])]
    base = {
        "id": completion["id"],
        "object": "chat.completion.chunk",
        "created": completion["created"],
        "model": completion["model"],
    }
    chunks = [
        {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
        {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": choice["finish_reason"]}]},
        {**base, "choices": [], "usage": completion["usage"]},
    ]
    return ("".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n").encode()


def our_search_arguments(completion: dict[str, Any]) -> dict[str, Any]:
    """The recording's client had ``search_tools(queries: [...])``; our ``tool.search`` takes
    ``query``: the one recorded query is passed as ours (arguments only; nothing else changes)."""
    out = copy.deepcopy(completion)
    for call in out["choices"][0]["message"].get("tool_calls") or []:
        if call["function"]["name"] == encode("tool.search"):
            [query] = json.loads(call["function"]["arguments"])["queries"]
            call["function"]["arguments"] = json.dumps({"query": query})
    return out


def test_active_tools_on_an_openai_compatible_endpoint(home, capsys):
    rec = Recording("test_tool_search_eval[openai-chat].yaml", {**FX, "search_tools": "tool.search"})
    prompt = rec.requests[0]["messages"][0]["content"]
    opts = fx_roster(home, deferred=("get_exchange_rate", "stock_lookup"), defined=("get_weather",))
    replies = [(200, SSE, chat_sse(our_search_arguments(r))) for r in rec.responses[:3]]
    with ReplayServer(replies) as server:
        code, events = ask(
            capsys,
            prompt,
            "--provider",
            "openai-chat",
            "--model",
            "gpt-5.4-mini",
            "--base-url",
            server.url + "/v1",
            "--strategy",
            "auto",
            *opts,
        )
    assert code == 0, events
    plan = of(events, "plan")[0]
    assert plan["strategy"] == "active-tools" and "Chat Completions" in plan["strategy_reason"]
    sent = [r["body"] for r in server.requests]
    assert [r["path"] for r in server.requests] == ["/v1/chat/completions"] * 3
    wire = {n: encode(n) for n in ("tool.search", *FX.values())}
    # step 1: the base tools only, as the recorded client had them (its search tool is ours here)
    assert (
        set(by_name(sent[0]["tools"]))
        == set(by_name(rec.requests[0]["tools"]))
        == {wire["tool.search"], wire["mcp.fx.get_weather"]}
    )
    # the search found the tool; step 2's array adds it, defined exactly as the recorded client defined it
    [search] = of(events, "model.tool_search")
    assert search["executor"] == "client" and search["references"][0] == "mcp.fx.get_exchange_rate"
    assert of(events, "tool.discovered")[0]["names"][0] == "mcp.fx.get_exchange_rate"
    step2 = by_name(sent[1]["tools"])
    assert wire["mcp.fx.get_exchange_rate"] in step2 and wire["mcp.fx.stock_lookup"] not in step2
    recorded = by_name(rec.requests[1]["tools"])[wire["mcp.fx.get_exchange_rate"]]
    assert step2[wire["mcp.fx.get_exchange_rate"]] == without(recorded, "strict")
    assert sent[2]["tools"] == sent[1]["tools"]  # the pool only grows; nothing new was found
    # history: every call answered under its id, in order, and every called tool declared
    messages = sent[2]["messages"]
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "tool", "assistant", "tool"]
    assert messages[3]["tool_call_id"] == messages[2]["tool_calls"][0]["id"] == "call_HXEEsG0rVIvymWmAHG4fgIwp"
    assert "mcp.fx.get_exchange_rate" in messages[3]["content"]
    assert messages[4]["tool_calls"][0]["function"]["name"] == wire["mcp.fx.get_exchange_rate"]
    assert messages[5]["tool_call_id"] == messages[4]["tool_calls"][0]["id"] and "0.92" in messages[5]["content"]
    declared = set(by_name(sent[2]["tools"]))
    assert all(c["function"]["name"] in declared for m in messages for c in m.get("tool_calls") or [])
    assert [e["name"] for e in of(events, "tool.completed")] == ["tool.search", "mcp.fx.get_exchange_rate"]
    assert of(events, "model.text")[-1]["text"] == "The current exchange rate is **1 USD = 0.92 EUR**."


# --- plan --strategy auto -----------------------------------------------------------------------


def test_plan_shows_the_resolved_strategy_and_its_reason(home, capsys):
    write_config(home, anthropic_gateways=["http://127.0.0.1:9"])
    cases = [
        ("anthropic", "http://127.0.0.1:9", "anthropic", "declared gateway"),
        ("anthropic", "https://api.deepseek.com/anthropic", "active-tools", "DeepSeek"),
        ("openai", "https://api.openai.com/v1", "openai", "Responses API"),
        ("openai-chat", "http://127.0.0.1:11434/v1", "active-tools", "Chat Completions"),
    ]
    for provider, base_url, strategy, why in cases:
        assert (
            main(
                [
                    "plan",
                    "--strategy",
                    "auto",
                    "--provider",
                    provider,
                    "--base-url",
                    base_url,
                    "--model",
                    "claude-sonnet-4-5" if provider == "anthropic" else "gpt-5.4",
                    "--json",
                ]
            )
            == 0
        )
        plan = json.loads(capsys.readouterr().out)
        assert (plan["strategy"], why in plan["strategy_reason"]) == (strategy, True), plan["strategy_reason"]


# --- keys stay out of the store and the output ---------------------------------------------------


def test_the_api_key_reaches_the_provider_and_nowhere_else(home):
    """The real script in a subprocess with ANTHROPIC_API_KEY set: the key is sent to the
    (loopback) provider, and appears in no file under DEFERCHAT_HOME and in no output."""
    env = subprocess_env(home / "home", ANTHROPIC_API_KEY=SECRET)
    with ReplayServer(vercel_replies("anthropic-tool-search-deferred-bm25.chunks.txt", NOTES)) as server:
        write_config(home, anthropic_gateways=[server.url])
        r = subprocess.run(
            [
                sys.executable,
                "-c",
                "import sys; from tui.main import main; sys.exit(main())",
                "ask",
                "Add a bullet 'bye' after 'hi'.",
                "--provider",
                "anthropic",
                "--model",
                "claude-sonnet-4-6",
                "--base-url",
                server.url,
                "--strategy",
                "auto",
                *notes_roster(home),
                "--approve",
                "yes",
                "--json",
            ],
            capture_output=True,
            text=True,
            env=env,
            cwd=home,
            timeout=120,
        )
    assert r.returncode == 0, r.stderr
    assert len(server.requests) == 3 and all(SECRET in " ".join(req["headers"].values()) for req in server.requests)
    events = [json.loads(line) for line in r.stdout.splitlines()]
    assert of(events, "turn.completed")[0]["status"] == "done"
    assert SECRET not in r.stdout and SECRET not in r.stderr
    files = [p for p in (home / "home").rglob("*") if p.is_file()]
    assert any(p.name == "deferchat.db" for p in files)
    for p in files:  # the database, its WAL and every other file deferchat wrote
        assert SECRET.encode() not in p.read_bytes(), f"the key leaked into {p}"
