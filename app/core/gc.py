"""The output GC: remove what sessions made outside the project once nothing uses it.

The recorder (app/core/recorder.py) notes each output; a sweep judges every recorded path
by the rules of app/core/gc_rules.py (1 recorded, 2 inside a GC root, 3 contained, 4 unused,
5 old or over the size bound; and never unique git work), then removes the unused ones
through `removal.remove`, which moves each folder aside first and asks the rules once more,
at that moment, with the sessions read again: in use, live, or holding unique work puts it
back (kept). After a removed worktree, `git worktree prune` runs in its project. The
records of removed, missing and skipped paths are dropped.

A dry run judges the same way, removes nothing and writes no state at all.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from app.core import git, paths, removal
from app.core.cleanup_guard import changed_since_judged
from app.core.gc_records import OutsideNames, drop_records, read_records
from app.core.gc_roots import fresh
from app.core.gc_rules import Facts, Item, in_use, judge, place, replaced, work_lost
from app.core.log import log, log_lines, printable
from app.core.pending_outputs import settle_claims
from app.core.purge import settle_leftovers
from app.core.state import StateBusy, locked
from app.core.verdict import Reason, Verdict, settled

RULE = "gc"
LOCK_WAIT_S = 5.0  # how long a sweep waits for one already running

#: statuses whose record is dropped after a real sweep
_DROPPED = frozenset({"removed", "missing", "skip"})


class GcBusy(StateBusy):
    """Another sweep holds the GC lock."""


@dataclass(frozen=True)
class GcReport:
    """One sweep: a Verdict per recorded path (`status` and `reason` as CONTRACT `gc`)."""

    dry_run: bool
    entries: list[Verdict]
    removed: int
    freed: int

    @property
    def journal_failed(self) -> bool:
        """A removal did not happen because the journal could not be written first."""
        return any(e.reason == "journal" for e in self.entries)


# --- running --------------------------------------------------------------------------------


def _verdict(item: Item) -> Verdict:
    first = item.first
    return Verdict(path=item.path, kind=first.kind, action=item.action, reason=item.reason, rule=RULE,
                   root=item.root or "", size=item.size, session=first.session, mtime=item.mtime,
                   project=item.project, sessions=tuple(dict.fromkeys(r.session for r in item.records)), removed=item.removed)


def _remove(item: Item, dry_run: bool, trash: bool | None, facts_now: Callable[[], Facts],
            before_remove: Any = None) -> int:
    """Remove one path through the safe removal core; its verdict follows the result. The
    core moves the folder aside first and asks `still_unused` once more at that moment,
    with the sessions read again."""
    assert item.root is not None
    first = item.first

    def still_unused(where: str) -> Reason | None:
        fresh()  # the last look sees the disk as it is now, not what the judgement worked out
        facts = facts_now()
        return (in_use(item, facts, where) or work_lost(item, where, facts.outside) or replaced(item, where)
                # written into since it was judged old (a file saved there): its age is now
                or ("young" if changed_since_judged(_verdict(item), where) else None))

    result = removal.remove(item.path, item.root, RULE, kind=first.kind, session=first.session,
                            size=item.tree, dry_run=dry_run, trash=trash,
                            guard=None if dry_run else still_unused, _before_remove=before_remove)
    answer = settled(_verdict(item), result)
    item.action, item.reason, item.removed = answer.action, answer.reason, answer.removed
    return result.bytes if answer.action == "remove" else 0


def removal_guard(path: str) -> removal.Guard:
    """The GC's last check for one recorded path whose removal starts elsewhere (the
    dashboard): the same rules as a sweep's, with the sessions read at that moment."""
    fresh()
    key = removal.resolve_parents(path)
    every = [(removal.resolve_parents(r.path), r) for r in read_records()]
    records = [r for spelled, r in every if spelled == key]
    if not records:
        return lambda _where: "missing"  # no longer recorded: not the GC's to remove
    item = Item(key, records)
    place(item)  # its root, as a sweep finds it: a project's own worktree is judged inside its root
    if item.root is None:
        refused = item.reason or "outside_root"
        return lambda _where: refused

    def still_unused(where: str) -> str | None:
        fresh()
        facts = Facts(None, None, None, None)
        facts.output_set = frozenset(spelled for spelled, _ in every)  # every recorded path, as a sweep's
        return in_use(item, facts, where) or work_lost(item, where) or replaced(item, where)

    return still_unused


def sweep(*, dry_run: bool = False, current_session: str | None = None,
          ending_session: str | None = None, current_cwd: str | None = None,
          end_reason: str | None = None, trash: bool | None = None,
          ending_pid: int | None = None, _before_remove: Any = None) -> GcReport:
    """Judge every recorded output and remove the unused ones (none in a dry run).

    `current_session`: the session that triggered this sweep (live whatever its file says).
    `ending_session`: the session that is ending (SessionEnd): it does not count as live,
    unless another Claude process runs it too (`ending_pid`: the ending one's, when known).
    `trash`: as `removal.remove` (None: big trees go to the trash and a detached purge, so
    a foreground sweep returns soon; False: removed in place, for a sweep already detached).
    A dry run writes nothing: no removal, no record change, no lock file, no journal line.
    Raises GcBusy when another sweep holds the GC lock. `_before_remove` is a test seam
    (see `removal.remove`): something that happens between the judgement and a removal.
    """

    outside = OutsideNames()  # what the user's places name (links, installs): read once per sweep
    judged: list[Facts] = []  # the judgement's facts: the recorded paths it found

    def facts_now() -> Facts:  # liveness read again at the moment of each removal
        facts = Facts(current_session, current_cwd, ending_session, end_reason, ending_pid)
        facts.outside = outside
        if judged:
            facts.output_set = judged[0].output_set
        else:
            judged.append(facts)
        return facts

    if dry_run:
        return _run(True, facts_now, None)
    try:
        with locked(paths.gc_dir() / "sweep", wait_s=LOCK_WAIT_S):
            settle_claims()  # a background call's outputs that appeared become records first
            settle_leftovers()  # a killed sweep's folder in the trash comes back before it reads as missing
            return _run(False, facts_now, trash, _before_remove)
    except StateBusy as exc:
        raise GcBusy(*exc.args) from None


def plan(*, current_session: str | None = None, ending_session: str | None = None,
         current_cwd: str | None = None) -> GcReport:
    """What a sweep would do now: `sweep(dry_run=True)`; writes nothing."""
    return sweep(dry_run=True, current_session=current_session, ending_session=ending_session,
                 current_cwd=current_cwd)


def _run(dry_run: bool, facts_now: Callable[[], Facts], trash: bool | None,
         before_remove: Any = None) -> GcReport:
    items = judge(facts_now())
    freed = 0
    inner = {} if dry_run else {item.path: _linked_inside(item) for item in items if item.action == "remove"}
    # Deepest first: a recorded path inside another is removed (and journaled) on its own.
    for item in sorted(items, key=lambda i: -i.path.count("/")):
        if item.action == "remove":
            freed += _remove(item, dry_run, trash, facts_now, before_remove)
            _own_change(item.path, items)
    entries = [_verdict(item) for item in items]
    removed = sum(1 for e in entries if e.action == "remove")
    if not dry_run:
        _forget_worktrees(entries, inner)
        dropped = {e.path for e in entries if e.status in _DROPPED}
        drop_records([r for item in items if item.path in dropped for r in item.records])
    return GcReport(dry_run=dry_run, entries=entries, removed=removed, freed=freed)


def _own_change(removed: str, items: list[Item]) -> None:
    """A recorded folder that held a path this sweep removed (or moved aside and put back) has a
    new mtime by this sweep's own doing, not a user's: its last check compares with that one."""
    import os

    for item in items:
        if item.path == os.path.dirname(removed) and item.mtime is not None:
            try:
                item.mtime = os.lstat(item.path).st_mtime
            except OSError:
                pass  # gone meanwhile: its removal finds it missing


def _forget_worktrees(entries: list[Verdict], inner: dict[str, list[tuple[str, str]]]) -> None:
    """Each linked worktree a removed path held is forgotten by its own repository (`inner`, read
    before the removals); where none was found, by the recording session's project."""
    _prune_worktrees([e for e in entries if not inner.get(e.path)])
    for git_dir, known in (pair for e in entries if e.status == "removed" for pair in inner.get(e.path, ())):
        git.forget_worktree(git_dir, known)


def _linked_inside(item: Item) -> list[tuple[str, str]]:
    """(git dir of its main repository, the path git knows it by) for each linked worktree the
    walk found at or inside `item` whose main repository lies outside it: `git worktree add
    "$(mktemp -d)/wt" -b feature` run in the user's project, a recorded worktree of another
    repository than the session's (`git -C ~/lib worktree add ...`). Once the folder is gone
    git must forget it, or that repository keeps a worktree that is not there and refuses `git
    checkout feature` until a prune. Read before the removal: the worktree's own `.git` file
    goes with it. None found: `_prune_worktrees` asks the recording session's project."""
    import os

    from app.core.repository_rules import read_pointer

    found = []  # the walk's repositories are real paths
    for folder in item.tree.repos if item.tree is not None else ():
        try:
            admin = os.path.join(folder, read_pointer(os.path.join(folder, ".git"), "gitdir:"))
            common = os.path.normpath(os.path.join(admin, read_pointer(os.path.join(admin, "commondir"))))
            known = os.path.dirname(read_pointer(os.path.join(admin, "gitdir")))
        except git.GitFailed:
            continue  # no linked worktree (a clone, a submodule), or one git cannot tell
        if not paths.inside(common, os.path.realpath(item.path)):
            found.append((common, known))
    return found


def _prune_worktrees(entries: list[Verdict]) -> None:
    """Git forgets each removed worktree in its project (only those: see `git.forget_worktree`)."""
    for entry in entries:
        if entry.kind != "worktree" or entry.status != "removed":
            continue
        root = entry.root.rstrip("/").split("/")
        project = "/".join(root[:-2]) if root[-2:] == [".claude", "worktrees"] else entry.project
        if project:
            git.forget_worktree(project, entry.path)


# --- reports --------------------------------------------------------------------------------


def report_json(report: GcReport) -> dict[str, Any]:
    """The CONTRACT's `gc` JSON (with each path's root, mtime and recording sessions)."""
    return {
        "dry_run": report.dry_run,
        "entries": [
            {"path": e.path, "kind": e.kind, "session": e.session, "size": e.size or 0, "status": e.status,
             "reason": e.reason, "root": e.root or None, "mtime": e.mtime, "sessions": list(e.sessions)}
            for e in report.entries
        ],
        "removed": report.removed,
        "freed": report.freed,
    }


def report_lines(report: GcReport) -> list[str]:
    """The text report: one aligned line per path (status, reason, disk bytes, kind, session,
    path), then `GC removed=<n> freed=<bytes> dry_run=<bool>`."""
    rows = [("STATUS", "REASON", "SIZE", "KIND", "SESSION", "PATH")]
    rows += [(e.status, e.reason, str(e.size or 0), e.kind, printable(e.session or ""), printable(e.path))
             for e in report.entries]
    lines = []
    if report.entries:
        widths = [max(len(row[i]) for row in rows) for i in range(5)]
        for row in rows:
            cells = [row[i].rjust(widths[i]) if i == 2 else row[i].ljust(widths[i]) for i in range(5)]
            lines.append("  ".join([*cells, row[5]]))
    lines.append(f"GC removed={report.removed} freed={report.freed} dry_run={str(report.dry_run).lower()}")
    return lines


# --- hook steps (detached jobs, see app/core/job_table.py) -----------------------------------


def _text(payload: dict[str, Any], key: str) -> str | None:
    value = payload.get(key)
    return value if isinstance(value, str) and value else None


def _logged_sweep(**kwargs: Any) -> None:
    try:
        report = sweep(**kwargs)
    except GcBusy:
        log("gc: another sweep is running; this one was skipped")
        return
    log_lines(report_lines(report))


# The steps run in a detached process already: they remove in place (trash=False) rather
# than rename into the trash and spawn one more process per big tree.


def session_start_step(payload: dict[str, Any]) -> None:
    """SessionStart: a sweep with the starting session live."""
    _logged_sweep(current_session=_text(payload, "session_id"), current_cwd=_text(payload, "cwd"),
                  trash=False)


def session_end_step(payload: dict[str, Any]) -> None:
    """SessionEnd: a sweep in which the ending session is not live (its outputs may go).
    `claude_pid` (the ending Claude's pid, when the hook found it) tells it from another
    process that runs the same session."""
    pid = payload.get("claude_pid")
    _logged_sweep(ending_session=_text(payload, "session_id"), end_reason=_text(payload, "reason"),
                  ending_pid=pid if isinstance(pid, int) and not isinstance(pid, bool) and pid > 1 else None,
                  trash=False)
