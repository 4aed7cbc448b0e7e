"""The memory sweep against real git repositories: vanished artifacts with every filter,
stale migration facts, index drift, the one batched git grep, and what SessionStart says."""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

import pytest

from app.core import memory, paths
from app.core.memory import Finding
from tests.support import SandboxEnv, git, make_repo

FRONT = "---\nname: notes\ndescription: project notes\nmetadata:\n  type: project\n---\n"
CODE = {
    "src/router.py": "class Router:\n    def dispatch(self):\n        return parse_args()\n",
    "src/cli/args.py": "def parse_args():\n    return []\n",
    "README.md": "# app\n",
}


def memory_folder(repo: Path) -> Path:
    folder = paths.projects_dir() / paths.project_slug(str(repo)) / "memory"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def write_memory(repo: Path, files: dict[str, str], index: bool = True) -> Path:
    """Memory files for `repo` (frontmatter added to topic files), with an index of them."""
    folder = memory_folder(repo)
    for name, body in files.items():
        (folder / name).write_text(body if name == "MEMORY.md" else FRONT + body)
    if index and "MEMORY.md" not in files:
        (folder / "MEMORY.md").write_text("".join(f"- [{n}]({n}) — notes\n" for n in files))
    return folder


def found(repo: Path) -> list[tuple[str, int | None, str, str]]:
    return [(os.path.basename(f.file), f.line, f.kind, f.token) for f in memory.sweep(str(repo))]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "app", files=CODE)


# --- vanished artifacts ---------------------------------------------------------------------


def test_vanished_path_file_and_symbol_are_found_and_present_ones_are_not(repo: Path, sandbox: SandboxEnv) -> None:
    write_memory(repo, {"notes.md": (
        "- Routing is `Router.dispatch` in `src/router.py`, args from `parse_args()`.\n"  # line 7
        "- The old router is `src/legacy_router.py`.\n"  # 8
        "- `LegacyRouter` handles the v1 paths.\n"  # 9
        "- Helpers sit in `router_helpers.py`.\n"  # 10
        "- The `src/cli/` folder and `args.py` hold the CLI.\n"  # 11
    )})
    assert found(repo) == [
        ("notes.md", 8, "vanished_artifact", "src/legacy_router.py"),
        ("notes.md", 9, "vanished_artifact", "LegacyRouter"),
        ("notes.md", 10, "vanished_artifact", "router_helpers.py"),
    ]


def test_a_finding_carries_the_contract_fields(repo: Path, sandbox: SandboxEnv) -> None:
    folder = write_memory(repo, {"notes.md": "- See `src/gone.py`.\n"})
    [finding] = memory.sweep(str(repo))
    assert finding == Finding(str(repo), str(folder / "notes.md"), 7, "vanished_artifact", "src/gone.py",
                              finding.message)
    assert "`src/gone.py`" in finding.message and "git grep" in finding.message
    assert memory.findings_json([finding]) == {"findings": [{
        "project": str(repo), "file": str(folder / "notes.md"), "line": 7, "kind": "vanished_artifact",
        "token": "src/gone.py", "message": finding.message}]}


def test_a_name_git_grep_finds_in_any_file_is_not_vanished(repo: Path, sandbox: SandboxEnv) -> None:
    (repo / "docs").mkdir()
    (repo / "docs" / "history.md").write_text("The LEGACYROUTER lived in src/legacy_router.py.\n")
    (repo / "untracked.txt").write_text("OldHelper is here, untracked\n")  # untracked, not ignored
    git(repo, "add", "docs")
    git(repo, "commit", "-q", "-m", "docs")
    write_memory(repo, {"notes.md": "- `src/legacy_router.py` and `LegacyRouter`.\n- `OldHelper` too.\n"
                                    "- `GoneHelper` is rot.\n"})
    assert found(repo) == [("notes.md", 9, "vanished_artifact", "GoneHelper")]


def test_a_path_on_disk_counts_even_when_git_ignores_it(repo: Path, sandbox: SandboxEnv) -> None:
    (repo / ".gitignore").write_text("local_cache/\n")
    (repo / "local_cache").mkdir()
    (repo / "local_cache" / "index.db").write_text("x")
    write_memory(repo, {"notes.md": "- The index is `local_cache/index.db`.\n- `src/gone.py` is rot.\n"})
    assert found(repo) == [("notes.md", 8, "vanished_artifact", "src/gone.py")]


def test_paths_relative_to_a_sub_project_and_bare_file_names_match_anywhere(repo: Path, sandbox: SandboxEnv) -> None:
    write_memory(repo, {"notes.md": "- `cli/args.py` and `args.py` and `./src/router.py`.\n"
                                    f"- `{repo}/src/router.py` by its absolute path.\n"
                                    f"- `{repo}/src/gone.py` is rot.\n"})
    assert found(repo) == [("notes.md", 9, "vanished_artifact", f"{repo}/src/gone.py")]


TRAPS = [
    ("a flag", "Run with `--legacy-router`."),
    ("a placeholder", "Each app has `<app>/legacy.py`."),
    ("an abbreviated path", "See `src/…/legacy.py` and `src/.../legacy.py`."),
    ("an absolute path outside", "Config in `/opt/legacy/router.py`."),
    ("a home path", "Config in `~/legacy/router.py`."),
    ("a parent path", "Shared code in `../shared/LegacyRouter.py`."),
    ("a URL", "Docs: `https://example.org/src/legacy_router.py`."),
    ("a first folder the tree never had", "The e2e suite is `e2e/legacy_spec.ts`."),
    ("a regenerable folder", "Cache in `node_modules/.cache/legacy.json`."),
    ("an example", "For example `src/legacy_router.py`."),
    ("an e.g.", "A module, e.g. `src/legacy_router.py`."),
    ("history", "`LegacyRouter` was removed in May."),
    ("a rename", "`OldRouter` was renamed to `Router`."),
    ("a negation", "There is no `src/legacy_router.py` any more."),
    ("advice", "Avoid `ThreadPoolExecutor` in handlers."),
    ("a don't", "Don't call `requests_session` directly."),
    ("a plan", "TODO: add `src/cache_layer.py`."),
    ("a future", "We will move it to `src/routing/`."),
    ("a library", "Use `TestRestTemplate` from the Spring library."),
    ("generated output", "`src/generated_api.py` is generated by the build."),
    ("a local file", "Secrets go in `.env.local`."),
    ("a product name", "We deploy to `GitHub` and `PostgreSQL`."),
    ("an environment variable", "Set `LEGACY_ROUTER_URL`."),
    ("a plain word", "The `router` is fast."),
    ("a dotted module", "Import `app.legacy.router`."),
    ("a command", "Run `make legacy-router`."),
    ("a line with a path outside the tree", "`LegacyConfig` is read from `/etc/legacy/app.conf`."),
    ("a struck span", "~~`src/legacy_router.py` routes v1~~"),
    ("a struck line left open", "~~`src/legacy_router.py` routes v1 and more"),
    ("an HTML comment", "<!-- `src/legacy_router.py` -->"),
    ("a version", "Pinned at `v2.3.1`."),
    ("a host and port", "Listens on `localhost:8080`."),
    ("Claude's own file", "Rules are in `CLAUDE.md` and `settings.local.json`."),
    ("another memory file", "See `notes.md` and `other.md` for the rest."),
]


@pytest.mark.parametrize(("why", "line"), TRAPS, ids=[t[0] for t in TRAPS])
def test_each_filter_stays_silent_while_the_check_still_runs(why: str, line: str, repo: Path,
                                                              sandbox: SandboxEnv) -> None:
    write_memory(repo, {"notes.md": f"- {line}\n- The control: `src/control_gone.py`.\n", "other.md": ""})
    assert found(repo) == [("notes.md", 8, "vanished_artifact", "src/control_gone.py")], why


def test_fenced_code_and_example_sections_are_not_facts(repo: Path, sandbox: SandboxEnv) -> None:
    write_memory(repo, {"notes.md": (
        "```python\nfrom src.legacy_router import LegacyRouter  # `LegacyRouter`\n```\n"  # 7-9
        "## Example layout\n- `src/example_gone.py`\n- `ExampleGone`\n"  # 10-12
        "## Facts\n- `src/fact_gone.py`\n"  # 13-14
        "~~~\n`TildeFenceGone`\n~~~\n"  # 15-17
    )})
    assert found(repo) == [("notes.md", 14, "vanished_artifact", "src/fact_gone.py")]


def test_frontmatter_is_not_checked(repo: Path, sandbox: SandboxEnv) -> None:
    folder = memory_folder(repo)
    (folder / "notes.md").write_text("---\nname: `LegacyRouter`\ndescription: `src/gone.py`\ntype: project\n---\n"
                                     "- `src/also_gone.py`\n")
    (folder / "MEMORY.md").write_text("- [Notes](notes.md) — n\n")
    assert found(repo) == [("notes.md", 6, "vanished_artifact", "src/also_gone.py")]


def test_names_are_matched_without_regard_to_case(repo: Path, sandbox: SandboxEnv) -> None:
    write_memory(repo, {"notes.md": "- `ROUTER.DISPATCH` and `parseArgs` vs `Parse_Args`.\n"})
    # parseArgs is not parse_args: a different name, so it is reported
    assert found(repo) == [("notes.md", 7, "vanished_artifact", "parseArgs")]


def test_without_git_nothing_is_claimed_vanished_but_the_index_is_still_checked(tmp_path: Path,
                                                                                sandbox: SandboxEnv) -> None:
    plain = tmp_path / "plain"
    (plain / "src").mkdir(parents=True)
    folder = memory_folder(plain)
    (folder / "notes.md").write_text(FRONT + "- `src/gone.py` and `GoneClass`.\n")
    assert found(plain) == [("notes.md", None, "index_unlisted_file", "notes.md")]


def test_git_is_never_asked_about_a_parent_repository(tmp_path: Path, sandbox: SandboxEnv) -> None:
    parent = make_repo(tmp_path / "parent", files={"a.py": "class ParentOnly: pass\n"})
    inner = parent / "inner"
    (inner / "src").mkdir(parents=True)
    tree = memory.read_tree(str(inner), ["ParentOnly"])
    assert not tree.grepped and tree.files == []
    assert not tree.mentions("ParentOnly")  # the parent's content is never read


def git_recorder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A `git` first on PATH that appends its arguments to a log, then runs the real git."""
    real = next(p for p in os.environ["PATH"].split(os.pathsep) if os.access(os.path.join(p, "git"), os.X_OK))
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "git.log"
    script = bin_dir / "git"
    script.write_text(f"#!/bin/sh\nprintf '%s\\n' \"$*\" >> {log}\nexec {real}/git \"$@\"\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    return log


@pytest.mark.parametrize("count", [10, 300], ids=["fixed strings", "alternations"])
def test_one_batched_git_grep_per_sweep(count: int, repo: Path, sandbox: SandboxEnv, tmp_path: Path,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    (repo / "src" / "many.py").write_text(
        "".join(f"class Present{i}Widget: pass\n# see src/a.b+_{i}.py\n" for i in range(0, count, 2))
        + "".join(f"# src/aXbb_{i}.py\n" for i in range(1, count, 2)))
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "many")
    # names are fixed strings: `src/a.b+_N.py` is found where it is written, and never
    # where only the regex a.b+ would match (src/aXbb_N.py)
    lines = "".join(f"- `Present{i}Widget` with `src/a.b+_{i}.py`\n" for i in range(count))
    write_memory(repo, {"notes.md": lines})
    log = git_recorder(tmp_path, monkeypatch)

    findings = memory.sweep(str(repo))
    calls = log.read_text().splitlines()
    greps = [c for c in calls if " grep " in f" {c} "]
    assert len(greps) == 1 and len(calls) == 2  # one listing, one grep: never one per name
    assert all("--git-dir=" in c and "core.hooksPath=/dev/null" in c for c in calls)
    assert (" -F " in greps[0]) == (count <= memory.GREP_FIXED_MAX)
    odd = {f"Present{i}Widget" for i in range(1, count, 2)} | {f"src/a.b+_{i}.py" for i in range(1, count, 2)}
    assert {f.token for f in findings} == odd


def test_names_the_listing_settles_are_not_grepped(repo: Path, sandbox: SandboxEnv, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    write_memory(repo, {"notes.md": "- `src/router.py` and `args.py`.\n"})
    log = git_recorder(tmp_path, monkeypatch)
    assert found(repo) == []
    assert [c.split()[-1] for c in log.read_text().splitlines()] == ["--exclude-standard"]  # ls-files only


# --- stale sequences ------------------------------------------------------------------------


def flyway_repo(tmp_path: Path, top: int) -> Path:
    files = {f"src/main/resources/db/migration/V{n}__step_{n}.sql": "-- x\n" for n in range(1, top + 1)}
    return make_repo(tmp_path / "svc", files={**files, "README.md": "x\n"})


def test_flyway_latest_and_next_go_stale(tmp_path: Path, sandbox: SandboxEnv) -> None:
    repo = flyway_repo(tmp_path, 28)
    write_memory(repo, {"migrations.md": (
        "- The latest migration is V27.\n"  # 7: V28 exists
        "- Next migration is `V28`.\n"  # 8: V28 exists
        "- The next migration is V29.\n"  # 9: right
        "- V28 is the latest migration.\n"  # 10: right
        "- `V26__step_26.sql` is the newest migration.\n"  # 11: stale (backward form)
        "- ~~The latest migration is V20~~\n"  # 12: struck
        "- The latest migration was V20 back then.\n"  # 13: history
        "- If the latest migration were V20 we would need a backfill.\n"  # 14: hypothetical
        "- For example the latest migration is V2.\n"  # 15: example
    )})
    rows = [(line, token) for _, line, kind, token in found(repo) if kind == "stale_sequence"]
    assert rows == [(7, "V27"), (8, "V28"), (11, "V26")]
    messages = [f.message for f in memory.sweep(str(repo))]
    assert "memory says the latest migration is V27, but V28__step_28.sql exists" in messages
    assert "memory says the next migration is V28, but V28__step_28.sql already exists" in messages


def test_a_v_number_outside_migration_talk_is_no_sequence_fact(tmp_path: Path, sandbox: SandboxEnv) -> None:
    repo = flyway_repo(tmp_path, 5)
    folder = memory_folder(repo)
    (folder / "api.md").write_text("---\nname: API\ndescription: endpoints\ntype: project\n---\n"
                                   "- The latest API is V2.\n- The latest migration is V3.\n")
    (folder / "MEMORY.md").write_text("- [API](api.md) — endpoints\n")
    assert [(line, token) for _, line, kind, token in found(repo)] == [(7, "V3")]


def test_a_file_about_migrations_needs_no_word_on_the_line(tmp_path: Path, sandbox: SandboxEnv) -> None:
    repo = flyway_repo(tmp_path, 4)
    folder = memory_folder(repo)
    (folder / "db.md").write_text("---\nname: DB\ndescription: Flyway migrations\ntype: project\n---\n"
                                  "- V3 is the latest.\n")
    (folder / "MEMORY.md").write_text("- [DB](db.md) — db\n")
    assert [(line, kind) for _, line, kind, _ in found(repo)] == [(6, "stale_sequence")]


def test_numbered_migration_folders_and_which_one_a_line_means(tmp_path: Path, sandbox: SandboxEnv) -> None:
    files = {f"shop/orders/migrations/{n:04d}_o{n}.py": "" for n in range(1, 32)}
    files |= {f"shop/catalog/migrations/{n:04d}_c{n}.py": "" for n in range(1, 13)}
    files |= {f"api/migrations/{n:06d}_step.up.sql": "" for n in range(1, 15)}
    files |= {f"api/migrations/{n:06d}_step.down.sql": "" for n in range(1, 15)}
    repo = make_repo(tmp_path / "shop", files={**files, "README.md": "x\n"})
    write_memory(repo, {"db.md": (
        "- The latest orders migration is `0029_o29.py`.\n"  # 7: stale (orders has 0031)
        "- The next catalog migration is 0012.\n"  # 8: stale (0012 exists)
        "- The latest catalog migration is 0012.\n"  # 9: right
        "- The latest migration is 0020.\n"  # 10: catalog's newest is 0012: not stale everywhere
        "- The latest api migration is 000012_step.\n"  # 11: stale (000014)
        "- The last 3 migrations (0029-0031) add indexes.\n"  # 12: not a latest claim
    )})
    assert [(line, token) for _, line, kind, token in found(repo) if kind == "stale_sequence"] == [
        (7, "0029"), (8, "0012"), (11, "000012")]


# --- index drift ----------------------------------------------------------------------------


def test_index_drift_both_ways(repo: Path, sandbox: SandboxEnv) -> None:
    folder = memory_folder(repo)
    (folder / "MEMORY.md").write_text(
        "# Memory\n"
        "- [Build](build.md) — how it builds\n"
        "- [Deploy](deploy.md) — steps\n"  # 3: missing
        "- [Guide](https://example.org/guide.md) — a URL, not a file\n"
        "- [Top](#top) — an anchor\n"
        "- [Sub](topics/sub%20one.md#part) — a subfolder, encoded\n"
        "- Bare mention: mentioned.md\n"
        "- ~~[Old](old.md) — struck~~\n"
    )
    for name in ("build.md", "orphan.md", "mentioned.md", "old.md", "topics/sub one.md", ".hidden.md"):
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(FRONT + "- fine\n")
    (folder / "notes.txt").write_text("not memory")
    assert found(repo) == [
        ("MEMORY.md", 3, "index_missing_file", "deploy.md"),
        ("old.md", None, "index_unlisted_file", "old.md"),
        ("orphan.md", None, "index_unlisted_file", "orphan.md"),
    ]


def test_no_index_at_all_leaves_every_topic_unlisted(repo: Path, sandbox: SandboxEnv) -> None:
    write_memory(repo, {"a.md": "- x\n", "b.md": "- y\n"}, index=False)
    findings = memory.sweep(str(repo))
    assert [(os.path.basename(f.file), f.kind) for f in findings] == [("a.md", "index_unlisted_file"),
                                                                     ("b.md", "index_unlisted_file")]
    assert "there is no MEMORY.md" in findings[0].message


def test_an_index_that_cannot_be_read_lists_nothing_as_unlisted(repo: Path, sandbox: SandboxEnv) -> None:
    folder = write_memory(repo, {"a.md": "- `src/gone.py`\n"}, index=False)
    os.mkfifo(folder / "MEMORY.md")  # never opened for reading: it would block
    assert found(repo) == [("a.md", 7, "vanished_artifact", "src/gone.py")]


# --- the sweep as a whole -------------------------------------------------------------------


def snapshot(folder: Path) -> dict[str, tuple[bytes, int, int]]:
    return {str(p.relative_to(folder)): (p.read_bytes(), p.stat().st_mtime_ns, p.stat().st_mode)
            for p in sorted(folder.rglob("*"))}


def test_the_sweep_writes_nothing_into_memory(repo: Path, sandbox: SandboxEnv) -> None:
    folder = write_memory(repo, {"notes.md": "- `src/gone.py`\n"})
    (folder / "orphan.md").write_text(FRONT)
    before = snapshot(folder)
    assert len(memory.sweep(str(repo))) == 2
    assert snapshot(folder) == before


def test_a_healthy_memory_and_a_missing_folder_are_silent(repo: Path, sandbox: SandboxEnv) -> None:
    assert memory.sweep(str(repo)) == []
    write_memory(repo, {"notes.md": "- `Router` in `src/router.py`.\n"})
    assert memory.sweep(str(repo)) == []
    assert memory.session_start_context({"cwd": str(repo)}) == ""


def test_worktrees_share_the_main_repository_memory(repo: Path, sandbox: SandboxEnv, tmp_path: Path) -> None:
    write_memory(repo, {"notes.md": "- `src/feature_only.py` holds the feature.\n"})
    worktree = tmp_path / "wt"
    git(repo, "worktree", "add", "-q", "-b", "feature", str(worktree))
    (worktree / "src" / "feature_only.py").write_text("x = 1\n")
    assert memory.memory_dir(str(worktree)) == memory.memory_dir(str(repo))
    assert memory.sweep(str(worktree)) == []  # judged against the checkout the session is in
    assert memory.sweep(str(repo)) == []  # and true in a checkout that reads the same memory
    git(repo, "worktree", "remove", "--force", str(worktree))
    assert [f.kind for f in memory.sweep(str(repo))] == ["vanished_artifact"]


def test_unreadable_and_odd_memory_files_are_skipped(repo: Path, sandbox: SandboxEnv) -> None:
    folder = write_memory(repo, {"notes.md": "- `src/gone.py`\n"})
    os.mkfifo(folder / "fifo.md")
    (folder / "binary.md").write_bytes(b"\xff\xfe\x00`src/gone_too.py`\n")
    kinds = sorted((os.path.basename(f.file), f.kind) for f in memory.sweep(str(repo)))
    assert ("notes.md", "vanished_artifact") in kinds and ("fifo.md", "index_unlisted_file") not in kinds


# --- what SessionStart says -----------------------------------------------------------------


def test_session_start_context_shows_ten_findings_and_the_count_of_the_rest(repo: Path, sandbox: SandboxEnv) -> None:
    folder = write_memory(repo, {"notes.md": "".join(f"- `src/gone_{i:02d}.py`\n" for i in range(14))})
    text = memory.session_start_context({"cwd": str(repo / "src"), "hook_event_name": "SessionStart"})
    lines = text.splitlines()
    assert lines[0].startswith("claudetto: 14 remembered facts in ") and str(folder) in lines[0]
    assert "re-verify" in lines[0] and "claudetto supersede" in lines[0]
    assert lines[1] == ("- notes.md:7: `src/gone_00.py` is not in the tree: no such file or folder, and git grep "
                        "finds no mention of it")
    assert len(lines) == 12 and lines[-1] == f"(and 4 more findings: `{memory.command_name()} memory` lists them all)"


def test_session_start_context_stays_under_the_cap_whatever_the_tokens(repo: Path, sandbox: SandboxEnv) -> None:
    from app.core.ledger_line import utf16_len
    from hooks.output import CONTEXT_CAP

    long = "😀" * 3000
    write_memory(repo, {"notes.md": "".join(f"- `src/{long}{i}.py`\n" for i in range(12))})
    text = memory.session_start_context({"cwd": str(repo)})
    assert text and utf16_len(text) < CONTEXT_CAP and len(text.splitlines()) == 12


@pytest.mark.parametrize("cwd", [None, 7, "relative/dir", "/no/such/dir", "/tmp/\0x"])
def test_session_start_context_with_a_bad_cwd_is_silent(cwd: object, sandbox: SandboxEnv) -> None:
    assert memory.session_start_context({"cwd": cwd}) == ""


def test_no_ui_imports_in_the_core() -> None:
    import subprocess

    probe = "import sys, app.core.memory, app.core.memory_lint; print(sorted(m for m in sys.modules if m.split('.')[0] in ('textual', 'rich', 'humanize')))"
    out = subprocess.run([sys.executable, "-P", "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
