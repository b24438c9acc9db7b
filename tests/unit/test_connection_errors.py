"""Each connection or protocol failure is one line that says what happened where: the URL the
request went to (never its userinfo), where that base URL came from (--base-url, OPENAI_BASE_URL,
config.toml, the default), the HTTP status and the server's own message; a Responses request a
server cannot take (404, 405, a web page, a closed connection) gets the hint to use openai-chat;
a 401 says which key was sent, by its source, never its value. Against real loopback servers
(tests/streaming_server.py), through the provider factory a chat uses."""

from __future__ import annotations

import datetime
import ipaddress
import json
import socket
import ssl
from pathlib import Path

import pytest

from core.cli.entry import main as cli_main
from core.config import load_settings
from core.providers._common import SdkAdapter
from core.providers.base import ModelRequest, ProviderError
from core.providers.factory import default_provider_factory
from tests.streaming_server import serve

KEY = "sk-test-CONNECTIONSECRET-9876"
OK = {"parts": [{"text": "hello"}]}
REQUEST = ModelRequest(model="m", system="s", messages=[{"role": "user", "content": [{"type": "text", "text": "hi"}]}])


@pytest.fixture(autouse=True)
def quick_retries(monkeypatch):
    """The adapter still retries a connection failure twice, without the SDK's half-second backoff."""
    monkeypatch.setattr(SdkAdapter, "_backoff", lambda self, attempt: 0.01)


async def failure(provider: str, model: str, base_url: str | None, *, flag: bool = True) -> ProviderError:
    """The error of one request on ``provider`` built by the default factory, as a chat builds it
    (``flag``: the base URL came from ``--base-url``)."""
    make = default_provider_factory(load_settings())
    adapter = make(provider, model, base_url, {"flag_base_url": base_url if flag else None})
    with pytest.raises(ProviderError) as err:
        async for _ in adapter.stream(REQUEST.model_copy(update={"model": model})):
            pass
    message = err.value.message
    assert "\n" not in message and KEY not in message
    return err.value


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def test_refused(home):
    url = f"http://127.0.0.1:{free_port()}/v1"
    err = await failure("openai-chat", "m", url)
    assert err.code == "provider.connection"
    assert f"POST {url}/chat/completions, base URL from --base-url" in err.message
    assert "connection refused" in err.message


async def test_a_base_urls_password_is_never_shown(home):
    port = free_port()
    err = await failure("openai-chat", "m", f"http://alice:pa55word@127.0.0.1:{port}/v1?key=abc")
    assert "pa55word" not in err.message and "alice" not in err.message and "key=abc" not in err.message
    assert f"http://127.0.0.1:{port}/v1" in err.message


@pytest.mark.parametrize("how", ["404", "405", "html", "close"])
async def test_a_responses_request_to_a_chat_completions_server(home, monkeypatch, how):
    """The issue's case: OPENAI_BASE_URL pointing at a local Chat Completions server and the
    Responses provider; the server was reached, and the error says so, where, and what to use."""
    with serve({"responses": [OK], "repeat": True, "unsupported": {"openai": how}}) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.url_for("openai"))
        err = await failure("openai", "gpt-4.1", None)
        assert {r["wire"] for r in server.requests} == {"openai"}  # it was reached
    where = f"POST {server.url_for('openai')}/responses, base URL from OPENAI_BASE_URL"
    assert where in err.message
    assert "use --provider openai-chat" in err.message
    expected = {
        "404": ("provider.not_found", "HTTP 404", "Server message: Not Found."),
        "405": ("provider.bad_request", "HTTP 405", "Server message: Method Not Allowed."),
        "html": ("provider.not_an_api", "HTTP 200", "an HTML page ('Model server')"),
        "close": ("provider.connection", "closed the connection without answering", ""),
    }[how]
    assert err.code == expected[0] and expected[1] in err.message and expected[2] in err.message


@pytest.mark.parametrize("wire", ["openai-chat", "anthropic"])
async def test_html_instead_of_json(home, wire):
    with serve({"responses": [OK], "unsupported": {wire: "html"}}) as server:
        model = "claude-sonnet-4-6" if wire == "anthropic" else "m"
        err = await failure(wire, model, server.url_for(wire))
    assert err.code == "provider.not_an_api" and err.status == 200
    assert "an HTML page ('Model server'), HTTP 200, not the API's JSON" in err.message
    assert "base URL from --base-url" in err.message and "openai-chat" not in err.message.split("JSON")[1]


@pytest.mark.parametrize("wire", ["openai-chat", "openai", "anthropic"])
async def test_404_names_the_url_and_the_servers_message(home, wire):
    with serve({"responses": [{"status": 404}]}) as server:
        model = "claude-sonnet-4-6" if wire == "anthropic" else "m"
        err = await failure(wire, model, server.url_for(wire))
    assert err.code == "provider.not_found" and err.status == 404
    assert "(HTTP 404)" in err.message and "Server message: streaming_server: scripted HTTP 404." in err.message
    path = {"openai-chat": "/v1/chat/completions", "openai": "/v1/responses", "anthropic": "/v1/messages"}[wire]
    assert f"POST {server.base_url}{path}, base URL from --base-url" in err.message


@pytest.mark.parametrize(
    "wire,env,config,sent",
    [
        ("openai-chat", {"OPENAI_API_KEY": KEY}, "", "deferchat sent the key from OPENAI_API_KEY"),
        ("anthropic", {"ANTHROPIC_API_KEY": KEY}, "", "deferchat sent the key from ANTHROPIC_API_KEY"),
        ("openai", {}, f'[keys]\nopenai = "{KEY}"', "deferchat sent the key from [keys] openai in "),
        ("openai-chat", {}, "", "deferchat sent no key (none is set: OPENAI_API_KEY or [keys] openai)"),
    ],
)
async def test_401_says_which_key_was_sent_never_its_value(home, monkeypatch, wire, env, config, sent):
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    if config:
        (home / "config.toml").write_text(config + "\n")
    with serve({"responses": [OK], "api_key": "sk-the-right-one-0000"}) as server:
        model = "claude-sonnet-4-6" if wire == "anthropic" else "gpt-4.1"
        err = await failure(wire, model, server.url_for(wire))
    assert err.code == "provider.auth" and err.status == 401
    assert sent in err.message and KEY not in err.message and KEY[-4:] not in err.message
    assert "base URL from --base-url" in err.message and "Server message:" in err.message


async def test_plain_http_behind_an_https_url(home):
    """A real TLS error: the loopback server speaks plain HTTP, the URL says https."""
    with serve({"responses": [OK]}) as server:
        url = server.url_for("openai-chat").replace("http://", "https://")
        err = await failure("openai-chat", "m", url)
    assert err.code == "provider.connection"
    assert err.message.startswith(f"TLS failed with OpenAI-compatible server 127.0.0.1:{server.port} (POST {url}")
    assert "did not answer in TLS" in err.message and "use an http:// URL" in err.message


def _self_signed(folder: Path) -> ssl.SSLContext:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False)
        .sign(key, hashes.SHA256())
    )
    (folder / "cert.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    (folder / "key.pem").write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(folder / "cert.pem", folder / "key.pem")
    return context


async def test_an_untrusted_certificate(home, tmp_path):
    with serve({"responses": [OK]}, tls=_self_signed(tmp_path)) as server:
        assert server.base_url.startswith("https://")
        err = await failure("openai-chat", "m", server.url_for("openai-chat"))
        assert server.requests == []  # TLS failed before any request
    assert err.code == "provider.connection"
    assert f"TLS failed with OpenAI-compatible server 127.0.0.1:{server.port}" in err.message
    assert "its certificate is not trusted (self-signed certificate)" in err.message


async def test_closed_in_the_middle_of_the_answer(home):
    with serve({"responses": [{"parts": [{"text": "one two three four"}], "cut_after_chunks": 2}]}) as server:
        err = await failure("openai-chat", "m", server.url_for("openai-chat"))
    assert err.code == "provider.connection"
    assert "closed the connection in the middle of its answer" in err.message and "base URL from" in err.message


# --- where the base URL came from, as `deferchat ask` prints it ---------------------------------------------


def error_messages(out: str) -> list[str]:
    events = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    found = [e["message"] for e in events if e.get("type") == "error"]
    assert found, out
    return found


@pytest.mark.parametrize("source", ["flag", "env", "config"])
def test_ask_prints_one_line_naming_the_url_and_its_source(home, monkeypatch, capsys, source):
    with serve({"responses": [OK], "repeat": True, "unsupported": {"openai": "405"}}) as server:
        url = server.url_for("openai")
        args = ["ask", "hi", "--provider", "openai", "--model", "gpt-4.1", "--json"]
        if source == "flag":
            args += ["--base-url", url]
        elif source == "env":
            monkeypatch.setenv("OPENAI_BASE_URL", url)
        else:
            (home / "config.toml").write_text(f'provider = "openai"\nbase_url = "{url}"\n')
        assert cli_main(args) == 1
    errors = error_messages(capsys.readouterr().out)
    phrase = {
        "flag": "base URL from --base-url",
        "env": "base URL from OPENAI_BASE_URL",
        "config": f"base URL from base_url in {home / 'config.toml'}",
    }[source]
    assert f"POST {url}/responses, {phrase}" in errors[0] and "use --provider openai-chat" in errors[0]


def test_a_reopened_chat_names_its_own_base_url(home, capsys):
    """A chat opened with --base-url and continued without it: the URL is the chat's own."""
    with serve({"responses": [OK, {"status": 500}]}) as server:
        url = server.url_for("openai-chat")
        assert cli_main(["ask", "hi", "--provider", "openai-chat", "--model", "m", "--base-url", url]) == 0
        chat = capsys.readouterr().err.strip().splitlines()[-1].strip("[]").split()[-1]
        assert cli_main(["ask", "again", "--chat", chat, "--json"]) == 1
    errors = error_messages(capsys.readouterr().out)
    assert "the chat's own base URL" in errors[0] and "HTTP 500" in errors[0]
