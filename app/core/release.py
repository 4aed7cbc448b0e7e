"""Release of a session checkout: once no session holds it, delete its declared scratch,
keep everything else, and leave the checkout on disk for a later session to reclaim.

Declared scratch (CONTRACT "Definitions"): the paths the project's `.claude/claudetto.json`
lists under `scratch` (relative to the checkout), by default the regenerable folders at any
depth. Never `.git` or `.tmp` or anything inside them, never a path that holds a tracked
file (deleting it would leave the checkout modified), never the checkout itself: `.tmp/`
survives every path that releases, a finish after a cut-short one included.

A release runs in two steps, so that a process killed midway is never taken for a checkout
in use with half its scratch gone:

1. under the registry lock, the holders are judged once more and the record says "release
   was cut short" (state `cut_short`, the folders about to go, the process doing it);
2. each folder goes through removal.remove (moved aside, re-checked by `guard`, journaled);
3. the record is cleared and the checkout marked `released`, with what went.

Killed after step 1, the checkout stays `cut_short` (shown by `claudetto worktrees`) until
`claudetto release PATH` or the next session starting there finishes it. One release of a
checkout runs at a time (a lock per checkout), so a `cut_short` found under that lock is one
whose process is gone. A session claiming the checkout meanwhile stops the rest: `guard`
puts back every folder it is asked about from then on.

SessionEnd hands the release to a detached process (`spawn_release`, `python -P -m
app.core.release`) so the hook returns within Claude's 1.5 s whatever the size; that
process moves each folder into the trash and one detached purge deletes them.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from typing import Any

from app.core import checkouts, git, paths
from app.core.log import log
from app.core.verdict import Action, Reason, Verdict, settled

RULE = "release"
KIND = "scratch"
CONFIG = os.path.join(".claude", "claudetto.json")
#: Never scratch, never inside scratch, at any depth.
NEVER = frozenset({".git", ".tmp"})
CUT_SHORT = ("release was cut short: the process releasing it ended before it finished; "
             "`claudetto release PATH` or the next session started there finishes it")
#: How long a release waits for another release of the same checkout to end.
LOCK_WAIT_S = 2.0

#: Lock files, and how to reinstall what a release deleted from each (checked in order).
LOCK_FILES = (
    ("package-lock.json", "npm ci"),
    ("pnpm-lock.yaml", "pnpm install --frozen-lockfile"),
    ("yarn.lock", "yarn install --frozen-lockfile"),
    ("bun.lockb", "bun install --frozen-lockfile"),
    ("bun.lock", "bun install --frozen-lockfile"),
    ("uv.lock", "uv sync --frozen"),
    ("poetry.lock", "poetry install"),
    ("Cargo.lock", "cargo build"),
    ("go.sum", "go mod download"),
    ("Gemfile.lock", "bundle install"),
)
NOTE_MAX_PATHS = 20


@dataclass(frozen=True)
class Release:
    """What one release did. `status`: `released`, `dry_run`, `held` (`holders` say by whom),
    `busy` (another release of it runs), `not_managed` (not a session checkout claudetto
    made: left alone), `missing` (its folder is gone: the record is dropped).
    `verdicts`: one per scratch path, action `remove` (reason `scratch`), `keep` (why) or
    `missing`; `freed` is the disk bytes that went (or would)."""

    path: str
    status: str
    state: str | None = None
    verdicts: tuple[Verdict, ...] = ()
    holders: tuple[str, ...] = ()
    freed: int = 0
    dry_run: bool = False
    trashed: bool = False  # something went into the trash: a purge finishes it


# --- what is scratch ------------------------------------------------------------------------


def _relative(value: object) -> str | None:
    """A declared scratch path made plain (`a/./b/` -> `a/b`), or None when it is not one:
    not text, absolute, climbing out, the checkout itself, or in or above `.git`/`.tmp`."""
    if not isinstance(value, str) or value.startswith("/") or "\0" in value:
        return None
    parts = [p for p in value.split("/") if p not in ("", ".")]
    if not parts or ".." in parts or NEVER.intersection(parts):
        return None
    return "/".join(parts)


def declared_scratch(checkout: str, project: str | None = None) -> list[str] | None:
    """The `scratch` list of `.claude/claudetto.json` (the checkout's own, else the
    project's), each entry made plain; [] when neither file declares one, None when the file
    cannot be read or is not what it should be (logged: when unsure, nothing is scratch)."""
    from app.core import fastjson

    for base in (checkout, project):
        if not base:
            continue
        file = os.path.join(base, CONFIG)
        try:
            with open(file, "rb") as fh:
                data = fastjson.loads(fh.read(1 << 20))
        except FileNotFoundError:
            continue
        except (OSError, ValueError) as exc:
            log(f"release: {file} cannot be read ({exc}); no scratch is deleted")
            return None
        if not isinstance(data, dict) or "scratch" not in data:
            continue
        given = data["scratch"]
        if not isinstance(given, list):
            log(f"release: {file} `scratch` is not a list of paths; no scratch is deleted")
            return None
        found = []
        for item in given:
            rel = _relative(item)
            if rel is None:
                log(f"release: {file} scratch entry {item!r} is not a path inside the checkout "
                    "outside .git and .tmp; skipped")
            else:
                found.append(rel)
        return _outermost(found)
    return []


def _outermost(rels: list[str]) -> list[str]:
    """The paths not inside another of them, sorted."""
    kept: list[str] = []
    for rel in sorted(set(rels)):
        if not any(rel.startswith(k + "/") for k in kept):
            kept.append(rel)
    return kept


def regenerable_folders(checkout: str) -> list[str]:
    """The regenerable folders at any depth of `checkout` (relative, sorted), never looking
    inside `.git`, `.tmp`, a regenerable folder, `.claude/worktrees`, a symlink or another
    file system."""
    from app.core.worktrees import REGENERABLE

    try:
        dev = os.lstat(checkout).st_dev
    except OSError:
        return []
    found: list[str] = []
    pending = [""]
    while pending:
        rel = pending.pop()
        try:
            with os.scandir(os.path.join(checkout, rel) if rel else checkout) as it:
                entries = list(it)
        except OSError:
            continue
        for entry in entries:
            if entry.name in NEVER:
                continue
            try:
                if not entry.is_dir(follow_symlinks=False) or entry.stat(follow_symlinks=False).st_dev != dev:
                    continue
            except OSError:
                continue
            child = f"{rel}/{entry.name}" if rel else entry.name
            if entry.name in REGENERABLE:
                found.append(child)
            elif child != ".claude/worktrees":
                pending.append(child)
    return sorted(found)


def holding_tracked(checkout: str, rels: list[str]) -> set[str] | None:
    """Which of `rels` hold a file git tracks in `checkout`; None when git cannot say."""
    held: set[str] = set()
    wanted = set(rels)
    for start in range(0, len(rels), 200):
        # pathspecs taken literally: a folder named `[a]` is that folder, not a pattern
        done = git.run(["ls-files", "-z", "--", *rels[start:start + 200]], cwd=checkout,
                       env={"GIT_LITERAL_PATHSPECS": "1"})
        if not done.ok:
            log(f"release: git cannot list the tracked files of {checkout}: {done.error[:200]}")
            return None
        for name in filter(None, done.text.split("\0")):
            parts = name.split("/")
            for depth in range(1, len(parts) + 1):
                prefix = "/".join(parts[:depth])
                if prefix in wanted:
                    held.add(prefix)
                    break
    return held


def scratch_plan(checkout: str, project: str | None = None) -> tuple[list[str], list[tuple[str, Reason]]]:
    """(what a release of `checkout` deletes, what it keeps and why), paths relative.
    Keep reasons: `bad_config` (`.claude/claudetto.json` unusable), `tracked` (holds a file
    git tracks), `git` (git could not say)."""
    declared = declared_scratch(checkout, project)
    if declared is None:
        return [], [(CONFIG, "bad_config")]
    candidates = declared or regenerable_folders(checkout)
    candidates = [rel for rel in candidates if os.path.lexists(os.path.join(checkout, rel))]
    if not candidates:
        return [], []
    tracked = holding_tracked(checkout, candidates)
    if tracked is None:
        return [], [(rel, "git") for rel in candidates]
    return ([rel for rel in candidates if rel not in tracked],
            [(rel, "tracked") for rel in candidates if rel in tracked])


# --- the release ----------------------------------------------------------------------------


def _lock_of(key: str) -> str:
    from app.core.fnv import fnv1a_64, hex64

    return os.path.join(paths.claudetto_home_str(), "releases", hex64(fnv1a_64(os.fsencode(key))))


def _ours(entry: object) -> bool:
    """Whether the record is still in the `cut_short` this process wrote (nobody claimed it)."""
    cut = entry.get("cut_short") if isinstance(entry, dict) else None
    return (isinstance(entry, dict) and entry.get("state") == "cut_short" and isinstance(cut, dict)
            and cut.get("pid") == os.getpid())


def release_checkout(path: str, *, session: str | None = None,
                     process: checkouts.Process | None = None, trash: bool | None = False,
                     dry_run: bool = False, lock_wait_s: float = LOCK_WAIT_S,
                     spawn: bool = True) -> Release:
    """Release the session checkout at `path` now, or finish a release that was cut short.

    `session` and `process` (the session ending, or starting and about to claim it) hold
    nothing here. `trash`: True moves every folder into the trash for one detached purge
    (spawned here unless `spawn=False`), False purges here. `dry_run` judges and measures,
    and writes nothing."""
    from app.core.state import StateBusy, locked

    found = checkouts.record_of(path)
    if found is None:
        return Release(path, "not_managed", dry_run=dry_run)
    key, entry = found
    if entry.get("kind") != "session":
        return Release(key, "not_managed", str(entry.get("state") or ""), dry_run=dry_run)
    if checkouts.folder_gone(key) is True:
        if not dry_run:
            checkouts.unregister(key)
            log(f"release: {key} is gone; its record is dropped")
        return Release(key, "missing", dry_run=dry_run)
    if dry_run:
        return _judge(key, entry, session, process, dry_run=True)
    try:
        with locked(_lock_of(key), wait_s=lock_wait_s):
            result = _release(key, session, process, trash, spawn)
    except StateBusy:
        return Release(key, "busy", str(entry.get("state") or ""))
    return result


def _judge(key: str, entry: dict[str, Any], session: str | None,
           process: checkouts.Process | None, *, dry_run: bool) -> Release:
    """A dry run: who holds it, and what a release would delete."""
    from app.core import removal

    state = str(entry.get("state") or "active")
    who = checkouts.holders(key, entry, ending_session=session, ending_process=process)
    if who:
        return Release(key, "held", state, holders=tuple(who), dry_run=dry_run)
    project = entry.get("project") if isinstance(entry.get("project"), str) else None
    plan, kept = scratch_plan(key, project)
    verdicts = [_verdict(key, rel, "keep", reason, session, project) for rel, reason in kept]
    freed = 0
    for rel in plan:
        done = removal.remove(os.path.join(key, rel), key, RULE, kind=KIND, session=session, dry_run=True)
        freed += done.bytes
        verdicts.append(_verdict(key, rel, "remove", "scratch", session, project, done.bytes))
    return Release(key, "dry_run", state, tuple(verdicts), freed=freed, dry_run=True)


def _verdict(key: str, rel: str, action: Action, reason: Reason, session: str | None,
             project: str | None, size: int | None = None) -> Verdict:
    return Verdict(path=os.path.join(key, rel), kind=KIND, action=action, reason=reason,
                   rule=RULE, root=key, size=size, session=session, project=project)


def _release(key: str, session: str | None, process: checkouts.Process | None,
             trash: bool | None, spawn: bool) -> Release:
    """The three steps, under this checkout's release lock."""
    from app.core.claude_process import start_of

    record = checkouts.registry().get(key) or {}
    project = record.get("project") if isinstance(record.get("project"), str) else None
    finishing = record.get("state") == "cut_short"
    plan, kept = scratch_plan(key, project)
    earlier = record.get("cut_short", {}).get("planned") if isinstance(record.get("cut_short"), dict) else None

    def step_one(records: dict[str, Any]) -> tuple[str, list[str]]:
        entry = records.get(key)
        if not isinstance(entry, dict) or entry.get("kind") != "session":
            return "not_managed", []
        who = checkouts.holders(key, entry, ending_session=session, ending_process=process)
        if who:
            return str(entry.get("state") or "active"), who
        before = entry.get("cut_short")
        earlier_plan = before.get("planned") if isinstance(before, dict) else None
        entry["state"] = "cut_short"
        entry["cut_short"] = {"time": _now(), "pid": os.getpid(), "proc_start": start_of(os.getpid()),
                              "session": session, "failure": CUT_SHORT,
                              "planned": sorted(set(plan) | {r for r in earlier_plan or [] if isinstance(r, str)})}
        return "cut_short", []

    state, who = checkouts.edit_registry(step_one)
    if state == "not_managed":
        return Release(key, "not_managed")
    if who:
        log(f"release: {key} kept: held by {', '.join(who)}")
        return Release(key, "held", state, holders=tuple(who))
    verdicts, trashed = _prune(key, plan, session, process, trash, project)
    verdicts = [_verdict(key, rel, "keep", reason, session, project) for rel, reason in kept] + verdicts
    gone = [rel for rel in (earlier or []) if isinstance(rel, str) and not os.path.lexists(os.path.join(key, rel))]
    deleted = sorted(set(gone) | {os.path.relpath(v.path, key) for v in verdicts if v.action == "remove"})
    freed = sum(v.size or 0 for v in verdicts if v.action == "remove")

    def step_three(records: dict[str, Any]) -> str:
        entry = records.get(key)
        if not isinstance(entry, dict):
            return "missing"
        entry["last_release"] = {"time": _now(), "session": session, "deleted": deleted, "bytes": freed,
                                 "kept": [{"path": os.path.relpath(v.path, key), "reason": v.reason}
                                          for v in verdicts if v.action == "keep"], "told": None}
        if _ours(entry):
            entry["state"] = "released"
            del entry["cut_short"]
        return str(entry.get("state"))

    state = checkouts.edit_registry(step_three)
    if trashed and spawn:
        from app.core.trash import spawn_purge

        spawn_purge()
    if finishing:
        from app.core.trash import leftovers_step

        leftovers_step({})  # what the killed release left in a trash is purged too
    kept_now = [v for v in verdicts if v.action == "keep"]
    log(f"release: {key}: {state}; deleted {len(deleted)} scratch path(s), {freed} bytes"
        + (f"; kept {len(kept_now)} ({', '.join(sorted({v.reason for v in kept_now}))})" if kept_now else ""))
    return Release(key, "released", state, tuple(verdicts), freed=freed, trashed=trashed)


def _prune(key: str, plan: list[str], session: str | None, process: checkouts.Process | None,
           trash: bool | None, project: str | None) -> tuple[list[Verdict], bool]:
    """Step two: each scratch path through removal.remove, re-checked at that moment."""
    from app.core import removal, scanner
    from app.core.unique_work import unique_work

    verdicts: list[Verdict] = []
    trashed = False
    stop: Reason | None = None
    for rel in plan:
        full = os.path.join(key, rel)
        if stop is not None:
            verdicts.append(_verdict(key, rel, "keep", stop, session, project))
            continue
        size = scanner.scan(full)

        def guard(where: str, full: str = full, size: scanner.TreeSize = size) -> str | None:
            entry = checkouts.registry().get(key)
            if not _ours(entry) or checkouts.holders(key, entry or {}, ending_session=session,
                                                     ending_process=process):
                return "live"
            return unique_work(where, size.repos, original=full)

        done = removal.remove(full, key, RULE, kind=KIND, session=session, size=size, trash=trash,
                              spawn=False, guard=guard)
        trashed = trashed or done.trashed
        answer = settled(_verdict(key, rel, "remove", "scratch", session, project), done)
        verdicts.append(answer)
        if answer.action == "keep" and answer.reason in ("live", "journal"):
            stop = answer.reason  # claimed meanwhile, or nothing can be journaled: the rest stays
    return verdicts, trashed


def _now() -> float:
    import time

    return time.time()


# --- SessionStart: finish, claim, tell ------------------------------------------------------


def session_start_context(session_id: str, cwd: str | None, source: object) -> str:
    """SessionStart: finish any release of the session's checkouts that was cut short, claim
    them, and return the note on what a release deleted and how to reinstall it ("" when
    there is nothing to say)."""
    from app.core.claude_process import claude_process

    if not os.path.exists(paths.checkouts_file()):
        return ""
    process = claude_process()
    for key, entry in checkouts.claimable(session_id, cwd).items():
        if entry.get("state") == "cut_short":
            done = release_checkout(key, session=session_id, process=process, trash=True)
            log(f"release: {key}: a release cut short, finished at session start: {done.status}")
    notes = [reinstall_note(c.path, c.last_release) for c in checkouts.claim(session_id, cwd, process, source)
             if c.last_release]
    return "\n\n".join(n for n in notes if n)


def _size(count: int) -> str:
    value = float(count)
    for unit in ("bytes", "kB", "MB", "GB"):
        if value < 1000 or unit == "GB":
            return f"{value:.0f} {unit}" if unit == "bytes" else f"{value:.1f} {unit}"
        value /= 1000
    return f"{count} bytes"


def reinstall_commands(checkout: str, deleted: list[str]) -> list[str]:
    """`<command>` lines from the lock files present: in the checkout, and beside each
    deleted path (a workspace package's own lock file)."""
    from app.core.log import printable

    folders = sorted({""} | {os.path.dirname(rel) for rel in deleted})
    lines = []
    for folder in folders:
        where = os.path.join(checkout, folder) if folder else checkout
        try:
            names = set(os.listdir(where))
        except OSError:
            continue
        found = [(name, command) for name, command in LOCK_FILES if name in names]
        found += [(name, f"pip install -r {name}") for name in sorted(names)
                  if name.startswith("requirements") and name.endswith(".txt")]
        prefix = f"in {printable(folder)}: " if folder else ""
        lines += [f"- {prefix}`{command}` ({name})" for name, command in found]
    return lines


def reinstall_note(checkout: str, last: dict[str, Any]) -> str:
    """What the last release of `checkout` deleted and how to reinstall it, for the model."""
    from app.core.log import printable

    deleted = [rel for rel in last.get("deleted") or [] if isinstance(rel, str)]
    if not deleted:
        return ""
    shown = ", ".join(printable(rel) for rel in deleted[:NOTE_MAX_PATHS])
    if len(deleted) > NOTE_MAX_PATHS:
        shown += f" and {len(deleted) - NOTE_MAX_PATHS} more"
    size = last.get("bytes")
    amount = f" ({_size(size)})" if isinstance(size, int) and not isinstance(size, bool) and size > 0 else ""
    if last.get("cut_short"):
        head = (f"claudetto: a release of this checkout ({printable(checkout)}) was cut short; "
                f"before it stopped it had deleted{amount}: {shown}.")
    else:
        head = (f"claudetto released this checkout ({printable(checkout)}) when no session held it, "
                f"deleting its scratch{amount}: {shown}.")
    lines = [head, "`.tmp/` and everything else were kept."]
    commands = reinstall_commands(checkout, deleted)
    if commands:
        lines.append("Reinstall before building or testing:")
        lines += commands
    else:
        lines.append("No lock file was found to say how to reinstall it: use the project's own setup.")
    return "\n".join(lines)


# --- SessionEnd: the detached release -------------------------------------------------------


def spawn_release(paths_: list[str], session: str, process: checkouts.Process | None,
                  cwd: str | None) -> int | None:
    """Start `python -P -m app.core.release` detached (own session, no stdin/stdout) to
    release `paths_` if nobody holds them; its pid, or None (logged) when it cannot start."""
    import subprocess

    from app.core import fastjson

    order = fastjson.dumps({"paths": paths_, "session": session, "cwd": cwd,
                            "process": list(process) if process is not None else None}, ensure_ascii=True)
    try:
        child = subprocess.Popen([sys.executable, "-P", "-m", "app.core.release", order],
                                 stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL, start_new_session=True, close_fds=True)
    except OSError as exc:
        log(f"release: cannot start the release of {', '.join(paths_)}: {exc}")
        return None
    return child.pid


def _child_main(argv: list[str]) -> int:
    """The detached release: every folder moved into the trash, then one purge."""
    from app.core import fastjson
    from app.core.log import bind

    try:
        order = fastjson.loads(argv[0]) if len(argv) == 1 else None
    except ValueError:
        order = None
    if not isinstance(order, dict) or not isinstance(order.get("paths"), list):
        return 2
    session = order.get("session") if isinstance(order.get("session"), str) else None
    bind(order.get("cwd") if isinstance(order.get("cwd"), str) else None, session)
    process = checkouts.as_process(order.get("process"))
    trashed = False
    for path in order["paths"]:
        if not isinstance(path, str):
            continue
        try:
            done = release_checkout(path, session=session, process=process, trash=True, spawn=False)
        except Exception as exc:  # noqa: BLE001 - a detached job logs, never prints
            log(f"release: {path} failed: {type(exc).__name__}: {exc}")
            continue
        trashed = trashed or done.trashed
        if done.status not in ("released", "held"):
            log(f"release: {path}: {done.status}")
    if trashed:
        from app.core.trash import spawn_purge

        spawn_purge()
    return 0


if __name__ == "__main__":
    sys.exit(_child_main(sys.argv[1:]))
