"""Red team, round nine: memory hygiene and the writes claudetto makes on the user's behalf.
Findings that would make a user strike a true line (a quantity or an API version read as a
package version, a changelog entry, a date, a sentence's full stop inside the backticks),
and supersedes that would lose a byte, refuse a line the dashboard shows, or write what the
index cannot hold. Real git repositories and memory folders, the CLI and the hooks as a user
and Claude run them; every file compared byte for byte."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import pytest

from app.core import memory
from app.core.memory import SupersedeRefused, add_to_index, supersede
from app.core.memory_lint import index_problems
from app.data.memory import file_lines
from tests.core.test_memory import FRONT, found, memory_folder, write_memory
from tests.support import SandboxEnv, make_repo, run_cli, run_hook

TODAY = "2026-11-30"
CODE = {
    "src/router.py": "class Router:\n    def dispatch(self):\n        return parse_args()\n",
    "pyproject.toml": '[project]\nname = "app"\ndependencies = ["jhelm==1.3.1", "requests>=2.31"]\n',
    "README.md": "# app\n",
}


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "app", files=CODE)


def cli_supersede(path: Path, line: int, text: str, *extra: str) -> tuple[int, str]:
    done = run_cli("supersede", str(path), "--line", str(line), "--correction", text, *extra)
    assert "Traceback" not in done.stderr, done.stderr
    return done.returncode, done.stderr


# --- findings that would make a user strike a true line --------------------------------------


@pytest.mark.parametrize("line", [
    "- requests: 2.5 s timeout on every call.",
    "- requests 2.5s is the retry backoff.",
    "- The requests 2.0 API flow signs each call.",
    "- requests 1.0 spec of the OAuth handshake.",
    "- 2024-01-05: requests 2.28 in prod.\n- 2024-02-01: jhelm 1.2.0 in prod.",
    "- 2024-01-05 requests 2.28 deployed.\n- [2024-02-01] jhelm 1.2.0 deployed.",
    "- v1.2.0: requests 2.28 and jhelm 1.2.0.",
    "- [1.2.0] - requests 2.28.",
    "- ## 1.2.0 requests 2.28",
    "- jhelm 2024.01.05 is the day the chart went live.",
    "- We switched to requests 2.28 for the proxy.",
], ids=["seconds", "seconds-glued", "api-version", "spec-version", "dated-log", "dated-log-no-colon",
        "version-label", "keep-a-changelog", "version-heading", "a-date", "switched"])
def test_a_number_that_is_no_version_of_the_name_before_it_stays_silent(repo: Path, line: str) -> None:
    """A quantity, an API's version, a changelog entry and a date beside a dependency's
    name are no claim about the version the build pins: a finding would ask to strike a
    true line. The same file's true claims are still found (the check runs)."""
    write_memory(repo, {"notes.md": f"- The requests 2.28 and jhelm 1.3.1 pair.\n{line}\n"})
    assert found(repo) == [("notes.md", 7, "stale_version_pin", "requests 2.28")]


def test_one_dated_fact_is_still_a_fact(repo: Path) -> None:
    """The write lint asks for absolute dates, so Claude dates its facts: one line opening
    with a date is a fact with its date, checked; only several make a log of what was."""
    write_memory(repo, {"notes.md": "- 2026-08-11: jhelm is pinned to 1.2.0.\n- The router is `src/router.py`.\n"})
    assert found(repo) == [("notes.md", 7, "stale_version_pin", "jhelm is pinned to 1.2.0")]


def test_a_calendar_versioned_build_still_grounds_a_dated_pin(tmp_path: Path) -> None:
    """A date-like version is checked where the build itself uses calendar versions."""
    repo = make_repo(tmp_path / "cal", files={"requirements.txt": "certifi==2024.8.30\n", "README.md": "x\n"})
    write_memory(repo, {"notes.md": "- We pin certifi 2023.7.22.\n- certifi 2024.8.30 is current.\n"})
    assert found(repo) == [("notes.md", 7, "stale_version_pin", "certifi 2023.7.22")]


@pytest.mark.parametrize("token", ["src/router.py.", "src/router.py)", "Router.dispatch()", "src/router.py:12."])
def test_a_sentence_stop_inside_the_backticks_is_no_part_of_the_name(repo: Path, token: str) -> None:
    """`src/router.py.` at the end of a sentence names the router, which is there: looked
    for with its full stop, a file on disk was reported gone."""
    write_memory(repo, {"notes.md": f"- The router is `{token}`\n- The old one is `src/gone.py.`\n"})
    assert found(repo) == [("notes.md", 8, "vanished_artifact", "src/gone.py.")]


# --- supersede: the line the dashboard shows, every other byte kept -----------------------


def test_a_dangling_first_index_line_behind_a_bom_is_struck_as_the_dashboard_shows_it(repo: Path) -> None:
    """The viewer reads line 1 with the editor's BOM; `i` passes that text as the line the
    user saw. It was refused as "changed" every time, so the finding could never be fixed."""
    folder = memory_folder(repo)
    index = folder / "MEMORY.md"
    (folder / "notes.md").write_text(FRONT)
    before = "\ufeff- [Gone](gone.md) — old\r\n- [Notes](notes.md) — n\r\n".encode()
    index.write_bytes(before)
    [finding] = memory.sweep(str(repo))
    assert (finding.line, finding.kind) == (1, "index_missing_file")
    shown = file_lines(str(index))[0]
    assert shown.startswith("\ufeff")
    done = supersede(str(index), 1, "`gone.md` no longer exists.", expect=shown, today=TODAY)
    assert done.line == 1
    assert index.read_bytes() == ("\ufeff- ~~[Gone](gone.md) — old~~\r\n"
                                  "- Correction (2026-11-30): `gone.md` no longer exists.\r\n"
                                  "- [Notes](notes.md) — n\r\n").encode()
    assert memory.sweep(str(repo)) == []


def test_a_line_corrected_in_part_can_have_its_new_part_struck(repo: Path) -> None:
    """Claude often corrects in place (`~~old~~ new`). The sweep reads the new part, so a
    finding lands on that line; supersede refused it as "already struck", leaving a finding
    nothing could clear. The unstruck text is struck, the old strike kept as it was."""
    folder = write_memory(repo, {"notes.md": "- ~~`src/old.py` routes~~ now `src/gone.py` routes\n"
                                             "- ~~fully struck~~\n- ~~open strike `src/x.py`\n"})
    assert found(repo) == [("notes.md", 7, "vanished_artifact", "src/gone.py")]
    supersede(str(folder / "notes.md"), 7, "the router is `src/router.py`", today=TODAY)
    assert (folder / "notes.md").read_text() == FRONT + (
        "- ~~`src/old.py` routes~~ ~~now `src/gone.py` routes~~\n"
        "- Correction (2026-11-30): the router is `src/router.py`\n"
        "- ~~fully struck~~\n- ~~open strike `src/x.py`\n")
    assert found(repo) == []
    before = (folder / "notes.md").read_bytes()
    for number, shown in ((9, "- ~~fully struck~~"), (10, "- ~~open strike `src/x.py`")):
        # nothing left to strike; an open `~~` cannot say where it ends
        with pytest.raises(SupersedeRefused, match="already struck"):
            supersede(str(folder / "notes.md"), number, "x", expect=shown, today=TODAY)
    assert (folder / "notes.md").read_bytes() == before


def test_bytes_that_are_not_utf8_elsewhere_in_the_file_are_kept(repo: Path) -> None:
    """A Latin-1 café three lines away made the whole file "not UTF-8": its findings could
    not be superseded. Only the struck line has to be text; every other byte is kept."""
    folder = write_memory(repo, {"notes.md": ""})
    body = FRONT.encode() + b"- The caf\xe9 wifi is `guest`\n- Routing is `src/gone.py`.\n\xff\xfe tail"
    (folder / "notes.md").write_bytes(body)
    assert found(repo) == [("notes.md", 8, "vanished_artifact", "src/gone.py")]
    code, err = cli_supersede(folder / "notes.md", 8, "routing is `src/router.py`")
    assert (code, err) == (0, "")
    today = time.strftime("%Y-%m-%d").encode()
    assert (folder / "notes.md").read_bytes() == FRONT.encode() + (
        b"- The caf\xe9 wifi is `guest`\n- ~~Routing is `src/gone.py`.~~\n"
        b"- Correction (" + today + b"): routing is `src/router.py`\n\xff\xfe tail")
    code, err = cli_supersede(folder / "notes.md", 7, "x", "--expect", "- The caf\ufffd wifi is `guest`")
    assert code == 1 and "line 7" in err and "not UTF-8" in err and err.count("\n") == 1


def test_a_long_correction_never_swells_the_index_and_is_one_line_anywhere(repo: Path) -> None:
    """MEMORY.md is recalled from its first 200 lines or 25 KB: a 10,000-character correction
    there would push true pointers out of what Claude loads, and break the one-line-pointer
    rule the write lint holds Claude to. A topic file takes a correction, not a document."""
    folder = write_memory(repo, {"notes.md": "- Routing is `src/gone.py`.\n"})
    index = folder / "MEMORY.md"
    index.write_bytes(b"- [Gone](gone.md) - old\n- [notes](notes.md) - n\n")
    before_index, before_notes = index.read_bytes(), (folder / "notes.md").read_bytes()
    code, err = cli_supersede(index, 1, "x" * 10_000)
    assert code == 1 and "over 2000" in err and err.count("\n") == 1
    code, err = cli_supersede(index, 1, "gone " * 40)
    assert code == 1 and "pointer line" in err and err.count("\n") == 1
    code, err = cli_supersede(folder / "notes.md", 7, "y" * 10_000)
    assert code == 1 and "over 2000" in err
    assert (index.read_bytes(), (folder / "notes.md").read_bytes()) == (before_index, before_notes)
    code, err = cli_supersede(folder / "notes.md", 7, "z" * 1500)
    assert (code, err) == (0, "")
    assert supersede(str(index), 1, "`gone.md` no longer exists.", dry_run=True).correction.startswith("- ")


def test_extended_attributes_survive_a_supersede_and_an_index_line(repo: Path) -> None:
    """A rewrite by rename makes a new inode: a file manager's tag or a sync tool's id on
    the memory file (`user.*` attributes) went with the old one."""
    folder = write_memory(repo, {"notes.md": "- Routing is `src/gone.py`.\n"})
    (folder / "extra.md").write_text(FRONT)
    notes, index = folder / "notes.md", folder / "MEMORY.md"
    try:
        os.setxattr(notes, "user.xdg.tags", b"work")
        os.setxattr(index, "user.sync.id", b"42")
    except OSError:
        pytest.skip("no user extended attributes on this file system")
    supersede(str(notes), 7, "routing is `src/router.py`", today=TODAY)
    add_to_index(str(folder / "extra.md"))
    assert os.getxattr(notes, "user.xdg.tags") == b"work"
    assert os.getxattr(index, "user.sync.id") == b"42"
    assert "Correction" in notes.read_text() and "extra.md" in index.read_text()


@pytest.mark.parametrize(("body", "number", "after"), [
    (b"\t- tabbed `fact`\n", 1, b"\t- ~~tabbed `fact`~~\n\t- Correction (2026-11-30): new\n"),
    (b"- a\r\n- last", 2, b"- a\r\n- ~~last~~\r\n- Correction (2026-11-30): new"),
    (b"- same\n- same\n", 2, b"- same\n- ~~same~~\n- Correction (2026-11-30): new\n"),
    (b"> - quoted  \n", 1, b"> - ~~quoted~~\n> - Correction (2026-11-30): new\n"),
], ids=["tab", "crlf-last-line-without-newline", "the-second-of-two-same-lines", "quote"])
def test_only_the_struck_line_changes(body: bytes, number: int, after: bytes, sandbox: SandboxEnv) -> None:
    folder = memory_folder(sandbox.root / "p")
    path = folder / "t.md"
    path.write_bytes(body)
    supersede(str(path), number, "new", today=TODAY)
    assert path.read_bytes() == after


def test_an_empty_file_and_a_moved_line_write_nothing(repo: Path) -> None:
    """Claude rewrote the file since the finding: the line the finding named moved down.
    With the text the user saw, the wrong line is never struck; an empty file has none."""
    folder = write_memory(repo, {"notes.md": "- Routing is `src/gone.py`.\n"})
    [finding] = memory.sweep(str(repo))
    assert finding.line is not None
    shown = file_lines(finding.file)[finding.line - 1]
    notes = folder / "notes.md"
    notes.write_text(FRONT + "- The port is 8080.\n- Routing is `src/gone.py`.\n")
    before = notes.read_bytes()
    with pytest.raises(SupersedeRefused, match="changed"):
        supersede(finding.file, finding.line, "right", expect=shown, today=TODAY)
    assert notes.read_bytes() == before
    (folder / "empty.md").write_bytes(b"")
    code, err = cli_supersede(folder / "empty.md", 1, "x")
    assert code == 1 and "out of range" in err and (folder / "empty.md").read_bytes() == b""


# --- the write lint on the corrections claudetto writes ----------------------------------


def test_the_write_lint_lets_claude_keep_a_superseded_file(repo: Path) -> None:
    """A file claudetto corrected stays one the PreToolUse lint accepts when Claude edits
    it next: the struck line and the dated correction are no relative date, no paragraph."""
    folder = write_memory(repo, {"notes.md": "- Routing is `src/gone.py`.\n"})
    index = folder / "MEMORY.md"
    index.write_text("- [Gone](gone.md) — old\n- [notes](notes.md) — n\n")
    supersede(str(folder / "notes.md"), 7, "routing is `src/router.py` now", today=TODAY)
    supersede(str(index), 1, "`gone.md` no longer exists.", today=TODAY)
    for path, old, new in ((folder / "notes.md", "now", "today"), (index, "— n", "— notes")):
        content = path.read_text()
        payload = {"session_id": "s", "cwd": str(repo), "hook_event_name": "PreToolUse", "tool_name": "Write",
                   "tool_input": {"file_path": str(path), "content": content.replace(old, new, 1)}}
        done = run_hook(payload, cwd=repo)
        assert done.returncode == 0
        refused = json.loads(done.stdout)["hookSpecificOutput"]["permissionDecisionReason"] if done.stdout else ""
        assert ("today" in refused) == (new == "today"), refused


# --- the index line keeps the index's own form ------------------------------------------


EM = "\u2014"


@pytest.mark.parametrize(("index", "added"), [
    ("* [Build](build.md) - how to build\n", f"* [Deploy](deploy.md) {EM} the deploy steps\n"),
    ("+ [Build](build.md): how to build\n", f"+ [Deploy](deploy.md) {EM} the deploy steps\n"),
    ("# Index\n\n1. [Build](build.md) - build\n2. [Ops](ops.md) - ops\n", f"3. [Deploy](deploy.md) {EM} the deploy steps\n"),
    ("1. [Build](build.md) - build\n1. [Ops](ops.md) - ops\n", f"1. [Deploy](deploy.md) {EM} the deploy steps\n"),
    ("## Project\n  -   [Build](build.md)\n", f"  -   [Deploy](deploy.md) {EM} the deploy steps\n"),
    (f"- [Build](build.md) {EM} build\r\n", f"- [Deploy](deploy.md) {EM} the deploy steps\r\n"),
    ("Notes kept by Claude.\n", f"- [Deploy](deploy.md) {EM} the deploy steps\n"),
], ids=["star", "plus", "numbered", "lazy-numbering", "indented", "claude", "no-pointer-yet"])
def test_the_added_index_line_is_an_item_of_the_index_list(index: str, added: str, sandbox: SandboxEnv) -> None:
    """An index a user keeps as `* [Title](file.md)` items or as a numbered list got a
    `- [Title](file.md) — hook` line appended: Markdown starts a second list at another
    marker, and a numbered list lost its count."""
    folder = memory_folder(sandbox.root / "p")
    for name in ("build.md", "ops.md"):
        (folder / name).write_text(FRONT)
    (folder / "deploy.md").write_text("---\nname: Deploy\ndescription: the deploy steps\ntype: project\n---\n")
    (folder / "MEMORY.md").write_bytes(index.encode())
    shown = add_to_index(str(folder / "deploy.md"), dry_run=True)
    done = add_to_index(str(folder / "deploy.md"), seen=shown.seen)
    assert (folder / "MEMORY.md").read_bytes() == (index + added).encode()
    assert done.line == shown.line == added.rstrip("\r\n")
    assert index_problems([(1, done.line)]) == []  # the write lint would take it from Claude too
    assert not [f for f in memory.check_texts({"MEMORY.md": (folder / "MEMORY.md").read_text(), "deploy.md": FRONT},
                                              str(sandbox.root), str(folder)) if f.token == "deploy.md"]


# --- more lines that are no fact about the tree, and a table row struck as a row ---------


def test_an_indented_code_block_is_an_example_like_a_fenced_one(repo: Path) -> None:
    write_memory(repo, {"notes.md": (
        "Set up:\n\n    pip install requests==2.28\n    python src/old_setup.py `src/gone_a.py`\n\n"
        "- item\n    - nested `src/gone_b.py`\n- The pair is requests 2.28.\n")})
    assert found(repo) == [("notes.md", 13, "vanished_artifact", "src/gone_b.py"),
                           ("notes.md", 14, "stale_version_pin", "requests 2.28")]


def test_an_environment_variable_beside_a_flag_is_not_read_as_a_feature_flag(repo: Path) -> None:
    write_memory(repo, {"notes.md": "- Set the env var `DATABASE_URL`; the `--dry-run` flag skips it.\n"
                                    "- Create `src/settings.py` if missing.\n"
                                    "- The `NEW_CHECKOUT` feature flag gates the router.\n"})
    assert found(repo) == [("notes.md", 9, "vanished_artifact", "NEW_CHECKOUT")]


def test_a_table_row_is_struck_cell_by_cell_and_the_correction_is_a_row(repo: Path) -> None:
    """A plain correction line amid a table ends it: the rows below it became a paragraph."""
    table = ("| file | what |\n|---|---|\n| `src/gone.py` | the `a|b` router \\| old |\n"
             "| `src/router.py` | routes |\n")
    folder = write_memory(repo, {"notes.md": table})
    assert found(repo) == [("notes.md", 9, "vanished_artifact", "src/gone.py")]
    notes = folder / "notes.md"
    supersede(str(notes), 9, "routing is in `src/router.py` | see below", today=TODAY)
    assert notes.read_text() == FRONT + (
        "| file | what |\n|---|---|\n| ~~`src/gone.py`~~ | ~~the `a|b` router \\| old~~ |\n"
        "| Correction (2026-11-30): routing is in `src/router.py` \\| see below |\n"
        "| `src/router.py` | routes |\n")
    assert found(repo) == []
    before = notes.read_bytes()
    for number, why in ((7, "header row"), (8, "delimiter row"), (9, "already struck")):
        with pytest.raises(SupersedeRefused, match=why):
            supersede(str(notes), number, "x", expect=file_lines(str(notes))[number - 1], today=TODAY)
    assert notes.read_bytes() == before


# --- a number from a listing, after Claude edited the file -------------------------------


def test_a_number_from_the_session_start_listing_never_strikes_the_line_claude_moved_onto_it(
        repo: Path, sandbox: SandboxEnv) -> None:
    """SessionStart names `notes.md:8`; Claude then adds a fact above it in the same session
    and runs the command the context gave, with the number it gave: line 8 is now a true
    fact, and it was struck with a correction meant for another."""
    folder = write_memory(repo, {"notes.md": "- The port is 8080.\n- Routing is `src/gone.py`.\n"})
    done = run_hook({"session_id": "s1", "cwd": str(repo), "hook_event_name": "SessionStart", "source": "startup"},
                    cwd=repo)
    context = json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "- notes.md:8: `src/gone.py`" in context and "--expect" in context
    notes = folder / "notes.md"
    edited = FRONT + "- Deploys go through `make deploy`.\n- The port is 8080.\n- Routing is `src/gone.py`.\n"
    notes.write_text(edited)
    code, err = cli_supersede(notes, 8, "routing is `src/router.py`")
    assert code == 1 and "changed since the memory findings named it" in err and "--expect" in err
    assert notes.read_text() == edited
    listing = json.loads(run_cli("memory", "--json", str(repo)).stdout)["findings"]
    assert [(f["line"], f["token"]) for f in listing] == [(9, "src/gone.py")]
    assert cli_supersede(notes, 9, "routing is `src/router.py`") == (0, "")
    assert "- ~~Routing is `src/gone.py`.~~\n- Correction (" in notes.read_text()


def test_a_listed_number_still_holding_its_line_is_struck_after_an_edit_elsewhere(repo: Path) -> None:
    folder = write_memory(repo, {"notes.md": "- Routing is `src/gone.py`.\n- The port is 8080.\n"})
    [finding] = memory.sweep(str(repo))
    assert finding.line is not None
    notes = folder / "notes.md"
    notes.write_text(notes.read_text() + "- Added below by Claude.\n")
    assert supersede(finding.file, finding.line, "routing is `src/router.py`", today=TODAY).line == 7
    (sandbox_state := Path(os.environ["CLAUDETTO_HOME"]) / "memory-listed-lines.json").write_text("[" * 100_000)
    notes.write_text(FRONT + "- x\n- y\n")  # a record that cannot be read: no guard, no failure
    assert supersede(finding.file, 8, "z", today=TODAY).line == 8 and sandbox_state.exists()


# --- a memory folder that cannot take the write ------------------------------------------


def _cli_with_file_size_limit(limit: int, *args: str) -> subprocess.CompletedProcess[str]:
    """The CLI in a process that cannot write a file past `limit` bytes: a disk that fills up."""
    def limited() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return subprocess.run([sys.executable, "-P", "-c", "import sys; from app.cli import main; sys.exit(main())",
                           *args], capture_output=True, text=True, preexec_fn=limited, timeout=60, check=False)


def test_a_full_disk_leaves_the_memory_file_and_no_temp_file(repo: Path) -> None:
    folder = write_memory(repo, {"notes.md": "- Routing is `src/gone.py`.\n" + "- filler line\n" * 200})
    notes = folder / "notes.md"
    before = notes.read_bytes()
    done = _cli_with_file_size_limit(len(before) + 10, "supersede", str(notes), "--line", "7", "--correction",
                                     "routing is `src/router.py`")
    assert done.returncode == 1 and done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith(f"claudetto supersede: cannot write {notes}") and "nothing changed" in done.stderr
    assert notes.read_bytes() == before
    assert sorted(p.name for p in folder.iterdir()) == ["MEMORY.md", "notes.md"]


def test_a_memory_folder_on_a_read_only_mount_is_said_so(repo: Path) -> None:
    folder = write_memory(repo, {"notes.md": "- Routing is `src/gone.py`.\n"})
    (folder / "extra.md").write_text(FRONT)
    bind = subprocess.run(["mount", "--bind", str(folder), str(folder)], capture_output=True, check=False)
    if bind.returncode != 0:
        pytest.skip("no mount here (needs root)")
    try:
        subprocess.run(["mount", "-o", "remount,bind,ro", str(folder)], check=True, capture_output=True)
        code, err = cli_supersede(folder / "notes.md", 7, "x")
        assert code == 1 and "is on a read-only file system; nothing changed" in err and err.count("\n") == 1
        with pytest.raises(memory.IndexRefused, match="read-only file system"):
            add_to_index(str(folder / "extra.md"))
        assert [f.kind for f in memory.sweep(str(repo))] == ["vanished_artifact", "index_unlisted_file"]
    finally:
        subprocess.run(["umount", str(folder)], check=True)


def test_a_comment_of_several_lines_is_a_note_like_one_of_a_single_line(repo: Path) -> None:
    write_memory(repo, {"notes.md": "<!--\nOld: the router is `src/legacy.py`, jhelm 1.2.0\n-->\n"
                                    "- The router is `src/router.py`. <!-- was `src/a.py`\n  and `src/b.py` -->\n"
                                    "<details>\n\n- `src/gone.py` routes\n</details>\n"})
    assert found(repo) == [("notes.md", 14, "vanished_artifact", "src/gone.py")]


@pytest.mark.parametrize(("link", "name"), [
    ("[Team](<team notes.md>)", "team notes.md"),
    ("[A](a(2).md)", "a(2).md"),
    ("[B](<b (old).md> 'the old one')", "b (old).md"),
    ("[C](c.md (the c file))", "c.md"),
    ("[D](<./d e.md#part>)", "d e.md"),
], ids=["angle-brackets", "balanced-parens", "angle-and-single-quoted-title", "parenthesised-title", "angle-anchor"])
def test_every_link_form_markdown_allows_points_at_its_file(link: str, name: str, repo: Path) -> None:
    """`[Team](<team notes.md>)` (Markdown's form for a name with spaces) read as a link to
    `notes.md`, gone: a finding asking to strike a true pointer, and recall of the topic with it."""
    folder = memory_folder(repo)
    (folder / name).write_text(FRONT)
    (folder / "MEMORY.md").write_text(f"- {link} — notes\n- [Gone](gone.md) — x\n")
    assert found(repo) == [("MEMORY.md", 2, "index_missing_file", "gone.md")]


def test_a_memory_file_linked_into_the_project_is_refused_by_both_names_and_says_where_it_points(
        repo: Path) -> None:
    """notes.md in memory is a link to a doc of the project: by its memory name the refusal
    said it "is not in a memory folder" (it is, by name); it names where it really is."""
    doc = repo / "docs" / "notes.md"
    doc.parent.mkdir()
    doc.write_bytes(b"- Routing is `src/gone.py`.\n")
    folder = memory_folder(repo)
    (folder / "notes.md").symlink_to(doc)
    code, err = cli_supersede(folder / "notes.md", 1, "x")
    assert code == 1 and f"(a link to {doc}) is not in a memory folder" in err and err.count("\n") == 1
    code, err = cli_supersede(doc, 1, "x")
    assert code == 1 and f"{doc} is not in a memory folder" in err
    assert doc.read_bytes() == b"- Routing is `src/gone.py`.\n" and (folder / "notes.md").is_symlink()


def test_a_5_mb_memory_file_is_refused_in_one_line_that_names_it_once(sandbox: SandboxEnv) -> None:
    folder = memory_folder(sandbox.root / "p")
    big = folder / "big.md"
    big.write_bytes(b"- fact\n" * 750_000)
    code, err = cli_supersede(big, 1, "x")
    assert code == 1 and err.count(str(big)) == 1 and "longer than 1048576 bytes" in err
    assert "nothing changed" in err and err.count("\n") == 1
    assert big.read_bytes() == b"- fact\n" * 750_000
