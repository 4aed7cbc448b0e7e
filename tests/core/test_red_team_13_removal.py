"""The removal core attacked a thirteenth time: a file (not a folder) as the removed path.

Earlier rounds attacked folders: renamed into the trash before anything goes, the moved entry
checked against what was opened, put back when its last check keeps it. A file went another
way: checked, journaled, then unlinked by its name in place. Between its check and its unlink
(the caller's last look reads every session; the journal waits up to a second for its lock)
the name may come to hold another file: the user's editor saves by writing a new file and
renaming it over the old name. And a file that cannot be unlinked at all (`chattr +i`, `+a`)
was journaled `removed` before its unlink failed. Docstrings marked (Held.) passed at once.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.core import gc, journal, paths, removal
from app.core.created import birth_time
from app.core.outputs import Judged
from app.core.verdict import Verdict
from tests.core.test_red_team_3_removal import no_trash_anywhere
from tests.core.test_red_team_12_concurrency import killed, lines, remover, trash_names
from tests.support import SandboxEnv, add_record, recorded, set_mtime

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (chattr)")


def saved_over(path: Path, text: bytes) -> None:
    """What an editor does on save: a new file written beside, renamed over the name."""
    new = path.with_name(path.name + ".swp")
    new.write_bytes(text)
    os.replace(new, path)


def root_of(sandbox: SandboxEnv) -> Path:
    return Path(os.path.realpath(sandbox.user_tmp))


@pytest.fixture(params=["trash", "no_trash"])
def where(request: pytest.FixtureRequest, sandbox: SandboxEnv) -> str:
    """Each case with a trash on the root's file system, and with none (removed in place)."""
    if request.param == "no_trash":
        no_trash_anywhere(sandbox, root_of(sandbox))
    return str(request.param)


# --- a file saved over while its last check runs --------------------------------------------------


def test_a_file_saved_over_during_its_last_check_is_not_unlinked(sandbox: SandboxEnv, where: str) -> None:
    """LOSS (fixed). `out.log`, judged unused, is saved over by the user's editor (a new file
    renamed onto the name) while the removal's last check reads the sessions: the unlink
    took the name, and with it the user's new text. The file checked is not the file unlinked:
    the new one stays, nothing is journaled removed."""
    root = root_of(sandbox)
    target = root / "out.log"
    target.write_bytes(b"old build log\n" * 100)

    def last_check(_where: str) -> None:
        saved_over(target, b"the user's notes, saved just now\n")
        return None

    done = removal.remove(target, root, "gc", guard=last_check)
    assert target.read_bytes() == b"the user's notes, saved just now\n"
    assert done.status == "refused" and done.reason == "changed"
    assert not lines(target, "removed") and sum(journal.freed_per_day().values()) == 0
    assert trash_names() in ([], ["trash"]) or where == "no_trash"


def test_a_file_swapped_for_a_symlink_to_the_home_during_its_last_check_keeps_the_link(
        sandbox: SandboxEnv, where: str) -> None:
    """LOSS (fixed). The same swap, for a symlink to the home (`ln -sfn ~ out`): nothing was
    followed (the link itself was unlinked) but the user's link went, and the journal said an
    output was freed. Now the link stays where it was, and so does the home."""
    root = root_of(sandbox)
    target = root / "out"
    target.write_bytes(b"x" * 5000)
    (sandbox.home / "thesis.tex").write_text("years of work\n")

    def last_check(_where: str) -> None:
        link = root / "out.new"
        link.symlink_to(sandbox.home)
        os.replace(link, target)
        return None

    done = removal.remove(target, root, "gc", guard=last_check)
    assert target.is_symlink() and os.readlink(target) == str(sandbox.home)
    assert (sandbox.home / "thesis.tex").read_text() == "years of work\n"
    assert done.status == "refused" and done.reason in ("changed", "symlink")
    assert not lines(target, "removed")


def test_a_file_not_swapped_still_goes_and_leaves_nothing_in_the_trash(sandbox: SandboxEnv, where: str) -> None:
    """(Held.) The other side of the two above: an output nobody touched goes, counted once,
    with one `removed` line, and no trash entry or note of origin is left behind."""
    root = root_of(sandbox)
    target = root / "out.bin"
    target.write_bytes(os.urandom(50_000))
    done = removal.remove(target, root, "gc", guard=lambda _where: None)
    assert done.status == "removed" and done.files == 1 and done.bytes >= 50_000
    assert not os.path.lexists(target)
    assert len(lines(target, "removed")) == 1
    if where == "trash":
        assert [name for name in trash_names() if name.startswith(".")] == []


def test_gc_keeps_the_record_of_an_output_saved_over_during_its_last_check(sandbox: SandboxEnv,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """LOSS (fixed), through `claudetto gc`'s own sweep: a recorded old temp file is saved over
    by the user while the GC's last check reads the sessions. The GC unlinked the new file and
    dropped the record. Now the file stays, and the GC says it changed."""
    root = root_of(sandbox)
    target = root / "tmp.report.txt"
    target.write_text("draft\n")
    add_record("s-old", target, kind="temp")
    set_mtime(target, 40 * 86_400)
    real = gc.fresh

    def fresh_then_save(*args: object, **kwargs: object) -> object:
        answer = real(*args, **kwargs)
        if target.read_text() == "draft\n":
            saved_over(target, b"the user's final text\n")
        return answer

    monkeypatch.setattr(gc, "fresh", fresh_then_save)  # the GC's last look reads the disk afresh: then the save
    report = gc.sweep()
    assert target.read_text() == "the user's final text\n"
    entry = next(e for e in report.entries if e.path == str(target))
    assert entry.action == "keep" and not entry.removed
    assert str(target) in recorded("s-old")


# --- a file that refuses to go ----------------------------------------------------------------------


@pytest.fixture
def flagged() -> Iterator[list[Path]]:
    """Files a test gives a `chattr` flag; every flag cleared again at its end (wherever the file is)."""
    targets: list[Path] = []
    yield targets
    for target in targets:
        found = subprocess.run(["find", str(target.parent), str(paths.claudetto_home()), str(paths.log_root()),
                                "-name", f"*{target.name}*", "-o", "-name", ".pending-*"],
                               capture_output=True, text=True, check=False).stdout.split()
        subprocess.run(["chattr", "-ia", *found, str(target)], capture_output=True, check=False)


def chattr(flag: str, target: Path, flagged: list[Path]) -> None:
    if subprocess.run(["chattr", f"+{flag}", str(target)], capture_output=True, check=False).returncode != 0:
        pytest.skip(f"chattr +{flag} is not supported here")
    flagged.append(target)


@needs_root
@pytest.mark.parametrize("flag", ["i", "a"])
def test_a_file_that_refuses_to_go_is_not_journaled_removed(sandbox: SandboxEnv, where: str, flag: str,
                                                            flagged: list[Path]) -> None:
    """MISS (fixed). An output file made immutable (`chattr +i`) or append-only (`+a`, a log
    the user protects) as the removed path itself: its `removed` line was written, the unlink
    failed, and the answer was still `removed` with all its bytes: the dashboard's chart
    counted space never freed, the GC dropped the record and never tried again. Now it is
    `failed`, and no byte of it counts as freed."""
    root = root_of(sandbox)
    target = root / "build.log"
    target.write_bytes(b"y" * 200_000)
    chattr(flag, target, flagged)
    done = removal.remove(target, root, "gc")
    assert target.read_bytes() == b"y" * 200_000
    assert done.status == "failed" and done.bytes == 0 and done.files == 0
    assert sum(journal.freed_per_day().values()) == 0
    assert trash_names() in ([], ["trash"]) or where == "no_trash"


@needs_root
def test_gc_keeps_the_record_of_an_immutable_output_and_takes_it_once_the_flag_is_cleared(
        sandbox: SandboxEnv, flagged: list[Path]) -> None:
    """MISS (fixed). Through `claudetto gc`: the immutable old output was reported removed and
    its record dropped; the file stayed for ever, garbage nobody would look at again. Now the
    record stays (`failed`), and the next sweep after `chattr -i` takes it."""
    root = root_of(sandbox)
    target = root / "tmp.stuck.bin"
    target.write_bytes(b"z" * 100_000)
    add_record("s-old", target, kind="temp")
    set_mtime(target, 40 * 86_400)
    chattr("i", target, flagged)
    report = gc.sweep()
    entry = next(e for e in report.entries if e.path == str(target))
    assert not entry.removed and entry.reason == "failed" and report.freed == 0
    assert str(target) in recorded("s-old")
    subprocess.run(["chattr", "-i", str(target)], check=True)
    again = gc.sweep()
    assert not target.exists() and again.removed == 1


# --- kills at every step of a file's removal ----------------------------------------------------------


def test_a_file_killed_at_each_step_of_its_removal_is_whole_or_gone_with_one_line(sandbox: SandboxEnv) -> None:
    """(Held.) A file's removal killed at each of its steps
    that changes the disk (the note of origin, the rename, the journal line, the unlink): after
    the cleanup's settling and one purge, each file is whole where it was with no `removed`
    line, or gone with exactly one; the trash is empty."""
    from app.core.purge import purge_trash, settle_leftovers

    root = root_of(sandbox)

    def build(name: str) -> Path:
        target = root / name
        target.write_bytes(b"w" * 3000)
        return target

    for name in ("tmp.probe1.bin", "tmp.probe2.bin"):  # the first also makes the trash and the journal's room
        probe = build(name)
        out, _ = remover(probe, root, "step:0").communicate(timeout=30)
        total = int(out.split()[-1])
        assert not probe.exists() and total >= 1
    targets = []
    for k in range(1, total + 1):
        target = build(f"tmp.step{k}.bin")
        killed(target, root, f"step:{k}")
        targets.append(target)
    settle_leftovers()
    purge_trash(wait_s=1.0)
    for k, target in enumerate(targets, 1):
        removed = lines(target, "removed")
        if os.path.lexists(target):
            assert target.read_bytes() == b"w" * 3000 and not removed, k
        else:
            assert len(removed) == 1, k
    assert [name for name in trash_names() if name.startswith(".")] == []


# --- a folder replaced by another of its name between its judgement and its removal ----------------


def replaced_by_a_new_folder(folder: Path, how: str = "rm_rf") -> None:
    """What `rm -rf out && mkdir out && ./generate > out/...` does: the old folder gone, a new
    one of the same name holding the user's new file. Removed, the old folder's inode number is
    free, and ext4 gives it to the new folder at once: its device and inode alone do not tell
    them apart (`moved_aside` keeps the old one, so the numbers differ)."""
    if how == "rm_rf":
        if birth_time(str(folder)) is None:
            pytest.skip("this file system keeps no birth time: a reused inode number is not told apart")
        shutil.rmtree(folder)
    else:
        folder.rename(folder.with_name(folder.name + ".was"))
    folder.mkdir()
    (folder / "report.pdf").write_text("made a second ago\n")


@pytest.mark.parametrize("how", ["rm_rf", "moved_aside"])
def test_gc_never_removes_a_new_folder_made_under_an_old_outputs_name_after_its_judgement(
        sandbox: SandboxEnv, how: str) -> None:
    """LOSS (fixed). `claudetto gc` judged the recorded `out` old (40 days) and measured it; a
    sweep removes one output after the other, and before `out`'s turn the user's script made a
    new `out` (young, the user's report in it). The removal checked only what the path was at
    its own moment: the new folder went, judged by the age of the one before it. The removal
    now holds to the folder its measure saw (its device, inode and birth time: the inode
    number of a folder removed is given to the next one made): another one is `changed`."""
    root = root_of(sandbox)
    out = root / "out"
    out.mkdir()
    (out / "old.txt").write_text("old\n")
    add_record("s-old", out, kind="temp")
    set_mtime(out, 40 * 86_400)
    report = gc.sweep(_before_remove=lambda _target: replaced_by_a_new_folder(out, how))
    assert (out / "report.pdf").read_text() == "made a second ago\n"
    entry = next(e for e in report.entries if e.path == str(out))
    assert (entry.action, entry.reason, entry.removed) == ("keep", "changed", False)
    assert str(out) in recorded("s-old") and not lines(out, "removed")


def test_a_measured_file_replaced_before_its_removal_is_not_removed(sandbox: SandboxEnv, where: str) -> None:
    """LOSS (fixed), at the core: a caller hands its measure (`size=scan(path)`) and the path
    is another file by the time the removal starts: the file measured went long ago."""
    from app.core.scanner import scan

    root = root_of(sandbox)
    target = root / "out.log"
    target.write_bytes(b"o" * 10_000)
    measured = scan(target)
    saved_over(target, b"the user's new log\n")
    done = removal.remove(target, root, "gc", size=measured)
    assert (done.status, done.reason) == ("refused", "changed")
    assert target.read_bytes() == b"the user's new log\n"


@pytest.mark.parametrize("how", ["rm_rf", "moved_aside"])
def test_the_dashboard_keeps_a_folder_replaced_after_its_pin_was_checked(
        sandbox: SandboxEnv, monkeypatch: pytest.MonkeyPatch, how: str) -> None:
    """LOSS (fixed). The dashboard pins what each path was when the question was asked and
    compares right before it removes; then the GC's last check reads every record (thousands:
    a while), and a folder replaced in that moment went. The pin now goes down to the core,
    which holds the removal to it at its own last moment."""
    from app.core import gc_records
    from app.data import removals

    root = root_of(sandbox)
    out = root / "out"
    out.mkdir()
    (out / "old.txt").write_text("old\n")
    add_record("s-old", out, kind="temp")
    set_mtime(out, 40 * 86_400)
    judged = gc.sweep(dry_run=True)
    verdict = next(e for e in judged.entries if e.path == str(out))
    assert verdict.action == "remove"
    pinned = removals.pin([verdict])
    real = gc_records.read_records
    swapped: list[bool] = []

    def read_then_swap() -> list[gc_records.OutputRecord]:
        found = real()
        if not swapped:
            swapped.append(True)
            replaced_by_a_new_folder(out, how)
        return found

    monkeypatch.setattr(gc, "read_records", read_then_swap)
    outcome = removals.remove_marked([verdict], lambda: gc_judged(verdict), lambda *_: None, lambda: False, pinned)
    assert swapped and (out / "report.pdf").read_text() == "made a second ago\n"
    assert outcome.removed == 0 and outcome.not_removed and outcome.not_removed[0][0] == str(out)


def gc_judged(verdict: Verdict) -> Judged:
    """The judgement the dashboard's removal asks for again: the verdict as it was."""
    return Judged([verdict], [])
