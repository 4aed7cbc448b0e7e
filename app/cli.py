"""The command line: `claudetto [--demo|--read-only]` starts the TUI; subcommands print tables, or with `--json`
one JSON document (CONTRACT "Commands"). Exit codes: 0 success, 1 an error (one clear line on stderr naming the
command, no traceback), 2 a usage error. One function per subcommand; each calls the core and only formats what it
returns. `--demo`, `--read-only` and `--json` hold before or after the subcommand's name (so `claudetto-gc --read-only`
works): `--read-only` turns every command that takes `--dry-run` into a dry run and says so in one stderr line;
`--demo` runs the subcommand on a generated sandbox (the one the TUI's `--demo` uses) that is removed when it is done.
"""

from __future__ import annotations

import sys

# Ctrl-C while the modules below load (before `main` runs): one line, not an import traceback.
sys.excepthook = lambda kind, exc, tb: (sys.stderr.write("claudetto: interrupted\n") if issubclass(
    kind, KeyboardInterrupt) else sys.__excepthook__(kind, exc, tb))

import argparse  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
from collections.abc import Callable, Sequence  # noqa: E402
from typing import Any  # noqa: E402

from app.core.log import printable  # noqa: E402


class CommandError(Exception):
    """A failure to report as one line on stderr, exit 1."""


def emit_json(document: Any) -> None:
    """ASCII with JSON escapes: valid under any locale; a name not UTF-8 is written as its escape."""
    sys.stdout.write(json.dumps(document, indent=2, ensure_ascii=True) + "\n")


def emit_table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> None:
    """A plain, aligned text table (no colour: it is read by people and by grep)."""
    cells = [[str(h) for h in headers]] + [["" if c is None else printable(str(c)) for c in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    for row in cells:
        sys.stdout.write("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() + "\n")


def _said_for_people(line: str) -> None:
    """A line for a person beside a report scripts read: on stderr, the report's stdout stays exact."""
    sys.stderr.write(line + "\n")


def cmd_sessions(args: argparse.Namespace) -> int:
    from app.core import paths
    from app.core.sessions import read_sessions, sessions_json

    sessions = read_sessions()
    if args.json:
        emit_json(sessions_json(sessions))
        return 0
    if not sessions:
        print(f"no session files in {printable(str(paths.sessions_dir()))}")
        return 0
    emit_table(["SESSION", "PID", "LIVE", "STATUS", "CWD"], [(s.session_id or "-", s.pid or "-", "live" if s.live else "stale",
                                                             s.status or "-", s.cwd or "-") for s in sessions])
    return 0


def cmd_gc(args: argparse.Namespace) -> int:
    from app.core import gc
    from app.format import size as _human

    try:
        report = gc.sweep(dry_run=args.dry_run)
    except gc.GcBusy:
        raise CommandError("claudetto gc: another GC sweep is running; try again in a moment") from None
    if args.json:
        emit_json(gc.report_json(report))
    else:
        sys.stdout.write("".join(line + "\n" for line in gc.report_lines(report)))
        gone = sum(e.size or 0 for e in report.entries if e.status in ("removed", "would_remove"))
        _said_for_people(f"{'would remove' if report.dry_run else 'removed'} {report.removed} "
                         f"path{'s' if report.removed != 1 else ''}, {_human(gone if report.dry_run else report.freed)}"
                         + ("; nothing was removed (dry run)" if report.dry_run else ""))
    if report.journal_failed:
        raise CommandError(_NO_JOURNAL.format(name="gc"))
    return 0


# A removal is journaled before it starts; one that cannot be is not done at all.
_NO_JOURNAL = ("claudetto {name}: the journal cannot be written, so nothing it could not "
               "journal was removed (reason journal); see the session log")


def _here() -> str | None:
    try:
        return os.getcwd()
    except OSError:
        return None


def cmd_clean(args: argparse.Namespace) -> int:
    from app.cli_paths import given_projects
    from app.core import hygiene
    from app.core.state import StateBusy
    from app.format import size as _human

    projects = given_projects("clean", args.projects)
    try:
        report = hygiene.run_cleanup(projects, dry_run=args.dry_run, current_cwd=_here())
    except StateBusy:
        raise CommandError("claudetto clean: another cleanup is still running; try again when it ends") from None
    if args.json:
        emit_json(hygiene.report_json(report))
    else:
        sys.stdout.write("".join(line + "\n" for line in hygiene.report_lines(report)))
        going = [v for v in report.verdicts if v.action == "remove"]
        if report.dry_run:
            for v in going:
                _said_for_people(f"would remove {_human(v.size or 0):>10}  {v.kind:<14} {printable(v.path)}")
        _said_for_people(f"{'would free' if report.dry_run else 'freed'} {_human(report.bytes)} in {len(going)} "
                         f"path{'s' if len(going) != 1 else ''}" + ("; nothing was removed (dry run)" if report.dry_run else ""))
    if report.journal_failed:
        raise CommandError(_NO_JOURNAL.format(name="clean"))
    if report.timed_out:
        sys.stderr.write("claudetto clean: stopped at SWEEP_TIMEOUT_MS; what was not reached is left as it was\n")
    return 0


def cmd_worktrees(args: argparse.Namespace) -> int:
    from app.cli_paths import given_projects
    from app.core import hygiene, sessions, worktrees
    from app.format import size

    given = given_projects("worktrees", args.projects)
    here = _here()
    projects = hygiene.resolve_projects(given, here) if given else hygiene.session_projects(here)
    live = sessions.liveness(current_cwd=here)
    rows = worktrees.describe_worktrees(projects, live_cwds=live.cwds, live_ids=live.ids)
    if args.json:
        emit_json(worktrees.worktrees_json(rows))
        return 0
    if not rows:
        where = ", ".join(os.path.join(p, ".claude", "worktrees") for p in projects)
        sys.stdout.write(f"no worktrees in {printable(where) or 'any known project'}\n")
        return 0
    emit_table(["NAME", "BRANCH", "KIND", "STATE", "SESSIONS", "SIZE", "REMOVABLE", "REASON", "PATH"],
               [(w.name, w.branch or "-", w.kind, w.state, ",".join(f"{sid[:8]}:{'live' if on else 'ended'}"
                                                          for sid, on in w.sessions.items()) or "-", size(w.size),
                 "yes" if w.removable else "no", w.reason, w.path) for w in rows])
    sys.stdout.write("".join(printable(f"{w.name}: {w.failure}") + "\n" for w in rows if w.failure))  # cut short
    return 0


def cmd_release(args: argparse.Namespace) -> int:
    from app.cli_paths import answering
    from app.core import release

    if not args.path:  # `release "$DIR"` with DIR unset: never the current folder by accident
        raise UsageError("claudetto release: PATH is empty; name the checkout (. for the current folder)")
    if not os.path.isabs(args.path) and _here() is None:
        raise CommandError("claudetto release: the current folder is gone; give PATH as an absolute path")
    answering("release", args.path)  # its record stays for when the mount answers again
    done = release.release_checkout(os.path.abspath(args.path), dry_run=args.dry_run)
    if args.json:
        emit_json(release.release_json(done))
    elif done.status in ("released", "dry_run"):
        sys.stdout.write("".join(line + "\n" for line in release.release_lines(done)))
    refused = {
        "held": f"{done.path} is held by running session(s) {', '.join(done.holders)}; nothing released",
        "busy": f"another release of {done.path} is running; try again when it ends",
        "not_managed": f"{done.path} is not a session checkout claudetto made; left alone" + ("" if done.status != "not_managed"
            or os.path.isdir(done.path) and not os.path.islink(done.path) else " (it is a symlink or no folder now)"),
        "missing": f"{done.path} is gone; its record was dropped",
        "away": f"{done.path} and its project are not there or do not answer (a drive not mounted, a dead share?); its record stays",
    }.get(done.status)
    if refused:
        raise CommandError(f"claudetto release: {refused}")
    return 0


def cmd_ledger(args: argparse.Namespace) -> int:
    from app.core import paths
    from app.core.ledger import ledger_files

    files = ledger_files()
    if args.json:
        emit_json({"files": [{"path": f.path, "agent": f.agent, "hash": f.hash, "changed": f.changed, "told": f.told,
                              "deleted": f.deleted, "session": f.session, "edited_ns": f.edited_ns} for f in files]})
        return 0
    if not files:
        print(f"the ledger is empty ({printable(str(paths.ledger_file()))})")
        return 0
    emit_table(["PATH", "AGENT", "SESSION", "HASH", "CHANGED", "TOLD"],
               [(f.path, f.agent, f.session, f.hash, "deleted" if f.deleted else "yes" if f.changed else "no",
                 "yes" if f.told else "no") for f in files])
    return 0


def cmd_memory(args: argparse.Namespace) -> int:
    from app.cli_paths import given_projects
    from app.core import memory, paths
    from app.core.bounds import bound

    given = given_projects("memory", args.projects)
    here = _here()
    if given is None and here is None:
        raise CommandError("claudetto memory: the current folder is gone; name a PROJECT")
    roots = list(dict.fromkeys(paths.git_root_str(p) or p for p in (given or [here or "."])))
    timeout_s = min(max(bound("SWEEP_TIMEOUT_MS"), 1), 10**15) / 1000  # a huge bound is no float overflow
    swept = [(root, memory.memory_dir(root), memory.sweep(root, timeout_s=timeout_s)) for root in roots]
    if args.json:
        emit_json(memory.findings_json(f for _, _, found in swept for f in found))
        return 0
    for root, folder, found in swept:
        shown, place = printable(root), printable(str(folder))  # a newline in a name is no second line
        if not os.path.isdir(folder):
            print(f"{shown}: no memory folder ({place})")
            continue
        if not found:
            print(f"{shown}: no findings in {place}")
            continue
        print(f"{shown}: {len(found)} finding{'s' if len(found) != 1 else ''} in {place} (each asks to re-verify)")
        emit_table(["FILE", "LINE", "KIND", "MESSAGE"],
                   [(os.path.relpath(f.file, folder), f.line or "-", f.kind, f.message) for f in found])
    return 0


def cmd_supersede(args: argparse.Namespace) -> int:
    from app.cli_paths import answering
    from app.core import memory

    answering("supersede", args.file)
    try:
        done = memory.supersede(args.file, args.line, args.correction, expect=args.expect, dry_run=args.dry_run)
    except memory.SupersedeRefused as exc:
        raise CommandError(f"claudetto supersede: {exc}") from None
    if args.json:
        emit_json({"dry_run": done.dry_run, "file": done.file, "line": done.line, "struck": done.struck,
                   "correction": done.correction, "correction_line": done.correction_line})
        return 0
    verb = "would strike" if done.dry_run else "struck"
    print(f"{verb} line {done.line} of {printable(done.file)}:\n  {printable(done.struck)}\n"
          f"{'would add' if done.dry_run else 'added'} line {done.correction_line}:\n  {printable(done.correction)}")
    return 0


def cmd_setup(args: argparse.Namespace) -> int:
    from app.core.setup import SetupError, describe, setup, setup_json

    try:
        result = setup(uninstall=args.uninstall, dry_run=args.dry_run)
    except SetupError as exc:
        raise CommandError(f"claudetto setup: {exc}") from exc
    if args.json:
        emit_json(setup_json(result))
    else:
        print(describe(result, args.uninstall))
    return 0


def cmd_tui(args: argparse.Namespace) -> int:
    from app.tui import run_tui

    return run_tui(demo=args.demo, read_only=args.read_only)


def _add(sub: Any, name: str, func: Callable[[argparse.Namespace], int], help_text: str,
         *, json_flag: bool = True, dry_run: bool = False) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = sub.add_parser(name, help=help_text, description=help_text)
    _front_flags(parser, argparse.SUPPRESS)  # unset here: the value given before the name stays
    if json_flag:
        parser.add_argument("--json", action="store_true", default=argparse.SUPPRESS,  # as the front flags
                            help="one JSON document on stdout")
    if dry_run:
        parser.add_argument("--dry-run", action="store_true", help="remove nothing, write no state")
    parser.set_defaults(func=func, command=name)
    return parser


def _front_flags(parser: argparse.ArgumentParser, default: object) -> None:
    parser.add_argument("--demo", action="store_true", default=default,
                        help="run on a generated sandbox (removed again on exit); nothing of yours is touched")
    parser.add_argument("--read-only", action="store_true", default=default,
                        help="remove nothing: the TUI with every removal disabled, a command as a dry run")


class _ShowVersion(argparse.Action):
    """`--version`, looked up only when asked: no other command reads package metadata."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        from importlib.metadata import PackageNotFoundError, version

        try:
            found = version("claudetto")
        except PackageNotFoundError:  # run from a checkout that was never installed
            found = "unknown (not installed)"
        sys.stdout.write(f"claudetto {found}\n")
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="claudetto",
                                     description="Keeps the disk and the memory of Claude Code sessions clean.")
    _front_flags(parser, False)
    parser.add_argument("--json", action="store_true", help="with a command: one JSON document on stdout")
    parser.add_argument("--version", action=_ShowVersion, nargs=0, help="print claudetto's version and exit")
    parser.set_defaults(func=cmd_tui, command=None)
    sub = parser.add_subparsers(title="commands", metavar="COMMAND")
    _add(sub, "sessions", cmd_sessions, "live and stale Claude sessions")
    _add(sub, "gc", cmd_gc, "the output GC sweep", dry_run=True)
    clean = _add(sub, "clean", cmd_clean, "the session-start hygiene cleanup, in the foreground", dry_run=True)
    clean.add_argument("projects", nargs="*", metavar="PROJECT")
    worktrees = _add(sub, "worktrees", cmd_worktrees, "each .claude/worktrees/* checkout with its state and keep reason")
    worktrees.add_argument("projects", nargs="*", metavar="PROJECT")
    release = _add(sub, "release", cmd_release, "release a session checkout now (delete its declared scratch, "
                   "keep .tmp/ and the rest), or finish a release that was cut short", dry_run=True)
    release.add_argument("path", metavar="PATH")
    _add(sub, "ledger", cmd_ledger, "the edit ledger: every file Claude edited, and whether the user or a tool "
         "changed it after Claude's last edit")
    memory = _add(sub, "memory", cmd_memory, "memory findings")
    memory.add_argument("projects", nargs="*", metavar="PROJECT")
    supersede = _add(sub, "supersede", cmd_supersede, "strike a memory line and add a dated correction", dry_run=True)
    supersede.add_argument("file", metavar="FILE")
    supersede.add_argument("--line", type=int, required=True, metavar="N")
    supersede.add_argument("--correction", required=True, metavar="TEXT")
    supersede.add_argument("--expect", metavar="TEXT", help="the text line N must hold (refused if it does not)")
    setup = _add(sub, "setup", cmd_setup, "add (or remove) claudetto's hooks in Claude's settings.json", dry_run=True)
    setup.add_argument("--uninstall", action="store_true", help="remove claudetto's hook entries")
    return parser


class UsageError(CommandError):
    """A request that cannot be met as asked: one line on stderr, exit 2."""


def run_command(args: argparse.Namespace) -> int:
    """Run the chosen subcommand with the front flags applied: never ignored silently."""
    if args.command is None:
        if args.json:  # the dashboard has no JSON form: saying so beats starting it
            raise UsageError("claudetto: --json goes with a command (sessions, gc, clean, worktrees, release, "
                             "ledger, memory, supersede, setup)")
        return args.func(args)
    if args.read_only and getattr(args, "dry_run", None) is False:
        args.dry_run = True
        sys.stderr.write(f"claudetto {args.command}: --read-only, so a dry run: nothing is removed or changed\n")
    if getattr(args, "dry_run", False) or args.read_only:  # --read-only changes nothing, listing too
        from app.core import state

        state.dry_run()  # not even a corrupt state file is set aside
    if not args.demo:
        return int(args.func(args) or 0)
    from app.sandbox import DemoRun

    _demo_paths(args, None)
    with DemoRun(cwd="project") as box:
        sys.stderr.write(f"claudetto {args.command}: --demo, so on a generated sandbox ({box.root}), "
                         "removed again when done\n")
        _demo_paths(args, os.path.realpath(box.root))
        return int(args.func(args) or 0)


def _demo_paths(args: argparse.Namespace, root: str | None) -> None:
    """Refuse a PROJECT, PATH or FILE that names your environment under --demo: an absolute one
    before the demo is built, one that leads out of it (`../..`, a symlink) once it is."""
    given = [getattr(args, name, None) for name in ("projects", "path", "file")]
    for value in [v for one in given for v in (one if isinstance(one, list) else [one]) if v]:
        if os.path.isabs(value) if root is None else not os.path.realpath(value).startswith(root + os.sep):
            raise UsageError(f"claudetto {args.command}: --demo runs on a generated sandbox; give {value} "
                             "relative to its webshop repository, inside the sandbox, or leave --demo out")


def main(argv: Sequence[str] | None = None) -> int:
    name = "claudetto"
    try:  # parsing too: `--version` into a full disk or a closed pipe is no traceback either
        args = build_parser().parse_args(argv)
        name += f" {args.command}" if args.command else ""
        return run_command(args)
    except CommandError as exc:  # one line whatever a path in it holds (printable escapes a newline)
        sys.stderr.write(f"{printable(str(exc))}\n")
        return 2 if isinstance(exc, UsageError) else 1
    except KeyboardInterrupt:
        sys.stderr.write("claudetto: interrupted\n")
        return 1
    except BrokenPipeError:
        os._exit(0)
    except Exception as exc:  # noqa: BLE001 - the contract: one clear line, never a traceback
        said = ((f"{exc.filename}: " if isinstance(exc.filename, str) else "") + (exc.strerror or str(exc))
                if isinstance(exc, OSError) else f"{type(exc).__name__}: {exc}")  # a state file: its path, not a repr
        sys.stderr.write(f"{printable(f'{name}: {said}')}\n")
        return 1


def gc_main(argv: Sequence[str] | None = None) -> int:
    """`claudetto-gc` = `claudetto gc`."""
    return main(["gc", *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":
    sys.exit(main())
