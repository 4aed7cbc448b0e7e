"""Checkouts: every `.claude/worktrees/*` of every known project, with its state (active,
released, cut short, unmanaged), the sessions holding it, size and verdict; below, for the
highlighted one, what git says of it and what a release would delete.

`r` releases a session checkout (or finishes a release that was cut short): the core's dry
run lists the scratch that goes with its size and says `.tmp/` stays, and a yes runs
`release.release_checkout`, unless more would go by then than was listed: that is asked again. `d` removes a checkout the verdict calls removable, through
`worktrees.remove_worktree`, which judges it once more. Both run in workers.
"""

from __future__ import annotations

import os
from typing import Any

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.worker import Worker

from app import format as fmt
from app.core.release import Release, swapped
from app.core.verdict import Verdict
from app.core.worktrees import WorktreeInfo
from app.data import checkouts, removals
from app.data.store import live_places
from app.screens.base import ClaudettoScreen
from app.screens.confirm import ConfirmModal
from app.widgets.detail import DetailPlan
from app.widgets.plain import visible
from app.widgets.progress import WorkLine
from app.widgets.table import Col, Table, TablePlan

COLUMNS = (Col("name", "name"), Col("project", "project", 10, drop=2), Col("branch", "branch", 18, drop=1),
           Col("size", "size", 10), Col("state", "state", 9), Col("sessions", "sessions", 12, drop=3),
           Col("verdict", "verdict", 20))
MIN_NAME = 16
SWAPPED = "swapped"  # a removal's why: the checkout is a symlink or no folder now
STATES = {"active": "active", "released": "released", "cut_short": "cut short", "unmanaged": "unmanaged"}
STATE_STYLES = {"active": "green", "released": "dim", "cut_short": "bold yellow", "unmanaged": ""}


def sessions_cell(sessions: dict[str, bool]) -> str:
    if not sessions:
        return "-"
    live = sum(sessions.values())
    if len(sessions) == 1:
        sid, running = next(iter(sessions.items()))
        return f"{sid[:8]} {'●' if running else '○'}"
    return f"{len(sessions)} ({live} live)"


def verdict_text(info: WorktreeInfo, held: Verdict | None = None) -> str:
    """`removable`, or why it is kept: by the worktree rule, or by another rule (`held`)."""
    if held is not None:
        return fmt.verdict_cell(held.action, held.reason)
    return "removable" if info.removable else f"keep: {info.reason}"


class CheckoutsScreen(ClaudettoScreen):
    """Session checkouts and every other worktree; release, remove."""

    CSS_PATH = "checkouts.tcss"
    TABLE = TablePlan("#checkouts", COLUMNS, MIN_NAME)
    DETAIL = DetailPlan("#detail", "reading the checkouts…", "No checkouts in .claude/worktrees/ of any known project.")
    RELEASE = "Release the checkout: delete its declared scratch, keep .tmp/ (or finish a cut-short release)"
    BINDINGS = [
        Binding("r", "release", "Release", id="release", tooltip=RELEASE),
        Binding("d", "remove", "Remove", id="checkout-remove", tooltip="Remove the checkout (only when removable)"),
        Binding("f", "release", "Finish release", show=False, id="finish", tooltip="Finish a release cut short (r too)"),
        Binding("ctrl+r", "refresh", "Refresh", id="checkouts-refresh", tooltip="Read every checkout again"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.infos: dict[str, WorktreeInfo] = {}
        self.releasing: dict[str, int] = {}  # checkout -> the process releasing it now
        self.busy = False
        self.asked_again = False  # a yes to a release was said: a dry run now is a new question
        self.confirmed: frozenset[str] = frozenset()  # the scratch the last yes was to
        self.live_seen: set[tuple[str | None, str | None]] | None = None  # the live sessions the rows show
        self.held_by_others: dict[str, Verdict] = {}  # what the rows show another rule keeps

    def below_table(self) -> ComposeResult:
        yield WorkLine(id="progress")

    # --- reading ----------------------------------------------------------------------------

    def action_refresh(self) -> None:
        # the live sessions this read will show (it reads them itself: None, not yet known here)
        self.live_seen = live_places(self.store.sessions) if self.store.sessions_read else None
        self.read_worker()

    def on_mount(self) -> None:  # after the base's (Textual calls each class's handler), which reads
        self.store.sessions_changed.subscribe(self, lambda _d: self.sessions_moved())
        self.store.changed.subscribe(self, lambda _d: self.judged_again())

    def judged_again(self) -> None:
        """The outputs were judged again: a checkout another rule keeps now (or no longer)
        says so at once, not at the next read."""
        if self.held_by_others != self.others_keep():
            self.show_rows()

    def others_keep(self) -> dict[str, Verdict]:
        """Each listed checkout another rule keeps, with that rule's verdict (the worktree
        rule's own is the one this screen read, fresher than the store's)."""
        held = removals.kept_paths(v for v in self.store.rows.values() if v.rule != "worktree")
        return {path: held[path] for path, info in self.infos.items() if info.removable and path in held}

    def sessions_moved(self) -> None:
        """A session started or ended: the ● and ○ of the rows, and the `keep: live` of a
        checkout its session left, follow within the poll, not at the next ctrl+r."""
        live = live_places(self.store.sessions)
        if self.live_seen is None:
            self.live_seen = live  # the first sessions read: the rows were read with these
        elif live != self.live_seen and self.detail_pane.read and not self.busy:
            self.action_refresh()  # busy: the act's end reads again

    def on_screen_resume(self) -> None:
        """Shown again: a checkout the Outputs screen removed meanwhile, or a session that
        started in one, must not stay listed as it was (`removable`, for a folder gone)."""
        if self.detail_pane.read and not self.busy:
            self.action_refresh()

    @work(thread=True, exclusive=True, group="read", exit_on_error=False, name="Reading the checkouts")
    def read_worker(self) -> tuple[list[WorktreeInfo], dict[str, int]]:
        infos = checkouts.read_checkouts()
        return infos, checkouts.releasing_now(infos)

    @work(thread=True, exclusive=True, group="detail", exit_on_error=False, name="Reading the checkout")
    def detail_worker(self, info: WorktreeInfo) -> checkouts.CheckoutDetail:
        return checkouts.checkout_detail(info)

    def cells(self, _key: str, row: tuple[WorktreeInfo, Verdict | None]) -> list[Text]:
        info, held = row
        values = {
            "name": Text(fmt.tail(info.name, self.fitted.rest), no_wrap=True),
            "project": Text(os.path.basename(info.project.rstrip("/"))),
            "branch": Text(info.branch or "-", no_wrap=True, overflow="ellipsis"),
            "size": Text(fmt.size(info.size)),
            "state": Text(self.state_of(info), style=STATE_STYLES.get(info.state, "")),
            "sessions": Text(sessions_cell(info.sessions)),
            "verdict": Text(verdict_text(info, held), style="bold" if info.removable and not held else ""),
        }
        return [values[key] for key in self.fitted.keys]

    def kept_by(self, info: WorktreeInfo) -> Verdict | None:
        """What another rule says of a removable checkout it keeps: the GC keeps the worktree a
        live session made with `git worktree add` (`live`), though no session works in it."""
        return self.others_keep().get(info.path)

    def show_rows(self) -> None:
        table = self.query_one("#checkouts", Table)
        self.held_by_others = held = self.others_keep()  # once, not once a row
        table.sync({path: (info, held.get(path)) for path, info in self.infos.items()}, self.cells)
        self.show_detail()

    def state_of(self, info: WorktreeInfo) -> str:
        """A `cut_short` record whose releasing process still runs is a release under way."""
        return "releasing" if info.path in self.releasing else STATES.get(info.state, info.state)

    def highlighted(self) -> WorktreeInfo | None:
        return self.infos.get(self.query_one("#checkouts", Table).cursor_key() or "")

    def detail(self, key: str) -> Text | None:
        """What the row says, at once; what git says and what a release deletes come from a
        worker (git on a large checkout takes a while)."""
        info = self.infos.get(key)
        if info is None:
            return None
        self.detail_worker(info)
        return self.head(info) + Text("\ngit: reading…", style="dim")

    def head(self, info: WorktreeInfo) -> Text:
        text = Text()
        text.append(visible(info.name), style="bold")
        text.append(visible(f"  branch {info.branch or '-'}  {info.kind} checkout of {fmt.short_path(info.project)}") + "\n")
        text.append(f"state: {self.state_of(info)}", style=STATE_STYLES.get(info.state, ""))
        if info.path in self.releasing:
            text.append(f"  (process {self.releasing[info.path]} is releasing it now; r waits for it)")
        elif info.state == "cut_short":
            text.append("  (r finishes the release)")
        holders = visible(", ".join(f"{sid[:8]} ({'live' if running else 'ended'})" for sid, running in info.sessions.items()))
        text.append(f"   sessions: {holders or 'none recorded'}\n")
        held = self.kept_by(info)
        if held is not None:
            text.append(f"verdict: {fmt.reason(held.action, held.reason)} (the {held.rule} rule)")
        elif info.removable:
            text.append("verdict: removable (d removes it; it is judged again first)", style="bold")
        else:
            text.append(f"verdict: {fmt.reason('keep', info.reason)}")
        return text

    def detail_text(self, detail: checkouts.CheckoutDetail) -> Text:
        text = Text()
        git = detail.git
        if git.error:
            text.append(f"\ngit: cannot say ({visible(str(git.error))})", style="yellow")
        else:
            text.append(f"\ngit: {git.changed} changed, {git.untracked} untracked, {git.ignored} ignored; "
                        f"{git.unmerged} commit{'s' if git.unmerged != 1 else ''} on no other branch")
        plan = detail.release
        if plan is None:
            text.append("\nrelease: not a session checkout claudetto made; nothing to release", style="dim")
        elif not plan.goes:
            text.append("\nrelease: no declared scratch to delete")
        else:
            goes = ", ".join(f"{visible(rel)} {fmt.size(size)}" for rel, size in plan.goes)
            text.append(f"\nrelease would delete {fmt.size(plan.total)}: {goes}")
        if plan is not None:
            text.append("; .tmp/ stays" if detail.tmp_kept else "; .tmp/ would stay")
            if plan.kept:
                text.append(f"; kept: {', '.join(f'{visible(rel)} ({visible(why)})' for rel, why in plan.kept)}")
        return text

    def worker_done(self, worker: Worker[Any]) -> None:
        result = worker.result
        if worker.group == "read" and isinstance(result, tuple):
            self.detail_pane.loaded()
            self.infos = {info.path: info for info in result[0]}
            self.releasing = result[1]
            self.show_rows()
        elif isinstance(result, checkouts.CheckoutDetail):
            info = self.highlighted()
            if info is not None and info.path == result.path:
                self.detail_pane.show(self.head(info) + self.detail_text(result))
        elif isinstance(result, Release):
            self.release_answered(result)
        elif isinstance(result, tuple) and worker.group == "act":
            self.removal_done(*result)

    def worker_failed(self, worker: Worker[Any]) -> None:
        if worker.group == "read":
            self.detail_pane.failed(f"The checkouts cannot be read: {worker.error}")
        elif worker.group == "detail" and (info := self.highlighted()) is not None:
            # exclusive: the worker that failed is the one for the row highlighted now
            self.detail_pane.show(self.head(info) + Text(f"\ngit: cannot say ({visible(str(worker.error))})", style="yellow"))
        elif worker.group == "act":
            self.busy = False
            self.query_one(WorkLine).ended(f"{worker.name} failed: {worker.error}")
            self.action_refresh()

    # --- release ----------------------------------------------------------------------------

    def action_release(self) -> None:
        info = self.highlighted()
        if info is None or self.refuse_read_only() or self.refuse_busy():
            return
        if info.state == "unmanaged" or info.kind != "session":
            self.notify(f"{visible(info.name)} is not a session checkout claudetto made: there is nothing to release.",
                        severity="warning")
            return
        self.busy, self.asked_again = True, False
        self.query_one(WorkLine).running(f"{info.name}: what would a release delete…")
        self.release_worker(info.path, True)

    @work(thread=True, exclusive=True, group="act", exit_on_error=False, name="The release")
    def release_worker(self, path: str, dry_run: bool, confirmed: frozenset[str] | None = None) -> Release:
        """The release's dry run, or the release itself. A yes was said to the list of folders
        shown (`confirmed`): when more would go by now (a `build/` made while the question was
        open), the new dry run comes back to be asked again, and nothing is deleted."""
        from app.core.release import release_checkout

        if confirmed is not None:
            again = release_checkout(path, dry_run=True)
            if again.status == "dry_run" and {v.path for v in again.verdicts if v.action == "remove"} - confirmed:
                return again
        return release_checkout(path, dry_run=dry_run)

    def release_answered(self, done: Release) -> None:
        self.busy = False
        name = visible(os.path.basename(done.path))
        if done.status == "dry_run":
            self.query_one(WorkLine).hide()
            if self.asked_again:
                self.notify(f"{name}: more would be deleted than you said yes to; asked again.", severity="warning")
            self.ask_release(done)
            return
        kept = [v for v in done.verdicts if v.action == "keep"]
        passed = self.passed_over(done)
        line = {
            "released": f"{name}: released, freed {fmt.size(done.freed)}; "
                        + "".join(f"{visible(os.path.relpath(v.path, done.path))} kept ({v.reason}); " for v in kept)
                        + "".join(f"{visible(os.path.relpath(path, done.path))} kept (not the folder listed now); "
                                  for path in passed)
                        + ".tmp/ and everything else kept",
            "held": f"{name}: held by {', '.join(h[:8] for h in done.holders)}; nothing released",
            "busy": f"{name}: another release of it is running; try again when it ends",
            "not_managed": f"{name}: not a session checkout claudetto made; left alone",
            "missing": f"{name}: gone; its record was dropped",
            "away": f"{name} and its project are not there (a drive not mounted?); its record stays for when they are back",
        }.get(done.status, f"{name}: {done.status}")
        if done.status == "not_managed" and swapped(done.path):
            line = f"{name}: a symlink or no folder now, not the checkout claudetto made; nothing released"
        self.query_one(WorkLine).ended(line)
        self.notify(line, title="Release",
                    severity="information" if done.status == "released" and not kept and not passed else "warning")
        self.action_refresh()
        if done.status == "released":
            self.store.refresh()  # the checkout's size on Outputs and the Overview follow what went

    def passed_over(self, done: Release) -> list[str]:
        """The scratch the yes was to that the release neither deleted nor named as kept, and
        that is still there: no longer a folder it deletes (a symlink put in its name, say).
        The release goes on silently past such a path; the line must not read as if it went."""
        if done.status != "released":
            return []
        named = {v.path for v in done.verdicts if v.action in ("remove", "keep")}
        return sorted(path for path in self.confirmed - named if os.path.lexists(path))

    def ask_release(self, plan: Release) -> None:
        goes = [v for v in plan.verdicts if v.action == "remove"]
        kept = [v for v in plan.verdicts if v.action == "keep"]
        name = visible(os.path.basename(plan.path))
        cut = plan.state == "cut_short"
        lines = [f"{'Finish the release of' if cut else 'Release'} {name}: delete {len(goes)} scratch "
                 f"folder{'s' if len(goes) != 1 else ''}, {fmt.size(plan.freed)}:"]
        lines += [f"  {fmt.size(v.size):>10}  {visible(os.path.relpath(v.path, plan.path))}" for v in goes]
        lines += [f"  kept ({v.reason}): {visible(os.path.relpath(v.path, plan.path))}" for v in kept]
        lines += ["", ".tmp/ stays, and so does everything else: the checkout stays on disk for a later "
                      "session to reclaim. Each folder is checked again just before it goes."]

        def answered(yes: bool | None) -> None:
            self.asked_again = bool(yes)
            self.confirmed = frozenset(v.path for v in goes) if yes else frozenset()
            if yes:
                self.busy = True
                self.query_one(WorkLine).running(f"{name}: releasing…")
                self.release_worker(plan.path, False, frozenset(v.path for v in goes))

        title = f"{'Finish the release of' if cut else 'Release'} {name} ({fmt.size(plan.freed)})?"
        self.ask(ConfirmModal(title, "\n".join(lines), yes="Release"), answered, f"The release plan of {name}")

    # --- removal ----------------------------------------------------------------------------

    def refuse_busy(self) -> bool:
        if self.busy:
            self.notify("A release or removal is already running.")
        return self.busy

    def action_remove(self) -> None:
        info = self.highlighted()
        if info is None or self.refuse_read_only() or self.refuse_busy():
            return
        held = self.kept_by(info)
        if not info.removable or held:
            why = fmt.reason(held.action, held.reason) if held else fmt.reason("keep", info.reason)
            self.notify(f"Cannot remove {visible(info.name)}: {why}.", title="Kept", severity="warning")
            return
        body = (f"Remove the checkout {visible(fmt.short_path(info.path))}, {fmt.size(info.size)}, and its branch "
                f"{visible(info.branch or '-')} when every commit of it is elsewhere.\n\n"
                "It is judged again just before it goes: a session working in it, a changed file or a "
                "commit found nowhere else keeps it.")

        pinned = removals.pin([info.verdict])  # the yes is to this folder, not to whatever bears its name then

        def answered(yes: bool | None) -> None:
            if yes:
                self.busy = True
                self.query_one(WorkLine).running(f"{info.name}: removing…")
                self.remove_worker(info, pinned)

        self.app.push_screen(ConfirmModal(f"Remove {info.name} ({fmt.size(info.size)})?", body), answered)

    @work(thread=True, exclusive=True, group="act", exit_on_error=False, name="The removal")
    def remove_worker(self, info: WorktreeInfo, pinned: dict[str, removals.Identity]) -> tuple[str, bool, int, str]:
        """The removal, judged again by the core. A checkout swapped for a symlink (or gone)
        since the listing is judged through what it points at now: the core's reason (a live
        session in the home it points at, say) is none about the checkout the question named."""
        return self.removal(info, pinned)

    def removal(self, info: WorktreeInfo, pinned: dict[str, removals.Identity]) -> tuple[str, bool, int, str]:
        """(path, removed, bytes freed, why not): every rule judges it again first (one that
        keeps the folder, as the GC keeps a live session's worktree, keeps it)."""
        done = removals.remove_marked([info.verdict], self.store.judge, lambda *_: None, lambda: False, pinned)
        why = done.not_removed[0][1] if done.not_removed else ""
        if not done.gone and swapped(info.path):
            why = SWAPPED
        return info.path, bool(done.gone), done.freed, why

    def removal_done(self, path: str, removed: bool, freed: int, why: str) -> None:
        self.busy = False
        name = visible(os.path.basename(path))
        if removed:
            line = f"{name}: removed, freed {fmt.size(freed)}"
        elif why == SWAPPED:
            line = f"{name}: kept: a symlink or no folder now, not the checkout listed; nothing removed"
        else:
            line = f"{name}: kept ({fmt.reason('keep', why)})"
        self.query_one(WorkLine).ended(line)
        self.notify(line, title="Removed" if removed else "Kept", severity="information" if removed else "warning")
        if removed:
            self.infos.pop(path, None)
            self.show_rows()
            self.store.forget([path])
        self.action_refresh()
