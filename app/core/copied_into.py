"""What a Bash call copied or moved into an output recorded before.

`cp ~/proj/notes.txt /tmp/d/`, `rsync --remove-source-files ~/proj/ /tmp/d/`, a later call
after `d=$(mktemp -d)`: the recorder (app/core/recorder.py) notes it in the evidence of the
record of the output the target lies in, so the GC knows what came into it since: sources it
keeps the output for once they are gone, a move (`moved_in`: kept for good), old mtimes, the
clones that borrow its objects. Loaded only for a call that copies or clones.
"""

from __future__ import annotations

import os

from app.core import paths
from app.core.paths import inside, strictly_inside
from app.core.recorder import MAX_COPIED, copied_paths, normal_records

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from app.core.gc_records import OutputRecord


def copied_into_outputs(into: list[tuple[str, str | None, list[str]]], sources: list[str],
                         keeps_times: bool = False, lent: list[tuple[str, str, str | None]] | None = None,
                         since: float = 0.0) -> None:
    """A copy or move into an output recorded before (`cp ~/proj/notes.txt /tmp/d/`, `rsync
    --remove-source-files ~/proj/ /tmp/d/`, a call after `d=$(mktemp -d)`): its sources join
    that output's `evidence.sources`, so it stays once they are gone (`gc_records.lost_source`),
    and a move from outside the temp folder (or from where the hook cannot tell) marks it
    `moved_in`: the source's files went at once, though its folder may stay. The files were
    born anew in it, and nothing else shows where they came from. A copy that keeps its
    source's times (`rsync -a src/ /tmp/d/` gives `/tmp/d` the mtime of `src`) marks it
    `old_times`: its age counts from its record (app/core/age.py). A clone that borrows its
    objects (`git clone --reference /tmp/d URL ~/p2`) joins its `evidence.lent_to`: the sweep
    asks it first (`gc_records.OutsideNames.borrowing`), wherever it lies. Only a target inside
    the user's temp folder costs a look at the records; only a match writes."""
    targets, moved, from_temp = _targets_in_temp(into) if sources or keeps_times or any(
        m for _, _, m in into) else ([], [], [])
    borrowed = _lenders_in_temp(lent or [])
    if not targets and not borrowed:
        return
    files = _records_files()
    theirs = _users_in_temp(sources, from_temp, [r.get("path") for records in files.values() for r in records], since)
    moved += [target for target, moved_from in from_temp if theirs.intersection(moved_from)]
    from app.core.state import update_json

    def news(record: dict[str, Any]) -> dict[str, Any]:
        if not isinstance(record.get("evidence"), dict) or not isinstance(record.get("path"), str):
            return {}
        return _evidence_news(record["path"], record["evidence"], (targets, sources, moved, keeps_times), borrowed,
                              theirs)

    for file, records in files.items():
        if not any(news(r) for r in records):
            continue
        session = os.path.basename(file)[:-len(".json")]

        def change(data: Any, session: str = session) -> Any:
            data = normal_records(data, session)
            for record in data["records"]:
                record_news = news(record)
                if record_news:
                    record["evidence"].update(record_news)
            return data

        update_json(file, change, list, durable=False)  # `change` makes an empty list a records file


def _users_in_temp(sources: list[str], moves: list[tuple[str, list[str]]], recorded: list[Any],
                   since: float) -> set[str]:
    """The sources (those copied, and those moved into each target of `moves`) that lay in the
    temp folder in no recorded path, nor in Claude's own temp folder: the user's, on the
    scratch disk they work on. A copied one born in the call is its own (`mkdir a && cp -r a
    "$d"/`); a moved one is gone, and where it went its birth proves nothing (`rsync
    --remove-source-files`, a `mv` across file systems: born anew): the user's, when unsure."""
    from app.core.created import CLOCK_SLACK_S, birth_time

    tmp, claude_tmp = paths.user_tmp_str(), os.path.realpath(paths.claude_tmp_dir_str())
    theirs = {m for _, moved in moves for m in moved}
    for source in (s for s in sources if os.path.lexists(s)):
        try:
            born = birth_time(source) or os.lstat(source).st_ctime
        except OSError:
            born = None  # unknown: the user's, when unsure
        if born is None or born < since - CLOCK_SLACK_S:
            theirs.add(source)
    return {s for s in theirs if strictly_inside(s, tmp) and not inside(s, claude_tmp)
            and not any(isinstance(p, str) and inside(s, p) for p in recorded)}


def _records_files() -> dict[str, list[dict[str, Any]]]:
    """{records file: its records}, read here, not through gc_records: that loads dataclasses
    on a hot hook. A file that cannot be read is left out."""
    from app.core.state import parse_state, read_regular

    folder = os.path.join(paths.claudetto_home_str(), "gc")
    try:
        names = sorted(n for n in os.listdir(folder) if n.endswith(".json") and not n.startswith("."))
    except OSError:
        return {}
    found = {}
    for name in names:
        file = os.path.join(folder, name)
        try:
            found[file] = normal_records(parse_state(read_regular(file)), name[:-len(".json")])["records"]
        except (OSError, ValueError):
            continue
    return found


def _evidence_news(path: str, evidence: dict[str, Any], copy: tuple[list[str], list[str], list[str], bool],
                   borrowed: list[tuple[str, str]], theirs: set[str]) -> dict[str, Any]:
    """What a call adds to the evidence of the record of `path` (`copied_into_outputs`): its
    sources (and among them the user's in the temp folder, `theirs`: gone later, the copy is
    the only one), `moved_in` and `old_times` when a copy's target (`copy`: targets, sources,
    the targets moved into, whether it kept old times) lies in it; the clones that borrow from it."""
    from app.core.created import lstat_mtime

    targets, sources, moved, keeps_times = copy
    found: dict[str, Any] = {}
    if any(inside(t, path) for t in targets):
        _join(found, evidence, "sources", sources)
        _join(found, evidence, "user_sources", sorted(theirs.intersection(sources)))
        if evidence.get("moved_in") is not True and any(inside(t, path) for t in moved):
            found["moved_in"] = True
        if keeps_times:  # the mtime it has now: see gc_records.old_times
            found["old_times"] = lstat_mtime(path)
    _join(found, evidence, "lent_to", [clone for lender, clone in borrowed if inside(lender, path)])
    return found


def _join(found: dict[str, Any], evidence: dict[str, Any], key: str, new: list[str]) -> None:
    """`found[key]`: the paths `new` before those `evidence[key]` lists, at most MAX_COPIED,
    when one of `new` is not listed yet."""
    known = evidence.get(key)
    known = [k for k in known if isinstance(k, str)] if isinstance(known, list) else []
    if not set(new) <= set(known):
        found[key] = list(dict.fromkeys([*new, *known]))[:MAX_COPIED]


def _lenders_in_temp(lent: list[tuple[str, str, str | None]]) -> list[tuple[str, str]]:
    """(lender, borrowing clone) as absolute paths, for the lenders inside the user's temp folder."""
    from app.core.shell_words import absolute_path

    pairs = [(absolute_path(base, lender, {}), absolute_path(base, clone, {})) for lender, clone, base in lent]
    return [(os.path.normpath(a), os.path.normpath(b)) for a, b in pairs
            if a is not None and b is not None and strictly_inside(os.path.normpath(a), paths.user_tmp_str())]


def _targets_in_temp(into: list[tuple[str, str | None, list[str]]]
                     ) -> tuple[list[str], list[str], list[tuple[str, list[str]]]]:
    """The copies' targets inside the user's temp folder; those of them a move from outside it
    (or from a source the hook cannot expand: the user's, maybe) went into; and each other
    target moved into with what it came from in the temp folder (the user's unless an output's:
    a file born after the output is not seen by the moved-in check)."""
    from app.core.shell_words import absolute_path

    tmp = paths.user_tmp_str()
    targets: list[str] = []
    moved: list[str] = []
    from_temp: list[tuple[str, list[str]]] = []
    for word, base, moving in into:
        target = absolute_path(base, word, {})
        if target is not None and strictly_inside(os.path.normpath(target), tmp):
            targets.append(os.path.normpath(target))
            known = copied_paths([(source, base) for source in moving])
            if len(known) < len(set(moving)) or any(not inside(k, tmp) for k in known):
                moved.append(targets[-1])
            elif known:
                from_temp.append((targets[-1], known))
    return targets, moved, from_temp


def lent_clones(records: list[OutputRecord]) -> tuple[list[str], str | None]:
    """The clones that borrow the objects of the records' outputs (`evidence.lent_to`, joined
    above), and the first of them on a mount that does not answer (app/core/hung_mounts.py): it
    cannot be asked, and a look at it would wait for ever."""
    from app.core.hung_mounts import reachable

    lent = [c for r in records if isinstance(r.evidence, dict) and isinstance(r.evidence.get("lent_to"), list)
            for c in r.evidence["lent_to"] if isinstance(c, str) and c.startswith("/") and "\0" not in c]
    return lent, next((c for c in lent if not reachable(c)), None)
