"""A hardline rule on a path holds for every spelling of that path (issue 23, item 2).

The value is put in canonical form in the workspace it is resolved in (relative to its root,
``.``/``..`` and doubled slashes resolved, every symbolic link followed, the spelling the file
system keeps, NFC and case folding where it folds case), the rule is matched on that, and the
tool receives that same value and opens it following no link: a folder swapped for a link
between the check and the write is refused, never followed.

Each test builds a real workspace in a temporary folder and runs the real pipeline and the real
``workspace.*`` built-ins through the chat's :class:`ToolRouter`.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import unicodedata
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.chat.routing import ToolRouter
from core.pipeline import codes
from core.pipeline.approvals import Decision, FixedApprover
from core.pipeline.canonical import (
    CanonicalError,
    PathBase,
    _on_disk_name,
    canonical_pattern,
    canonical_workspace_path,
    path_glob_matches,
    path_match_forms,
)
from core.pipeline.pipeline import Pipeline, RunContext
from core.pipeline.policy import parse_policy
from core.roster.loader import load_roster
from core.store import Store
from core.tools import ToolResult, ToolSpec
from tests.helpers import plan

CONFIGURED = {t.name: t for t in load_roster("production").configured}
WRITE = CONFIGURED["workspace.write_file"]
READ = CONFIGURED["workspace.read_file"]
PROPERTY = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def policy_for(pattern: str, kinds: str = "") -> Any:
    kind_line = f'kinds = {{ path = "{kinds}" }}\n' if kinds else ""
    return parse_policy(
        f'[[hardline]]\ntool = "workspace.*"\nargs = {{ path = "{pattern}" }}\n{kind_line}'
        'reason = "private stays private"\n',
        "test",
    )


class Router(ToolRouter):
    """The chat's router over a workspace, remembering what each tool received; ``before_run``
    lets a test change the workspace between the check and the tool."""

    def __init__(self, workspace: Path) -> None:
        super().__init__(
            chat_id="chat",
            specs={},
            live={},
            controls=None,  # type: ignore[arg-type]
            servers=None,  # type: ignore[arg-type]
            builtin_db=lambda: None,
            workspace=workspace,
            timezone="UTC",
            tool_settings={},
        )
        self.received: list[dict[str, Any]] = []
        self.before_run: Any = None

    async def run(self, spec: ToolSpec, arguments: dict[str, Any], call_id: str) -> ToolResult:
        self.received.append(arguments)
        if self.before_run is not None:
            self.before_run()
        return await super().run(spec, arguments, call_id)


class Harness:
    def __init__(self, workspace: Path, policy: Any) -> None:
        self.store = Store(":memory:")
        self.chat = self.store.create_chat(title="t", provider="script", model="m", strategy="wrapper")
        self.router = Router(workspace)
        self.events: list[Any] = []
        self.ctx = RunContext(
            chat_id=self.chat,
            turn_id="turn",
            store=self.store,
            plan=plan([WRITE, READ], ()),
            policy=policy,
            approver=FixedApprover(Decision.ALLOW_CHAT),  # approved: a hardline holds all the same
            tools=self.router,
            emit=self.events.append,
        )
        self.n = 0

    def call(self, name: str, **arguments: Any) -> str:
        """The call's status: completed, denied (with the code in ``self.code``) or failed."""
        self.n += 1
        self.events.clear()
        block = {"type": "tool_use", "id": f"c{self.n}", "name": name, "input": arguments}
        outcome = asyncio.run(Pipeline(self.ctx).run(block))
        done = [e for e in self.events if e.type in ("tool.denied", "tool.failed", "tool.completed")]
        self.code = getattr(done[-1], "code", None) if done else None
        return outcome.status


def files_under(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file() or p.is_symlink())


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    """A workspace with ``private/`` (a rule guards it), ``pub/`` and a few links into private."""
    root = tmp_path / "workspace"
    (root / "private" / "deep").mkdir(parents=True)
    (root / "pub").mkdir()
    (root / "private" / "secret.txt").write_text("secret\n")
    os.symlink("../private", root / "pub" / "into")  # a folder link
    os.symlink("pub/into", root / "chain")  # a link to a link
    os.symlink("private/secret.txt", root / "alias.txt")  # a file link
    os.symlink("private/new-from-dangling.txt", root / "dangling.txt")  # dangling, into private
    return root


# --- the reported spellings: each wrote into private/ ---------------------------------------------------

SPELLINGS = [
    "private/a.txt",
    "./private/b.txt",
    "pub/../private/c.txt",
    "pub/into/d.txt",
    "chain/e.txt",
    "private//f.txt",
    "./pub/./into/deep/../g.txt",
    " private/h.txt ",
    "dangling.txt",
    "pub/into/../private/i.txt",  # '..' after a link is taken from where the link leads
]


@pytest.mark.parametrize("pattern", ["private/*", "./private/", "private", "{ws}/private/*", "*/private/*"])
@pytest.mark.parametrize("path", SPELLINGS)
def test_every_spelling_of_a_guarded_path_is_denied_even_when_approved(ws: Path, pattern: str, path: str) -> None:
    before = files_under(ws / "private")
    h = Harness(ws, policy_for(pattern.format(ws=ws)))
    assert h.call("workspace.write_file", path=path, content="x") == "denied", h.events
    assert h.code == codes.DENIED_HARDLINE
    assert h.router.received == [] and files_under(ws / "private") == before


def test_a_rule_written_as_text_still_matches_the_path(ws: Path) -> None:
    """``kinds = { path = "text" }`` does not make ``./private`` a different value: the argument is
    a workspace path, so it is matched as one."""
    h = Harness(ws, policy_for("private/*", kinds="text"))
    assert h.call("workspace.write_file", path="./private/x.txt", content="x") == "denied"


def test_reads_are_guarded_and_the_file_link_reads_where_it_leads(ws: Path) -> None:
    h = Harness(ws, policy_for("private/*"))
    assert h.call("workspace.read_file", path="alias.txt") == "denied"
    open_policy = Harness(ws, policy_for("nothing-here/*"))
    assert open_policy.call("workspace.read_file", path="alias.txt") == "completed"
    assert open_policy.router.received == [{"path": "private/secret.txt"}]


def test_other_paths_still_write_and_the_tool_receives_the_checked_value(ws: Path) -> None:
    h = Harness(ws, policy_for("private/*"))
    assert h.call("workspace.write_file", path="./pub//notes/../note.txt", content="hello") == "completed"
    assert h.router.received[-1]["path"] == "pub/note.txt"
    assert (ws / "pub" / "note.txt").read_text() == "hello"
    assert h.call("workspace.write_file", path="privateer.txt", content="x") == "completed"  # not under private/


def test_paths_outside_the_workspace_are_refused_before_anything_runs(ws: Path, tmp_path: Path) -> None:
    os.symlink(tmp_path, ws / "out")
    h = Harness(ws, policy_for("nothing/*"))
    for path in ("../x.txt", "out/x.txt", "/etc/passwd", "~/x.txt", "pub/../../x.txt"):
        assert h.call("workspace.write_file", path=path, content="x") == "failed", path
        assert h.code == codes.ARGUMENTS_INVALID
    assert h.router.received == [] and not (tmp_path / "x.txt").exists()


def test_a_symlink_loop_has_no_canonical_form(ws: Path) -> None:
    os.symlink("loop-b", ws / "loop-a")
    os.symlink("loop-a", ws / "loop-b")
    with pytest.raises(CanonicalError, match="loop"):
        canonical_workspace_path("loop-a/x", PathBase.of(ws))
    h = Harness(ws, policy_for("private/*"))
    assert h.call("workspace.write_file", path="loop-a/x", content="x") == "failed"
    assert h.code == codes.ARGUMENTS_INVALID


# --- no TOCTOU: the tool opens what was checked ---------------------------------------------------------


def test_a_folder_swapped_for_a_link_after_the_check_is_refused(ws: Path) -> None:
    (ws / "pub" / "drafts").mkdir()
    h = Harness(ws, policy_for("private/*"))

    def swap() -> None:
        shutil.rmtree(ws / "pub" / "drafts")
        os.symlink("../private", ws / "pub" / "drafts")

    h.router.before_run = swap
    for overwrite in (False, True):
        assert h.call("workspace.write_file", path="pub/drafts/x.txt", content="x", overwrite=overwrite) == "failed"
        assert h.router.received[-1]["path"] == "pub/drafts/x.txt"  # what was checked
        assert not (ws / "private" / "x.txt").exists()
        os.unlink(ws / "pub" / "drafts")
        (ws / "pub" / "drafts").mkdir()


def test_the_opener_follows_no_link_even_past_the_resolution(ws: Path) -> None:
    """The race after the tool's own re-resolution: a folder becomes a link between the check
    and the open; the component-wise ``O_NOFOLLOW`` walk refuses it."""
    from core.builtins.shared import ToolError
    from core.builtins.workspace import _open_folder, _read_window, _write

    os.symlink("private", ws / "sneaky")
    with pytest.raises(ToolError, match="changed while it was being opened"):
        _open_folder(ws, "sneaky/x.txt", create=True)
    with pytest.raises(ToolError, match="changed while it was being opened"):
        _write(ws, "sneaky/x.txt", "sneaky/x.txt", "x", False)
    with pytest.raises(ToolError, match="changed while it was being opened"):
        _read_window(ws, "alias.txt", 1, 10)
    with pytest.raises(ToolError, match="changed while it was being opened"):
        _write(ws, "alias.txt", "alias.txt", "x", True)
    assert (ws / "private" / "secret.txt").read_text() == "secret\n"
    assert not (ws / "private" / "x.txt").exists()


# --- case and Unicode -----------------------------------------------------------------------------------


def test_where_the_file_system_folds_case_a_rule_folds_too(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    base = PathBase(root=str(ws), folds_case=True)
    glob = canonical_pattern("path", "Private/*", base)
    assert path_glob_matches(path_match_forms("PRIVATE/x.txt", base)[0], glob)
    strict = PathBase(root=str(ws), folds_case=False)
    assert not path_glob_matches(path_match_forms("PRIVATE/x.txt", strict)[0], canonical_pattern("path", "private/*"))


def test_a_folding_file_system_gives_the_name_it_keeps(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """On macOS ``PRIVATE`` finds ``private``: the canonical form is the folder's own spelling."""
    import core.pipeline.canonical as canonical_module

    real_same = canonical_module._same_file

    def folding(path: str, st: os.stat_result) -> bool:
        head, name = os.path.split(path)
        return real_same(path, st) or real_same(os.path.join(head, name.casefold()), st)

    monkeypatch.setattr(canonical_module, "_same_file", folding)
    st = os.lstat(ws / "private")
    assert _on_disk_name(str(ws), "PRIVATE", st) == "private"
    assert _on_disk_name(str(ws), "private", st) == "private"


UNICODE_FORMS = ["NFC", "NFD", "NFKC", "NFKD"]


@PROPERTY
@given(form=st.sampled_from(UNICODE_FORMS), rule_form=st.sampled_from(UNICODE_FORMS))
def test_unicode_normalisation_forms_do_not_dodge_a_rule(tmp_path: Path, form: str, rule_form: str) -> None:
    root = tmp_path / f"ws-{form}-{rule_form}"
    (root / unicodedata.normalize("NFC", "caf\u00e9")).mkdir(parents=True, exist_ok=True)
    rule = unicodedata.normalize(rule_form, "caf\u00e9/*")
    h = Harness(root, policy_for(rule))
    path = unicodedata.normalize(form, "caf\u00e9/menu.txt")
    assert h.call("workspace.write_file", path=path, content="x") == "denied"


# --- property tests: generated spellings of a path inside private/ --------------------------------------

SEGMENT = st.sampled_from(["a", "b", "deep", "n\u00e9", "x y"])


@st.composite
def spelling_into_private(draw: st.DrawFn) -> tuple[str, list[tuple[str, str]]]:
    """A path that lands in private/, spelled with any mix of ``./``, doubled and trailing-slash
    folders, detours through ``..``, and links (made for the example: folder links, chains and a
    dangling file link), and the links it needs."""
    links: list[tuple[str, str]] = []
    prefix_kind = draw(st.sampled_from(["plain", "dot", "detour", "link", "chain", "double", "up-and-back"]))
    if prefix_kind == "plain":
        prefix = "private"
    elif prefix_kind == "dot":
        prefix = "./private/."
    elif prefix_kind == "detour":
        prefix = f"pub/{draw(SEGMENT)}/../../private"
    elif prefix_kind == "link":
        links.append(("pub/l1", "../private"))
        prefix = "pub/l1"
    elif prefix_kind == "chain":
        links += [("l2", "pub/l3"), ("pub/l3", "/" + "{root}/private")]
        prefix = "l2"
    elif prefix_kind == "double":
        prefix = "private//"
    else:
        prefix = "../workspace/private"
    middle = draw(st.lists(st.sampled_from([".", "", "deep/..", "sub"]), max_size=3))
    name = draw(st.sampled_from(["a.txt", "B.md", "n\u00e9w.txt", "x"]))
    if draw(st.booleans()):
        links.append(("dang-" + name, "private/" + name))
        return "dang-" + name, links
    return "/".join([prefix, *middle, name]), links


@PROPERTY
@given(case=spelling_into_private(), overwrite=st.booleans())
def test_generated_spellings_into_private_are_all_denied(tmp_path: Path, case: Any, overwrite: bool) -> None:
    path, links = case
    root = tmp_path / "workspace"
    shutil.rmtree(root, ignore_errors=True)
    (root / "private" / "deep").mkdir(parents=True)
    (root / "pub").mkdir()
    for link, target in links:
        os.symlink(target.replace("{root}", str(root).lstrip("/")), root / link)
    h = Harness(root, policy_for("private/*"))
    assert h.call("workspace.write_file", path=path, content="x", overwrite=overwrite) == "denied", path
    assert files_under(root / "private") == [] or all(
        (root / "private" / f).is_dir() for f in files_under(root / "private")
    )


@PROPERTY
@given(
    parts=st.lists(st.sampled_from(["pub", ".", "", "..", "sub", "n\u00e9", "pub/sub", "private"]), max_size=6),
    name=st.sampled_from(["a.txt", "b", "c/"]),
)
def test_canonical_workspace_paths_are_idempotent_and_say_where_the_file_lands(
    tmp_path: Path, parts: list[str], name: str
) -> None:
    """For any spelling: the canonical form is stable, stays inside the root, and is exactly where
    the tool writes; the rule denies it exactly when that place is under private/."""
    root = tmp_path / "workspace"
    shutil.rmtree(root, ignore_errors=True)
    (root / "private").mkdir(parents=True)
    (root / "pub").mkdir()
    os.symlink("../private", root / "pub" / "sub")
    base = PathBase.of(root)
    raw = "/".join([*parts, name])
    try:
        rel = canonical_workspace_path(raw, base)
    except CanonicalError:
        return  # outside the workspace: refused, nothing written
    assert canonical_workspace_path(rel, base) == rel
    assert not rel.startswith(("/", "..")) and "/./" not in rel and "//" not in rel
    h = Harness(root, policy_for("private/*"))
    status = h.call("workspace.write_file", path=raw, content="x")
    landed = rel.rstrip("/") == "private" or rel.startswith("private/")
    if landed:
        assert status == "denied"
    elif rel.endswith("/") or rel == "." or (root / rel).is_dir():
        assert status == "failed"  # a folder: the tool refuses it
    else:
        assert status == "completed", (raw, rel, h.events)
        assert h.router.received[-1]["path"] == rel
        assert (root / rel).read_text() == "x" and not (root / rel).is_symlink()
