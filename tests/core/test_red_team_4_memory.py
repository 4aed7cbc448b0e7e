"""Red team, round four: memory findings that would be wrong, supersedes that would strike
the wrong line or lose one, and the write lint, against the memory-hygiene seed. Real git
repositories, real worktrees, real memory folders, the hooks and the CLI as Claude and a
user run them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from app.core import memory
from tests.core.test_memory import FRONT, found, memory_folder, write_memory
from tests.support import SandboxEnv, git, make_repo, run_cli

CODE = {
    "src/router.py": "class Router:\n    def dispatch(self):\n        return parse_args()\n",
    "pyproject.toml": '[project]\nname = "app"\ndependencies = ["jhelm==1.3.1"]\n',
    "README.md": "# app\n",
}


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "app", files=CODE)


# --- findings that would be wrong ---------------------------------------------------------


def test_a_path_relative_to_the_root_holds_from_a_subfolder(repo: Path) -> None:
    write_memory(repo, {"notes.md": "- The router is `src/router.py`, also `./src/router.py` and "
                                    f"`{repo}/src/router.py`.\n"})
    assert found(repo) == []
    assert memory.session_start_context({"cwd": str(repo / "src")}) == ""


def test_a_home_path_is_a_pointer_never_checked(repo: Path) -> None:
    write_memory(repo, {"notes.md": "- The deploy key is in `~/.config/app/deploy_key.toml`.\n"
                                    "- Tokens live in `$HOME/.app_tokens.json`.\n"})
    assert found(repo) == []


def test_a_worktree_on_an_older_commit_does_not_call_main_facts_gone(repo: Path, tmp_path: Path) -> None:
    """Memory is shared by every worktree of a repository. A worktree cut before the main
    checkout gained a file must not ask the model to strike the (true) fact about it."""
    worktree = tmp_path / "wt"
    git(repo, "worktree", "add", "-q", "-b", "old", str(worktree))
    (repo / "src" / "billing_engine.py").write_text("class BillingEngine:\n    pass\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "billing")
    write_memory(repo, {"notes.md": "- Billing lives in `src/billing_engine.py` (`BillingEngine`).\n"})
    assert found(repo) == []
    assert found(worktree) == []
    assert memory.session_start_context({"cwd": str(worktree)}) == ""


def test_a_worktree_with_an_older_pin_does_not_call_the_main_pin_stale(repo: Path, tmp_path: Path) -> None:
    worktree = tmp_path / "wt"
    git(repo, "worktree", "add", "-q", "-b", "old", str(worktree))
    (repo / "pyproject.toml").write_text('[project]\nname = "app"\ndependencies = ["jhelm==1.5.2"]\n')
    git(repo, "commit", "-q", "-am", "bump")
    write_memory(repo, {"notes.md": "- The build uses jhelm 1.5.2.\n"})
    assert found(repo) == []
    assert found(worktree) == []


def test_a_fact_gone_from_both_checkouts_is_still_found_from_the_worktree(repo: Path, tmp_path: Path) -> None:
    worktree = tmp_path / "wt"
    git(repo, "worktree", "add", "-q", "-b", "old", str(worktree))
    write_memory(repo, {"notes.md": "- The router is `src/legacy_router.py`.\n- The build uses jhelm 1.2.0.\n"})
    kinds = [(line, kind) for _, line, kind, _ in found(worktree)]
    assert kinds == [(7, "vanished_artifact"), (8, "stale_version_pin")]


def test_a_version_the_repo_pins_is_not_moved_on(repo: Path) -> None:
    (repo / "requirements.txt").write_text("requests==2.31.0\njhelm==1.3.1\n")
    (repo / "pyproject.toml").write_text('[project]\nname = "app"\ndependencies = ["requests>=2.0", "jhelm~=1.3"]\n')
    write_memory(repo, {"notes.md": "- We use requests 2.31.0 and jhelm 1.3.1.\n"})
    assert found(repo) == []


# --- the write lint: a legitimate write let through, a forbidden one refused --------------

GOOD = "---\nname: Build\ndescription: how the shop builds\nmetadata:\n  type: project\n---\n"


@pytest.mark.parametrize("line", [
    "- The worker retries as soon as the lock is released.",
    "- The cache evicts the least recently used entry; most recently used stays.",
    "- Releases go out on the last Friday of each month.",
    "- The freeze starts the day before each release.",
    "- The weekly report covers the last week of traffic, every Monday.",
])
def test_a_legitimate_fact_is_not_refused_for_a_relative_date(line: str) -> None:
    from tests.hooks.test_memory_lint import memory_dir, write

    assert write(memory_dir() / "build.md", GOOD + line + "\n") is None


@pytest.mark.parametrize(("line", "word"), [
    ("- The build broke the day before.", "the day before"),
    ("- Soon the API moves to v2.", "Soon"),
    ("- Recently the deploy moved to ninja.", "Recently"),
    ("- We switched last Friday.", "last Friday"),
    ("- Deployed last week of the sprint, as planned last week.", "last week"),
])
def test_a_relative_date_is_still_refused(line: str, word: str) -> None:
    from tests.hooks.test_memory_lint import memory_dir, write

    reason = write(memory_dir() / "build.md", GOOD + line + "\n")
    assert reason is not None and f'"{word}" (line 7)' in reason


@pytest.mark.parametrize("front", [
    "\ufeff---\nname: B\ndescription: d\ntype: feedback\n---\n",  # an editor's BOM, the older flat type
    "---\r\nname: B\r\ndescription: d\r\nmetadata: {type: user}\r\n---\r\n",
    "---\nname: B\ndescription: d\nmetadata:\n  type: reference  # kept\n---\n",
])
def test_legitimate_frontmatter_forms_are_let_through(front: str) -> None:
    from tests.hooks.test_memory_lint import memory_dir, write

    assert write(memory_dir() / "build.md", front + "- Uses make.\n") is None


@pytest.mark.parametrize("front", [
    "---\nname: B\ndescription: d\n---\n",  # no type
    "---\nname: B\ndescription: d\nmetadata:\n  type: notes\n---\n",  # not one of the four
    "---\nname: B\nmetadata:\n  type: user\n---\n",  # no description
    "- Uses make.\n---\nname: B\ndescription: d\ntype: user\n---\n",  # frontmatter not at the top
])
def test_incomplete_frontmatter_is_refused(front: str) -> None:
    from tests.hooks.test_memory_lint import memory_dir, write

    reason = write(memory_dir() / "build.md", front + "- Uses make.\n")
    assert reason is not None and "frontmatter" in reason


def test_the_index_takes_pointers_only_and_no_frontmatter() -> None:
    from tests.hooks.test_memory_lint import memory_dir, write

    index = memory_dir() / "MEMORY.md"
    assert write(index, "# Memory\n\n- [Build](build.md) — how it builds\n- deploy.md: the deploy steps\n") is None
    reason = write(index, "- [Build](build.md) — builds\nThe build uses make and ninja, and it is slow.\n")
    assert reason is not None and "line 2 is no pointer" in reason
    reason = write(index, "---\nname: index\n---\n- [Build](build.md)\n")
    assert reason is not None and "takes no frontmatter" in reason


# --- supersede: the right line, no line lost ----------------------------------------------


def _supersede(path: Path, *args: str) -> tuple[int, str, str]:
    result = run_cli("supersede", str(path), *args)
    return result.returncode, result.stdout, result.stderr


def test_supersede_of_a_crlf_file_keeps_every_ending_and_silences_the_finding(repo: Path) -> None:
    folder = write_memory(repo, {"notes.md": "- The router is `src/legacy_router.py`.\n- Uses make.\n"})
    notes = folder / "notes.md"
    notes.write_bytes(notes.read_bytes().replace(b"\n", b"\r\n"))
    assert [line for _, line, _, _ in found(repo)] == [7]
    code, _, err = _supersede(notes, "--line", "7", "--correction", "The router is `src/router.py`.")
    assert (code, err) == (0, "")
    lines = notes.read_bytes().split(b"\r\n")
    assert lines[6] == b"- ~~The router is `src/legacy_router.py`.~~"
    assert lines[7].startswith(b"- Correction (") and lines[7].endswith(b"): The router is `src/router.py`.")
    assert lines[8] == b"- Uses make." and lines[-1] == b"" and b"\n" not in notes.read_bytes().replace(b"\r\n", b"")
    assert found(repo) == []  # the strike is what silences the auditor


def test_supersede_of_a_line_that_appears_twice_strikes_the_one_named(repo: Path) -> None:
    folder = write_memory(repo, {"notes.md": "- Deploys use `make ship`.\n- Tests run in CI.\n- Deploys use `make ship`.\n"})
    notes = folder / "notes.md"
    code, _, err = _supersede(notes, "--line", "9", "--expect", "- Deploys use `make ship`.",
                              "--correction", "Deploys use `make deploy`.")
    assert (code, err) == (0, "")
    body = notes.read_text().splitlines()[6:]
    assert body[0] == "- Deploys use `make ship`." and body[2] == "- ~~Deploys use `make ship`.~~"
    assert body[3].endswith("Deploys use `make deploy`.") and len(body) == 4


def test_a_number_read_before_claude_edited_the_file_is_refused_with_expect(repo: Path) -> None:
    folder = write_memory(repo, {"notes.md": "- Uses make.\n- The router is `src/legacy_router.py`.\n"})
    notes = folder / "notes.md"
    text = notes.read_text()
    notes.write_text(text.replace("- Uses make.\n", "- Uses make.\n- Uses ninja for C.\n"))  # Claude's Edit
    code, _, err = _supersede(notes, "--line", "8", "--expect", "- The router is `src/legacy_router.py`.",
                              "--correction", "x")
    assert code == 1 and "line 8" in err and "changed" in err and err.count("\n") == 1
    assert "~~" not in notes.read_text()


def test_concurrent_supersedes_lose_no_line_and_strike_only_lines_meant(repo: Path) -> None:
    from concurrent.futures import ThreadPoolExecutor

    facts = [f"- Fact number {n} is `src/gone_{n}.py`." for n in range(6)]
    folder = write_memory(repo, {"notes.md": "".join(f + "\n" for f in facts)})
    notes = folder / "notes.md"
    targets = [(7 + n, facts[n]) for n in (0, 2, 4, 5)]
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda t: _supersede(notes, "--line", str(t[0]), "--expect", t[1],
                                                     "--correction", f"fixed {t[0]}"), targets))
    for code, _, err in results:
        assert code in (0, 1) and "Traceback" not in err
    body = notes.read_text().splitlines()[6:]
    struck = [line for line in body if "~~" in line]
    plain = [line for line in body if "~~" not in line and "Correction (" not in line]
    corrections = [line for line in body if "Correction (" in line]
    assert len(struck) == len(corrections) == sum(code == 0 for code, _, _ in results) >= 1
    assert sorted(plain + [s.replace("~~", "") for s in struck]) == sorted(facts)  # none lost
    assert all(s.replace("~~", "") in [f for _, f in targets] for s in struck)  # only lines meant


def test_supersede_refusals_exit_1_with_one_line_and_usage_exit_2(repo: Path) -> None:
    folder = write_memory(repo, {"notes.md": "- Uses make.\n"})
    notes = folder / "notes.md"
    before = notes.read_bytes()
    for args in (["--line", "99", "--correction", "x"], ["--line", "2", "--correction", "x"],
                 ["--line", "7", "--correction", "   "], ["--line", "7", "--correction", "a\x1b[31mb"]):
        code, out, err = _supersede(notes, *args)
        assert (code, out) == (1, "") and err.count("\n") == 1 and "Traceback" not in err, args
    code, _, err = _supersede(notes, "--line", "7")
    assert code == 2 and "Traceback" not in err
    outside = repo / "notes.md"
    outside.write_text("- Uses make.\n")
    code, _, err = _supersede(outside, "--line", "1", "--correction", "x")
    assert code == 1 and "not in a memory folder" in err
    assert notes.read_bytes() == before and outside.read_text() == "- Uses make.\n"


# --- the SessionStart audit, as Claude runs it ----------------------------------------------


def _session_start(cwd: Path) -> str:
    from tests.support import run_hook

    payload = {"hook_event_name": "SessionStart", "session_id": "5e7f3a2b-0000-4000-8000-000000000001",
               "cwd": str(cwd), "transcript_path": "/t.jsonl", "source": "startup"}
    result = run_hook(payload, cwd=cwd)
    assert result.returncode == 0 and result.stderr == b""
    if not result.stdout:
        return ""
    out = json.loads(result.stdout)["hookSpecificOutput"]
    assert out["hookEventName"] == "SessionStart"
    text: str = out["additionalContext"]
    return text


def test_session_start_is_silent_when_healthy_and_names_each_kind_of_rot(repo: Path) -> None:
    (repo / "db" / "migration").mkdir(parents=True)
    for n in (26, 27, 28):
        (repo / "db" / "migration" / f"V{n}__step.sql").write_text("select 1;\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "migrations")
    folder = write_memory(repo, {
        "notes.md": "- The router is `src/router.py` (`Router`).\n- The build uses jhelm 1.3.1.\n"
                    "- The latest migration is `V28`.\n- ~~The router was `src/legacy_router.py`.~~\n"
                    "- Release line `4.1.x` is maintained.\n- For example `src/example_only.py`.\n",
    })
    assert _session_start(repo) == ""
    (folder / "notes.md").write_text(FRONT + "- The router is `src/legacy_router.py`.\n- The build uses jhelm 1.2.0.\n"
                                     "- The latest migration is `V27`.\n- The next migration is `V28`.\n")
    (folder / "orphan.md").write_text(FRONT + "- Uses make.\n")
    with open(folder / "MEMORY.md", "a") as fh:
        fh.write("- [Gone](gone.md) — was here\n")
    text = _session_start(repo)
    head, *rows = text.split("\n")
    assert head.startswith(f"claudetto: 6 remembered facts in {folder} may be out of date. Each is a request to "
                           "re-verify against the code, not a verdict.")
    assert "claudetto supersede FILE --line N --correction TEXT" in head
    assert rows[0] == ("- notes.md:7: `src/legacy_router.py` is not in the tree: no such file or folder, and git grep "
                       "finds no mention of it")
    joined = "\n".join(rows)
    for needle in ("notes.md:8:", "jhelm", "notes.md:9:", "V27", "notes.md:10:", "V28", "MEMORY.md:", "gone.md",
                   "orphan.md"):
        assert needle in joined, needle
    assert len(rows) == 6


def test_session_start_in_an_older_worktree_does_not_ask_to_strike_true_facts(repo: Path, tmp_path: Path) -> None:
    worktree = repo / ".claude" / "worktrees" / "old"
    git(repo, "worktree", "add", "-q", "-b", "worktree-old", str(worktree))
    (repo / "src" / "billing_engine.py").write_text("class BillingEngine:\n    pass\n")
    git(repo, "add", "src")
    git(repo, "commit", "-q", "-m", "billing")
    write_memory(repo, {"notes.md": "- Billing lives in `src/billing_engine.py`.\n"})
    assert _session_start(worktree) == ""


def test_a_paragraph_behind_a_heading_in_the_index_is_refused() -> None:
    from tests.hooks.test_memory_lint import memory_dir, write

    prose = "## " + "The build uses make and ninja, deploys are manual, and the staging box is flaky. " * 3
    reason = write(memory_dir() / "MEMORY.md", f"# Memory\n{prose}\n- [Build](build.md) — how it builds\n")
    assert reason is not None and "line 2 is" in reason and "over 200" in reason


def test_a_date_counted_from_now_is_refused() -> None:
    from tests.hooks.test_memory_lint import memory_dir, write

    reason = write(memory_dir() / "build.md", GOOD + "- The old API goes away two weeks from now.\n")
    assert reason is not None and '"two weeks from now" (line 7)' in reason
    assert write(memory_dir() / "build.md", GOOD + "- Tokens expire in 2 days (a policy, not a date).\n") is None


def test_index_links_in_every_form_claude_writes_find_their_files(repo: Path) -> None:
    folder = memory_folder(repo)
    (folder / "sub").mkdir()
    for name in ("team notes.md", "deploy.md", "sub/x.md", "a (2).md", "plain.md"):
        (folder / name).write_text(FRONT + "- Uses make.\n")
    (folder / "MEMORY.md").write_text(
        "# Memory\n- [Team](team%20notes.md) — who\n- [Deploy](./deploy.md#steps) — how\n"
        "- [X](<sub/x.md>) — sub\n- [Two](a%20%282%29.md) — two\n- plain.md: plain notes\n")
    assert found(repo) == []
    (folder / "deploy.md").unlink()
    assert [(name, line, kind) for name, line, kind, _ in found(repo)] == [("MEMORY.md", 3, "index_missing_file")]


def test_a_write_into_memory_through_a_symlinked_folder_is_judged(sandbox: SandboxEnv) -> None:
    """The memory folder reached through a link whose spelling names neither `projects` nor
    `memory` (`~/notes -> <config>/projects/<slug>/memory`) is still memory."""
    from tests.hooks.test_memory_lint import memory_dir, write

    link = sandbox.home / "notes"
    link.symlink_to(memory_dir())
    reason = write(link / "build.md", "- Uses make.\n")
    assert reason is not None and "frontmatter" in reason
    assert write(link / "build.md", GOOD + "- Uses make.\n") is None
    elsewhere = sandbox.home / "docs"
    elsewhere.mkdir()
    assert write(elsewhere / "build.md", "- Uses make, changed yesterday.\n") is None  # not memory: never touched


@pytest.mark.parametrize("fact", [
    "- Run it with `--no-legacy-router` to skip it.",  # a flag
    "- Handlers live in `src/<name>_handler.py`.",  # a placeholder
    "- The router is `src/…/legacy_router.py`.",  # an abbreviation
    "- The router is `src/.../legacy_router.py`.",
    "- nginx reads `/etc/nginx/sites-enabled/legacy_router.conf`.",  # rooted outside this tree
    "- Logs go to `/var/log/app/legacy_router.log`.",
])
def test_pointers_are_never_checked(repo: Path, fact: str) -> None:
    write_memory(repo, {"notes.md": fact + "\n"})
    assert found(repo) == []


def test_the_same_names_as_facts_of_the_tree_are_checked(repo: Path) -> None:
    """The filters above are what silences those lines: the same name as a plain fact is found."""
    write_memory(repo, {"notes.md": "- The router is `src/legacy_router.py`.\n- Routing is `LegacyRouter`.\n"})
    assert [(line, kind) for _, line, kind, _ in found(repo)] == [(7, "vanished_artifact"), (8, "vanished_artifact")]


def test_names_inside_a_submodule_are_in_the_tree(tmp_path: Path) -> None:
    """git grep and git ls-files stop at a submodule unless told: a class, a file name or a
    path that lives in a checked-out submodule is part of the tree, not rot."""
    sub = make_repo(tmp_path / "payments", files={"pay/gateway.py": "class PaymentGateway:\n    pass\n"})
    top = make_repo(tmp_path / "shop")
    git(top, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(sub), "libs/payments")
    git(top, "commit", "-q", "-m", "payments")
    write_memory(top, {"notes.md": "- Payments go through `PaymentGateway` in `gateway.py` "
                                   "(`libs/payments/pay/gateway.py`, `pay/gateway.py`).\n"
                                   "- The old one was `LegacyGateway`, gone now.\n"
                                   "- Refunds use `RefundGateway`.\n"})
    assert [(line, token) for _, line, _, token in found(top)] == [(9, "RefundGateway")]


def test_two_bare_numbers_from_one_listing_never_strike_a_line_not_meant(repo: Path) -> None:
    """Two supersedes racing with numbers read from one listing, no --expect: the lower one
    pushes the other down, so that one is refused (or it went first and both hold)."""
    from concurrent.futures import ThreadPoolExecutor

    facts = [f"- Fact {n} is `src/gone_{n}.py`." for n in range(4)]
    notes = write_memory(repo, {"notes.md": "".join(f + "\n" for f in facts)}) / "notes.md"
    with ThreadPoolExecutor(2) as pool:
        results = list(pool.map(lambda n: _supersede(notes, "--line", str(n), "--correction", f"fix {n}"), (7, 9)))
    struck = [line.replace("~~", "") for line in notes.read_text().splitlines() if "~~" in line]
    assert set(struck) <= {facts[0], facts[2]} and facts[0] in struck
    assert (facts[2] in struck) == (results[1][0] == 0)
    assert all(code in (0, 1) and "Traceback" not in err for code, _, err in results)
