"""The hook entry: read one JSON object, dispatch on `hook_event_name`, never crash Claude.

How Claude starts it: `<python> -I -S -c 'import sys;sys.path.append(<root>);from hooks.entry
import run;run()'` (written by `claudetto setup` and by the plugin's launcher; see
`app.core.setup.entry_code`). `-I` keeps the project's own `app/` or `hooks/` package, the
current folder and PYTHON* variables out, as `-P` did; `-S` skips `site`, ~2.5 ms of a ~10 ms
start, and `run` adds back the one folder the hooks need from it (the venv's site-packages),
or runs `site` after all where the interpreter is not a venv. `python -m` is not used: runpy
alone costs ~4 ms a call. `python -P -m hooks` still works (older settings entries).

CONTRACT "Hooks": on bad input or an internal error, exit 0, print nothing, log the cause.
The worktree events are the exceptions, because Claude acts on their exit code: their
handler's code passes through, and an internal error exits 1 with one line on stderr
(WorktreeCreate: no checkout; WorktreeRemove: the folder is kept, unless it is gone). Handlers are imported lazily so that the per-prompt and
per-tool events pay only for what they use (STYLE rule 2: stdlib only on the hot path; not
even json, pathlib, re or typing: each costs milliseconds on every call).
"""

from __future__ import annotations

import sys

# event -> module under hooks/ with `handle(payload) -> int`
HANDLERS = {
    "SessionStart": "hooks.session_start",
    "SessionEnd": "hooks.session_end",
    "UserPromptSubmit": "hooks.prompt",
    "PreToolUse": "hooks.pre_tool",
    "PostToolUse": "hooks.post_tool",
    "WorktreeCreate": "hooks.worktree",
    "WorktreeRemove": "hooks.worktree",
}

#: events whose exit code Claude acts on: the handler's code is passed through
WORKTREE_EVENTS = ("WorktreeCreate", "WorktreeRemove")

MAX_INPUT = 64 * 1024 * 1024


def _log(message: str) -> None:
    from app.core.log import log

    log(message)


def read_payload(raw: bytes) -> dict[str, object] | None:
    """The hook object, or None (logged) when stdin is not one JSON object."""
    from app.core import fastjson

    if not raw.strip():
        _log("hook: empty input, nothing done")
        return None
    try:
        data = fastjson.loads(raw)
    except ValueError as exc:
        _log(f"hook: input is not JSON ({str(exc)[:200]}), nothing done")
        return None
    if not isinstance(data, dict):
        _log(f"hook: input is a JSON {type(data).__name__}, not an object, nothing done")
        return None
    return data


def run() -> None:
    """The hook command's entry: the site-packages `-S` left out, then `main`, as the exit code.

    The cycle collector is off: a hook lives for milliseconds and makes few cycles, and
    collections during its imports and the JSON parse cost ~4% of an Edit's hook."""
    import gc

    gc.disable()
    if sys.flags.no_site:
        add_site_packages()
    sys.exit(main())


def add_site_packages() -> None:
    """What `site` would add for the hooks, for the cost of reading `pyvenv.cfg` and a stat: a
    venv's `lib/pythonX.Y/site-packages` (the fast FNV-1a lives there; claudetto's
    own folder is on the path already). Anything else (no venv, a venv that also sees the
    system's packages, another layout) runs `site` itself, so the hook still finds everything,
    only slower. Derived from the interpreter each call, so a venv rebuilt with another Python
    is still found."""
    import os

    venv = os.path.dirname(os.path.dirname(sys.executable))
    lib = f"{venv}/lib/python{sys.version_info[0]}.{sys.version_info[1]}/site-packages"
    try:
        with open(f"{venv}/pyvenv.cfg", "rb") as fh:
            config = fh.read(4096).lower()
    except OSError:
        config = None
    if config is not None and b"include-system-site-packages = true" not in config and os.path.isdir(lib):
        if lib not in sys.path:
            sys.path.append(lib)
        return
    import site

    site.main()


def main() -> int:
    event = None
    payload: dict[str, object] | None = None
    try:
        raw = sys.stdin.buffer.read(MAX_INPUT)
        if len(raw) == MAX_INPUT and sys.stdin.buffer.read(1):  # cut: its end would read as bad JSON
            _log(f"hook: input longer than {MAX_INPUT >> 20} MiB, not read; nothing done")
            return 0
        payload = read_payload(raw)
        if payload is None:
            return 0
        from app.core.log import bind

        cwd = payload.get("cwd")
        session_id = payload.get("session_id")
        bind(cwd if isinstance(cwd, str) else None, session_id if isinstance(session_id, str) else None)
        event = payload.get("hook_event_name")
        if not isinstance(event, str) or event not in HANDLERS:
            _log(f"hook: unknown or missing hook_event_name {str(event)[:80]!r}, nothing done")
            return 0
        module = __import__(HANDLERS[event], fromlist=["handle"])
        code = module.handle(payload)
        if event in WORKTREE_EVENTS:
            return code if isinstance(code, int) else 1
        return 0
    except SystemExit as exc:
        if event in WORKTREE_EVENTS:
            return exc.code if isinstance(exc.code, int) else 1
        return 0
    except BaseException as exc:  # noqa: BLE001 - the contract: never a traceback
        try:
            _log(f"hook: {event or 'input'} failed: {type(exc).__name__}: {exc}")
        except BaseException:  # noqa: BLE001
            pass
        if event in WORKTREE_EVENTS:
            return _worktree_failed(event, payload, exc)
        return 0


def _worktree_failed(event: object, payload: dict[str, object] | None, exc: BaseException) -> int:
    """A worktree event that failed inside claudetto: one line on stderr and exit 1, except a
    WorktreeRemove whose folder is gone anyway (exit 0 is exactly "the folder is gone")."""
    why = " ".join(f"{type(exc).__name__}: {exc}".split())
    if len(why) > 200:  # the whole cause is in the log; Claude shows the user one short line
        why = why[:199] + "\u2026"
    if event == "WorktreeRemove":
        path = payload.get("worktree_path") if payload is not None else None
        if isinstance(path, str) and path.startswith("/") and "\0" not in path:
            import os

            try:
                os.lstat(path)
            except (FileNotFoundError, NotADirectoryError):
                return 0
            except (OSError, ValueError):
                pass  # cannot tell (no permission...): it may be there
        named = f" {path}" if isinstance(path, str) else ""
        message = f"claudetto: kept{named}: internal error ({why})"
    else:
        message = f"claudetto: worktree not created: {why}"
    try:
        sys.stderr.write(" ".join(message.splitlines()) + "\n")
    except BaseException:  # noqa: BLE001 - stderr itself may be gone
        pass
    return 1
