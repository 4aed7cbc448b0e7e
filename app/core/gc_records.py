"""The read side of the output records (`CLAUDETTO_HOME/gc/<session>.json`).

The recorder (app/core/recorder.py) writes them on the hot path and re-exports these names
lazily; the sweep, the CLI and the dashboard read them through here. Reading never writes:
a corrupt file is logged and left alone (the recorder's next write moves it aside), so a
dry run leaves the state folder byte-identical.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from app.core import paths
from app.core.hung_mounts import reachable
from app.core.log import log
from app.core.manifest_paths import manifest_paths
from app.core.node_globals import node_globals
from app.core.output_shape import born_after
from app.core.paths import inside
from app.core.recorder import KINDS, normal_records
from app.core.repository_rules import folders, outside_names
from app.core.venv_homes import venv_homes

TYPE_CHECKING = False
if TYPE_CHECKING:
    from app.core.verdict import Reason


@dataclass(frozen=True)
class OutputRecord:
    """One recorded output: the absolute path, its kind, who made it, when, and from where.

    `claude_pid` and `claude_start` name the Claude process whose call made it (its pid and
    start time, app/core/claude_process.py): Claude changes a running session's id on
    `/clear` and `/resume`, and the output is still in use while that process runs. None
    when the hook found no Claude above it, and in records written before they existed."""

    path: str
    kind: str
    session: str
    time: float
    cwd: str
    claude_pid: int | None = None
    claude_start: str | None = None
    # The call's proof that it made the path (app/core/created.py: a Write's window and file,
    # a Bash call's device, inode and birth time), checked when the records are read and again
    # at the moment of removal; None in records written before it existed.
    evidence: Any = field(default=None, compare=False, hash=False)
    # The records file it was read from (`gc/<stem>.json`): the one its record is dropped
    # from, and a session that keeps it live too when it differs from `session` (a file
    # another program wrote; an id made safe as a file name).
    stem: str = field(default="", compare=False, hash=False)


def old_times(record: OutputRecord, mtime: float | None) -> bool:
    """Whether the output's age counts from its record too: the call that made it (or a later
    one that copied into it) may have given it its source's old mtime (`cp -a`, `rsync -a`,
    `tar -x`), and it still has the mtime it had then (`old_times` of its evidence). An mtime
    set since (a `touch -d`, work in it, a test's utime) is its age again, as the contract
    defines age."""
    kept = record.evidence.get("old_times") if isinstance(record.evidence, dict) else None
    return isinstance(kept, int | float) and not isinstance(kept, bool) and kept == mtime


def records_files() -> list[tuple[str, str]]:
    """(session id, file) of every records file in `gc/`."""
    folder = paths.gc_dir()
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return []
    return [(name[: -len(".json")], os.path.join(folder, name)) for name in names
            if name.endswith(".json") and not name.startswith(".")]


def _read_file(path: str) -> Any:
    # read_regular: a FIFO or device in gc/ never blocks a sweep
    from app.core.state import parse_state, read_regular

    try:
        return parse_state(read_regular(path))  # nested too deeply is a ValueError, not a failed sweep
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        log(f"gc records: cannot read {path}: {exc}")
        return None


def _as_record(raw: dict[str, Any], session: str, stem: str = "") -> OutputRecord | None:
    path, kind = raw.get("path"), raw.get("kind")
    if not isinstance(path, str) or not path.startswith("/") or kind not in KINDS or "\0" in path:
        return None  # a NUL names no file: every call on it raised, and the sweep stopped there
    when = raw.get("time")
    owner = raw.get("session")
    cwd = raw.get("cwd")
    pid = raw.get("claude_pid")
    start = raw.get("claude_start")
    return OutputRecord(
        path=path,
        kind=str(kind),
        session=owner if isinstance(owner, str) and owner else session,
        time=float(when) if isinstance(when, int | float) and not isinstance(when, bool) else 0.0,
        cwd=cwd if isinstance(cwd, str) and "\0" not in cwd else "",
        claude_pid=pid if isinstance(pid, int) and not isinstance(pid, bool) and pid > 1 else None,
        claude_start=start if isinstance(start, str) and start else None,
        evidence=raw.get("evidence"),
        stem=stem,
    )


def read_records(session: str | None = None, *, links: bool = False) -> list[OutputRecord]:
    """Every recorded output (of one session when given), oldest record first. A record
    with evidence counts only while it holds (`_proven`); one without (older versions) counts.
    `links`: also one whose path a link took (the sweep's, to report it `skip` and drop it). One
    whose path or cwd lies on a remote mount that does not answer is passed over (`reachable`)."""
    files = [(session, os.fspath(paths.gc_records_file(session)))] if session is not None else records_files()
    found: list[OutputRecord] = []
    for sid, name in files:
        data = normal_records(_read_file(name), sid)
        raws = data["records"]
        if data.get("pending"):  # a background call's outputs that appeared since (app/core/pending_outputs.py)
            from app.core.pending_outputs import appeared

            raws = [*raws, *appeared(data, str(data.get("session") or sid))]
        for raw in raws:
            record = _as_record(raw, str(data.get("session") or sid), sid)
            if record is None:
                log(f"gc records: ignored a bad record in {name}: {str(raw)[:200]}")
            elif not (reachable(record.path) and reachable(record.cwd)):
                pass  # on a remote mount that stopped answering: never looked at, never removed
            elif (_proven(record.path, raw["evidence"]) if "evidence" in raw else not born_after(record)
                  ) or links and os.path.islink(record.path):  # rule 3: `skip`, the record dropped
                found.append(record)
    found.sort(key=lambda r: r.time)
    return found


def _proven(path: str, evidence: object) -> bool:
    """Whether the path a record names still holds what its call made (the same device,
    inode and birth time; for a Write, born in its window), read now (app/core/created.py
    `why_unproven`). A record that fails is passed over,
    as if it had never been written: nothing reads it, nothing removes its file; it stays in
    its file until the path is gone (then it reads as missing and the sweep drops it). A link
    that took its place is read by the sweep (`read_records(links=True)`), which never follows
    one: it reports it `skip`, `symlink`, and drops its record, as the seed's rule 3 says."""
    from app.core.created import why_unproven

    return why_unproven(path, evidence) is None


def lost_source(records: list[OutputRecord], folder: str | None = None) -> str | None:
    """The local folder a copy or clone was made from (stored with its record; `sources`: what
    any `cp` of the call that made it copied, which may lie in it) when it is
    gone now: then the copy is the only one left (`cp -r data "$TMPDIR/bak"`, and a later
    call removed `data`; a clone whose origin was removed even looks pushed). A source in the
    user's temp folder or a worktrees folder is passed over: outputs go, that is no loss;
    unless the hook found it was none (`user_sources`: a project on the scratch disk). A copy's
    own source that lost a name the copy has at its top counts too (`source_emptied`);
    `folder`: the copy as it is now (moved aside for its removal). A source that now leads into
    the copy (`rm -rf ~/proj && ln -s /tmp/proj-copy ~/proj`) is gone as well, and one on a mount
    that does not answer cannot be asked (`reachable`): as good as gone."""
    from app.core.secret_copies import local_sources
    from app.core.source_emptied import gone_from_source

    for record in records:
        evidence = record.evidence if isinstance(record.evidence, dict) else {}
        if evidence.get("moved_in") is True:  # a later `mv`/`rsync --remove-source-files` into it
            return f"what was moved into {record.path}"
        for source in local_sources([record]):
            if not reachable(source) or not os.path.lexists(source) and not remade(source) or paths.inside(
                    os.path.realpath(source), os.path.realpath(folder or record.path)):
                return source  # gone, or a link into the copy put in its place: the copy is all there is
            if record.kind == "copy" and source == evidence.get("source"):
                missing = gone_from_source(folder or record.path, source)
                if missing is not None:
                    return missing
    return None


def remade(source: str) -> bool:
    """Whether a gone source is what a tool makes again: the build output of a checkout (a
    folder of `REGENERABLE` name, or what lies in one, whose parent is still a checkout's:
    `cp -r dist "$d"/`, then the next build wiped `dist`), or what lay in the home's `.cache`.
    A copy of it is no only copy: the folder it went into goes by the other rules."""
    from app.core.repository_rules import REGENERABLE

    home = paths.home_str()
    if paths.inside(source, os.path.join(home, ".cache")):
        return True
    parts = source.split("/")  # a home that is a dotfiles checkout makes no `~/build` a build's
    return any(name in REGENERABLE and os.path.isdir("/".join(parts[:k]))
               and paths.git_root_str("/".join(parts[:k])) not in (None, home) for k, name in enumerate(parts) if k > 1)


def still_at_source(records: list[OutputRecord], folder: str) -> bool:
    """A `cp -r` copy whose source still holds every entry of it unchanged (same type, same
    bytes, same link target): whatever makes the copy look like work (a checkout's untracked
    file, a commit on no remote, a secret) is still at the source, so removing the copy loses
    nothing. Anything the copy gained or changed since (an edit, a commit, a new linked
    worktree: all write into it), a source that is gone or past the bounds of the comparison,
    or a repository elsewhere that borrows the copy's objects (which never writes into it)
    answers False: the usual rules judge it. A regenerable folder the copy built (`dist/`,
    `node_modules/`) is no change (`copy_compare.same_tree`)."""
    from app.core.copy_compare import same_tree
    from app.core.unique_refs import borrowed

    for record in records:
        evidence = record.evidence if isinstance(record.evidence, dict) else {}
        source = evidence.get("source")
        if (record.kind == "copy" and isinstance(source, str) and source.startswith("/") and reachable(source)
                and not paths.inside(source, folder) and not paths.inside(folder, source)
                and same_tree(folder, source)):
            return not borrowed(lambda lent: paths.inside(lent, folder))
    return False


def user_state(records: list[OutputRecord], folder: str) -> bool:
    """A config folder with a login (`.credentials.json`, which no secret pattern matches) or
    auto memory (`projects/*/memory/`): the user's Claude home now, not a sandbox's output."""
    if not any(r.kind == "config" for r in records):
        return False
    if os.path.isfile(os.path.join(folder, ".credentials.json")):
        return True
    try:
        slugs = os.listdir(os.path.join(folder, "projects"))
        return any(os.listdir(os.path.join(folder, "projects", slug, "memory")) for slug in slugs
                   if os.path.isdir(os.path.join(folder, "projects", slug, "memory")))
    except (FileNotFoundError, NotADirectoryError):
        return False
    except OSError:
        return True  # a projects folder that cannot be read: unsure, keep


def drop_records(records: list[OutputRecord]) -> None:
    """Drop these records (of paths the GC removed, found missing or skipped) from their
    files, through the state store; a file left with no record goes."""
    files: dict[str, set[str]] = {}
    for record in records:  # from the file it was read from, whatever session it names
        files.setdefault(record.stem or record.session, set()).add(record.path)
    known = dict(records_files())
    for session, gone in files.items():

        def change(data: Any, gone: set[str] = gone, session: str = session) -> Any:
            data = normal_records(data, session)
            data["records"] = [r for r in data["records"] if r.get("path") not in gone]
            return data

        change_records(known.get(session) or paths.gc_records_file_str(session), change, "drop records")


def change_records(path: str, change: Any, what: str) -> None:
    """Change one records file through the state store (logged when it cannot); a file left
    with no record and no pending claim (app/core/pending_outputs.py) goes, under its lock
    (a new record may race in)."""
    from app.core.state import remove_json_if, update_json

    try:
        after = update_json(path, change, lambda: {"records": []})
    except OSError as exc:
        log(f"gc: cannot {what} in {path}: {exc}")
        return
    if not isinstance(after, dict) or after.get("records") != [] or after.get("pending"):
        return
    try:
        remove_json_if(path, lambda data: isinstance(data, dict) and data.get("records") == [] and not data.get("pending"))
    except (OSError, ValueError) as exc:
        log(f"gc: left {path}: {exc}")


def added_directories(cwds: tuple[str, ...] | list[str]) -> list[str]:
    """The folders live sessions work in besides their cwd (real paths): the
    `permissions.additionalDirectories` of the settings each one reads (the user's, its
    project's at its cwd and at that cwd's git root, and the policy's). A session given a
    temp output this way (`/add-dir`, remembered in `.claude/settings.local.json`) edits it
    as its own project; `--add-dir` shows on Claude's command line instead (`processes`).
    Relative entries are relative to the session's cwd; a settings file that cannot be read
    names nothing (its reader logs nothing here: settings are read all day)."""
    from app.core.settings import read_settings, settings_files

    found: list[str] = []
    for cwd in dict.fromkeys(cwds):
        projects = dict.fromkeys([cwd, paths.git_root_str(cwd) or cwd])
        files = dict.fromkeys(f for project in projects for f in settings_files(project))
        for file in files:
            try:
                added = read_settings(file).get("permissions", {}).get("additionalDirectories", [])
            except (OSError, ValueError, AttributeError):
                continue
            for entry in added if isinstance(added, list) else ():
                if isinstance(entry, str) and entry:
                    entry = paths.home_str() + entry[1:] if entry == "~" or entry.startswith("~/") else entry
                    found.append(os.path.realpath(os.path.join(cwd, entry)))
    return list(dict.fromkeys(found))


def tracked_around(path: str, outputs: frozenset[str]) -> bool:
    """A git repository around `path` (not itself inside a recorded output) tracks a file at
    or under it: a module a Write created in the user's repository on the scratch disk (TMPDIR
    as `/scratch/$USER`), then committed; `cp -r lib repo/vendor`, then added. Those are the
    repository's files, and removing them would leave a deletion in the user's work tree. Git
    failing on it counts as tracked (when unsure, keep)."""
    from app.core import git
    from app.core.gc_roots import inside_any

    top = paths.git_root_str(os.path.dirname(path))
    if top is None or inside_any(top, outputs):
        return False
    done = git.run(["ls-files", "-z", "--", ":(literal)" + os.path.relpath(path, top)], cwd=top)
    return not done.ok or bool(done.stdout)


# --- what the user's own places name inside an output ------------------------------------------
#
# Something outside an output can run on it though nothing in it is unique: a link (`ln -s
# /tmp/x/build ~/proj/b`, `npm link`), an editable install (`pip install -e /tmp/x`), a
# submodule's url, a repository borrowing its objects (`git clone --reference /tmp/x ~/src/p2`).
# The output cannot tell, the disk cannot be searched: the places the user keeps projects are
# asked (the home and its folders, the known projects, the recording sessions' projects).


#: Checkouts one level down the home's folders read at most (each costs a few small reads).
_MAX_CHECKOUTS = 256


def user_places(cwds: list[str], *, home: bool = True) -> list[str]:
    """The home, its folders and the known projects (`home`), and the projects of `cwds` (the git
    root of each, else itself): real paths, each once."""
    tops = folders(paths.home_str()) if home else []
    found = [paths.home_str(), *tops, *_checkouts_in(tops), *map(os.fspath, paths.known_projects())] if home else []
    found += [paths.git_root_str(cwd) or cwd for cwd in cwds if cwd[:1] == "/" and "\0" not in cwd]
    tmp = paths.user_tmp_str()  # its own links are tools' (`latest` -> a run): its folders' count
    return [p for p in dict.fromkeys(os.path.realpath(p) for p in found) if p != tmp]


def _checkouts_in(tops: list[str]) -> list[str]:
    """The checkouts and venv-holding folders one level down the home's visible folders
    (`~/code/acme`): a project Claude never ran in still imports from, or builds from, an output
    a session pointed its `.venv` or manifest at (`~/code/acme/.venv/bin/pip install -e "$d/lib"`)."""
    tmp = os.path.realpath(paths.user_tmp_str())  # its checkouts are outputs, not places
    found = [f for top in tops if not os.path.basename(top).startswith(".") and os.path.realpath(top) != tmp for f in folders(top)
             if any(os.path.lexists(os.path.join(f, name)) for name in (".git", ".venv", "venv"))]
    return found[:_MAX_CHECKOUTS]


class OutsideNames:
    """What the user's places name (`outside_names`, `venv_homes`, `manifest_paths`, `repository_rules.borrowers`), each place read
    once for the sweep that holds this (the dashboard's removal reads them anew)."""

    def __init__(self) -> None:
        self._base: list[str] | None = None
        self._names: dict[str, list[tuple[str, str]]] = {}
        self._borrowers: dict[str, list[tuple[str, str]]] = {}

    def _places(self, records: list[OutputRecord], cwds: tuple[str, ...] = ()) -> list[str]:
        if self._base is None:
            self._base = user_places([])
        return list(dict.fromkeys([*self._base, *user_places([*(r.cwd for r in records), *cwds], home=False)]))

    def naming(self, real: str, records: list[OutputRecord], cwds: tuple[str, ...] = ()) -> str | None:
        """The file outside the output `real` that links to, installs from or names as a
        submodule's url a path at or inside it (`ln -s`, `pip install -e`), or None. Logged.
        `cwds`: more folders whose projects are read (a checkout's own project)."""
        places = self._places(records, cwds)
        self._names.update((p, [*outside_names([p]), *venv_homes(p), *manifest_paths(p), *node_globals(p)]) for p in places
                           if p not in self._names)
        found = next((file for place in places for file, said in self._names[place]
                      if inside(said, real) and not inside(file, real)), None)
        if found is not None:
            log(f"gc: {real} kept: {found} leads into it")
        return found

    def lending(self, path: str, records: list[OutputRecord], repos: tuple[str, ...] | None) -> Reason | None:
        """`unmerged` when a repository outside the output borrows objects of one in it (`repos`,
        as the sweep's walk found them; None: unknown), else None. Logged."""
        borrower = self.borrowing(os.path.realpath(path), records) if repos != () else None
        if borrower is not None:
            log(f"gc: {path} kept: the repository {borrower} borrows its objects")
        return "unmerged" if borrower is not None else None

    def borrowing(self, real: str, records: list[OutputRecord]) -> str | None:
        """A repository outside the output `real` whose `objects/info/alternates` names its objects:
        in the user's places, or a clone the session made so (`evidence.lent_to`), wherever it is."""
        from app.core.copied_into import lent_clones
        from app.core.repository_rules import borrowers

        lent, hung = lent_clones(records)
        if hung is not None:
            return hung  # on a mount that does not answer: it cannot be asked, and may still borrow
        if "" not in self._borrowers:  # the home's levels and the known places once
            self._borrowers[""] = borrowers(self._places([]))
        extra = [p for p in [*self._places(records), *lent] if p not in (self._base or ())]
        if (key := "\0".join(extra)) not in self._borrowers:
            self._borrowers[key] = borrowers(extra, home=False) if extra else []
        return next((repo for place in ("", key) for repo, lent in self._borrowers[place]
                     if inside(lent, real) and not inside(repo, real)), None)
