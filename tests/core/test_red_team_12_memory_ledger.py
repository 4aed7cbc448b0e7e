"""Red team, round twelve: memory hygiene (seed 003) and the edit ledger (seed 000), both ways.

Misses: pins only a requirements file taken in by `-r`/`-c` states (`-r dev.txt`: a name
no requirements file has) were never read; a test named by its pytest node id (`tests/test_api.py::test_create`) was never
checked, its file gone or the test renamed away (the `:` made it a pointer); an Edit of a CRLF memory file (Claude's Edit tool matches `old_string` against the
text read as LF and writes the endings back) or of one holding typographic quotes (the tool
takes `"` for `“`) landed unjudged, a relative date and a broken frontmatter with it; a
Prisma migration folder (`migrations/<timestamp>_<name>/migration.sql`) was no migration, and
a line naming a monorepo's root `db/migration` by its path could not single it out from the
services' folders. What held is kept as tests too.

Held (tests that passed at once, kept as documentation): the ledger tells changes in the
order of the edits (a file edited again moves last), a file renamed by `git mv` is told
once under the name the model edited (the contract's one line; `claudetto ledger` says
deleted), and a relative `file_path` is taken from the payload's `cwd`, not the project.

The lint runs in-process where its reading of the edit is the point, and once through
`python -P -m hooks` as Claude runs PreToolUse; the sweep's checks run in-process on one
repository shared by the module (read only)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from app.core import ledger, paths
from app.core.memory import SupersedeRefused, check_texts, supersede
from app.core.memory_lint import lint_write
from tests.core.test_memory import FRONT
from tests.core.test_red_team_11_memory_ledger import findings
from tests.support import SandboxEnv, git, make_repo, run_hook

# --- the write lint: an Edit judged on the file as Claude's Edit tool changes it ---------------


def memory_file(text: str, name: str = "notes.md") -> Path:
    folder = paths.projects_dir() / "-home-u-shop" / "memory"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_bytes(text.encode())
    return path


def edit(path: Path, old: str, new: str, **extra: Any) -> str | None:
    return lint_write({"hook_event_name": "PreToolUse", "session_id": "s1", "cwd": "/", "tool_name": "Edit",
                       "tool_input": {"file_path": str(path), "old_string": old, "new_string": new, **extra}})


CRLF_FACTS = (FRONT + "- Build with make.\n- Deploy by hand.\n").replace("\n", "\r\n")


def test_an_edit_across_lines_of_a_crlf_memory_file_is_judged(sandbox: SandboxEnv) -> None:
    """The model's `old_string` has LF line breaks (it read the file through Claude's Read,
    which shows LF); the file has CRLF. Claude's Edit tool matches on the LF text and lands
    the edit: the lint let it by unjudged, a relative date and a broken frontmatter with it."""
    path = memory_file(CRLF_FACTS)
    reason = edit(path, "- Build with make.\n- Deploy by hand.", "- Build with make.\n- Deployed yesterday by hand.")
    assert reason is not None and '"yesterday" (line 8)' in reason
    reason = edit(path, "name: notes\ndescription: project notes\n", "name: notes\n")
    assert reason is not None and "`description:` is missing or empty" in reason
    # a legacy CRLF line is not judged again because the edit changed the one below it
    path = memory_file(CRLF_FACTS.replace("by hand.", "by hand, fixed yesterday."))
    assert edit(path, "- Build with make.\n", "- Build with make (2026-11-30).\n") is None
    assert edit(path, "- Build with make.\n- Deploy", "- Build with ninja.\n- Deploy") is None


def test_an_edit_naming_typographic_quotes_as_straight_ones_is_judged(sandbox: SandboxEnv) -> None:
    """Claude's Edit tool finds `"fast"` in a file holding “fast” (a note pasted from a
    document): the edit lands, so it is judged like any other."""
    path = memory_file(FRONT + "- The \u201cfast\u201d path is the default.\n- Keep \u2018strict\u2019 mode on.\n")
    reason = edit(path, '- The "fast" path is the default.', '- The "fast" path became the default last week.')
    assert reason is not None and '"last week" (line 7)' in reason
    assert edit(path, "Keep 'strict' mode on.", "Keep 'strict' mode on (since 2026-11-02).") is None
    assert edit(path, '- The "slow" path', "- The path") is None  # not there: the tool fails, not the lint


def test_the_hook_refuses_a_crlf_edit_as_claude_sends_it(sandbox: SandboxEnv) -> None:
    path = memory_file(CRLF_FACTS)
    payload = {"hook_event_name": "PreToolUse", "session_id": "s1", "cwd": str(paths.home()),
               "transcript_path": "/t", "tool_name": "MultiEdit", "tool_use_id": "t1",
               "tool_input": {"file_path": str(path), "edits": [
                   {"old_string": "- Build with make.\n- Deploy by hand.", "new_string": "- Deploy by hand."},
                   {"old_string": "- Deploy by hand.", "new_string": "- Deploy by hand, as of today."}]}}
    result = run_hook(payload)
    assert result.returncode == 0 and result.stderr == b""
    output = json.loads(result.stdout)["hookSpecificOutput"]
    assert output["permissionDecision"] == "deny"
    assert '"today" (line 7)' in output["permissionDecisionReason"]


# --- the sweep: migration folders as monorepos keep them ----------------------------------------

TREE = {
    "db/migration/V27__accounts.sql": "create table accounts ();\n",
    "db/migration/V27_1__fix_accounts.sql": "alter table accounts add column x int;\n",
    "services/orders/src/main/resources/db/migration/V4__orders.sql": "create table orders ();\n",
    "services/orders/src/main/resources/db/migration/V5__order_lines.sql": "create table order_lines ();\n",
    "prisma/schema.prisma": "model User { id Int @id }\n",
    "prisma/migrations/20240101120000_init/migration.sql": "create table users ();\n",
    "prisma/migrations/20240301120000_add_posts/migration.sql": "create table posts ();\n",
    "prisma/migrations/migration_lock.toml": 'provider = "postgresql"\n',
    "tests/test_api.py": "class TestUsers:\n    def test_create(self):\n        pass\n",
    "requirements.txt": "-r deps/dev.txt\n--requirement=deps/../lint.txt\nrequests==2.31.0\n",
    "deps/dev.txt": "-c ../pins.txt\npytest==8.1.1\n",
    "lint.txt": "ruff==0.4.4\n",
    "pins.txt": "urllib3<2\n",
    "node_modules/x/requirements.txt": "-r ../../ignored.txt\n",
    "ignored.txt": "ruff==0.3.0\n",                      # taken in only from node_modules: not read
}


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> str:
    """One repository for every sweep of the module: the checks only read it."""
    return str(make_repo(tmp_path_factory.mktemp("r12") / "app", files=TREE))


def test_a_prisma_migration_folder_is_a_numbered_migration(tree: str) -> None:
    """Prisma keeps each migration as a folder holding `migration.sql`: "the latest is
    `20240101120000_init`" went unchecked once `20240301120000_add_posts` was made."""
    body = ("- The latest prisma migration is `20240101120000_init`.\n"
            "- The latest prisma migration is `20240301120000_add_posts`.\n"      # true: silent
            "- The next prisma migration will add comments.\n")                  # a plan, no number
    assert findings(tree, body) == {1: [("stale_sequence", "20240101120000")]}


def test_a_migration_folder_named_by_its_path_is_the_one_the_line_means(tree: str) -> None:
    """`db/migration` is all common words, so the line could not single out the root folder
    from a service's: the service's V5 (older than V26) kept every such claim silent."""
    body = ("- The latest migration in `db/migration` is V26.\n"
            "- The latest migration in db/migration is V27.\n"                   # V27_1 is newer
            "- The latest migration in db/migration is V27_1.\n"                 # true: silent
            "- The latest migration is V5 in services/orders/src/main/resources/db/migration.\n"
            "- The latest db migration is V26.\n")                               # which one: silent
    assert findings(tree, body) == {1: [("stale_sequence", "V26")], 2: [("stale_sequence", "V27")]}


def test_a_test_named_by_its_node_id_is_checked_by_file_and_by_name(tree: str) -> None:
    """Claude remembers flaky or slow tests by the node id pytest prints. The `:` made every
    such token a pointer (`host:port`), so a test file deleted since, or a test renamed
    away, stayed a confident memory."""
    body = ("- `tests/test_api.py::TestUsers::test_create` is flaky on CI.\n"       # there: silent
            "- `tests/test_api.py::test_create[sqlite]` is slow.\n"                 # a parameter: silent
            "- `tests/test_billing.py::test_invoice` is flaky on CI.\n"              # the file is gone
            "- `tests/test_api.py::test_delete_user` is flaky on CI.\n"              # the test is gone
            "- `other/test_x.py::test_y` is theirs.\n")                              # a folder never had
    assert findings(tree, body) == {3: [("vanished_artifact", "tests/test_billing.py::test_invoice")],
                                    4: [("vanished_artifact", "tests/test_api.py::test_delete_user")]}


def test_a_correction_that_opens_a_comment_it_never_closes_is_refused(tree: str, sandbox: SandboxEnv) -> None:
    """`<!--` in a correction made every later line of the file a comment: each fact below
    it silenced for good (and hidden from a rendered view), a rot finding among them."""
    path = memory_file(FRONT + "- The router is `src/legacy_router.py`.\n- The worker is `src/worker.py`.\n")
    before = path.read_bytes()
    assert [(f.line, f.token) for f in check_texts({"notes.md": before.decode()}, tree, "")] == [
        (7, "src/legacy_router.py"), (8, "src/worker.py")]
    for text in ("see the router <!-- TODO", "a <!-- b --> c <!-- d"):
        with pytest.raises(SupersedeRefused, match="opens an HTML comment"):
            supersede(str(path), 7, text)
    assert path.read_bytes() == before
    supersede(str(path), 7, "there is no router any more <!-- checked 2026-11-30 -->")
    assert [(f.line, f.token) for f in check_texts({"notes.md": path.read_text()}, tree, "")] == [
        (9, "src/worker.py")]


def test_a_comment_opener_inside_inline_code_hides_nothing(tree: str, sandbox: SandboxEnv) -> None:
    body = ("- Templates mark each slot with `<!--` and `-->` markers.\n"
            "- The router is `src/legacy_router.py`.\n"
            "- Slots are written `<!-- slot -->`; <!-- a note of several lines\n"
            "`src/in_a_note.py`\n"                                              # inside the note: silent
            "--> the worker is `src/worker.py`.\n")
    assert findings(tree, body) == {2: [("vanished_artifact", "src/legacy_router.py")],
                                    5: [("vanished_artifact", "src/worker.py")]}
    path = memory_file(FRONT + body)
    supersede(str(path), 8, "routing moved to `app/routes.py`, marked with `<!--` slots")
    assert "Correction (" in path.read_text().split("\n")[8]


def test_a_strike_mark_inside_inline_code_is_text_for_the_sweep_and_for_supersede(tree: str,
                                                                                 sandbox: SandboxEnv) -> None:
    body = ("- Struck facts are written `~~` around the text; the router is `src/legacy_router.py`.\n"
            "- `a~~b` is a literal; ~~the old worker `src/old_worker.py`~~ the worker is `src/worker.py`.\n")
    assert findings(tree, body) == {1: [("vanished_artifact", "src/legacy_router.py")],
                                    2: [("vanished_artifact", "src/worker.py")]}
    path = memory_file(FRONT + body)
    supersede(str(path), 7, "the router is gone")
    supersede(str(path), 9, "the worker is gone", expect=body.split("\n")[1])  # moved by the first
    lines = path.read_text().split("\n")
    assert lines[6] == "- ~~Struck facts are written `~~` around the text; the router is `src/legacy_router.py`.~~"
    assert lines[8] == ("- ~~`a~~b` is a literal;~~ ~~the old worker `src/old_worker.py`~~ "
                        "~~the worker is `src/worker.py`.~~")
    assert check_texts({"notes.md": path.read_text()}, tree, "") == []


def test_a_requirements_file_taken_in_by_another_states_the_builds_pins(tree: str) -> None:
    """`-r deps/dev.txt` in requirements.txt: pip installs what dev.txt pins, but only files
    named like requirements were read, so its pins never contradicted a memory."""
    body = ("- pytest 7.4.4 runs the tests.\n"          # deps/dev.txt
            "- ruff 0.3.0 lints.\n"                       # lint.txt, by the long form
            "- urllib3 2.2.1 pools connections.\n"        # pins.txt, a constraint of dev.txt
            "- pytest 8.1.1 runs the tests.\n"            # as the build says: silent
            "- requests 2.31.0 fetches.\n")
    assert findings(tree, body) == {1: [("stale_version_pin", "pytest 7.4.4")],
                                    2: [("stale_version_pin", "ruff 0.3.0")],
                                    3: [("stale_version_pin", "urllib3 2.2.1")]}


# --- the ledger (held) ---------------------------------------------------------------------------

SID = "5f0c2b1e-8a7d-4c3b-9e2f-1a0b9c8d7e6f"


def post_edit(file_path: str, cwd: Path, tool: str = "Edit") -> None:
    assert ledger.record_edit({"hook_event_name": "PostToolUse", "session_id": SID, "cwd": str(cwd),
                               "tool_name": tool, "tool_input": {"file_path": file_path},
                               "tool_response": {"filePath": file_path}})


def told() -> list[str]:
    return ledger.prompt_lines({"hook_event_name": "UserPromptSubmit", "session_id": SID, "cwd": "/",
                                "prompt": "go on"}, lambda lines: None)


def notice(path: Path) -> str:
    return f"The user or a tool changed `{path}` after the last edit of `main`."


def test_changes_are_told_in_the_order_of_the_edits_and_a_git_mv_once(sandbox: SandboxEnv, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "proj", files={"a.py": "a\n", "b.py": "b\n", "c.py": "c\n", "d.py": "d\n"})
    elsewhere = tmp_path / "other"
    elsewhere.mkdir()
    post_edit(str(repo / "a.py"), repo)
    post_edit("../proj/b.py", elsewhere)               # relative to the payload's cwd
    post_edit("c.py", repo, tool="Write")
    post_edit(str(repo / "a.py"), repo)                 # edited again: now the newest
    post_edit(str(repo / "d.py"), repo)
    assert told() == []
    for name in ("c.py", "a.py", "b.py"):
        (repo / name).write_text(name + " changed\n")
    git(repo, "mv", "d.py", "e.py")
    assert told() == [notice(repo / n) for n in ("b.py", "c.py", "a.py", "d.py")]
    assert told() == []
    gone = {f.path: (f.changed, f.deleted, f.told) for f in ledger.ledger_files()}
    assert gone[str(repo / "d.py")] == (True, True, True)
