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

# No `from __future__ import annotations`: it would import `__future__` before the import
# cache is in place; the annotations that need a name from typing are quoted instead.
import sys

TYPE_CHECKING = False  # typing itself costs a hook ~2 ms
if TYPE_CHECKING:
    import os
    from typing import Any

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

#: the layout of the import cache file (hooks/import_cache.py); another is ignored
CACHE_FORMAT = 1

#: the events of every prompt and tool call: what they import goes into the import cache
FREQUENT_EVENTS = ("UserPromptSubmit", "PreToolUse", "PostToolUse")

#: the event this process handles, once read (the import cache grows only on frequent ones)
EVENT: list[object] = [None]

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


def read_cut(raw: bytes) -> dict[str, object] | None:
    """The hook object of an input cut at MAX_INPUT: the members read whole before the cut,
    or None (logged). An Edit of a file of tens of megabytes sends the whole old file last
    (`tool_response.originalFile`); what the hooks need (the event, the session, the tool, its
    input) comes before it, and an edit left unrecorded would tell the model's own edit as
    the user's at the next prompt. A response too long to read is never a failure's (those
    are a line of text), so the edit is taken as done."""
    from app.core import fastjson

    head = raw[:-3] + raw[-3:].decode("utf-8", "ignore").encode()  # the cut may split a character
    try:
        data = fastjson.members(head.decode("utf-8", "surrogatepass"))
    except (ValueError, UnicodeDecodeError) as exc:
        data, why = {}, str(exc)[:200]
    else:
        why = f"kept the {len(data)} fields before the cut"
    _log(f"hook: input longer than {MAX_INPUT >> 20} MiB, not read whole; {why if data else 'nothing done'}")
    return data or None


def run() -> None:
    """The hook command's entry: the site-packages `-S` left out, then `main`, as the exit code.

    The cycle collector is off: a hook lives for milliseconds and makes few cycles, and
    collections during its imports and the JSON parse cost ~4% of an Edit's hook."""
    import gc

    gc.disable()
    own_app()
    if sys.flags.no_site:
        add_site_packages()
    finder = Cached.install()
    code = main()
    if finder is not None:
        finder.refresh()
    sys.exit(code)


def own_app() -> None:
    """`app` imported from claudetto's own folder, whatever PYTHONPATH names first.

    `python -P -m hooks` (the contract's entry, and older settings entries) keeps the current
    folder out but not PYTHONPATH, and a `.` there is common in a user's shell profile: a
    project's own `app/` package would be imported instead of claudetto's, running the
    project's code, and every hook would do nothing (no ledger entry, no record) without a
    word. Once `app` is claudetto's, its submodules are found through its own `__path__`.
    Free where it cannot happen: under `-I` (the entry setup writes) PYTHONPATH is ignored."""
    if sys.flags.ignore_environment or "app" in sys.modules:
        return
    import os

    here = globals().get("__file__")
    if not os.environ.get("PYTHONPATH") or not isinstance(here, str):
        return
    root = os.path.dirname(os.path.dirname(os.path.abspath(here)))
    sys.path.insert(0, root)
    try:
        import app  # noqa: F401 - bound in sys.modules before anything imports it from the path
    except ImportError:
        pass  # not beside hooks/ (an unusual layout): the path decides, as before
    finally:
        sys.path.remove(root)


def stamp(st: "os.stat_result") -> tuple[int, int, int, int]:
    """What tells a module's source changed since it was compiled into the import cache: a
    program can set the mtime back, never the ctime, and a file replaced by a rename has
    another inode."""
    return st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns


class Cached:
    """A finder first on `sys.meta_path` that serves modules from the import cache
    (hooks/import_cache.py: why, its layout, and why it is never stale): a module whose
    source still has the (inode, size, mtime_ns, ctime_ns) it was compiled from, else nothing (the
    normal finders import it). The file stays open: each module's code is read when it is
    imported, so an event reads only what it uses. `refresh` rebuilds the cache after a
    frequent event that imported a module the normal way."""

    def __init__(self, path: str, fd: int, base: int, entries: "dict[str, tuple[Any, ...] | None]",
                 places: tuple[str, ...] = ()) -> None:
        self.path = path
        self.fd = fd
        self.base = base
        self.entries = entries
        self.missed: list[str] = []  # asked for and not served: imported the normal way, if at all
        # the folders whose sources it may serve: claudetto's own and this interpreter's. A
        # folder copied with its __pycache__ (`cp -a`, `rsync -a`) brings a cache naming the
        # original's sources: served, they would run the original's code in the copy
        self.places = places

    @classmethod
    def install(cls) -> "Cached | None":
        """The finder, installed; None (nothing changed) when the entry is not in a folder
        of its own (`__file__` unknown)."""
        import marshal
        import os

        here = globals().get("__file__")
        if not isinstance(here, str):
            return None
        root = os.path.dirname(os.path.dirname(os.path.abspath(here)))
        path = f"{root}/hooks/__pycache__/hot-imports.{sys.implementation.cache_tag}.marshal"
        fd, base, entries = -1, 0, {}
        try:
            fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
            head = os.read(fd, 16384)
            size = int.from_bytes(head[:4], "little")
            if size + 4 > len(head):
                head += os.pread(fd, size + 4 - len(head), len(head))
            index = marshal.loads(head[4:4 + size])
            if index[0] == CACHE_FORMAT and index[1] == sys.modules["_frozen_importlib_external"].MAGIC_NUMBER:
                entries, base = dict(index[2]), 4 + size
        except Exception:  # noqa: BLE001 - missing, unreadable or foreign: imported the normal way
            pass
        places = tuple(dict.fromkeys(f"{p.rstrip('/')}/" for p in (root, sys.prefix, sys.base_prefix) if p))
        finder = cls(path, fd, base, entries, places)
        sys.meta_path.insert(0, finder)  # type: ignore[arg-type]
        return finder

    def code(self, name: str) -> bytes | None:
        """The compiled code of `name` as stored, or None."""
        entry = self.entries.get(name)
        if entry is None:
            return None
        import os

        try:
            data = os.pread(self.fd, entry[7], self.base + entry[6])
        except (OSError, TypeError):
            return None
        return data if len(data) == entry[7] else None

    def find_spec(self, name: str, path: object = None, target: object = None) -> object:
        code = self._load(name)
        if code is None:
            self.missed.append(name)
            return None
        entry = self.entries[name]
        assert entry is not None
        import os

        spec = sys.modules["_frozen_importlib"].ModuleSpec(name, self, origin=entry[0], loader_state=code,
                                                          is_package=entry[5])
        spec.has_location = True
        if entry[5]:
            spec.submodule_search_locations = [os.path.dirname(entry[0])]
        return spec

    def _load(self, name: str) -> object:
        """The code of `name` when the cache holds it and its source is unchanged, else None."""
        entry = self.entries.get(name)
        if entry is None or not entry[0].startswith(self.places):
            return None
        import marshal
        import os

        try:
            st = os.stat(entry[0])
            if stamp(st) != entry[1:5]:
                return None
            data = self.code(name)
            return marshal.loads(data) if data is not None else None
        except Exception:  # noqa: BLE001 - unreadable or damaged: imported the normal way
            return None

    def create_module(self, spec: object) -> None:
        return None  # the default module

    def exec_module(self, module: "Any") -> None:
        exec(module.__spec__.loader_state, module.__dict__)  # noqa: S102 - claudetto's own code

    def refresh(self) -> None:
        """After a frequent event: the cache rebuilt when a module was imported the normal way
        (new, edited, or not cached yet). Never raises: the hook's work is done."""
        if EVENT[0] not in FREQUENT_EVENTS:
            return
        try:
            missed = [name for name in self.missed if name not in self.entries or self.entries[name] is not None]
            missed = [name for name in missed
                      if type(getattr(getattr(sys.modules.get(name), "__spec__", None), "loader", None)).__name__
                      == "SourceFileLoader"]
            if missed:
                from hooks import import_cache

                import_cache.rebuild(self, missed)
        except Exception as exc:  # noqa: BLE001
            _log(f"hook: the import cache was not rebuilt: {type(exc).__name__}: {exc}")


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
            payload = read_cut(raw)
        else:
            payload = read_payload(raw)
        if payload is None:
            return 0
        from app.core.log import bind

        cwd = payload.get("cwd")
        session_id = payload.get("session_id")
        bind(cwd if isinstance(cwd, str) else None, session_id if isinstance(session_id, str) else None)
        event = EVENT[0] = payload.get("hook_event_name")
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
