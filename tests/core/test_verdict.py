"""One Verdict for every sweep: what a removal did becomes the verdict's answer in one place
(`settled`), and `remove_verdict` is the one way from an approved verdict to its removal,
with the judging rule asked again at that moment. Real folders, real symlinks, real
processes for live sessions."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.core import gc, hygiene, journal, paths, removal
from app.core.claude_process import start_of
from app.core.state import write_json_atomic
from app.core.verdict import Verdict, remove_verdict, settled
from tests.support import SandboxEnv, set_mtime

DAY = 86_400


def old_folder(path: Path, age: float = 40 * DAY) -> Path:
    path.mkdir(parents=True)
    (path / "f.bin").write_bytes(b"x" * 100)
    set_mtime(path, age)
    return path


def record(sid: str, path: Path) -> None:
    file = paths.gc_records_file(sid)
    write_json_atomic(file, {"session": sid, "records": [
        {"path": str(path), "kind": "temp", "session": sid, "time": 1.0, "cwd": "/nowhere"}]})



def verdict(path: Path, root: Path, rule: str = "gc", kind: str = "temp") -> Verdict:
    return Verdict(path=str(path), kind=kind, action="remove", reason="age", rule=rule, root=str(root))


# --- settled: one translation of a removal's outcome ------------------------------------------


def test_a_removal_becomes_removed_and_a_dry_run_would_remove(sandbox: SandboxEnv) -> None:
    target = old_folder(sandbox.user_tmp / "tmp.a")
    dry = settled(verdict(target, sandbox.user_tmp), removal.remove(target, sandbox.user_tmp, "gc", dry_run=True))
    assert (dry.action, dry.status, dry.removed) == ("remove", "would_remove", False) and dry.size and dry.size > 0
    done = settled(verdict(target, sandbox.user_tmp), removal.remove(target, sandbox.user_tmp, "gc", trash=False))
    assert (done.action, done.status, done.removed) == ("remove", "removed", True) and not target.exists()


@pytest.mark.parametrize(("rule", "expected"), [
    ("gc", ("skip", "symlink", "skip")),
    ("session_folder", ("skip", "symlink", "skip")),
    ("release", ("keep", "symlink", "kept")),  # a release never skips its own paths
    ("worktree", ("keep", "not_removed", "kept")),  # worktrees speak CONTRACT `clean` reasons
])
def test_a_refused_symlink_is_answered_by_the_rule_it_belongs_to(sandbox: SandboxEnv, tmp_path: Path,
                                                                  rule: str, expected: tuple[str, str, str]) -> None:
    outside = old_folder(tmp_path / "elsewhere")
    link = sandbox.user_tmp / "tmp.link"
    link.symlink_to(outside)
    answer = settled(verdict(link, sandbox.user_tmp, rule), removal.remove(link, sandbox.user_tmp, rule))
    assert (answer.action, answer.reason, answer.status) == expected
    assert outside.exists() and link.is_symlink()


def test_a_guard_reason_and_a_failing_guard_both_keep(sandbox: SandboxEnv) -> None:
    target = old_folder(sandbox.user_tmp / "tmp.guarded")

    def broken(_where: str) -> str | None:
        raise RuntimeError("cannot tell")

    live = settled(verdict(target, sandbox.user_tmp),
                   removal.remove(target, sandbox.user_tmp, "gc", guard=lambda _w: "live"))
    failed = settled(verdict(target, sandbox.user_tmp),
                     removal.remove(target, sandbox.user_tmp, "gc", guard=broken))
    assert (live.action, live.reason) == ("keep", "live")
    assert (failed.action, failed.reason) == ("keep", "not_removed")  # when unsure, keep
    assert target.exists()


def test_gone_meanwhile_is_missing(sandbox: SandboxEnv) -> None:
    gone = sandbox.user_tmp / "tmp.gone"
    answer = settled(verdict(gone, sandbox.user_tmp), removal.remove(gone, sandbox.user_tmp, "gc"))
    assert (answer.action, answer.reason, answer.status) == ("missing", "missing", "missing")


# --- remove_verdict: the one dispatcher ---------------------------------------------------------


def test_an_old_session_folder_goes_through_the_dispatcher_and_is_journaled(sandbox: SandboxEnv) -> None:
    folder = old_folder(sandbox.claude_tmp / "-proj" / "11111111-2222-3333-4444-555555555555")
    planned = {v.path: v for v in hygiene.plan([]).verdicts}[str(folder)]
    assert planned.action == "remove"
    answer = remove_verdict(planned)
    assert (answer.status, answer.removed) == ("removed", True) and not folder.exists()
    assert [(e["path"], e["result"]) for e in journal.read_entries()] == [(str(folder), "removed")]


def test_a_session_that_started_since_the_plan_keeps_its_folder(sandbox: SandboxEnv, live_pid: int) -> None:
    sid = "11111111-2222-3333-4444-666666666666"
    folder = old_folder(sandbox.claude_tmp / "-proj" / sid)
    planned = {v.path: v for v in hygiene.plan([]).verdicts}[str(folder)]
    sandbox.write_session(str(live_pid), pid=live_pid, sessionId=sid, cwd="/", procStart=start_of(live_pid))
    answer = remove_verdict(planned)
    assert (answer.action, answer.reason) == ("keep", "live") and folder.exists()


def test_a_recorded_output_goes_through_the_gc_rules_at_that_moment(sandbox: SandboxEnv, live_pid: int) -> None:
    kept = old_folder(sandbox.user_tmp / "tmp.kept")
    gone = old_folder(sandbox.user_tmp / "tmp.gone")
    record("dead-session", gone)
    record("live-session", kept)
    planned = {v.path: v for v in gc.plan().entries}
    sandbox.write_session(str(live_pid), pid=live_pid, sessionId="live-session", cwd="/",
                          procStart=start_of(live_pid))
    assert planned[str(kept)].action == "remove"  # judged before its session started
    assert remove_verdict(planned[str(kept)]).reason == "live" and kept.exists()
    assert remove_verdict(planned[str(gone)]).status == "removed" and not gone.exists()


def test_a_verdict_that_is_not_remove_is_answered_as_it_is(sandbox: SandboxEnv) -> None:
    target = old_folder(sandbox.user_tmp / "tmp.young", age=0)
    young = Verdict(path=str(target), kind="temp", action="keep", reason="young", rule="gc", root=str(sandbox.user_tmp))
    assert remove_verdict(young) is young and target.exists()
    assert journal.read_entries() == []  # nothing was even tried
