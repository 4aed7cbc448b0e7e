"""The output GC: remove what sessions made outside the project once nothing uses it.

The recorder (app/core/recorder.py) notes each output; a sweep judges every recorded path
by the seed's rules, in this order:

1. it is in a record (the sweep never looks for paths by a name pattern);
2. it lies strictly inside a GC root: the user's temp folder, or `<project>/.claude/worktrees/`
   of the project where the recording session ran (the git root of its cwd, and the main
   repository of that checkout, so a worktree made from inside a worktree has a root too);
3. it is not a symlink and no part of its real path leaves the root (`removal.containment`);
4. nothing live needs it: its session is not live, the Claude process whose call made it
   no longer runs (a session's id changes on `/clear` and `/resume`, its process does not),
   no live session's folder (its cwd, or its Claude temp folder
   `claude-<uid>/<slug>/<session>`) lies inside it, it is no config folder whose own
   `sessions/` names a running Claude, and it holds no mount point (`in_use`); when a
   running session's file cannot be read, nobody knows what it holds: everything is kept
   (`in_use`);
5. it is older than GC_MAX_AGE_DAYS (its own mtime): removed, reason `age`. Then, among the
   unused paths left (the young ones), the oldest go first until all of them together take
   at most GC_MAX_BYTES of disk: reason `size`. The rest are kept, reason `young`.

Beyond the seed, no unique work is ever lost: a path that is or holds a git repository or
worktree with uncommitted, untracked or secret files (`dirty`), or commits, a stash or
linked worktrees that exist nowhere else (`unmerged`), is kept (app/core/unique_work.py).

A path outside every root, a symlink or one whose real path escapes: status `skip`, its
record dropped. A recorded path that is gone: status `missing`, record dropped. Every
removal goes through `removal.remove`, which moves the folder aside first and asks this
module once more, at that moment, with the sessions read again: in use, live, or holding
unique work puts it back (kept). After a removed worktree, `git worktree prune` runs in
its project.

A dry run judges the same way, removes nothing and writes no state at all.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from app.core import git, mounts, paths, removal, scanner, sessions
from app.core.age import is_old, output_limit_s
from app.core.bounds import bound
from app.core.gc_records import OutputRecord, drop_records, read_records
from app.core.log import log, log_lines, printable
from app.core.paths import inside
from app.core.state import StateBusy, locked
from app.core.verdict import Action, Reason, Verdict, settled

RULE = "gc"
LOCK_WAIT_S = 5.0  # how long a sweep waits for one already running

#: statuses whose record is dropped after a real sweep
_DROPPED = frozenset({"removed", "missing", "skip"})
_USED = ("live", "in_use")


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


@dataclass
class _Item:
    """One recorded path while the sweep judges it."""

    path: str
    records: list[OutputRecord]
    action: Action = "keep"
    reason: Reason = "young"
    root: str | None = None
    mtime: float | None = None
    tree: scanner.TreeSize | None = None
    removed: bool = False

    @property
    def size(self) -> int:
        return self.tree.disk if self.tree is not None else 0

    @property
    def first(self) -> OutputRecord:
        return self.records[0]

    def set(self, action: Action, reason: Reason) -> None:
        self.action, self.reason = action, reason


class _Facts:
    """What is in use at one moment: read once per sweep, and again for each removal."""

    def __init__(self, current_session: str | None, current_cwd: str | None,
                 ending_session: str | None, end_reason: str | None) -> None:
        from app.core.checkouts import process_goes_on

        # the ending session does not count, unless its process goes on (/clear, /resume)
        self.ending = None if process_goes_on(end_reason) else ending_session
        self.live = sessions.liveness(current_session, current_cwd, ending_session=self.ending)
        self.folders = [*self.live.cwds, *self.live.claude_folders()]
        self.mounts = mounts.mount_points()


# --- the rules, in the order of the module's docstring -----------------------------------------


def _recorded() -> list[_Item]:
    """Rule 1: every recorded path, once. One spelling per path: parents resolved by the
    file system, so a folder recorded through a symlink and through its real path is one
    entry, and `sym/../x` is judged where it really is."""
    grouped: dict[str, _Item] = {}
    for record in read_records():
        key = removal.resolve_parents(record.path)
        if key in grouped:
            grouped[key].records.append(record)
        else:
            grouped[key] = _Item(key, [record])
    return list(grouped.values())


def gc_roots(cwd: str) -> list[str]:
    """The GC roots of a session that ran in `cwd`: `.claude/worktrees/` of its project (the
    checkout's git root and its main repository) and the user's temp folder."""
    roots: list[str] = []
    if cwd.startswith("/"):
        for project in (paths.git_root(cwd), paths.main_repo_root(cwd)):
            if project is not None:
                roots.append(os.fspath(project / ".claude" / "worktrees"))
    roots.append(os.fspath(paths.user_tmp()))
    return list(dict.fromkeys(roots))


def _place(item: _Item) -> None:
    """Rules 2 and 3: the root the path lies in, or skip (or missing)."""
    if not os.path.lexists(item.path):
        item.set("missing", "missing")
        return
    why: list[str] = []
    for cwd in dict.fromkeys(r.cwd for r in item.records):
        for root in gc_roots(cwd):
            reason = removal.containment(item.path, root)
            if reason is None:
                item.root = root
                return
            if reason == "missing":
                item.set("missing", "missing")
                return
            why.append(reason)
    # item.path has its parents resolved; a record that spelled it inside a root (through a
    # symlinked parent or `..`) is told apart from one that was plainly outside
    for record in item.records:
        for root in gc_roots(record.cwd):
            why.append(removal.containment(record.path, root) or "escapes_root")
    item.set("skip", "symlink" if "symlink" in why else "escapes_root" if "escapes_root" in why else "outside_root")


def _measured(item: _Item) -> bool:
    """Rules 2 and 3 passed, its own modification time read and its tree measured (one
    walk, which also finds the repositories inside); False when it is not the GC's."""
    _place(item)
    if item.root is None:
        return False
    try:
        item.mtime = os.lstat(item.path).st_mtime
    except OSError:
        item.set("missing", "missing")
        item.root = None
        return False
    item.tree = scanner.scan(item.path)
    return True


def _in_use(item: _Item, facts: _Facts, where: str | None = None) -> Reason | None:
    """Rule 4: `live` or `in_use` when something running needs the path, else None.
    `where`: the folder as it is now (moved aside for removal), for the checks of content."""
    real = os.path.realpath(item.path)
    if any(r.session in facts.live.ids for r in item.records):
        return "live"
    for record in item.records:
        if record.claude_pid is None or record.session == facts.ending:
            continue
        if sessions.process_running(record.claude_pid, record.claude_start):
            return "live"  # the Claude process that made it still runs (its id may have changed)
    if any(inside(f, real) for f in facts.folders):
        return "live"
    if facts.live.unsure:
        return "in_use"
    if where is None and any(inside(m, real) for m in facts.mounts):
        return "in_use"
    if _config_in_use(where or item.path):
        return "in_use"
    return None


def _config_in_use(folder: str) -> bool:
    """A folder some Claude uses as its config folder: its own `sessions/` names a running
    process (whoever recorded it, and whatever it was recorded as)."""
    from pathlib import Path

    own = os.path.join(folder, "sessions")
    if os.path.islink(own) or not os.path.isdir(own):
        return False
    return any(s.live for s in sessions.read_sessions(folder=Path(own)))


def _unused(items: list[_Item], facts: _Facts) -> list[_Item]:
    """Rule 4 over the placed paths: the unused ones. A path that holds a used one stays
    too: removing it would remove the used one."""
    candidates: list[_Item] = []
    for item in items:
        if _measured(item):
            used = _in_use(item, facts)
            if used is not None:
                item.set("keep", used)
            else:
                candidates.append(item)
    used_paths = [(i.path, i.reason) for i in items if i.reason in _USED]
    for item in candidates:
        why = next((w for p, w in used_paths if inside(p, item.path)), None)
        if why is not None:
            item.set("keep", why)
    return [i for i in candidates if i.reason not in _USED]


def _without_unique_work(unused: list[_Item]) -> list[_Item]:
    """Beyond the seed: a path holding git work found nowhere else is kept, and so is a
    recorded path that holds one; the rest."""
    saved: list[_Item] = []
    for item in unused:
        lost = _work_lost(item)
        if lost is not None:
            item.set("keep", lost)
            saved.append(item)
    for item in unused:
        holds = next((o for o in saved if o is not item and inside(o.path, item.path)), None)
        if holds is not None and item not in saved:
            item.set("keep", holds.reason)
            saved.append(item)
    return [i for i in unused if i not in saved]


def _work_lost(item: _Item, where: str | None = None) -> Reason | None:
    """`dirty`/`unmerged`/`not_removed` when removing `item` would lose unique git work: a
    repository or worktree in it (found by the sweep's one walk) with work nowhere else.
    `where`: the folder as it is now (moved aside for removal)."""
    from app.core.unique_work import unique_work

    # a partial walk may have missed a repository: then unique_work walks for itself
    repos = item.tree.repos if item.tree is not None and not item.tree.partial else None
    if where is not None and repos is not None:
        repos = tuple(where + r[len(item.path):] for r in repos if inside(r, item.path))
    return unique_work(where or item.path, repos, original=item.path)


def _by_age(unused: list[_Item], now: float) -> None:
    """Rule 5, age: older than GC_MAX_AGE_DAYS (its own mtime) goes."""
    max_age = output_limit_s()
    for item in unused:
        if is_old(item.mtime, max_age, now):
            _mark(item, unused, "age")


def _by_size(unused: list[_Item]) -> None:
    """Rule 5, size: among the young ones left, the oldest go first until all of them
    together take at most GC_MAX_BYTES of disk; the rest stay `young`."""
    young = [i for i in unused if i.action != "remove"]
    tops = [i for i in young if not any(o is not i and inside(i.path, o.path) for o in young)]
    total = sum(i.size for i in tops)
    limit = bound("GC_MAX_BYTES")
    for item in sorted(tops, key=lambda i: (i.mtime or 0.0, i.path)):
        if total <= limit:
            break
        _mark(item, young, "size")
        total -= item.size


def _mark(item: _Item, pool: Iterable[_Item], reason: Reason) -> None:
    """Mark `item` for removal, with every pooled path inside it (they go with it)."""
    for other in pool:
        if other.action != "remove" and inside(other.path, item.path):
            other.set("remove", reason)


def _judge(facts: _Facts, now: float | None = None) -> list[_Item]:
    """Every recorded path judged by rules 1 to 5 (nothing is removed here)."""
    items = _recorded()
    unused = _without_unique_work(_unused(items, facts))
    _by_age(unused, time.time() if now is None else now)
    _by_size(unused)
    return items


# --- running --------------------------------------------------------------------------------


def _verdict(item: _Item) -> Verdict:
    first = item.first
    cwd = first.cwd
    main = paths.main_repo_root(cwd) if cwd.startswith("/") else None
    return Verdict(path=item.path, kind=first.kind, action=item.action, reason=item.reason, rule=RULE,
                   root=item.root or "", size=item.size, session=first.session, mtime=item.mtime,
                   project=os.fspath(main) if main is not None else None,
                   sessions=tuple(dict.fromkeys(r.session for r in item.records)), removed=item.removed)


def _remove(item: _Item, dry_run: bool, trash: bool | None, facts_now: Callable[[], _Facts],
            before_remove: Any = None) -> int:
    """Remove one path through the safe removal core; its verdict follows the result. The
    core moves the folder aside first and asks `still_unused` once more at that moment,
    with the sessions read again."""
    assert item.root is not None
    first = item.first

    def still_unused(where: str) -> Reason | None:
        return _in_use(item, facts_now(), where) or _work_lost(item, where)

    result = removal.remove(item.path, item.root, RULE, kind=first.kind, session=first.session,
                            size=item.tree, dry_run=dry_run, trash=trash,
                            guard=None if dry_run else still_unused, _before_remove=before_remove)
    answer = settled(_verdict(item), result)
    item.action, item.reason, item.removed = answer.action, answer.reason, answer.removed
    return result.bytes if answer.action == "remove" else 0


def removal_guard(path: str) -> removal.Guard:
    """The GC's last check for one recorded path whose removal starts elsewhere (the
    dashboard): the same rules as a sweep's, with the sessions read at that moment."""
    key = removal.resolve_parents(path)
    records = [r for r in read_records() if removal.resolve_parents(r.path) == key]
    if not records:
        return lambda _where: "missing"  # no longer recorded: not the GC's to remove
    item = _Item(key, records)

    def still_unused(where: str) -> str | None:
        return _in_use(item, _Facts(None, None, None, None), where) or _work_lost(item, where)

    return still_unused


def sweep(*, dry_run: bool = False, current_session: str | None = None,
          ending_session: str | None = None, current_cwd: str | None = None,
          end_reason: str | None = None, trash: bool | None = None,
          _before_remove: Any = None) -> GcReport:
    """Judge every recorded output and remove the unused ones (none in a dry run).

    `current_session`: the session that triggered this sweep (live whatever its file says).
    `ending_session`: the session that is ending (SessionEnd): it does not count as live.
    `trash`: as `removal.remove` (None: big trees go to the trash and a detached purge, so
    a foreground sweep returns soon; False: removed in place, for a sweep already detached).
    A dry run writes nothing: no removal, no record change, no lock file, no journal line.
    Raises GcBusy when another sweep holds the GC lock. `_before_remove` is a test seam
    (see `removal.remove`): something that happens between the judgement and a removal.
    """

    def facts_now() -> _Facts:  # liveness read again at the moment of each removal
        return _Facts(current_session, current_cwd, ending_session, end_reason)

    if dry_run:
        return _run(True, facts_now, None)
    try:
        with locked(paths.gc_dir() / "sweep", wait_s=LOCK_WAIT_S):
            return _run(False, facts_now, trash, _before_remove)
    except StateBusy as exc:
        raise GcBusy(*exc.args) from None


def plan(*, current_session: str | None = None, ending_session: str | None = None,
         current_cwd: str | None = None) -> GcReport:
    """What a sweep would do now: `sweep(dry_run=True)`; writes nothing."""
    return sweep(dry_run=True, current_session=current_session, ending_session=ending_session,
                 current_cwd=current_cwd)


def _run(dry_run: bool, facts_now: Callable[[], _Facts], trash: bool | None,
         before_remove: Any = None) -> GcReport:
    items = _judge(facts_now())
    freed = 0
    # Deepest first: a recorded path inside another is removed (and journaled) on its own.
    for item in sorted(items, key=lambda i: -i.path.count("/")):
        if item.action == "remove":
            freed += _remove(item, dry_run, trash, facts_now, before_remove)
    entries = [_verdict(item) for item in items]
    removed = sum(1 for e in entries if e.action == "remove")
    if not dry_run:
        _prune_worktrees(entries)
        dropped = {e.path for e in entries if e.status in _DROPPED}
        drop_records([r for item in items if item.path in dropped for r in item.records])
    return GcReport(dry_run=dry_run, entries=entries, removed=removed, freed=freed)


def _prune_worktrees(entries: list[Verdict]) -> None:
    """`git worktree prune` once in each project that lost a worktree."""
    projects: list[str] = []
    for entry in entries:
        if entry.kind != "worktree" or entry.status != "removed":
            continue
        root = entry.root.rstrip("/").split("/")
        project = "/".join(root[:-2]) if root[-2:] == [".claude", "worktrees"] else entry.project
        if project and project not in projects:
            projects.append(project)
    for project in projects:
        git.prune_worktrees(project)


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
    """SessionEnd: a sweep in which the ending session is not live (its outputs may go)."""
    _logged_sweep(ending_session=_text(payload, "session_id"), end_reason=_text(payload, "reason"),
                  trash=False)
