"""Secrets in every spelling: one redaction (``core.redaction``) for every message, row and event.

A secret is found however it travels: as written, percent-encoded the way httpx, urllib and the
SDKs encode it (either hex case, ``+`` for a space, twice), in a URL's userinfo, as a query
token, in the shape of a key nobody registered. A text that is cut is redacted before the cut,
and a cut that ends inside a token takes the piece out. A base URL is stored and shown without
its credential; a provider never follows a redirect to another origin.
"""

from __future__ import annotations

import json
import re
from urllib.parse import quote, quote_plus

import httpx
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from core.mcp.logs import StderrLog
from core.redaction import (
    REDACTED,
    clip,
    redact,
    remember_url,
    restore_url,
    url_host,
    userinfo_secrets,
    without_userinfo,
)

# Secrets are drawn from characters the surrounding text never uses (lower-case words and
# spaces), so any run of four of them in the output can only have come from the secret.
SECRET_CHARS = "ABCDEFGHJKLMNPQRSTUVWXYZ0123456789"
SECRET = st.text(alphabet=SECRET_CHARS, min_size=8, max_size=40)
PUNCTUATED = st.text(alphabet=SECRET_CHARS + "-_./+:@ %&=?#~!$é", min_size=8, max_size=30).filter(
    lambda s: s.strip() == s and any(c in SECRET_CHARS for c in s)
)
WORDS = st.lists(st.sampled_from(["server", "failed", "to", "start", "token", "rejected", "the", "log"]), max_size=30)


def leaked(secret: str, text: str, n: int = 4) -> list[str]:
    return [secret[i : i + n] for i in range(len(secret) - n + 1) if secret[i : i + n] in text]


def encodings(secret: str) -> list[str]:
    """The spellings a secret takes on its way through URLs: what httpx and urllib write."""
    once = quote(secret, safe="")
    forms = [
        secret,
        once,
        re.sub(r"%[0-9A-F]{2}", lambda m: m.group(0).lower(), once),  # lower-case hex
        quote(secret),
        quote_plus(secret),
        quote(once, safe=""),  # twice
        httpx.URL("https://gateway.example/sse", params={"token": secret}).query.decode().partition("=")[2],
        str(httpx.URL(f"https://gateway.example/{quote(secret, safe='')}/sse")).rsplit("/", 2)[1],
        "".join(f"%{b:02x}" for b in secret.encode()),  # every character encoded, lower-case hex
    ]
    return list(dict.fromkeys(forms))


@settings(max_examples=120, deadline=None)
@given(secret=PUNCTUATED, form=st.integers(min_value=0, max_value=8), words=WORDS, placeholder=st.booleans())
def test_a_known_secret_is_found_in_every_url_spelling(secret, form, words, placeholder):
    spelled = encodings(secret)[form % len(encodings(secret))]
    text = " ".join([*words[:3], f"https://host/sse?x={spelled}&y=1", *words[3:]])
    known = [(secret, "${TOKEN}")] if placeholder else [secret]
    out = redact(text, known)
    for each in encodings(secret):
        assert each not in out, (each, out)
    assert ("${TOKEN}" if placeholder else REDACTED) in out


@settings(max_examples=80, deadline=None)
@given(
    user=st.text(alphabet="abcdefgh", min_size=1, max_size=8),
    password=PUNCTUATED,
    scheme=st.sampled_from(["http", "https"]),
)
def test_userinfo_is_never_shown_stored_or_kept_in_a_message(user, password, scheme):
    url = f"{scheme}://{user}:{quote(password, safe='')}@gateway.example:8443/v1"
    stripped = without_userinfo(url)
    assert stripped == f"{scheme}://gateway.example:8443/v1"
    assert url_host(url) == "gateway.example:8443"
    assert password not in redact(f"connection to {url} refused")
    assert quote(password, safe="") not in redact(f"connection to {url} refused")
    # httpx spells the URL its own way in its exceptions: still found
    assert quote(password, safe="") not in redact(str(httpx.URL(url)))
    # a message that names the password apart from the URL knows it from the URL
    assert password not in redact(f"auth {password} failed", userinfo_secrets(url))


@settings(max_examples=60, deadline=None)
@given(
    name=st.sampled_from(["token", "access_token", "api_key", "apikey", "key", "X-Amz-Signature", "client_secret"]),
    value=SECRET,
    sep=st.sampled_from(["?", "&", "#"]),
)
def test_query_tokens_are_taken_out_by_name(name, value, sep):
    out = redact(f"GET https://host/path{sep}{name}={value}&page=2 failed")
    assert value not in out and "page=2" in out


@pytest.mark.parametrize(
    "token",
    [
        "sk-ant-api03-" + "Ab3" * 12,
        "ghp_" + "Zq9X7w" * 5,
        "github_pat_" + "11ABCDEFG0" * 3,
        "glpat-" + "xY7z" * 5,
        "xoxb-1234567890-abcdefABCDEF",
        "hf_" + "AbCd1234" * 4,
        "AKIAIOSFODNN7EXAMPLE",
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    ],
)
def test_key_shapes_nobody_registered(token):
    assert token not in redact(f"server said: bad credential {token}.")
    assert "Bearer " + REDACTED in redact(f"Authorization: Bearer {token}")


@settings(max_examples=60, deadline=None)
@given(secret=SECRET, words=WORDS, limit=st.integers(min_value=20, max_value=200), known=st.booleans())
def test_a_token_cut_at_any_offset_is_not_shown_in_part(secret, words, limit, known):
    """Every offset of the cut, both edges: no four characters of the secret survive."""
    if not known:  # a key of a known shape nobody told us of: GitHub's, 36 characters after its prefix
        secret = (secret * 5)[:36]
    token = secret if known else "ghp_" + secret
    text = " ".join([*words, "token", token, *words])
    secrets = [token] if known else []
    for start in range(0, len(text), 3):
        piece = text[start:]
        for keep in ("tail", "head"):
            out = clip(piece, limit, secrets, keep=keep, cut_start=start > 0)
            assert len(out) <= max(limit, len(REDACTED)) + len(REDACTED)
            assert not leaked(secret, out), (start, keep, out)


@settings(max_examples=25, deadline=None)
@given(
    secret=SECRET,
    before=st.integers(min_value=0, max_value=5000),
    after=st.integers(min_value=0, max_value=900),
)
def test_the_stderr_tail_never_shows_part_of_a_secret(tmp_path_factory, secret, before, after):
    """The 600-character tail of a server's stderr, wherever the token sits relative to the cut."""
    path = tmp_path_factory.mktemp("log") / "s.stderr.log"
    log = StderrLog(path, max_bytes=4096)
    log.write(("noise " * (before // 6)).encode() + f"login with {secret} failed".encode() + b" x" * (after // 2))
    tail, _ = log.tail(600, [(secret, "${TOKEN}")])
    assert len(tail) <= 600 + len(REDACTED)
    assert not leaked(secret, tail), tail
    log.close()


@settings(max_examples=15, deadline=None)
@given(volume=st.integers(min_value=0, max_value=3_000_000), bound=st.sampled_from([4096, 65536, 1 << 20]))
@example(volume=587, bound=4096)  # the log's text passes 600 characters with the last line, not before
def test_a_stderr_flood_is_bounded_on_disk_and_its_tail_read_from_the_end(tmp_path_factory, volume, bound):
    path = tmp_path_factory.mktemp("flood") / "f.stderr.log"
    log = StderrLog(path, max_bytes=bound)
    chunk = b"0123456789abcdef" * 4096
    left = volume
    while left > 0:
        log.write(chunk[: min(left, len(chunk))])
        left -= len(chunk)
    log.write(b"\nTHE LAST LINE\n")
    on_disk = sum(p.stat().st_size for p in (path, log.rotated) if p.exists())
    assert on_disk <= 2 * (bound + len(chunk))
    tail, cut = log.tail(600)
    written = volume + len("\nTHE LAST LINE")  # the text the log holds, its final newline stripped
    assert tail.endswith("THE LAST LINE") and len(tail) <= 600 and cut == (written > 600)
    log.close()


def test_a_base_url_credential_stays_in_memory():
    url = "http://bob:PASSWORD@gateway.example/v1"
    remember_url(url)
    assert restore_url("http://gateway.example/v1") == url
    assert restore_url("http://gateway.example/v1", ["https://other.example/v1"]) == url
    configured = "http://alice:S3CRET@gw.example/v1"
    assert restore_url("http://gw.example/v1", [configured]) == configured
    assert restore_url("http://nobody.example/v1") == "http://nobody.example/v1"


def test_the_chat_row_and_the_switch_event_keep_no_credential(home):
    from core import events as ev
    from core.store import Store

    store = Store(home / "db.sqlite")
    chat = store.create_chat(title="t", base_url="http://bob:PASSWORD@gateway.example/v1")
    assert store.chat(chat).base_url == "http://gateway.example/v1"
    store.update_chat(chat, base_url="https://u:PW2@other.example/v1")
    assert store.chat(chat).base_url == "https://other.example/v1"
    event = ev.ProviderSwitched(
        from_provider="a", from_model="m", provider="b", model="n", base_url="http://bob:PASSWORD@h/v1", strategy="s"
    )
    assert "PASSWORD" not in event.to_json() and json.loads(event.to_json())["base_url"] == "http://h/v1"
    raw = (home / "db.sqlite").read_bytes()
    assert b"PASSWORD" not in raw and b"PW2" not in raw


# --- providers: base URLs with a credential, redirects ------------------------------------------

WIRES = ["anthropic", "openai", "openai-chat"]


async def _ask(provider) -> Exception:
    from core.providers.base import ModelRequest
    from tests.provider_replay import collect, user

    try:
        await collect(provider, ModelRequest(model=provider.model, system="", messages=[user("secret plans")]))
    except Exception as exc:
        return exc
    raise AssertionError("the request went through")


@pytest.mark.parametrize("wire", WIRES)
async def test_a_base_url_password_is_not_in_connection_errors(wire):
    from core.providers import make_provider
    from tests.mcp.conftest import free_port

    base = f"http://bob:PASSWORD-9f2c@127.0.0.1:{free_port()}" + ("" if wire == "anthropic" else "/v1")
    provider = make_provider(wire, "m", base_url=base, api_key="sk-test-key-123456", max_retries=0)
    exc = await _ask(provider)
    assert exc.code == "provider.connection", exc
    assert "PASSWORD" not in str(exc) and "bob" not in str(exc) and "127.0.0.1" in str(exc)
    assert "PASSWORD" not in repr(provider)


@pytest.mark.parametrize("wire", WIRES)
async def test_a_provider_never_follows_a_redirect_to_another_origin(wire):
    from core.providers import make_provider
    from tests.streaming_server import StreamingServer

    with StreamingServer([{"parts": [{"text": "stolen"}]}]) as elsewhere:
        path = {"anthropic": "/v1/messages", "openai": "/v1/responses", "openai-chat": "/v1/chat/completions"}[wire]
        target = elsewhere.base_url + path
        redirect = {"status": 307, "headers": {"location": target}}
        with StreamingServer([redirect, redirect, redirect]) as server:
            base = server.url_for(wire).replace("http://", "http://bob:PASSWORD-9f2c@")
            provider = make_provider(wire, "m", base_url=base, api_key="sk-test-key-123456", max_retries=2)
            exc = await _ask(provider)
            assert exc.code == "provider.connection", exc
            assert f"127.0.0.1:{elsewhere.port}" in str(exc) and "another origin" in str(exc)
            assert "PASSWORD" not in str(exc) and "sk-test" not in str(exc)
            assert len(server.requests) == 1  # refused, not retried
        assert elsewhere.requests == []  # the conversation never went there


async def test_a_redirect_within_the_origin_is_still_followed():
    from core.providers import make_provider
    from core.providers.base import ModelRequest
    from tests.provider_replay import collect, user
    from tests.streaming_server import StreamingServer

    script = [{"status": 307, "headers": {"location": "/v1/messages?moved=1"}}, {"parts": [{"text": "hello"}]}]
    with StreamingServer(script) as server:
        provider = make_provider("anthropic", "m", base_url=server.url_for("anthropic"), api_key="k", max_retries=0)
        events = await collect(provider, ModelRequest(model="m", system="", messages=[user("hi")]))
        assert any(getattr(e, "text", "") == "hello" for e in events)
        assert len(server.requests) == 2
