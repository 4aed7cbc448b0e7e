"""Seed 003 (memory hygiene) read line by line against the program, through the contract: the
statements tests/test_seed_003.py and the memory tests did not yet check as a user
(`claudetto memory`, `claudetto supersede`) or Claude (`python -P -m hooks`) meets them, on
real repositories in the sandbox. Each test quotes the words it holds the program to."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from app.core import paths
from tests.support import SandboxEnv, make_repo, run_cli, run_hook

FRONT = "---\nname: Notes\ndescription: what the shop remembers\nmetadata:\n  type: project\n---\n"
TREE = {"src/router.py": "class Router:\n    def dispatch(self):\n        pass\n"}


def memory_of(repo: Path, notes: str, *, index: str = "- [Notes](notes.md) — what the shop remembers\n") -> Path:
    folder = paths.projects_dir() / paths.project_slug(str(repo)) / "memory"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "notes.md").write_text(FRONT + notes)
    (folder / "MEMORY.md").write_text(index)
    return folder


def findings(repo: Path) -> list[tuple[str, int | None, str, str]]:
    result = run_cli("memory", "--json", str(repo))
    assert result.returncode == 0, result.stderr
    return [(Path(r["file"]).name, r["line"], r["kind"], r["token"]) for r in json.loads(result.stdout)["findings"]]


# --- "Struck lines are skipped on the next sweep — the correction is also what silences the auditor"


def test_a_correction_that_names_the_old_name_silences_the_auditor(tmp_path: Path) -> None:
    """A correction says what became of the wrong name (`` `src/legacy_router.py` is now
    `src/router.py` ``); read as a fresh fact, the old name re-raised the very finding it
    answers, and the model was asked to strike its own correction. The correction's other
    names are facts like any (a gone one still fires), and so is the old name on a line that
    corrects nothing."""
    repo = make_repo(tmp_path / "shop", files=TREE)
    notes = ("- The router is `src/legacy_router.py`.\n"                   # 7: struck by the CLI below
             "- ~~Requests go through `LegacyRouter`.~~\n"                  # 8
             "\n"
             "- **Correction (2026-11-02)**: `LegacyRouter` became `Router`.\n"  # 10: a hand-written one
             "- ~~Charts render in `src/legacy_charts.py`.~~\n"             # 11
             "- Correction (2026-11-02): `src/legacy_charts.py` is now `src/charts_v2.py`.\n"  # 12
             "- Requests still reach `LegacyRouter` from the CLI.\n")       # 13: no correction
    folder = memory_of(repo, notes)
    result = run_cli("supersede", str(folder / "notes.md"), "--line", "7", "--correction",
                     "`src/legacy_router.py` is now `src/router.py`.")
    assert result.returncode == 0, result.stderr
    assert (folder / "notes.md").read_text().splitlines()[7].endswith(
        "): `src/legacy_router.py` is now `src/router.py`.")
    assert findings(repo) == [("notes.md", 13, "vanished_artifact", "src/charts_v2.py"),
                              ("notes.md", 14, "vanished_artifact", "LegacyRouter")]


def test_a_struck_index_line_and_its_correction_end_the_index_drift(tmp_path: Path) -> None:
    """The same for `MEMORY.md`: the pointer struck through the CLI, its correction naming the
    gone file and the one that replaced it, and the drift is gone."""
    repo = make_repo(tmp_path / "shop", files=TREE)
    folder = memory_of(repo, "- fine\n", index="- [Notes](notes.md) — facts\n- [Deploy](deploy.md) — how we deploy\n")
    (folder / "ops.md").write_text(FRONT + "- steps\n")
    assert findings(repo) == [("MEMORY.md", 2, "index_missing_file", "deploy.md"),
                              ("ops.md", None, "index_unlisted_file", "ops.md")]
    result = run_cli("supersede", str(folder / "MEMORY.md"), "--line", "2", "--correction",
                     "`deploy.md` is now `ops.md`: [Ops](ops.md)")
    assert result.returncode == 0, result.stderr
    assert findings(repo) == []


# --- "A backticked path/class/flag `git grep` can no longer find" ------------------------------


def test_a_class_named_by_one_of_its_methods_is_checked(tmp_path: Path) -> None:
    """Ruby, Javadoc and JSDoc name a method `LegacyRouter#dispatch`: the class is what the
    tree must still have (`LegacyRouter.dispatch` and `LegacyRouter::new` already were)."""
    repo = make_repo(tmp_path / "shop", files=TREE)
    memory_of(repo, "- Requests go through `LegacyRouter#dispatch`.\n- Then `Router#dispatch()` runs.\n"
                    "- See `router#L42` and `issue#42`.\n")
    assert findings(repo) == [("notes.md", 7, "vanished_artifact", "LegacyRouter#dispatch")]


# --- "MEMORY.md stays an index: one-line pointers only" ------------------------------------------


def pre_tool(sandbox: SandboxEnv, name: str, tool_input: dict[str, object]) -> str | None:
    folder = sandbox.config / "projects" / "-home-u-shop" / "memory"
    folder.mkdir(parents=True, exist_ok=True)
    payload = {"hook_event_name": "PreToolUse", "session_id": "s003", "cwd": str(sandbox.home),
               "transcript_path": "/t", "tool_name": "Write" if "content" in tool_input else "Edit",
               "tool_use_id": "t1", "tool_input": {"file_path": str(folder / name), **tool_input}}
    result = run_hook(payload)
    assert result.returncode == 0 and result.stderr == b""
    if not result.stdout:
        return None
    output = json.loads(result.stdout)["hookSpecificOutput"]
    assert output["permissionDecision"] == "deny"
    reason: str = output["permissionDecisionReason"]
    return reason


def test_a_fenced_block_in_the_index_is_no_pointer(sandbox: SandboxEnv) -> None:
    """Behind fences, a paragraph is still content Claude loads with the index every session:
    refused like the same paragraph without them. A block already in the index is a legacy
    line, never judged again; in a topic file fenced code stays no prose."""
    index = ("# Memory\n- [Build](build.md) — how it builds\n```text\nThe build uses make and ninja; deploys are "
             "manual and the staging box is flaky, so retry twice.\n```\n")
    reason = pre_tool(sandbox, "MEMORY.md", {"content": index})
    assert reason is not None and "line 3 is no pointer" in reason and "line 4 is no pointer" in reason
    (sandbox.config / "projects" / "-home-u-shop" / "memory" / "MEMORY.md").write_text(index)
    assert pre_tool(sandbox, "MEMORY.md", {"old_string": "- [Build](build.md) — how it builds\n",
                                           "new_string": "- [Build](build.md) — how it builds\n"
                                                         "- [Ops](ops.md) — how it runs\n"}) is None
    assert pre_tool(sandbox, "build.md", {"content": FRONT + "```text\nA paragraph of notes.\n```\n"}) is None


# --- SessionStart: the audit in additionalContext, at most ten findings ---------------------------


def session_start(repo: Path) -> str:
    payload = {"hook_event_name": "SessionStart", "session_id": "s003", "cwd": str(repo), "source": "startup",
               "transcript_path": str(repo / "t.jsonl")}
    result: subprocess.CompletedProcess[bytes] = run_hook(payload, cwd=repo)
    assert result.returncode == 0 and result.stderr == b""
    output = json.loads(result.stdout)["hookSpecificOutput"]
    assert output["hookEventName"] == "SessionStart"
    text: str = output["additionalContext"]
    return text


def test_session_start_names_ten_findings_then_counts_the_rest(tmp_path: Path) -> None:
    """Passes at once (documents what held): ten findings are all listed; the eleventh
    becomes the count, with the command that lists them all."""
    repo = make_repo(tmp_path / "shop", files=TREE)
    folder = memory_of(repo, "".join(f"- Step {n} is `src/gone_step_{n}.py`.\n" for n in range(10)))
    rows = session_start(repo).split("\n")
    assert rows[0].startswith(f"claudetto: 10 remembered facts in {folder} may be out of date.")
    assert rows[1:] == [f"- notes.md:{7 + n}: `src/gone_step_{n}.py` is not in the tree: no such file or folder, "
                        "and git grep finds no mention of it" for n in range(10)]
    with open(folder / "notes.md", "a") as fh:
        fh.write("- Step 10 is `src/gone_step_10.py`.\n")
    rows = session_start(repo).split("\n")
    assert rows[0].startswith(f"claudetto: 11 remembered facts in {folder} may be out of date.")
    assert len(rows) == 12 and rows[10].startswith("- notes.md:16: `src/gone_step_9.py`")
    from app.core.memory import command_name  # `claudetto`, or its script where no PATH names it

    assert rows[11] == f"(and 1 more finding: `{command_name()} memory` lists them all)"


# --- "that isn't on disk", "once `V28__*.sql` exists on disk" -------------------------------------


def test_a_file_deleted_from_disk_but_not_yet_committed_is_gone(tmp_path: Path) -> None:
    """The index still lists a file removed from the working tree; the seed asks what is on
    disk. The router path is no longer on disk nor mentioned: vanished. V28, deleted (its
    migration abandoned), no longer makes V27 the stale latest, nor "next is V28" a thing
    that already happened."""
    repo = make_repo(tmp_path / "shop", files={**TREE, "src/legacy_router.py": "x = 1\n",
                                               **{f"db/migration/V{n}__step.sql": "" for n in range(1, 29)}})
    (repo / "src" / "legacy_router.py").unlink()
    (repo / "db" / "migration" / "V28__step.sql").unlink()
    memory_of(repo, "- The router is `src/legacy_router.py`.\n- latest is `V27`\n- next is `V28`\n"
                    "- The old router file was `legacy_router.py`; see `src/router.py`.\n")
    assert findings(repo) == [("notes.md", 7, "vanished_artifact", "src/legacy_router.py")]


# --- "added prose must not use relative dates" ---------------------------------------------------


def test_a_relative_date_in_emphasis_is_still_prose(sandbox: SandboxEnv) -> None:
    """Markdown's `_last week_` is the phrase in italics (its underscores are word characters:
    no word edge showed it); inside a name, `last_week_report`, they are the name."""
    reason = pre_tool(sandbox, "build.md", {"content": FRONT + "- The deploy broke _last week_.\n"})
    assert reason is not None and '"last week" (line 7)' in reason
    assert pre_tool(sandbox, "build.md", {"content": FRONT + "- Reports go to last_week_report.csv.\n"}) is None


def test_a_kebab_case_feature_flag_the_tree_no_longer_reads_fires(tmp_path: Path) -> None:
    """"path/class/flag": a flag service's key is kebab-case (`new-checkout-flow`); on a line
    that calls it a flag it is checked like `ENABLE_NEW_CHECKOUT`. One the code still reads,
    or a `--fast-path` option that spells it, holds; on other lines kebab-case stays a word."""
    repo = make_repo(tmp_path / "shop", files={"src/flags.py": "FLAGS = ['fast-path']\nparser.add('--dry-run-all')\n"})
    memory_of(repo, "- The feature flag `new-checkout-flow` gates checkout.\n"
                    "- The flag `fast-path` speeds up the router.\n"
                    "- The toggle `dry-run-all` skips writes.\n"
                    "- Deploys use the `blue-green` strategy.\n")
    assert findings(repo) == [("notes.md", 7, "vanished_artifact", "new-checkout-flow")]


# --- "`MEMORY.md` lines pointing at files that no longer exist" ----------------------------------


def test_an_index_line_pointing_at_a_dangling_link_points_at_a_file_that_no_longer_exists(
        tmp_path: Path) -> None:
    """`deploy.md` is a link to a note deleted since: the name is there, the file is not, and
    Claude's read of it fails as for a missing one. A link to a file that is there holds."""
    repo = make_repo(tmp_path / "shop", files=TREE)
    folder = memory_of(repo, "- fine\n", index="- [Notes](notes.md) — facts\n- [Deploy](deploy.md) — how we deploy\n"
                                               "- [Ops](ops.md) — how it runs\n")
    kept = tmp_path / "notes-elsewhere"
    kept.mkdir()
    (kept / "ops.md").write_text(FRONT + "- steps\n")
    (folder / "ops.md").symlink_to(kept / "ops.md")
    (folder / "deploy.md").symlink_to(kept / "deploy.md")
    assert findings(repo) == [("MEMORY.md", 2, "index_missing_file", "deploy.md")]


# --- "the per-project memory directory under ~/.claude/projects/<slug>/memory/" ------------------


def test_a_project_named_through_a_symlink_is_swept_in_its_real_memory(tmp_path: Path) -> None:
    """Claude names memory after its working folder as getcwd gives it, symlinks resolved:
    `claudetto memory ~/work/shop` (a link to the checkout) found no memory and said all was
    well."""
    repo = make_repo(tmp_path / "shop", files=TREE)
    memory_of(repo, "- The router is `src/legacy_router.py`.\n")
    (tmp_path / "work").mkdir()
    (tmp_path / "work" / "shop").symlink_to(repo)
    result = run_cli("memory", "--json", str(tmp_path / "work" / "shop" / "src"))
    assert result.returncode == 0, result.stderr
    assert [(r["project"], r["line"], r["token"]) for r in json.loads(result.stdout)["findings"]] == [
        (str(repo), 7, "src/legacy_router.py")]
    text = run_cli("memory", str(tmp_path / "work" / "shop"))
    assert "1 finding in " in text.stdout and "no memory folder" not in text.stdout


# --- "strike it through and append a dated correction in the same file": MEMORY.md too ----------


def test_claude_may_strike_a_dangling_pointer_and_date_its_correction_in_the_index(sandbox: SandboxEnv) -> None:
    """SessionStart asks Claude to strike a wrong line and add a dated correction below it,
    and an index line at a gone file is one (`claudetto supersede` writes the same line). The
    lint refused that correction as "no pointer" unless it named a `.md` file: the two rules
    of the seed locked each other. One line below the strike, at most 200 characters, passes;
    a paragraph there, or a correction under no strike, is still no pointer."""
    folder = sandbox.config / "projects" / "-home-u-shop" / "memory"
    folder.mkdir(parents=True)
    pointer = "- [Deploy](deploy.md) — how we deploy\n"
    (folder / "MEMORY.md").write_text("# Memory\n" + pointer)
    struck = "- ~~[Deploy](deploy.md) — how we deploy~~\n"
    assert pre_tool(sandbox, "MEMORY.md", {
        "old_string": pointer,
        "new_string": struck + "- Correction (2026-11-02): the deploy steps now live in the ops notes.\n"}) is None
    reason = pre_tool(sandbox, "MEMORY.md", {
        "old_string": pointer,
        "new_string": struck + "- Correction (2026-11-02): " + "the deploy steps moved; " * 9 + "\n"})
    assert reason is not None and "line 3 is 2" in reason
    reason = pre_tool(sandbox, "MEMORY.md", {
        "old_string": pointer, "new_string": pointer + "- Correction (2026-11-02): the deploy steps moved.\n"})
    assert reason is not None and "line 3 is no pointer" in reason
