"""Red team, round thirteen: memory hygiene (seed 003) and the edit ledger (seed 000), and the
content check of a checkout whose user weakened git's stat check (`stat_blind`).

Misses: a repository whose config says `trustctime =` (an empty value, which git reads as
false) was taken for git's default check: a same-size edit with its mtime put back was
invisible to git status and to claudetto, and the checkout could go with the only copy.
The content check held up to 512 tracked files' blobs at once, whatever their size.

Everything runs on real repositories and files in `tmp_path`."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from app.core import stat_blind
from app.core.memory import sweep
from app.core.memory_lint import relative_dates
from app.core.secret_files import present_files, unseen_changes
from tests.core.test_memory import FRONT, write_memory
from tests.support import git, make_repo

OLD_NS = 1_700_000_000_000_000_000


# --- a checkout whose user weakened git's stat check ------------------------------------------


def _edited_behind_status(tmp_path: Path, setting: str) -> Path:
    """A repository with `setting` appended to its `[core]` section and a tracked file edited
    keeping its size and mtime, a second after the index learned the file's old stat (git
    compares whole seconds of ctime)."""
    repo = make_repo(tmp_path / "repo", files={"config.yml": "mode: safe\n"})
    config = repo / "config.yml"
    os.utime(config, ns=(OLD_NS, OLD_NS))  # older than the index: not racy
    git(repo, "update-index", "--refresh")
    with open(repo / ".git" / "config", "a") as fh:
        fh.write(f"[core]\n\t{setting}\n")
    time.sleep(1.1)
    config.write_text("mode: FAST\n")
    os.utime(config, ns=(OLD_NS, OLD_NS))
    return repo


@pytest.mark.parametrize("setting", ["trustctime =", "trustctime = Off", "trustctime = 0x0"])
def test_a_trustctime_git_reads_as_false_is_a_weakened_check(tmp_path: Path, setting: str) -> None:
    """Git reads an empty boolean (`trustctime =`) as false, as it reads 0 and off: git status
    is blind to the edit, and claudetto took the empty value for the default (true)."""
    repo = _edited_behind_status(tmp_path, setting)
    assert git(repo, "status", "--porcelain") == ""  # what the user's own git says
    found = unseen_changes(str(repo / ".git"), str(repo))
    assert found is not None and found.startswith("config.yml: ")


@pytest.mark.parametrize("setting", ["trustctime", "trustctime = 1"])
def test_a_trustctime_git_reads_as_true_is_the_default_check(tmp_path: Path, setting: str) -> None:
    """(Held.) A bare key is true for git: git status sees the edit itself (ctime moved), and
    the content is not compared."""
    repo = _edited_behind_status(tmp_path, setting)
    assert git(repo, "status", "--porcelain") == "M config.yml"
    assert stat_blind._weakened(str(repo / ".git")) is False


def test_the_content_check_holds_a_bounded_number_of_bytes_at_once(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """The blobs of a batch are in memory at once: batches are cut by bytes as well as by
    count, and a file larger than a batch is one alone (still compared)."""
    files = {f"data/{n:02}.bin": "x" * 400 for n in range(10)}
    files["data/huge.bin"] = "y" * 5000
    repo = make_repo(tmp_path / "repo", files=files)
    monkeypatch.setattr(stat_blind, "_BATCH_BYTES", 1000)
    staged = present_files(git(repo, "ls-files", "-s", "-z"), str(repo))
    runs = stat_blind.batches(str(repo), staged)
    assert sorted(item for run in runs for item in run) == sorted(staged)
    for run in runs:
        sizes = [(repo / name).stat().st_size for _, name in run]
        assert sum(sizes) <= 1000 or len(run) == 1
    assert len(runs) == 6 and [name for _, name in runs[-1]] == ["data/huge.bin"]


# --- memory shared by every checkout of a repository ------------------------------------------


def _feature_worktree(tmp_path: Path) -> tuple[Path, Path]:
    """A repository on main and a worktree on `feature`, which adds an importer and moves
    the build to the next minor version of a dependency."""
    repo = make_repo(tmp_path / "app", files={"src/router.py": "class Router:\n    pass\n",
                                              "requirements.txt": "requests==2.31.0\n"})
    worktree = repo / ".claude" / "worktrees" / "feature"
    git(repo, "worktree", "add", "-q", "-b", "feature", str(worktree))
    (worktree / "src" / "importer_v2.py").write_text("class ImporterV2:\n    pass\n")
    (worktree / "requirements.txt").write_text("requests==2.32.3\n")
    git(worktree, "add", "-A")
    git(worktree, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "importer")
    return repo, worktree


def test_a_fact_another_checkout_of_the_repository_bears_out_is_no_rot(tmp_path: Path) -> None:
    """Every checkout of a repository reads one memory. A session in the feature worktree
    remembers the file and the pin it made there; a session in the main checkout was told
    both were rot and asked to strike them, though they hold in the checkout they were
    written for (a worktree's findings were held to the main checkout's only, not to a
    sibling's)."""
    repo, worktree = _feature_worktree(tmp_path)
    write_memory(repo, {"notes.md": "- The new importer is `src/importer_v2.py` (`ImporterV2`).\n"
                                    "- We use requests 2.32.3.\n"
                                    "- The CSV reader is in `src/csv_reader.py`.\n"})
    sibling = repo / ".claude" / "worktrees" / "fix"
    git(repo, "worktree", "add", "-q", "-b", "fix", str(sibling))
    gone = FRONT.count("\n") + 3
    for where in (repo, worktree, sibling):
        assert [(f.line, f.kind, f.token) for f in sweep(str(where), remember=False)] == [
            (gone, "vanished_artifact", "src/csv_reader.py")]


def test_a_checkout_that_cannot_judge_a_fact_bears_nothing_out(tmp_path: Path) -> None:
    """A worktree cut before the migrations, the build file and the router existed (one
    made by WorktreeCreate from an old commit, say) has no finding about them because it
    knows nothing of them, not because they hold there: its silence took every stale fact
    off the main checkout's list (the SessionStart of the project said nothing of a latest
    migration two behind)."""
    repo = make_repo(tmp_path / "app", files={"README.md": "# app\n"})
    old = git(repo, "rev-parse", "HEAD").strip()
    for name, text in {"db/migration/V27__a.sql": "-- 27\n", "db/migration/V28__b.sql": "-- 28\n",
                       "requirements.txt": "requests==2.32.3\n", "src/app.py": "print(1)\n"}.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    git(repo, "add", "-A")
    git(repo, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "grown")
    git(repo, "worktree", "add", "-q", "-b", "old", str(repo / ".claude" / "worktrees" / "old"), old)
    write_memory(repo, {"notes.md": "- The latest migration is `V27`.\n"
                                    "- We use requests 2.31.0.\n"
                                    "- The router is in `src/router.py`.\n"})
    first = FRONT.count("\n") + 1
    assert [(f.line, f.kind, f.token) for f in sweep(str(repo), remember=False)] == [
        (first, "stale_sequence", "V27"), (first + 1, "stale_version_pin", "requests 2.31.0"),
        (first + 2, "vanished_artifact", "src/router.py")]


# --- the write lint: names are not prose --------------------------------------------------------


@pytest.mark.parametrize("text", [
    "- Standup notes go in notes/today.md, one file a day.",
    "- The cron job writes /var/log/shop/today.log and rotates it.",
    "- The summary is kept in standup-today.md beside the notes.",
    "- Opened files are listed in ./recently/opened.txt.",
    "- `Clock` wraps datetime.date.today() so tests can fix the date.",
    "- Call today() from shop.clock, never the system clock.",
    "- The @today fixture freezes the clock at 2026-01-05.",
    "- The report runs as `report` --since=yesterday from cron.",
    "- Alerts go to the #today channel in Slack.",
])
def test_a_name_holding_a_date_word_is_no_relative_date(text: str) -> None:
    """A path, a file name, a function call, a decorator, a flag's value or a channel is a name,
    not prose: refused, the model was told to write a date in place of a file name (only
    inline code, addresses and `snake_case` names were let through)."""
    assert relative_dates(text) == []


@pytest.mark.parametrize(("text", "words"), [
    ("- Fixed yesterday/today, see notes/fix.md.", ["yesterday", "today"]),
    ("- The deploy broke today (see ./logs/deploy.txt).", ["today"]),
    ("- Merged recently; the call is today().", ["recently"]),
])
def test_a_date_word_beside_a_name_is_still_refused(text: str, words: list[str]) -> None:
    """(Held.) What is prose around the names is still read."""
    assert relative_dates(text) == words


# --- a sparse checkout ---------------------------------------------------------------------------


def test_a_symbol_in_a_folder_a_sparse_checkout_leaves_out_is_no_rot(tmp_path: Path) -> None:
    """A monorepo checked out sparse (`git sparse-checkout set api`) has `web/` in the
    repository but not on disk, and git grep searches the working tree only: a class the
    session remembered from `web/` was "vanished", a true fact to strike. One deleted from
    the working tree, or from the repository, is still found gone."""
    repo = make_repo(tmp_path / "mono", files={"api/handlers.py": "class ApiHandler:\n    pass\n",
                                               "web/widgets.py": "class WebWidget:\n    pass\n",
                                               "api/old.py": "class OldHandler:\n    pass\n"})
    git(repo, "sparse-checkout", "set", "api")
    assert not (repo / "web").exists()
    (repo / "api" / "old.py").unlink()
    write_memory(repo, {"notes.md": "- `WebWidget` draws the dashboard.\n"
                                    "- `ApiHandler` serves the API.\n"
                                    "- `OldHandler` served the v1 routes.\n"
                                    "- `GoneWidget` draws the footer.\n"})
    first = FRONT.count("\n") + 1
    assert [(f.line, f.token) for f in sweep(str(repo), remember=False)] == [
        (first + 2, "OldHandler"), (first + 3, "GoneWidget")]


# --- a branch that is not checked out ------------------------------------------------------------


def test_a_file_or_symbol_of_another_local_branch_is_no_rot(tmp_path: Path) -> None:
    """The session built the importer on `feature`, remembered it, and the user switched the
    checkout back to main: the file and its class were "vanished", true facts of the branch
    the work goes on in, to strike. A name no branch has is still found gone."""
    repo = make_repo(tmp_path / "app", files={"src/router.py": "class Router:\n    pass\n"})
    git(repo, "checkout", "-q", "-b", "feature")
    (repo / "src" / "importer_v2.py").write_text("class ImporterV2:\n    pass\n")
    git(repo, "add", "-A")
    git(repo, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "importer")
    git(repo, "checkout", "-q", "main")
    write_memory(repo, {"notes.md": "- The importer is `src/importer_v2.py`.\n"
                                    "- `ImporterV2` parses the CSV files.\n"
                                    "- `ExporterV2` writes the CSV files.\n"})
    assert [(f.line, f.token) for f in sweep(str(repo), remember=False)] == [
        (FRONT.count("\n") + 3, "ExporterV2")]


# --- a memory file holding a control byte ---------------------------------------------------------


def test_a_nul_byte_in_one_name_silences_no_finding(tmp_path: Path) -> None:
    """A memory file with a NUL byte inside a code span (a bad paste, a sync tool's
    half-written block): git takes no argument holding NUL, the one batched grep of the sweep
    failed, and every vanished name of every memory file of the project went unsaid. A name
    holding a control byte names nothing in the tree: it is left out, the rest is checked."""
    repo = make_repo(tmp_path / "app", files={"src/router.py": "class Router:\n    pass\n"})
    write_memory(repo, {"notes.md": "- `src/legacy_router.py` routes the v1 API.\n- `Foo\x00Bar` holds the cache.\n",
                        "broken.md": "- `Gone\x1bWidget` draws.\n- `src/a\x00b.py` holds it.\n"})
    assert [(os.path.basename(f.file), f.token) for f in sweep(str(repo), remember=False)] == [
        ("notes.md", "src/legacy_router.py")]


def test_a_name_too_long_to_be_one_silences_no_finding(tmp_path: Path) -> None:
    """A pasted blob in backticks (66,000 characters of `big_widget_…`) went to git grep as
    one fixed string; git refuses a pattern that long, the one grep failed, and no vanished
    name of the project was said. No path is longer than 4,096 characters: it is no name."""
    repo = make_repo(tmp_path / "app", files={"src/router.py": "class Router:\n    pass\n"})
    write_memory(repo, {"notes.md": "- `src/legacy_router.py` routes the v1 API.\n"
                                    "- `" + "big_widget_" * 6000 + "` is the layout.\n"})
    assert [f.token for f in sweep(str(repo), remember=False)] == ["src/legacy_router.py"]


def test_a_long_run_of_letters_costs_the_sweep_linear_time(tmp_path: Path) -> None:
    """Every place a URL could start was tried to the end of the run of letters after it: a
    20,000-character name took ~20 s (8,000: 3 s; a 100 KB line, minutes), at SessionStart,
    before the session could begin. A scheme is at most 32 characters."""
    repo = make_repo(tmp_path / "app", files={"src/router.py": "class Router:\n    pass\n"})
    write_memory(repo, {"notes.md": "- `src/legacy_router.py` routes the v1 API.\n"
                                    "- `src/" + "a" * 20_000 + ".py` holds the key.\n"
                                    "- The token is " + "x" * 20_000 + " in prose.\n"})
    started = time.monotonic()
    assert [f.token for f in sweep(str(repo), remember=False)] == ["src/legacy_router.py"]
    assert time.monotonic() - started < 5
