"""The session-start cleanup: probe folders, session folders, claudetto's gate logs and
worktrees, each by its rule. The temp-folder rules are app/core/temp_folders.py; the worktree rules app/core/worktrees.py
(five conditions). This module runs them and removes: one process, one deadline
(SWEEP_TIMEOUT_MS), looked at between items; an item once started is finished with its
journal line, and what was not reached stays as it was (`timed_out`). Folders and gate logs
go through `removal.remove`; worktrees through `worktrees.remove_worktree`. At the moment of
each removal the folder is looked at again (app/core/cleanup_guard.py: modified since it was
judged, a session that started meanwhile, a process in it), and a folder holding unique git
work (app/core/unique_work.py) is kept whatever its age. While a running session's file
cannot be read, nothing a session may hold is removed (`in_use`): only probe folders go.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from app.core import git, paths, processes, sessions, settings, worktrees
from app.core.bounds import bound
from app.core.cleanup_guard import removal_guard as removal_guard  # the dashboard asks it here
from app.core.cleanup_lock import one_at_a_time
from app.core.log import log, log_lines, printable
from app.core.mounts import mount_points
from app.core.scanner import TreeSize, scan_many
from app.core.temp_folders import TempJudgement, judge_temp, periods_by_slug
from app.core.verdict import Verdict, settled

if TYPE_CHECKING:
    from concurrent.futures import Future, ThreadPoolExecutor

    from app.core.git import GitWorktree

    #: one worktree on its way: its path, its project's cleanupPeriodDays (s), its judgement
    #: to come (None: not judged, kept `in_use`)
    _Judging = tuple[Path, float, Future[worktrees.Judged | None] | None]


#: Of the time left, what a measure leaves to the items after it (at most half): one folder too
#: slow to measure (thousands of folders deep) took all of it each time, and nothing after it went.
RESERVE_S = 5.0


@dataclass(frozen=True)
class CleanupReport:
    """What one cleanup did (or, with `dry_run`, would do). Counts follow CONTRACT `clean`."""

    dry_run: bool
    folders: int = 0
    bytes: int = 0
    files: int = 0
    worktrees: int = 0
    probes: int = 0
    worktrees_kept: list[tuple[str, str]] = field(default_factory=list)  # (path, reason)
    unknown_kept: int = 0
    verdicts: list[Verdict] = field(default_factory=list)
    timed_out: bool = False

    @property
    def journal_failed(self) -> bool:
        """A removal did not happen because the journal could not be written first."""
        return any(v.reason == "journal" for v in self.verdicts) or any(
            reason == "journal" for _, reason in self.worktrees_kept)


class _Tally:
    """The counts, kept worktrees and verdicts of one part of a cleanup (one per thread)."""

    def __init__(self) -> None:
        self.counts = {"folders": 0, "bytes": 0, "files": 0, "worktrees": 0, "probes": 0}
        self.kept: list[tuple[str, str]] = []
        self.unknown = 0
        self.verdicts: list[Verdict] = []


class _Run:
    """The deadline, the liveness facts and the options shared by the parts of one cleanup."""

    def __init__(self, dry_run: bool, timeout_ms: int, current_session: str | None,
                 current_cwd: str | None, trash: bool | None = False,
                 before_remove: Any = None, claude_tmp: str | None = None) -> None:
        self.dry_run = dry_run
        self.claude_tmp = Path(claude_tmp) if claude_tmp else paths.claude_tmp_dir()
        self.before_remove = before_remove
        self.trash = trash
        self.deadline = time.monotonic() + timeout_ms / 1000.0
        self.now = time.time()
        self.current_session = current_session
        self.current_cwd = current_cwd
        self.live = sessions.liveness(current_session, current_cwd)
        # one mount table for every measure of the run (the removal reads its own anew)
        self.mounts = mount_points()
        self.timed_out = False
        self.cut_short = False  # an item left unmeasured within its share of the time

    def out_of_time(self) -> bool:
        if not self.timed_out and time.monotonic() >= self.deadline:
            self.timed_out = True
        return self.timed_out

    def left_s(self, share: bool = False) -> float:  # with `share`: what one measure may take
        left = max(0.0, self.deadline - time.monotonic())
        return left - min(left / 2, RESERVE_S) if share else left

    def report(self, *parts: _Tally) -> CleanupReport:
        counts = {key: sum(part.counts[key] for part in parts) for key in parts[0].counts}
        return CleanupReport(
            dry_run=self.dry_run,
            worktrees_kept=[item for part in parts for item in part.kept],
            unknown_kept=sum(part.unknown for part in parts),
            verdicts=[v for part in parts for v in part.verdicts],
            timed_out=self.timed_out or self.cut_short, **counts,
        )


# --- acting -------------------------------------------------------------------------------


def _remove_temps(run: _Run, tally: _Tally, items: list[Verdict]) -> None:
    """Each folder or gate log through removal.remove, the next one measured meanwhile (its
    stats overlap the removal's unlinks); stops between items at the deadline. A dry run, with
    no removal to overlap, measures all at once (`scan_many`, two readers), in a share too. A
    real run measures one ahead only: the repositories a measure finds are what the removal's
    last check judges, so a measure stays as close to its removal as it can; one not done in
    its share (`RESERVE_S`) leaves its item as it was (`timed_out`), and the next goes on."""
    from concurrent.futures import ThreadPoolExecutor

    def measure(batch: list[Verdict], last: bool) -> list[TreeSize]:
        return scan_many([v.path for v in batch], budget_s=run.left_s(share=not last), mounts=run.mounts)

    batches = [items] if run.dry_run and items else [[item] for item in items]
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="hygiene-scan") as pool:
        ahead = [pool.submit(measure, batch, len(batches) == 1 and not run.dry_run) for batch in batches[:1]]
        for i, batch in enumerate(batches):
            sizes = ahead.pop().result()
            ahead += [pool.submit(measure, later, i + 2 == len(batches)) for later in batches[i + 1:i + 2]]
            for verdict, size in zip(batch, sizes, strict=True):
                if run.out_of_time():  # the budget ran out: not started
                    run.timed_out = True
                    break
                if size.partial:  # not measured in its share: left as it was, the next one goes on
                    run.cut_short = True
                    continue
                _remove_temp(run, tally, verdict, size)
            if run.timed_out:
                break
        for future in ahead:
            future.cancel()


def _remove_temp(run: _Run, tally: _Tally, verdict: Verdict, size: TreeSize) -> None:
    """One folder or gate log through removal.remove, and its counts."""
    from dataclasses import replace

    from app.core import removal
    from app.core.unique_work import unique_work

    is_dir = os.path.isdir(verdict.path) and not os.path.islink(verdict.path)
    repos = None if size.partial else size.repos
    lost = unique_work(verdict.path, repos)
    if lost is not None:
        tally.verdicts.append(replace(verdict, action="keep", reason=lost))
        return
    guard = removal_guard(verdict, current_session=run.current_session, current_cwd=run.current_cwd)
    done = removal.remove(verdict.path, verdict.root, verdict.rule, kind=verdict.kind,
                          session=verdict.session, size=size, dry_run=run.dry_run, trash=run.trash,
                          guard=None if run.dry_run else guard,
                          _before_remove=run.before_remove)
    answer = settled(verdict, done)
    if answer.action == "remove" or done.status == "failed":  # a failed one freed what it says
        tally.counts["bytes"] += done.bytes
        tally.counts["files"] += done.files
    if answer.action == "remove":
        tally.counts["folders"] += is_dir
        tally.counts["probes"] += verdict.rule == "probe"
    tally.verdicts.append(answer)


#: How many worktrees are judged at once: the judgement waits on git (its own processes), so
#: a few threads keep both cores busy while this process measures temp folders.
WORKTREE_THREADS = 4


def _worktrees(run: _Run, tally: _Tally, projects: list[Path]) -> None:
    """Every worktree of each project: judged several at once (`_judge_all`), then removed
    one at a time, in order, each checked once more by its guard at that moment."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=WORKTREE_THREADS, thread_name_prefix="hygiene-git") as pool:
        plans = [_judge_all(run, pool, project) for project in projects]
        for project, listing, judgements in plans:
            _act_on_worktrees(run, tally, project, listing, judgements)
            if run.timed_out:
                break
        pool.shutdown(cancel_futures=True)  # what was not reached stays as it was


def _judge_all(run: _Run, pool: ThreadPoolExecutor,
               project: Path) -> tuple[Path, dict[str, GitWorktree], list[_Judging]]:
    """The judgement of each worktree of `project` started in `pool`: the project, its git
    listing, and (path, its period, the judgement to come) for each, in order; no judgement
    while a running session cannot be read (all are kept, `in_use`)."""
    entries = worktrees.list_worktrees(project)
    if not entries:
        return project, {}, []
    period = settings.cleanup_period_seconds(project)
    listing = git.worktree_list(project)
    cwds = list(run.live.cwds)
    if not run.live.unsure:  # read once here, not by each thread at once (each reads every process)
        processes.judging_paths_in_use()

    def judge(path: Path) -> worktrees.Judged | None:
        if run.out_of_time():
            return None  # not reached
        return worktrees.judge_removal(path, project, cwds, period, listing, run.left_s(share=True))

    return project, listing, [(path, period, None if run.live.unsure else pool.submit(judge, path))
                              for path in entries]


def _act_on_worktrees(run: _Run, tally: _Tally, project: Path, listing: dict[str, GitWorktree],
                      judgements: list[_Judging]) -> None:
    """Each judged worktree in order: counted, kept, or removed (its guard asked once more)."""
    for path, period, future in judgements:
        if future is None:
            tally.kept.append((str(path), "in_use"))
            continue
        try:
            judged = future.result()
            if judged is None or run.out_of_time():
                run.timed_out = True
                break
            done = worktrees.remove_worktree(path, project, live_cwds=run.live.cwds, period_s=period,
                                             dry_run=run.dry_run, session=run.current_session, listing=listing,
                                             judged=judged)
        except Exception as exc:  # noqa: BLE001 - one worktree's trouble must not stop the rest
            log(f"hygiene: worktree {path} not judged: {type(exc).__name__}: {exc}")
            tally.kept.append((str(path), "not_removed"))
            continue
        if done.status == "timeout":  # not measured in its share: left as it was, the next one goes on
            run.cut_short = True
            if run.out_of_time():
                break
            continue
        tally.verdicts.append(done.verdict)
        if done.status in ("removed", "dry_run"):
            tally.counts["worktrees"] += 1
            tally.counts["folders"] += 1
            tally.counts["bytes"] += done.bytes
            tally.counts["files"] += done.files
        elif done.verdict.action == "keep":
            tally.kept.append((str(path), done.verdict.reason))


def resolve_projects(projects: Iterable[str | os.PathLike[str]] | None,
                     cwd: str | None = None) -> list[Path]:
    """Each project as its main repository (a worktree's own repo), deduplicated; with none
    given, the git root of `cwd` (or the current folder), when there is one."""
    if projects is None:
        try:
            here = cwd or os.getcwd()
        except OSError:
            return []
        top = paths.main_repo_root(here)
        return [top] if top is not None else []
    found: list[Path] = []
    for project in projects:
        top = paths.main_repo_root(project) or Path(os.path.abspath(project))
        if top not in found:
            found.append(top)
    return found


def run_cleanup(projects: Iterable[str | os.PathLike[str]] | None = None, *, dry_run: bool = False,
                current_session: str | None = None, current_cwd: str | None = None,
                timeout_ms: int | None = None, trash: bool | None = False,
                _before_remove: Any = None, claude_tmp: str | None = None,
                lock_wait_s: float | None = None) -> CleanupReport:
    """The whole cleanup: temp-folder rules (global), then the worktrees of `projects`
    (default: the git root of `current_cwd` or the current folder).

    `trash` goes to removal.remove. False (the default) removes in place: the cleanup is
    one process, already detached at session start, and its report counts what is gone;
    None would rename big folders into the trash for a detached purge. `_before_remove` is
    a test seam (see `removal.remove`): something that happens between judgement and removal.
    `claude_tmp`: the claude-<uid> folder to clean (a hook's payload names the one Claude
    uses, `paths.claude_tmp_dir_for`), else the environment's.

    One cleanup removes at a time (`one_at_a_time`): a second one waits `lock_wait_s` (by
    default as long as a whole sweep may take), then raises StateBusy."""
    limit = bound("SWEEP_TIMEOUT_MS") if timeout_ms is None else timeout_ms
    if dry_run:
        return _run_cleanup(projects, dry_run, current_session, current_cwd, limit, trash, _before_remove,
                            claude_tmp)
    with one_at_a_time(limit / 1000.0 + 30.0 if lock_wait_s is None else lock_wait_s):
        # what a cleanup killed between its move to the trash and its journal line left
        # pending goes back first, so this one judges it (and removes it) in its place
        from app.core.purge import settle_leftovers

        settle_leftovers()
        return _run_cleanup(projects, dry_run, current_session, current_cwd, limit, trash, _before_remove,
                            claude_tmp)


def _run_cleanup(projects: Iterable[str | os.PathLike[str]] | None, dry_run: bool, current_session: str | None,
                 current_cwd: str | None, limit: int, trash: bool | None, _before_remove: Any,
                 claude_tmp: str | None) -> CleanupReport:
    run = _Run(dry_run, limit, current_session, current_cwd, trash, _before_remove, claude_tmp)
    chosen = resolve_projects(projects, current_cwd)
    temp, trees, items = _Tally(), _Tally(), list[Verdict]()
    from concurrent.futures import ThreadPoolExecutor

    # The worktrees wait on git (other processes) while this thread judges temp folders (it
    # reads every process's open files) and removes them.
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="hygiene-worktrees") as pool:
        done = pool.submit(_worktrees, run, trees, chosen)
        try:
            known = paths.known_projects(current_cwd) if current_cwd else paths.known_projects()
        except OSError:
            known = []
        judgement = TempJudgement(run.now, run.live, periods_by_slug([*chosen, *known]),
                                  settings.cleanup_period_seconds(None))
        for verdict in judge_temp(run.claude_tmp, judgement):
            (items if verdict.action == "remove" else temp.verdicts).append(verdict)
        temp.unknown = judgement.unknown
        _remove_temps(run, temp, items)
        done.result()
    return run.report(temp, trees)


def plan(projects: Iterable[str | os.PathLike[str]] | None = None, *, current_session: str | None = None,
         current_cwd: str | None = None) -> CleanupReport:
    """The dry run: what the cleanup would remove and keep; removes nothing, writes no state."""
    return run_cleanup(projects, dry_run=True, current_session=current_session, current_cwd=current_cwd)


# --- the report -----------------------------------------------------------------------------


def report_json(report: CleanupReport) -> dict[str, Any]:
    """CONTRACT `clean` JSON (plus `timed_out`)."""
    return {
        "dry_run": report.dry_run,
        "cleaned": {key: getattr(report, key) for key in ("folders", "bytes", "files", "worktrees", "probes")},
        "worktrees_kept": [{"path": path, "reason": reason} for path, reason in report.worktrees_kept],
        "unknown_kept": report.unknown_kept,
        "timed_out": report.timed_out,
    }


def report_lines(report: CleanupReport) -> list[str]:
    """CONTRACT plain-text report: CLEANED, one WORKTREES_KEPT per kept worktree, UNKNOWN_KEPT."""
    lines = [
        f"CLEANED folders={report.folders} bytes={report.bytes} files={report.files} "
        f"worktrees={report.worktrees} probes={report.probes}"
    ]
    lines += [f"WORKTREES_KEPT {reason} {printable(path)}" for path, reason in report.worktrees_kept]
    lines.append(f"UNKNOWN_KEPT {report.unknown_kept}")
    return lines


# --- SessionStart ---------------------------------------------------------------------------


def session_projects(cwd: str | None) -> list[Path]:
    """The session's own repository first, then every known project (each as its main repo)."""
    found = resolve_projects(None, cwd) if cwd else []
    try:
        known = paths.known_projects(cwd) if cwd else paths.known_projects()
    except OSError:
        known = []
    for project in resolve_projects(known):
        if project not in found:
            found.append(project)
    return found


def session_start_step(payload: dict[str, Any]) -> None:
    """The detached session-start job's step: the cleanup for the session's project and every
    known project, its report written to the session's gate log. One cleanup at a time: a
    second session starting meanwhile skips (logged)."""
    from app.core.state import StateBusy

    cwd = payload.get("cwd")
    cwd = cwd if isinstance(cwd, str) and cwd.startswith("/") else None
    sid = payload.get("session_id")
    sid = sid if isinstance(sid, str) and sid else None
    try:
        report = run_cleanup(session_projects(cwd), current_session=sid, current_cwd=cwd, lock_wait_s=0.0,
                             claude_tmp=paths.claude_tmp_dir_for(payload.get("scratchpad_dir")))
    except StateBusy:
        log("hygiene: another cleanup is running; this one skipped")
        return
    log_lines(report_lines(report))
    if report.timed_out:
        log(f"hygiene: stopped at SWEEP_TIMEOUT_MS={bound('SWEEP_TIMEOUT_MS')}; "
            "what was not reached is left as it was")
