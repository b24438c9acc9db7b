"""The browser built-ins (ADR-0130's pins) against a real HTTP server on loopback: navigate keeps
the chat's current page, observe reads its text, links and forms, act follows a link or submits a
form. The private-address guard lets them reach 127.0.0.1 only because the test allows it
(``allow_private_hosts``), and refuses private hosts otherwise."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit

import pytest
import sqlite_utils

from core.builtins import ToolContext, builtin_tool, get_builtin
from core.builtins.data import BUILTIN_SCHEMA, DEMO_TABLES
from core.builtins.schema import input_schema
from core.context import envelope
from core.demo.dataset import open_demo_dataset
from core.pipeline import codes
from core.store import SCHEMA, Store
from core.tools import ToolResult, result_envelope_source

HOME = """<!doctype html><html><head><title>Ferry &amp; Co</title><base href="/shop/"></head><body>
<h1>Timetable</h1><p>Boats leave every <b>hour</b>.</p>
<a href="about">About <i>us</i></a>
<a href="https://elsewhere.example/x">Partner</a>
<a href="mailto:x@example.org">Mail</a>
<a href="javascript:void(0)">Script</a>
<a href="/away">Away</a>
<form action="/search" method="get"><input name="q" value="ferry"><input type="hidden" name="lang" value="en">
<input type="submit" name="go" value="Search"></form>
<form action="/book" method="post">
<input name="name"><input type="checkbox" name="news" value="yes" checked>
<input type="radio" name="class" value="deck"><input type="radio" name="class" value="cabin" checked>
<select name="day"><option>mon</option><option value="tue" selected>Tuesday</option></select>
<textarea name="note">window seat</textarea><button type="submit">Book</button></form>
<form action="/upload" method="post" enctype="multipart/form-data"><input type="file" name="f"></form>
</body></html>"""


class _Site(BaseHTTPRequestHandler):
    def log_message(self, *args) -> None:  # quiet
        return None

    def _send(self, status: int, body: str, content_type: str = "text/html; charset=utf-8") -> None:
        data = body.encode()
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        path = urlsplit(self.path)
        if path.path == "/":
            self._send(200, HOME)
        elif path.path == "/shop/about":
            self._send(200, "<html><title>About</title><p>Family run since 1920.</p></html>")
        elif path.path == "/search":
            self._send(200, f"<html><p>results for {json.dumps(dict(parse_qsl(path.query)))}</p></html>")
        elif path.path == "/away":  # a redirect hop to a private address nobody allowed
            self.send_response(302)
            self.send_header("Location", "http://10.0.0.7/inside")
            self.send_header("Content-Length", "0")
            self.end_headers()
        elif path.path == "/logo.png":
            self._send(200, "\x89PNG", "image/png")
        else:
            self._send(404, "<html><title>Missing</title><p>No such page.</p></html>")

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(length).decode()
        kind = self.headers.get("Content-Type", "")
        self._send(200, f"<html><title>Booked</title><p>{kind} {json.dumps(parse_qsl(body))}</p></html>")


@pytest.fixture
def site() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Site)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def _ctx(tmp_path: Path, **settings) -> ToolContext:
    db = sqlite_utils.Database(tmp_path / "builtins.sqlite")
    BUILTIN_SCHEMA.apply(db)  # as the store and the demo database have it
    return ToolContext(
        db=db,
        chat_id="chat_web",
        call_id="call_1",
        workspace=tmp_path,
        settings=settings,
    )


@pytest.fixture
def allowed(tmp_path: Path) -> ToolContext:
    """The test's explicit allow setting: loopback, and nothing else private."""
    return _ctx(tmp_path, allow_private_hosts=["127.0.0.1"])


async def run(ctx: ToolContext, name: str, **arguments) -> ToolResult:
    fn = get_builtin(name)
    assert fn is not None, name
    return await fn(arguments, ctx)


async def test_the_three_tools_are_built_ins_with_generated_schemas():
    for name in ("browser.navigate", "browser.observe", "browser.act"):
        tool = builtin_tool(name)
        assert tool is not None and tool.input_schema == input_schema(tool.args)
    act = builtin_tool("browser.act")
    assert act is not None and list(act.input_schema["properties"]) == ["link", "form", "fields"]


async def test_navigate_keeps_the_page_and_observe_reads_text_links_and_forms(allowed, site):
    opened = await run(allowed, "browser.navigate", url=site + "/")
    assert not opened.is_error, opened.text()
    assert opened.structured["title"] == "Ferry & Co"
    assert (opened.structured["links"], opened.structured["forms"]) == (3, 3)
    assert opened.envelope_source == "web.127.0.0.1"

    seen = await run(allowed, "browser.observe")
    text = seen.text()
    assert "# Timetable" in text and "Boats leave every hour." in text
    # links resolve against <base>; mailto and javascript links are not offered
    assert [link["url"] for link in seen.structured["links"]] == [
        site + "/shop/about",
        "https://elsewhere.example/x",
        site + "/away",
    ]
    assert seen.structured["links"][0]["text"] == "About us"
    booking = seen.structured["forms"][1]
    assert (booking["method"], booking["action"]) == ("post", site + "/book")
    fields = {f["name"]: (f["type"], f["value"]) for f in booking["fields"]}
    assert fields == {
        "name": ("text", ""),
        "news": ("checkbox", "yes"),
        "class": ("radio", "cabin"),
        "day": ("select", "tue"),
        "note": ("textarea", "window seat"),
    }
    assert "[2] POST " + site + "/book" in text and 'class (radio) = "cabin" options "deck", "cabin"' in text
    # what the page says reaches the model inside its envelope
    assert result_envelope_source(None, seen) == "web.127.0.0.1"
    fenced = envelope.fence(text, seen.envelope_source)
    assert fenced != text and "Boats leave" in fenced


async def test_act_follows_a_link_and_submits_forms_by_get_and_post(allowed, site):
    await run(allowed, "browser.navigate", url=site + "/")
    about = await run(allowed, "browser.act", link=1)
    assert about.structured["url"] == site + "/shop/about" and about.structured["method"] == "GET"
    assert "Family run" in (await run(allowed, "browser.observe")).text()

    await run(allowed, "browser.navigate", url=site + "/")
    searched = await run(allowed, "browser.act", form=1, fields={"q": "night boat"})
    assert searched.structured["method"] == "GET"
    assert '{"q": "night boat", "lang": "en", "go": "Search"}' in (await run(allowed, "browser.observe")).text()

    await run(allowed, "browser.navigate", url=site + "/")
    booked = await run(allowed, "browser.act", form=2, fields={"name": "Ada", "news": ""})
    assert booked.structured["method"] == "POST" and booked.structured["title"] == "Booked"
    page = (await run(allowed, "browser.observe")).text()
    assert "application/x-www-form-urlencoded" in page
    assert '[["name", "Ada"], ["class", "cabin"], ["day", "tue"], ["note", "window seat"]]' in page


async def test_act_says_what_is_wrong(allowed, site, tmp_path):
    other_chat = ToolContext(db=allowed.db, chat_id="chat_new", call_id="c", workspace=tmp_path, settings={})
    empty = await run(other_chat, "browser.observe")
    assert empty.is_error and "no current page" in empty.text()
    await run(allowed, "browser.navigate", url=site + "/")
    for arguments, words in (
        ({}, "either link"),
        ({"link": 1, "form": 1}, "either link"),
        ({"link": 9}, "has 3 links"),
        ({"form": 7}, "has 3 forms"),
        ({"form": 1, "fields": {"nope": "x"}}, "no field nope"),
        ({"form": 3}, "url-encoded forms only"),
        ({"link": 1, "fields": {"q": "x"}}, "fields go with a form"),
    ):
        result = await run(allowed, "browser.act", **arguments)
        assert result.is_error and words in result.text(), (arguments, result.text())
    missing = await run(allowed, "browser.navigate", url=site + "/gone")
    assert not missing.is_error and "404 Not Found (an error page)" in missing.text()
    binary = await run(allowed, "browser.navigate", url=site + "/logo.png")
    assert binary.is_error and "not text" in binary.text()
    assert (await run(allowed, "browser.observe")).structured["title"] == "Missing"  # the last readable page stays


async def test_the_guard_refuses_private_hosts_unless_the_setting_allows_them(tmp_path, site):
    plain = _ctx(tmp_path)  # no allow setting: loopback is private
    refused = await run(plain, "browser.navigate", url=site + "/")
    assert refused.is_error and refused.error_code == codes.DENIED_PRIVATE_ADDRESS
    for url in ("http://localhost:1/", "http://10.1.2.3/", "http://[::1]/", "http://169.254.169.254/latest"):
        result = await run(plain, "browser.navigate", url=url)
        assert result.error_code == codes.DENIED_PRIVATE_ADDRESS, url
    # allowed: loopback only; a redirect hop from it to another private host is still refused
    allowed = _ctx(tmp_path, allow_private_hosts=["127.0.0.1"])
    assert not (await run(allowed, "browser.navigate", url=site + "/")).is_error
    away = await run(allowed, "browser.act", link=3)
    assert away.error_code == codes.DENIED_PRIVATE_ADDRESS and "10.0.0.7" in away.text()
    assert (await run(allowed, "browser.observe")).structured["url"] == site + "/"  # the page did not change


async def test_an_internationalised_host_gets_the_same_envelope_source_from_web_fetch_and_the_browser(tmp_path):
    import httpx

    async def public(host: str, port: int) -> list[str]:  # no DNS: every host is one public address
        return ["93.184.215.14"]

    seen: list[str] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request.headers["host"])
        return httpx.Response(200, text=HOME, headers={"content-type": "text/html; charset=utf-8"})

    ctx = _ctx(tmp_path, http_transport=httpx.MockTransport(answer), resolver=public)
    fetched = await run(ctx, "web.fetch", url="https://bücher.de/")
    opened = await run(ctx, "browser.navigate", url="https://bücher.de/")
    observed = await run(ctx, "browser.observe")
    assert not (fetched.is_error or opened.is_error or observed.is_error), (fetched.text(), opened.text())
    assert seen == ["xn--bcher-kva.de", "xn--bcher-kva.de"]  # both requests were for the one host
    assert opened.structured["url"] == "https://xn--bcher-kva.de/"  # the page is kept under its written URL
    # one site, one source: the browser says what web.fetch says
    assert {fetched.envelope_source, opened.envelope_source, observed.envelope_source} == {"web.bücher.de"}


# --- the table: migration 0004_browser_pages ------------------------------------------------------------

# (column, declared type, not null, primary key) as the migration makes browser_pages.
DECLARED = [
    ("chat_id", "TEXT", 0, 1),
    ("url", "TEXT", 1, 0),
    ("status", "INTEGER", 1, 0),
    ("reason_phrase", "TEXT", 0, 0),
    ("content_type", "TEXT", 0, 0),
    ("title", "TEXT", 0, 0),
    ("text", "TEXT", 1, 0),
    ("links", "TEXT", 1, 0),
    ("forms", "TEXT", 1, 0),
    ("cut_bytes", "INTEGER", 1, 0),
    ("call_id", "TEXT", 0, 0),
    ("at", "REAL", 0, 0),
    ("demo", "INTEGER", 0, 0),
]


def _shape(db: sqlite_utils.Database) -> list[tuple[str, str, int, int]]:
    return [(c[1], c[2], c[3], c[5]) for c in db.execute("pragma table_info(browser_pages)")]


def _old_page(chat_id: str, title: str | None) -> dict[str, object]:
    """A row as browser._save wrote it before the migration (no demo column)."""
    form = {"action": "https://ferry.example/search", "method": "get", "enctype": "application/x-www-form-urlencoded"}
    form |= {"fields": [{"name": "q", "type": "text", "value": "ferry", "options": []}], "submit": ["go", "Search"]}
    return {
        "url": "https://ferry.example/",
        "status": 200,
        "reason_phrase": "OK",
        "content_type": "text/html; charset=utf-8",
        "title": title,
        "text": "Boats leave every hour.",
        "links": json.dumps([{"text": "About us", "url": "https://ferry.example/about"}]),
        "forms": json.dumps([form]),
        "cut_bytes": 0,
        "chat_id": chat_id,
        "call_id": "call_old",
        "at": 1767600000.5,
    }


async def test_a_new_database_has_the_browser_pages_table_with_its_declared_columns(tmp_path, site):
    store = Store(tmp_path / "new.db")
    assert [m.name for m in BUILTIN_SCHEMA.applied(store.db)][-1] == "0004_browser_pages"
    assert _shape(store.db) == DECLARED
    ctx = ToolContext(
        db=store.db,
        chat_id="chat_web",
        call_id="call_1",
        workspace=tmp_path,
        settings={"allow_private_hosts": ["127.0.0.1"]},
    )
    assert not (await run(ctx, "browser.navigate", url=site + "/")).is_error
    (row,) = store.db["browser_pages"].rows
    # what _save writes is exactly the declared columns, a tool's row with demo 0
    assert list(row) == [c[0] for c in DECLARED]
    assert (row["chat_id"], row["title"], row["call_id"], row["demo"], row["cut_bytes"]) == (
        "chat_web",
        "Ferry & Co",
        "call_1",
        0,
        0,
    )
    assert _shape(store.db) == DECLARED  # the upsert altered nothing


async def test_a_table_made_by_the_old_first_use_upsert_is_migrated_and_keeps_its_rows(tmp_path, site):
    path = tmp_path / "old.db"
    old = sqlite_utils.Database(path)  # as an earlier version left it: 0001 and 0003, the table made on first use
    SCHEMA.apply(old)
    BUILTIN_SCHEMA.apply(old, stop_before="0004_browser_pages")
    old["browser_pages"].upsert(_old_page("chat_old", None), pk="chat_id", alter=True)  # title None: type inferred
    old["browser_pages"].upsert(_old_page("chat_two", "Ferry & Co"), pk="chat_id", alter=True)
    assert "demo" not in old["browser_pages"].columns_dict
    old.close()

    store = Store(path)  # the upgrade
    db = store.db
    assert [m.name for m in BUILTIN_SCHEMA.applied(db)] == [
        "0001_tables",
        "0003_remove_demo_rows",
        "0004_browser_pages",
    ]
    assert _shape(db) == DECLARED
    kept = {r["chat_id"]: r for r in db["browser_pages"].rows}
    assert set(kept) == {"chat_old", "chat_two"}
    assert kept["chat_old"] == {**_old_page("chat_old", None), "demo": 0}
    assert kept["chat_two"]["title"] == "Ferry & Co" and kept["chat_two"]["demo"] == 0

    # browser.observe still reads the page kept before the upgrade
    ctx = ToolContext(db=db, chat_id="chat_two", call_id="c2", workspace=tmp_path, settings={})
    seen = await run(ctx, "browser.observe")
    assert not seen.is_error, seen.text()
    assert seen.structured["title"] == "Ferry & Co" and "Boats leave every hour." in seen.text()
    assert seen.structured["links"] == [{"text": "About us", "url": "https://ferry.example/about"}]
    assert seen.structured["forms"][0]["submit"] == ("go", "Search")
    assert seen.envelope_source == "web.ferry.example"
    # and the tools write on: the old chat navigates, its row replaced under the declared shape
    ctx = ToolContext(
        db=db, chat_id="chat_old", call_id="c3", workspace=tmp_path, settings={"allow_private_hosts": ["127.0.0.1"]}
    )
    assert not (await run(ctx, "browser.navigate", url=site + "/shop/about")).is_error
    assert db["browser_pages"].get("chat_old")["title"] == "About" and db["browser_pages"].count == 2
    assert not BUILTIN_SCHEMA.pending(Store(path).db)  # reopening applies nothing again


def test_the_demo_database_gets_the_table_and_is_still_seeded(tmp_path):
    db = open_demo_dataset(tmp_path / "demo.sqlite")
    assert not BUILTIN_SCHEMA.pending(db)
    assert _shape(db) == DECLARED and db["browser_pages"].count == 0
    assert all(db[t].count_where("demo = 1") for t in DEMO_TABLES)  # the seed ran after the migrations
    db.close()
