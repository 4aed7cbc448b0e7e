"""The session-start cleanup's rules for temp folders: one function per rule, judging only.

| what | where | rule |
|---|---|---|
| probe folders | `claude-<uid>/fswatch-probe-*` | older than PROBE_MAX_AGE_MIN (`probe`) |
| session folders | `claude-<uid>/*/<uuid>` | older than cleanupPeriodDays, not live (`by_session`) |
| gate logs | `<tmp>/claudetto/*/<uuid>.*` (another folder than a slug's: `<uuid>.log`) | the same as session folders (`by_session`) |

Anything else directly in `claude-<uid>/` (Claude's `plugin-tool-staging/` included, and a
folder whose name is no project slug and that holds no session folder: no project folder,
`project_folder`) or in one of its project folders is no rule's: it is counted (`unknown`)
and kept; claudetto's own `.claudetto-trash` (there when `claude-<uid>` is a file system of
its own) is neither. A root that is not a real folder of this user (a symlink,
another user's) is not judged at all (`trusted_root`). app/core/hygiene.py removes.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

from app.core import paths
from app.core.age import is_old, probe_limit_s
from app.core.log import log
from app.core.sessions import Liveness
from app.core.trash import ROOT_TRASH_NAME
from app.core.verdict import Action, Reason, Verdict

PROBE_PREFIX = "fswatch-probe-"
# Claude's own folders beside the project folders: one entry no rule names, never searched
# for session folders (what Claude stages there is not a session's).
NOT_PROJECTS = frozenset({"plugin-tool-staging"})
_UUID = r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
# matched whole (`fullmatch`): `$` also matches before a final newline, and a folder named
# `<uuid>\n` is no session's (a rule must not take it for one: unknown, kept)
_SESSION_FOLDER = re.compile(_UUID)
_GATE_LOG = re.compile(rf"({_UUID})\..+")


class TempJudgement:
    """What the rules need of one cleanup: the moment, who is live, each project folder's
    cleanupPeriodDays (in seconds, by slug), and the count of entries no rule names."""

    def __init__(self, now: float, live: Liveness, periods: dict[str, float], default_period: float) -> None:
        self.now = now
        self.live = live
        self.periods = periods
        self.default_period = default_period
        self.unknown = 0

    def period(self, slug: str) -> float:
        return self.periods.get(slug, self.default_period)


def judge_temp(claude_tmp: Path, judgement: TempJudgement) -> Iterator[Verdict]:
    """Every entry of `claude-<uid>/` and of the gate-log root, judged."""
    yield from _claude_temp(claude_tmp, judgement)
    yield from _gate_logs(paths.log_root(), judgement)


def _claude_temp(tmp: Path, judgement: TempJudgement) -> Iterator[Verdict]:
    project_folders: list[os.DirEntry[str]] = []
    for entry in (scandir(tmp) if trusted_root(tmp) else []):
        st = _lstat(entry)
        if st is None:
            continue
        if entry.name == ROOT_TRASH_NAME and stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid():
            continue  # claudetto's own trash (the folder on a file system of its own): no one's entry
        if entry.name.startswith(PROBE_PREFIX):
            yield _unless_in_use(judgement, entry, probe(entry, st, tmp, judgement.now))
        elif stat.S_ISDIR(st.st_mode) and entry.name not in NOT_PROJECTS and project_folder(entry):
            project_folders.append(entry)
        else:
            judgement.unknown += 1
    for folder in project_folders:
        period = judgement.period(folder.name)
        for entry in scandir(Path(folder.path)):
            st = _lstat(entry)
            if st is None:
                continue
            if not (stat.S_ISDIR(st.st_mode) and _SESSION_FOLDER.fullmatch(entry.name)):
                judgement.unknown += 1
                continue
            yield by_session(judgement, entry, st, "session_folder", entry.name, period, tmp)


def project_folder(entry: os.DirEntry[str]) -> bool:
    """Whether a folder directly in `claude-<uid>/` is a project's: Claude names one after the
    project's absolute path (a slug, `-home-me-proj`, always starting with `-`); a folder of
    another name is one only while it holds a session's folder. Any other (`mystery/`, empty
    or holding notes) is one entry no rule names: counted once, as the seed counts the
    entries of `claude-<uid>`, and nothing in it is any rule's."""
    if entry.name.startswith("-"):
        return True
    return any(_SESSION_FOLDER.fullmatch(child.name) and child.is_dir(follow_symlinks=False)
               for child in scandir(Path(entry.path)))


def _gate_logs(logs: Path, judgement: TempJudgement) -> Iterator[Verdict]:
    """claudetto's logs, one folder per project slug (`-home-me-proj`, or `unknown`): there
    every `<uuid>.*` is a gate log (seed 000). A `<tmp>/claudetto` of the user's own (a clone
    of claudetto itself, in /tmp) is no log root. In a folder of another name (the seed's `*`)
    only a `<uuid>.log` is one: a test fixture named `<uuid>.json` there went with the rule."""
    if not trusted_root(logs) or os.path.lexists(logs / ".git"):
        return
    for folder in scandir(logs):
        st = _lstat(folder)
        if st is None or not stat.S_ISDIR(st.st_mode) or folder.name == "trash" or folder.name.startswith("."):
            continue  # the trash beside the logs holds what removals put there, pending
        slug = folder.name.startswith("-") or folder.name == "unknown"
        period = judgement.period(folder.name)
        for entry in scandir(Path(folder.path)):
            match = _GATE_LOG.fullmatch(entry.name)
            st = _lstat(entry)
            if match is not None and st is not None and (slug or entry.name.endswith(".log")):
                yield by_session(judgement, entry, st, "gate_log", match.group(1), period, logs)


def probe(entry: os.DirEntry[str], st: os.stat_result, root: Path, now: float) -> Verdict:
    """A file watcher's probe folder: old (its own mtime, PROBE_MAX_AGE_MIN) goes; no
    session holds one."""
    if is_old(st.st_mtime, probe_limit_s(), now):
        return _verdict(entry, st, "probe", "remove", "age", root)
    return _verdict(entry, st, "probe", "keep", "young", root)


def by_session(judgement: TempJudgement, entry: os.DirEntry[str], st: os.stat_result, rule: str,
               session: str, period: float, root: Path) -> Verdict:
    """A session's folder or gate log: kept while the session is live, or while a running
    session's file cannot be read or names no session id; else gone once older than
    cleanupPeriodDays."""
    if judgement.live.has(session):
        return _verdict(entry, st, rule, "keep", "live", root, session)
    if judgement.live.unsure:
        return _verdict(entry, st, rule, "keep", "in_use", root, session)
    if not is_old(st.st_mtime, period, judgement.now):
        return _verdict(entry, st, rule, "keep", "young", root, session)
    return _unless_in_use(judgement, entry, _verdict(entry, st, rule, "remove", "age", root, session))


def _unless_in_use(judgement: TempJudgement, entry: os.DirEntry[str], verdict: Verdict) -> Verdict:
    """A folder about to go is kept while any process works in it or holds a file in it
    (a shell `cd`-ed there, a server started from it), whatever its session's state."""
    if verdict.action == "remove" and judgement.live.process_inside(os.path.realpath(entry.path)):
        return replace(verdict, action="keep", reason="in_use")
    return verdict


def _verdict(entry: os.DirEntry[str], st: os.stat_result, rule: str, action: Action, reason: Reason,
             root: Path, session: str | None = None) -> Verdict:
    return Verdict(path=entry.path, kind=rule, action=action, reason=reason, rule=rule,
                   root=str(root), session=session, mtime=st.st_mtime)


def periods_by_slug(projects: list[Path]) -> dict[str, float]:
    """cleanupPeriodDays in seconds for each project folder name Claude uses in its temp: the
    project's, and its own for each of its `.claude/worktrees/*` checkouts (a session there
    names its temp folder after the checkout). Two projects may share one name (`/p/a-b` and
    `/p/a/b` are both `-p-a-b`): a folder of that name may be either's, so the longer holds."""
    from app.core import settings

    found: dict[str, float] = {}
    for project in projects:
        try:
            period = settings.cleanup_period_seconds(project)
            places = [project, *(Path(p) for p in scandir(project / ".claude" / "worktrees") if p.is_dir())]
            for slug in {paths.project_slug(p) for p in places}:
                found[slug] = max(period, found.get(slug, period))
        except (OSError, ValueError):
            continue
    return found


def scandir(folder: Path) -> list[os.DirEntry[str]]:
    try:
        with os.scandir(folder) as it:
            return sorted(it, key=lambda e: e.name)
    except OSError:
        return []


def _lstat(entry: os.DirEntry[str]) -> os.stat_result | None:
    """The entry's own stat; None (passed over) when it cannot be read, or is a remote mount
    that does not answer (a look at it would wait for ever: app/core/hung_mounts.py)."""
    from app.core.hung_mounts import reachable

    try:
        return entry.stat(follow_symlinks=False) if reachable(entry.path) else None
    except OSError:
        return None


def trusted_root(root: Path) -> bool:
    """Claude's temp folder and the log root are judged only when they are real folders of
    this user: a symlink there (or a folder of another user) would make every rule act on
    whatever it points at. Such a root is left alone, and the log says why."""
    try:
        st = os.lstat(root)
    except FileNotFoundError:
        return False
    except OSError as exc:
        log(f"clean: {root} not judged: {exc}")
        return False
    if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode) or os.path.realpath(root) != os.fspath(root):
        log(f"clean: {root} is not a real folder (a symlink?); nothing in it is judged")
        return False
    if st.st_uid != os.getuid():
        log(f"clean: {root} belongs to uid {st.st_uid}, not this user; nothing in it is judged")
        return False
    return True
