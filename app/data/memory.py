"""The Memory screen's data: the findings of the memory sweep for every known project
(`memory.sweep`, which only reads), and a memory file's lines for the viewer.

A correction is written by `memory.supersede` (strike the line, add a dated correction
below it) and an index line by `memory.add_to_index`, never here.
"""

from __future__ import annotations

from dataclasses import dataclass

from app.core.memory import Finding

FILE_LINES_MAX = 2000


@dataclass(frozen=True)
class MemoryFindings:
    findings: list[Finding]
    swept: list[str]  # the project roots whose memory was read
    problems: list[str]  # one line per project that could not be swept


def read_findings(timeout_s: float = 60.0) -> MemoryFindings:
    """Every finding of every known project, by project, file and line."""
    from app.core import memory, paths

    try:
        known = [str(p) for p in paths.known_projects()]
    except OSError:
        known = []
    # the worktrees of a repository share its memory: each repository once, as its main root
    roots = list(dict.fromkeys(str(paths.main_repo_root(p) or paths.git_root_str(p) or p) for p in known))
    findings: list[Finding] = []
    problems: list[str] = []
    for root in roots:
        try:
            findings += memory.sweep(root, timeout_s=timeout_s, remember=False)
        except Exception as exc:  # noqa: BLE001 - one project's memory must not hide the others
            problems.append(f"{root}: {type(exc).__name__}: {exc}")
    findings.sort(key=lambda f: (f.project, f.file, f.line or 0, f.kind))
    return MemoryFindings(findings, roots, problems)


def file_lines(path: str) -> list[str]:
    """The lines of a memory file for the viewer ([] when it cannot be read), split on `\\n`
    only, as the findings and `supersede` number them (a lone `\\r` or `\\u2028` is inside a line)."""
    from app.core.memory.supersede import line_body

    try:
        with open(path, encoding="utf-8", errors="replace", newline="\n") as fh:
            return [line_body(line) for _n, line in zip(range(FILE_LINES_MAX), fh, strict=False)]
    except OSError:
        return []


def finding_key(finding: Finding) -> str:
    return f"{finding.file}\0{finding.line or 0}\0{finding.kind}\0{finding.token}"

