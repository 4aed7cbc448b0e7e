"""The output GC's rules: which recorded output may go, one function per rule.

The recorder (app/core/recorder.py) notes each output; a sweep (app/core/gc.py) judges
every recorded path by these rules, in this order:

1. it is in a record (the sweep never looks for paths by a name pattern);
2. it lies strictly inside a GC root: the user's temp folder, or `<project>/.claude/worktrees/`
   of the project where the recording session ran (the git root of its cwd, and the main
   repository of that checkout, so a worktree made from inside a worktree has a root too);
   never `/`, the home, Claude's config folder or a folder above one, a relative TMPDIR, nor
   a TMPDIR in a git checkout (app/core/gc_roots.py);
3. it is not a symlink and no part of its real path leaves the root (`removal.containment`);
4. nothing live needs it (`live`, `in_use`): its session is not live, the Claude process whose
   call made it no longer runs or is the one exiting (an id changes on `/clear`, a process not), no
   live session's folder (cwd, `additionalDirectories`, Claude temp folder) lies inside it or,
   in the root, around it; no running Claude's config folder, mount point, file a repository
   around it tracks, checkout a session holds (registry) or folder Claude was started in is,
   holds or lies around it; an unreadable running session's file keeps everything; claudetto's
   state and Claude's temp folder are no outputs (`gc_roots.own_place`), nor is a thing whose
   shape is not its record's kind (`output_shape`);
5. it is older than GC_MAX_AGE_DAYS (its own mtime, or its record's when the call that made it
   kept its source's old times: `age.output_since`): removed, reason `age`. Then, among the
   unused paths left (the young ones), the oldest go first until all of them together take
   at most GC_MAX_BYTES of disk: reason `size`. The rest are kept, reason `young`.

And no unique work is ever lost (`work_lost`): a git repository or worktree with
uncommitted, untracked or secret files, a secret, an entry moved in, a config folder's
login or memory (`dirty`), or commits, a stash or linked worktrees found nowhere else
(`unmerged`, app/core/unique_work.py) keep the path, unless it is a copy its source still
holds unchanged (`gc_records.still_at_source`); so do a repository outside that borrows its
objects (`unmerged`) and a link, an editable install or a submodule url of the user's that
leads into it (`in_use`, `gc_records.OutsideNames`). Outside every root, a symlink, or a real
path that escapes: `skip`; gone: `missing`. Rules 1 to 5 are `recorded`, `place`, `unused_of`,
`without_unique_work`, `by_age` and `by_size`, run by `judge`; `in_use` and `work_lost` are asked
again at each removal, where the folder now is, sessions read anew.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from app.core import gc_records, mounts, paths, removal, scanner, sessions
from app.core.age import is_old, output_limit_s, output_since
from app.core.bounds import bound
from app.core.created import MAX_INNER_ENTRIES, output_moved_in
from app.core.gc_records import OutputRecord, lost_source, read_records, user_state
from app.core.gc_roots import fresh, gc_roots, inside_any, own_place, per_sweep, shared_temp
from app.core.gc_roots import git_top as _git_top
from app.core.in_flight import in_flight
from app.core.output_shape import not_as_recorded
from app.core.paths import inside, strictly_inside
from app.core.verdict import Action, Reason

_USED = ("live", "in_use")
GUARD_ENTRIES = 1_000  #: entries looked at again for one moved in at the removal (judging: MAX_INNER_ENTRIES)
MAX_LOOKED = 1_000_000  #: entries of one output looked at for one moved in at most (~4.5 s); past it, kept


@dataclass
class Item:
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

    @cached_property
    def project(self) -> str | None:
        """The main repository of the recording session's cwd, when it ran in one."""
        cwd = self.first.cwd
        main = per_sweep(("project", cwd), lambda: paths.main_repo_root(cwd)) if cwd.startswith("/") else None
        return os.fspath(main) if main is not None else None

    def set(self, action: Action, reason: Reason) -> None:
        self.action, self.reason = action, reason


class Facts:
    """What is in use at one moment: read once per sweep, and again for each removal."""

    def __init__(self, current_session: str | None, current_cwd: str | None,
                 ending_session: str | None, end_reason: str | None, ending_pid: int | None = None) -> None:
        from app.core.checkouts import process_goes_on

        # the ending session (and its Claude, which exits) holds nothing, unless its process goes on
        goes_on = process_goes_on(end_reason) or _runs_elsewhere(ending_session, ending_pid)  # or runs it too
        self.ending = None if goes_on else ending_session
        self.ending_pid = None if goes_on or not ending_session else ending_pid
        self.cwd = current_cwd
        self.live = sessions.liveness(current_session, current_cwd, ending_session=self.ending)
        self.folders = [*self.live.cwds, *self.live.claude_folders(), *gc_records.added_directories(self.live.cwds)]
        self.mounts = mounts.mount_points()
        self.output_set: frozenset[str] = frozenset()  # every recorded path (real), set when judging
        self.outside = gc_records.OutsideNames()  # what the user's places name: links, installs, urls

    @cached_property
    def projects(self) -> list[str]:
        """The folders Claude was started in (`.claude.json` projects, real paths): a clone, or a
        temp folder used without git, that became the user's project. Not a linked worktree
        (`.git` a file: Claude lists agents' worktrees too), nor a dead session's cwd (rule 4)."""
        return [os.path.realpath(p) for p in paths.claude_json_projects()
                if os.path.isdir(p) and not os.path.isfile(os.path.join(p, ".git"))]

    @cached_property
    def checkouts(self) -> dict[str, dict[str, Any]]:
        """The session checkout registry, keyed by real path."""
        from app.core.checkouts import registry

        return {os.path.realpath(key): entry for key, entry in registry().items()}


def _runs_elsewhere(session: str | None, ending_pid: int | None) -> bool:
    """Another Claude process runs this session too (`claude --resume <id>` in a second terminal): a live
    sessions file names another pid than the ending one's, or, that unknown, two name it (the ending Claude
    still runs during its SessionEnd hook)."""
    if not session:
        return False
    pids = [s.pid for s in sessions.read_sessions() if s.live and s.session_id == session]
    return any(pid != ending_pid for pid in pids) if ending_pid is not None else len(pids) > 1


def recorded() -> list[Item]:
    """Rule 1: every recorded path, once. One spelling per path: parents resolved by the
    file system, so a folder recorded through a symlink and through its real path is one
    entry, and `sym/../x` is judged where it really is."""
    grouped: dict[str, Item] = {}
    folders: dict[str, str] = {}  # resolved once for all records (many lie in one folder)
    for record in read_records(links=True):
        key = paths.resolve_parents(record.path, folders)
        if key in grouped:
            grouped[key].records.append(record)
        else:
            grouped[key] = Item(key, [record])
    return list(grouped.values())


def place(item: Item) -> None:
    """Rules 2 and 3: the root the path lies in, or skip (or missing)."""
    if not os.path.lexists(item.path):  # or held in a removal's trash, or put back since the look
        item.set(*(("keep", "in_use") if in_flight(item.path, settle=False) or os.path.lexists(item.path)
                   else ("missing", "missing")))
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


def _measured(item: Item, known_mounts: frozenset[str]) -> bool:
    """Rules 2 and 3 passed, its own mtime read and its tree measured (one walk, which finds the
    repositories inside too; `known_mounts`, the sweep's mount table, is read once for all its
    scans, and again by the removal); False when it is not the GC's."""
    place(item)
    if item.root is None:
        return False
    try:
        item.mtime = os.lstat(item.path).st_mtime
    except OSError:
        item.set("missing", "missing")
        item.root = None
        return False
    item.tree = scanner.scan(item.path, mounts=known_mounts)
    return True


def in_use(item: Item, facts: Facts, where: str | None = None) -> Reason | None:
    """Rule 4: `live` or `in_use` when something running needs the path, else None.
    `where`: the folder as it is now (moved aside for removal), for the checks of content."""
    real = os.path.realpath(item.path)
    if _made_live(item, facts) or any(inside(f, real) for f in facts.folders) or _held(real, facts):
        return "live"
    if facts.live.unsure or _the_users(item, real, facts, where):
        return "in_use"
    if facts.live.process_inside(real, os.path.realpath(where) if where else ""):
        return "in_use"  # a shell cd-ed there, a server started from it, a file held open
    if (where is None and any(inside(m, real) for m in facts.mounts)) or _config_in_use(where or item.path):
        return "in_use"
    # a link of the user's into it, an editable install of it, a submodule's url (`gc_records.OutsideNames`)
    return "in_use" if facts.outside.naming(real, item.records) is not None else None


def _the_users(item: Item, real: str, facts: Facts, where: str | None) -> bool:
    """No output (any more): claudetto's state or Claude's temp folder (`gc_roots.own_place`), not
    what the recorded call made (`output_shape`), a project or a project's file: a clone the user
    runs Claude in, a file a repository around it tracks."""
    return (own_place(real, item.root) or not_as_recorded(where or item.path, item.records, facts.mounts)
            or any(inside(p, real) for p in facts.projects) or _in_a_project(item, real, facts)
            or gc_records.tracked_around(real, facts.output_set))


def _in_a_project(item: Item, real: str, facts: Facts) -> bool:
    """Inside the project its session worked in (the git root of a record's cwd, else that cwd), the git
    checkout around it (the user's clone a session wrote into from elsewhere) or a folder Claude was started
    in (`.claude.json`, with git or without), none an output itself, or a folder a live session works in
    (`Facts.folders`), that lies in the root (TMPDIR as the scratch disk the projects live on): the
    project's files, or those a live session works on. A project that is the root itself (`TMPDIR=$PWD`)
    keeps what a Write made there (`_written_in_root`)."""
    root = os.path.realpath(item.root or "/")
    tops: list[Any] = [_git_top(r.cwd) or r.cwd for r in item.records if r.cwd[:1] == "/"]
    if item.root == per_sweep(("tmp",), paths.user_tmp_str):  # the user's checkout it was made in (a worktrees root holds Claude's)
        tops += [_git_top(os.path.dirname(real)), *facts.projects]
    ours = [p for p in (os.path.realpath(t) for t in dict.fromkeys(tops) if t) if not inside_any(p, facts.output_set)]
    if root in ours and _written_in_root(item, real, root, facts):
        return True
    return any(strictly_inside(real, p) and strictly_inside(p, root) for p in [*ours, *facts.folders])


def _written_in_root(item: Item, real: str, root: str, facts: Facts) -> bool:
    """A file a Write made in a root that is a project itself (`TMPDIR=$PWD`, a folder of notes without
    git), in no other output: the project's. Not in a shared temp folder (`/tmp`, sticky and writable by
    all: `cd /tmp && claude` for a throwaway chat makes no project of it); and what a command made there
    (`mktemp -d`, a clone, a copy) is a temp output even when a session was started in the root."""
    return (not shared_temp(root) and all(r.kind == "scratch" for r in item.records)
            and not inside_any(real, facts.output_set, itself=False))


def _made_live(item: Item, facts: Facts) -> bool:
    """Its recording session is live, or the Claude process whose call made it still runs (an id
    changes on `/clear` and `/resume`, a process does not) and is not the one that exits."""
    return any(facts.live.has(r.session) or (r.stem and facts.live.has(r.stem)) or (
        r.claude_pid is not None and r.session != facts.ending and r.claude_pid != facts.ending_pid
        and sessions.process_running(r.claude_pid, r.claude_start)) for r in item.records)


def _held(real: str, facts: Facts) -> bool:
    """A session checkout the registry says a session holds (`checkouts.holders`, the rule the
    cleanup keeps it by) is, holds or lies around the path: a resumed session holds its
    checkout from the launch folder, before its cwd is inside."""
    from app.core.checkouts import holders

    return any((inside(real, key) or inside(key, real)) and holders(key, entry, ending_session=facts.ending)
               for key, entry in facts.checkouts.items())


def _config_in_use(folder: str) -> bool:
    """A folder some Claude uses as its config folder: its own `sessions/` names a running
    process (whoever recorded it, and whatever it was recorded as)."""
    from pathlib import Path

    own = os.path.join(folder, "sessions")
    return (not os.path.islink(own) and os.path.isdir(own)
            and any(s.live for s in sessions.read_sessions(folder=Path(own))))


def unused_of(items: list[Item], facts: Facts) -> list[Item]:
    """Rule 4 over the placed paths: the unused ones. A path that holds a used one stays
    too: removing it would remove the used one."""
    candidates: list[Item] = []
    # parents resolved already; a link is never an output (rule 3), nor is what it points at
    facts.output_set = frozenset(i.path for i in items if not os.path.islink(i.path))
    for item in items:
        if _measured(item, facts.mounts):
            if (used := in_use(item, facts)) is not None:
                item.set("keep", used)
            else:
                candidates.append(item)
    used_paths = [(i.path, i.reason) for i in items if i.reason in _USED]
    for item in candidates:
        why = next((w for p, w in used_paths if inside(p, item.path)), None)
        if why is not None:
            item.set("keep", why)
    return [i for i in candidates if i.reason not in _USED]


def without_unique_work(unused: list[Item], outside: gc_records.OutsideNames | None = None) -> list[Item]:
    """No unique work is lost (`work_lost`): a path holding some is kept, and so is a recorded path that holds one."""
    saved: list[Item] = []
    for item in unused:
        lost = work_lost(item, outside=outside)
        if lost is not None:
            item.set("keep", lost)
            saved.append(item)
    for item in unused:
        holds = next((o for o in saved if o is not item and inside(o.path, item.path)), None)
        if holds is not None and item not in saved:
            item.set("keep", holds.reason)
            saved.append(item)
    return [i for i in unused if i not in saved]


def work_lost(item: Item, where: str | None = None, outside: gc_records.OutsideNames | None = None) -> Reason | None:
    """`dirty`/`unmerged`/`not_removed` when removing `item` would lose unique git work: a
    repository or worktree in it (found by the sweep's one walk) with work nowhere else, or
    whose objects a repository outside borrows (`unmerged`); and `dirty` when it is or holds a
    secret-looking file outside every repository, not a copy a recorded source still holds (a key
    generated there is lost with it: `secret_copies`). `where`: the folder now; `outside`: `OutsideNames`."""
    from app.core.secret_copies import unique_secret
    from app.core.unique_work import unique_work

    repos = item.tree.repos if item.tree is not None and not item.tree.partial else None  # partial: it walks
    if where is not None:  # found again where it now is: one moved in after the measure counts too
        from app.core.cleanup_guard import measured_repositories, repositories_in

        is_folder = os.path.isdir(where) and not os.path.islink(where)
        repos = repositories_in(where) if is_folder else ()
        repos = measured_repositories(where) if repos is None else repos
        if repos is None:
            return "dirty"  # a folder in it cannot be read: what it holds cannot be judged
    here = where or item.path
    lost = unique_work(here, repos, original=item.path)
    if lost is None and unique_secret(here, [os.path.basename(item.path)], item.records) is not None:
        lost = "dirty"
    if lost in ("dirty", "unmerged") and gc_records.still_at_source(item.records, here):
        lost = None  # a copy its source still holds unchanged: nothing of it is lost
    if lost is None and (user_state(item.records, here) or lost_source(item.records, here) or output_moved_in(
            here, [r.evidence for r in item.records], _budget(item, where), item.path,
            first_look=where is None) is not None):  # an entry moved in (`created.output_moved_in`)
        return "dirty"
    return lost or (outside or gc_records.OutsideNames()).lending(item.path, item.records, repos)


def _budget(item: Item, where: str | None) -> int:
    """Entries read for one moved in: when judged, as many as the walk counted (cut short, that keeps
    the path); at the removal only the top again."""
    counted = item.tree.entries if item.tree is not None and not item.tree.partial else 0
    return GUARD_ENTRIES if where else min(max(MAX_INNER_ENTRIES, counted), MAX_LOOKED)


def replaced(item: Item, where: str) -> Reason | None:
    """`in_use` when the file a Write recorded is no longer the one it made (another file took
    its place since the sweep read the records): it belongs to whoever put it there."""
    from app.core.created import why_unproven

    if any(r.evidence is not None and why_unproven(where, r.evidence) for r in item.records):
        return "in_use"
    return None


def by_age(unused: list[Item], now: float) -> None:
    """Rule 5, age: older than GC_MAX_AGE_DAYS (its mtime; kept old times, its record's too) goes."""
    max_age = output_limit_s()
    _mark({i.path for i in unused if is_old(_since(i), max_age, now)}, unused, "age")


def by_size(unused: list[Item]) -> None:
    """Rule 5, size: among the young ones left, the oldest go first until all of them take at most GC_MAX_BYTES."""
    young = [i for i in unused if i.action != "remove"]
    pooled = {i.path for i in young}
    tops = [i for i in young if not inside_any(i.path, pooled, itself=False)]
    total = sum(i.size for i in tops)
    limit = bound("GC_MAX_BYTES")
    chosen: set[str] = set()
    for item in sorted(tops, key=lambda i: (_since(i) or 0.0, i.path)):
        if total <= limit:
            break
        chosen.add(item.path)
        total -= item.size
    _mark(chosen, young, "size")


def _since(item: Item) -> float | None:
    return output_since(item.mtime, [r.time for r in item.records if gc_records.old_times(r, item.mtime)])


def _mark(chosen: set[str], pool: Iterable[Item], reason: Reason) -> None:
    """Mark the `chosen` paths for removal, with every pooled path inside one (they go with it)."""
    for other in pool:
        if other.action != "remove" and inside_any(other.path, chosen):
            other.set("remove", reason)


def judge(facts: Facts, now: float | None = None) -> list[Item]:
    """Every recorded path judged by rules 1 to 5 (nothing is removed here)."""
    fresh()
    items = recorded()
    left = without_unique_work(unused_of(items, facts), facts.outside)
    by_age(left, time.time() if now is None else now)
    by_size(left)
    return items
