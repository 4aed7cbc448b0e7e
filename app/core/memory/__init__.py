"""Freshness of Claude's project memory: which remembered facts the tree no longer bears out.

Claude writes `<config>/projects/<slug of the git root>/memory/` largely unsupervised, and
its failure is rot, not bloat: a version that moved on, a "latest migration" that is not,
a path that is gone, recalled with confidence. Every check here is grounded in the tree
(nothing is flagged by pattern alone), and a finding asks for a re-verification, never
gives a verdict: a false finding costs more than a missed one (a published pruner once
auto-removed 11 memories, all 11 wrongly), so whenever a line may mean something else the
check stays silent. The checks, each one function in its own module:

- `artifacts.vanished_artifacts`: a backticked path, file name or code symbol the tree no
  longer has;
- `pins.stale_version_pins`: "jhelm 1.3.1" where every parseable build-file spec of jhelm
  excludes it (`versions`: specs as sets of versions);
- `sequences.stale_sequences`: "the latest migration is V27" once `V28__*.sql` exists;
- `index.index_drift`: `MEMORY.md` lines pointing at missing files, topic files it omits.

`facts` says which lines state facts at all; `tree` reads the checkout once per sweep.
The sweep only reads: it writes nothing into memory. Stdlib only, and one implementation
for the SessionStart hook, the CLI and the dashboard. Two writers, under one lock:
`supersede` strikes a wrong line and dates its correction; `index_writer.add_to_index`
appends the `MEMORY.md` line that lists an unlisted topic file.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from app.core import paths
from app.core.log import log
from app.core.memory.artifacts import Artifact, artifacts_in, vanished_artifacts
from app.core.memory.facts import FactLine, fact_lines
from app.core.memory.index import index_drift
from app.core.memory.index_writer import IndexAdded, IndexRefused, add_to_index
from app.core.memory.pins import Pin, VersionClaim, read_pins, stale_version_pins, version_claims_of
from app.core.memory.sequences import (
    SequenceClaim,
    Series,
    about_migrations,
    migration_series,
    sequence_claims_of,
    stale_sequences,
)
from app.core.memory.supersede import (
    MEMORY_FILE_BYTES_MAX,
    MemoryWriteRefused,
    Superseded,
    SupersedeRefused,
    file_state,
    supersede,
)
from app.core.memory.tree import GIT_TIMEOUT_S, GREP_FIXED_MAX, Tree, read_text, read_tree
from app.core.memory.versions import disjoint, exact, parse_spec, release_line
from app.core.memory_lint import INDEX_NAME

#: The public face of the memory checks, for the hooks, the CLI and the dashboard.
__all__ = ["GREP_FIXED_MAX", "KINDS", "Finding", "IndexAdded", "IndexRefused", "MemoryWriteRefused",
           "SupersedeRefused", "Superseded", "add_to_index", "check_texts", "context_text", "disjoint", "exact",
           "findings_json", "memory_dir", "parse_spec", "read_tree", "release_line", "session_start_context",
           "supersede", "sweep"]

KINDS = ("vanished_artifact", "stale_version_pin", "stale_sequence", "index_missing_file", "index_unlisted_file")

#: SessionStart shows at most this many findings, then the count of the rest
CONTEXT_FINDINGS = 10
#: the whole context stays well under hooks/output.py's cap, whatever the findings hold
CONTEXT_LINE_MAX = 400
#: git gets this long in the SessionStart hook: a session must not wait on a big repository
SESSION_GIT_TIMEOUT_S = 2.5
MEMORY_FILES_MAX = 2000


@dataclass(frozen=True)
class Finding:
    """One remembered fact the tree no longer bears out (CONTRACT `memory` JSON)."""

    project: str
    file: str
    line: int | None
    kind: str
    token: str
    message: str


def memory_dir(project: str) -> str:
    """`<config>/projects/<slug>/memory` of a project: the slug of its main repository's
    root, as Claude's auto memory uses (all worktrees of a repository share one memory).
    A project named through a symlink has it under its real path's slug (`_project_memory`)."""
    return _project_memory(project)[1]


def _memory_dir_as_named(project: str) -> str:
    main = paths.main_repo_root(project)
    return os.path.join(str(paths.projects_dir()), paths.project_slug(os.fspath(main) if main else project), "memory")


def memory_files(folder: str) -> list[str]:
    """The `.md` files of a memory folder, relative, sorted (hidden names left out)."""
    found: list[str] = []
    for here, dirs, names in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        relative = os.path.relpath(here, folder)
        for name in sorted(names):
            if name.lower().endswith(".md") and not name.startswith("."):
                found.append(name if relative == "." else f"{relative}/{name}")
        if len(found) >= MEMORY_FILES_MAX:
            break
    return found[:MEMORY_FILES_MAX]


def sweep(project: str, *, timeout_s: float = GIT_TIMEOUT_S, remember: bool = True) -> list[Finding]:
    """Every finding for one project (its git root, or the folder itself), file by file and
    line by line. Reads only: it never writes into memory. `remember`: keep the text of the
    lines it names in claudetto's state, for a later supersede by bare number (the dashboard
    supersedes with the line's text and reads without it: `--read-only` writes nothing)."""
    root, folder = _project_memory(project)
    if not os.path.isdir(folder):
        return []
    texts: dict[str, str] = {}
    states: dict[str, tuple[int, int, int]] = {}
    for relative in memory_files(folder):
        path = os.path.join(folder, relative)
        try:
            states[relative] = file_state(os.stat(path))
        except OSError:
            continue
        text = read_text(path, MEMORY_FILE_BYTES_MAX)
        if text is not None:
            texts[relative] = text
    findings = check_texts(texts, root, folder, timeout_s=timeout_s)
    main = paths.main_repo_root(root)
    main_root = os.fspath(main) if main else root
    if main_root != root and os.path.isdir(main_root) and (findings or _names_root(texts, main_root)):
        judged: set[Key] = set()
        main_findings = check_texts(texts, main_root, folder, timeout_s=timeout_s, judged=judged)
        findings = _held_by_main(findings, (main_findings, judged), root, _lines_naming(texts, folder, main_root))
    if findings and os.path.isdir(main_root):
        findings = _held_by_siblings(findings, texts, folder, (root, main_root), timeout_s)
    if remember:
        _remember_listed(folder, texts, states, findings)
    return findings


def _project_memory(project: str) -> tuple[str, str]:
    """The project's root and memory folder. Claude names memory after its working folder as
    the system gives it, symlinks resolved (`getcwd`): a project named through a link
    (`~/work/shop` -> `/data/shop`) has its memory under the real path's slug."""
    root = paths.git_root_str(project) or os.path.abspath(project)
    folder = _memory_dir_as_named(root)
    if not os.path.isdir(folder):
        real = os.path.realpath(project)
        real_root = paths.git_root_str(real) or real
        real_folder = _memory_dir_as_named(real_root)
        if real_root != root and os.path.isdir(real_folder):
            return real_root, real_folder
    return root, folder


def _remember_listed(folder: str, texts: dict[str, str], states: dict[str, tuple[int, int, int]],
                     findings: list[Finding]) -> None:
    """Keep the text of each line the findings name (`shifts.remember_listed`): a supersede
    by that number, once the file changed, must still find it there. Claudetto's own state,
    never memory."""
    from app.core.memory import shifts

    named: dict[str, tuple[tuple[int, int, int], dict[int, str]]] = {}
    for finding in findings:
        relative = finding.file[len(folder) + 1:] if finding.file.startswith(folder + "/") else ""
        if finding.line is None or relative not in texts:
            continue
        lines = texts[relative].split("\n")
        if finding.line <= len(lines):
            entry = named.setdefault(os.path.realpath(finding.file), (states[relative], {}))
            entry[1][finding.line] = lines[finding.line - 1].rstrip("\r")
    shifts.remember_listed(named)


def _names_root(texts: dict[str, str], root: str) -> bool:
    return any(root + "/" in text for text in texts.values())


def _lines_naming(texts: dict[str, str], folder: str, root: str) -> set[tuple[str, int]]:
    """(file, line) of each memory line that holds a path under `root`."""
    return {(os.path.join(folder, name), number) for name, text in texts.items() if root + "/" in text
            for number, line in enumerate(text.split("\n"), start=1) if root + "/" in line}


def _held_by_main(findings: list[Finding], main: tuple[list[Finding], set[Key]], root: str,
                  rooted_lines: set[tuple[str, int]]) -> list[Finding]:
    """A worktree's findings that the main checkout has too, or cannot judge (`main`: its
    findings and the keys of what it judged). Every worktree shares the main checkout's
    memory, and a worktree may be cut from an older commit: a fact the main checkout bears
    out is no rot, and a finding would ask the model to strike a true line of the memory
    every checkout reads. A line holding a path written from the main checkout's root
    (`/home/u/app/src/x.py`) is about a tree outside the worktree, which cannot judge it:
    the main checkout's findings on it stand."""
    from dataclasses import replace

    held = {_key(f) for f in main[0]}
    kept = [f for f in findings if _key(f) in held or _key(f) not in main[1]]
    known = {_key(f) for f in kept}
    rooted = [replace(f, project=root) for f in main[0] if f.kind == "vanished_artifact" and _key(f) not in known
              and (f.file, f.line) in rooted_lines]
    return sorted(kept + rooted, key=lambda f: (f.file, f.line or 0)) if rooted else kept


#: at most this many other worktrees are asked whether they bear a finding's fact out
SIBLINGS_MAX = 8


def _held_by_siblings(findings: list[Finding], texts: dict[str, str], folder: str, roots: tuple[str, str],
                      timeout_s: float) -> list[Finding]:
    """The findings every other worktree of the repository has too (`roots`: this checkout's and
    the main checkout's, judged already). Every checkout reads one memory: a file or a pin a
    session remembered from the feature branch's worktree holds there, and a finding from
    the main checkout would ask the model to strike a true line. A line naming a path under
    either root is about that tree, which judged it: its findings stand. At most
    SIBLINGS_MAX worktrees are asked, within `timeout_s`; findings the rest may bear out stand."""
    import time

    from app.core.git import GitFailed, worktree_list

    if not _may_have_worktrees(roots[1]):
        return findings
    try:
        listed = worktree_list(roots[1])
    except GitFailed as exc:
        log(f"memory: no worktrees of {roots[1]} to compare with: {exc}")
        return findings
    own = {os.path.realpath(r) for r in roots}
    others = [w.path for w in listed.values() if w.path not in own and not w.prunable and os.path.isdir(w.path)]
    rooted = _lines_naming(texts, folder, roots[0]) | _lines_naming(texts, folder, roots[1])
    deadline = time.monotonic() + timeout_s
    for other in others[:SIBLINGS_MAX]:
        left = deadline - time.monotonic()
        if not findings or left <= 0:
            break
        judged: set[Key] = set()
        held = {_key(f) for f in check_texts(texts, other, folder, timeout_s=left, judged=judged)}
        # a worktree without the file's folder, the dependency or the migrations bears nothing out
        findings = [f for f in findings if _key(f) in held or _key(f) not in judged or (f.file, f.line) in rooted]
    return findings


def _may_have_worktrees(main_root: str) -> bool:
    """Whether git may list a worktree besides the main one: `.git/worktrees` holds an entry
    (or `.git` is no folder to look into). No git process for the many repositories without."""
    try:
        return bool(os.listdir(os.path.join(main_root, ".git", "worktrees")))
    except FileNotFoundError:
        return False
    except OSError:
        return True


#: One finding's fact: (memory file, line, kind, token).
Key = tuple[str, int | None, str, str]


def _key(finding: Finding) -> Key:
    return finding.file, finding.line, finding.kind, finding.token


def check_texts(texts: dict[str, str], root: str, folder: str, *, timeout_s: float = GIT_TIMEOUT_S,
                judged: set[Key] | None = None) -> list[Finding]:
    """The findings for memory texts (relative name -> text) against the tree at `root`.
    `judged` gets the key (`_key`) of every fact the tree could judge, true or not: a tree
    without the file's folder, the dependency or a migration folder says nothing of it."""
    facts = {name: fact_lines(text) for name, text in texts.items()}
    # a memory file naming another one (`see deploy.md`) points into memory, not into the tree
    own = set(texts) | {name.rsplit("/", 1)[-1] for name in texts}
    # and a `.md` name in the index is a pointer: index drift judges it, against memory
    named = {name: [a for a in artifacts_in(lines, root) if a.probe.rstrip("/") not in own
                    and not (name == INDEX_NAME and a.probe.lower().endswith(".md"))]
             for name, lines in facts.items()}
    tree = read_tree(root, (a.probe for items in named.values() for a in items), timeout_s)
    pins = read_pins(tree)
    series = migration_series(tree.files or [])
    findings: list[Finding] = []
    for name, text in texts.items():
        rows, seen = _rows_of(named[name], facts[name], text, (tree, pins, series))
        path = os.path.join(folder, name)
        if judged is not None:
            judged.update((path, *key) for key in seen)
        findings += [Finding(root, path, line, kind, token, why) for line, kind, token, why in sorted(rows, key=lambda r: r[0])]
    return findings + _index_findings(texts, root, folder)


Row = tuple[int, str, str, str]  # (line, kind, token, why)


def _rows_of(items: list[Artifact], facts: list[FactLine], text: str,
             read: tuple[Tree, dict[str, list[Pin]], list[Series]]) -> tuple[list[Row], list[tuple[int, str, str]]]:
    """One memory file's findings as rows, and (line, kind, token) of every fact the tree
    could judge (`read`: the tree, its pins and its migration series)."""
    tree, pins, series = read
    artifacts: list[Artifact] = []
    versions: list[VersionClaim] = []
    sequences: list[SequenceClaim] = []
    rows: list[Row] = [(a.line, "vanished_artifact", a.token, why) for a, why in vanished_artifacts(items, tree, artifacts)]
    rows += [(c.line, "stale_version_pin", c.text, why)
             for c, why in stale_version_pins(version_claims_of(facts), pins, versions)]
    if series:
        claims = sequence_claims_of(facts, about_migrations(text))
        rows += [(c.line, "stale_sequence", c.ref, why) for c, why in stale_sequences(claims, series, sequences)]
    seen = [(a.line, "vanished_artifact", a.token) for a in artifacts]
    seen += [(c.line, "stale_version_pin", c.text) for c in versions]
    return rows, seen + [(c.line, "stale_sequence", c.ref) for c in sequences]


def _index_findings(texts: dict[str, str], root: str, folder: str) -> list[Finding]:
    """Index drift, when there is an index to read or none at all: an index that is there
    but cannot be read tells nothing about what it lists."""
    if not folder or (INDEX_NAME not in texts and os.path.lexists(os.path.join(folder, INDEX_NAME))):
        return []
    topics = [name for name in texts if name != INDEX_NAME]
    return [Finding(root, path, line, kind, token, why)
            for path, line, kind, token, why in index_drift(folder, texts.get(INDEX_NAME), topics)]




def findings_json(findings: Iterable[Finding]) -> dict[str, object]:
    """CONTRACT `memory`: {"findings": [{project, file, line, kind, token, message}]}."""
    return {"findings": [{"project": f.project, "file": f.file, "line": f.line, "kind": f.kind,
                          "token": f.token, "message": f.message} for f in findings]}


# --- what SessionStart tells the model --------------------------------------------------------


def context_text(findings: Sequence[Finding], folder: str = "") -> str:
    """The SessionStart context: "" when memory is healthy (0 tokens), else a request to
    re-verify with at most CONTEXT_FINDINGS findings and the count of the rest."""
    if not findings:
        return ""
    from app.core.log import printable

    where = f" in {printable(folder)}" if folder else ""
    count = len(findings)
    command = printable(command_name())
    lines = [
        f"claudetto: {count} remembered fact{'s' if count != 1 else ''}{where} may be out of date. Each is a "
        "request to re-verify against the code, not a verdict. Where a fact is wrong, strike its line (~~...~~) "
        f"and add a dated correction below it instead of deleting it (`{command} supersede FILE --line N "
        "--correction TEXT` does both; add `--expect LINE`, the line as you last read it, once the file may "
        "have changed: a line that moved is then never struck); keep MEMORY.md one pointer line per topic file."
    ]
    for finding in findings[:CONTEXT_FINDINGS]:
        name = os.path.relpath(finding.file, folder) if folder and finding.file.startswith(folder + "/") else finding.file
        at = f"{name}:{finding.line}" if finding.line is not None else name
        line = printable(f"- {at}: {finding.message}")
        lines.append(line if len(line) <= CONTEXT_LINE_MAX else line[: CONTEXT_LINE_MAX - 1] + "\u2026")
    if count > CONTEXT_FINDINGS:
        rest = count - CONTEXT_FINDINGS
        lines.append(f"(and {rest} more finding{'s' if rest != 1 else ''}: `{command} memory` lists them all)")
    return "\n".join(lines)


def command_name() -> str:
    """How the model's Bash tool runs this claudetto: `claudetto` when PATH finds this very
    script, else the script beside the running interpreter by absolute path (a plugin's or a
    clone's venv, which no PATH names: the bare name would fail "command not found")."""
    import shlex
    import shutil
    import sys

    script = os.path.join(os.path.dirname(sys.executable), "claudetto")
    if not os.access(script, os.X_OK):
        return "claudetto"
    found = shutil.which("claudetto")
    if found is not None and os.path.realpath(found) == os.path.realpath(script):
        return "claudetto"
    return shlex.quote(script)


def session_start_context(payload: dict[str, object]) -> str:
    """What SessionStart adds to the context for the session's project: "" when healthy, when
    there is no memory folder, or on any failure (logged: the session must start anyway)."""
    cwd = payload.get("cwd")
    if not isinstance(cwd, str) or not cwd.startswith("/") or "\0" in cwd or not os.path.isdir(cwd):
        log(f"memory: SessionStart without a usable cwd ({str(cwd)[:200]!r}), no memory check")
        return ""
    try:
        findings = sweep(cwd, timeout_s=SESSION_GIT_TIMEOUT_S)
        return context_text(findings, _project_memory(cwd)[1])
    except Exception as exc:  # noqa: BLE001 - a memory check never stops a session
        log(f"memory: SessionStart check failed: {type(exc).__name__}: {exc}")
        return ""
