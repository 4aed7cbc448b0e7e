"""Removals approved by hand: what the confirmation says, and the removal itself.

The removal runs in a worker thread, so these are plain functions. Before anything goes,
every marked verdict is judged again by the same sweeps (a session may have started since);
only what is still `remove` goes, and only when it is still the folder or file the question
named (`pin`: its device and inode when asked; a folder renamed away and another moved into
its name is `replaced`, though a rule of name and age alone would take it), through the one removal core: `removal.remove` with the
verdict's root and rule, or `worktrees.remove_worktree` for a worktree (which re-checks its
own conditions). A checkout is released through `release.release_checkout`. The dashboard
never removes anything itself.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace

from app import format as fmt
from app.core.outputs import Judged
from app.core.paths import inside
from app.core.scan_tally import EntryId, entry_id, same_entry
from app.core.verdict import Verdict
from app.widgets.plain import visible

Identity = EntryId | None  # a path itself (its inode and birth); None: nothing there


@dataclass(frozen=True)
class Outcome:
    """What one approved removal did; `gone` are the paths that went."""

    removed: int = 0
    freed: int = 0
    not_removed: list[tuple[str, str]] = field(default_factory=list)  # (path, why)
    gone: list[str] = field(default_factory=list)


def confirm_body(marked: list[Verdict], kept: list[Verdict], size_of: Callable[[Verdict], int | None],
                 width: int = 104, hidden: int = 0) -> str:
    """What goes (count, total size, every path, in the order given: a yes is to each one, so
    none hides behind "and N more") and what is kept and why (each kept path once, every one:
    a path said kept with no reason reads as one the sweep forgot), one line each in `width`
    cells (paths cut from the left; below 90 cells a short reason); the list scrolls. `hidden`
    of those that go are rows the table's filter does not show now: the question says so first."""
    total = sum(size_of(v) or 0 for v in marked)
    wide = width >= 90
    why_width = 42 if wide else 20
    lines = [f"{hidden} of these are marked rows the filter hides now."] if hidden else []
    lines += [f"Remove {len(marked)} item{'s' if len(marked) != 1 else ''}, {fmt.size(total)}:"]
    lines += [f"  {fmt.size(size_of(v)):>10}  {v.kind:<14} {visible(fmt.compact_path(v.path, max(16, width - 29), v.project))}"
              for v in marked]
    held = one_per_path(kept)  # a path two rules keep is one thing kept
    if held:
        lines += ["", f"Kept ({len(held)}), and why:"]
        lines += [f"  {(fmt.reason if wide else fmt.verdict_cell)(v.action, v.reason):<{why_width}} "
                  f"{visible(fmt.compact_path(v.path, max(16, width - why_width - 3), v.project))}" for v in held]
    lines += ["", "Each is judged again just before it goes; what is no longer removable stays."]
    return "\n".join(lines)


def remove_one(verdict: Verdict, pinned: Mapping[str, Identity] | None = None) -> tuple[bool, int, str]:
    """Remove one verdict's path through the core's one dispatcher (`remove_verdict`, which
    judges it once more by the rule that judged it), only when it is still what `pinned` (the
    question's `pin`) says it was: another folder under its name since is `replaced`.
    (removed, bytes freed, why not)."""
    from app.core.verdict import remove_verdict

    expect = None
    if pinned is not None:
        expect = pinned.get(verdict.path)
        if not same(identity(verdict.path), expect):
            return False, 0, "replaced"
    # the core holds it to the pin at its own last moment too: the last check before it
    # (every record read again) takes a while, and a folder replaced meanwhile is not asked
    done = remove_verdict(verdict, expect)
    return done.removed, (done.size or 0) if done.removed else 0, "" if done.removed else done.reason


def identity(path: str) -> Identity:
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return entry_id(path, st)


def same(now: Identity, then: Identity) -> bool:
    """Whether a path is still what it was pinned as (nothing there both times, or one entry)."""
    if now is None or then is None:
        return now is then
    return same_entry(now, then)


def pin(verdicts: Iterable[Verdict]) -> dict[str, Identity]:
    """What each path is as the question is asked: the yes is to these, not to whatever
    bears their names when it comes."""
    return {v.path: identity(v.path) for v in verdicts}


def one_per_path(verdicts: Iterable[Verdict]) -> list[Verdict]:
    """The first verdict of each path, in order: a folder two rules judge (a worktree the GC
    recorded is also a `.claude/worktrees` checkout) is one item to ask about and count."""
    first: dict[str, Verdict] = {}
    for verdict in verdicts:
        first.setdefault(verdict.path, verdict)
    return list(first.values())


def kept_paths(verdicts: Iterable[Verdict]) -> dict[str, Verdict]:
    """Each path a rule keeps, with the first verdict that keeps it. A path goes only when
    every rule that judges it says so: a worktree a session made with `git worktree add` ten
    days ago is past the GC's 7 days and inside the worktree rule's 30; when unsure, keep."""
    held: dict[str, Verdict] = {}
    for verdict in verdicts:
        if not verdict.removable:
            held.setdefault(verdict.path, verdict)
    return held


def ways_to_remove(shown: Iterable[Verdict], rows: Iterable[Verdict]) -> list[Verdict]:
    """Every removable verdict of each path the question shows, in its order: the path is
    what the person said yes to, and a rule that judged it may be the one that can take it
    (the worktree rule also makes git forget the checkout, which the GC's removal does not)."""
    by_path: dict[str, list[Verdict]] = {v.path: [] for v in shown}
    for verdict in [*shown, *rows]:
        ways = by_path.get(verdict.path)
        if ways is not None and verdict.removable and verdict not in ways:
            ways.append(verdict)
    return [v for ways in by_path.values() for v in ways]


def remove_marked(marked: Iterable[Verdict], judge: Callable[[], Judged],
                  progress: Callable[[int, int, int], object], cancelled: Callable[[], bool],
                  pinned: Mapping[str, Identity] | None = None) -> Outcome:
    """Judge again, then remove each marked path that every rule that judged it still calls
    `remove` and that is still what `pinned` says it was; report progress, one step a path.
    A path judged by two rules goes once, through the first of them, and counts once."""
    by_path: dict[str, list[Verdict]] = {}
    for verdict in marked:
        by_path.setdefault(verdict.path, []).append(verdict)
    for ways in by_path.values():
        ways.sort(key=lambda v: v.rule != "worktree")  # it makes git forget the checkout too
    wanted = list(by_path)
    judged = judge().verdicts
    fresh = {(v.rule, v.path): v for v in judged}
    held = kept_paths(judged)  # a rule the question did not ask about may keep the path now
    removed = freed = 0
    refused: list[tuple[str, str]] = []
    gone: list[str] = []
    for done, path in enumerate(wanted, 1):
        if cancelled():
            refused += [(p, "cancelled") for p in wanted[done - 1:]]
            break
        if any(inside(path, went) for went in gone):
            removed += 1  # went with a folder around it that was marked too: counted there
            gone.append(path)
        else:
            now = [fresh.get((v.rule, v.path)) for v in by_path[path]]
            ok, freed_bytes, why = _remove_path([*now, *([held[path]] if path in held else [])], path, pinned, gone)
            if ok:
                removed += 1
                freed += freed_bytes
                gone.append(path)
            else:
                refused.append((path, why))
        progress(done, len(wanted), freed)
    return Outcome(removed, freed, refused, gone)


def _remove_path(now: list[Verdict | None], path: str, pinned: Mapping[str, Identity] | None,
                 gone: list[str]) -> tuple[bool, int, str]:
    """One marked path, judged again by each rule that judged it (`now`): kept when one no
    longer calls it `remove` or it is no longer what the question named; else removed by the
    first rule. (removed, bytes freed, why not)."""
    for verdict in now:
        if verdict is None or verdict.action != "remove":
            return False, 0, verdict.reason if verdict else unlisted(path)
    first = now[0]
    assert first is not None
    if any(inside(went, path) for went in gone):
        first = replace(first, size=None)  # a marked path inside it went first: measure again
    return remove_one(first, pinned)


def unlisted(path: str) -> str:
    """Why a marked path the sweeps no longer list stays: `missing` only when it is gone (a
    GC record passed over since, its folder now another user's, names a folder still there)."""
    return "not judged removable now" if os.path.lexists(path) else "missing"


def outcome_line(outcome: Outcome) -> str:
    line = f"freed {fmt.size(outcome.freed)} in {outcome.removed} item{'s' if outcome.removed != 1 else ''}"
    if outcome.not_removed:
        reasons = ", ".join(sorted({why for _p, why in outcome.not_removed}))
        line += f"; {len(outcome.not_removed)} kept ({reasons})"
    return line


def outcome_title(outcome: Outcome, sweep: bool) -> str:
    """The toast's title: a refusal never reads as a success."""
    if not outcome.not_removed:
        return "Sweep done" if sweep else "Removed"
    return "Nothing removed" if not outcome.removed else "Some kept"


@dataclass(frozen=True)
class SweepPlan:
    """The dry run of the full sweep (GC + cleanup) shown before the real one. A yes removes
    its `remove` list through `remove_marked` (each judged again), and nothing else: not what
    it showed as kept, even when that became removable while the question was open."""

    remove: list[Verdict]
    keep: list[Verdict]
    problems: list[str]
    pinned: dict[str, Identity] = field(default_factory=dict)  # what each listed path was

    @property
    def items(self) -> list[Verdict]:
        """What it removes, each path once (a folder two rules judge is one item)."""
        return one_per_path(self.remove)

    @property
    def total(self) -> int:
        return sum(v.size or 0 for v in self.items)


def plan_sweep(judge: Callable[[], Judged]) -> SweepPlan:
    judged = judge()
    held = kept_paths(judged.verdicts)  # listed once, as kept, with the reason of the rule that keeps it
    remove = [v for v in judged.verdicts if v.removable and v.path not in held]
    return SweepPlan(remove, [v for v in judged.verdicts if not v.removable], list(judged.problems), pin(remove))
