"""Precision and recall of the memory sweep on the calibration corpus in tests/data/memory/.

Each folder there is one repository: `tree.txt` holds its files (`=== <path>` then the
content), `memory/` the memory files Claude would have written for it. A memory line ends
with `<!-- rot: <kind> -->` when the sweep must report it, or `<!-- trap: <why> -->` when it
looks like rot and is not (a release line, a flag, a placeholder, history...); the labels
are cut off before the sweep sees the text. Findings are matched by (file, line, kind).

Targets: precision >= 0.95 (a false finding costs more than a missed one; the best published
memory checker reports 94%), recall >= 0.9.

Usage: .venv/bin/python bench/memory_precision.py [--verbose]
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "data" / "memory"
LABEL = re.compile(r"\s*<!--\s*(rot|trap):\s*(.*?)\s*-->")
INDEX_KINDS = ("index_unlisted_file",)

Key = tuple[str, "int | None", str]


@dataclass
class Repo:
    name: str
    root: str
    memory: str
    texts: dict[str, str] = field(default_factory=dict)
    rot: set[Key] = field(default_factory=set)
    traps: list[tuple[str, int, str]] = field(default_factory=list)


@dataclass
class Score:
    repos: list[Repo]
    found: set[Key]
    rot: set[Key]
    traps: int

    @property
    def true_positives(self) -> set[Key]:
        return self.found & self.rot

    @property
    def false_positives(self) -> set[Key]:
        return self.found - self.rot

    @property
    def missed(self) -> set[Key]:
        return self.rot - self.found

    @property
    def precision(self) -> float:
        return len(self.true_positives) / len(self.found) if self.found else 1.0

    @property
    def recall(self) -> float:
        return len(self.true_positives) / len(self.rot) if self.rot else 1.0


def read_manifest(path: Path) -> dict[str, str]:
    files: dict[str, str] = {}
    current: str | None = None
    for line in path.read_text().splitlines(keepends=True):
        if line.startswith("=== "):
            current = line[4:].strip()
            files[current] = ""
        elif current is not None:
            files[current] += line
    return files


def build_repo(source: Path, base: Path) -> Repo:
    """The repository of one corpus folder, committed with real git, and its labelled memory."""
    root = base / source.name
    for name, text in read_manifest(source / "tree.txt").items():
        target = root / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_AUTHOR_NAME": "corpus", "GIT_AUTHOR_EMAIL": "c@example.invalid",
           "GIT_COMMITTER_NAME": "corpus", "GIT_COMMITTER_EMAIL": "c@example.invalid"}
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "corpus"]):
        subprocess.run(["git", *args], cwd=root, env=env, check=True, capture_output=True)
    memory = base / f"{source.name}-memory"
    memory.mkdir()
    repo = Repo(source.name, str(root), str(memory))
    for path in sorted((source / "memory").glob("*.md")):
        lines = []
        for number, line in enumerate(path.read_text().split("\n"), start=1):
            label = LABEL.search(line)
            if label:
                line = line[: label.start()] + line[label.end():]
                kind = label.group(2).split()[0] if label.group(1) == "rot" else ""
                if label.group(1) == "rot":
                    repo.rot.add((path.name, None if kind in INDEX_KINDS else number, kind))
                else:
                    repo.traps.append((path.name, number, label.group(2)))
            lines.append(line)
        text = "\n".join(lines)
        (memory / path.name).write_text(text)
        repo.texts[path.name] = text
    return repo


def evaluate(base: Path, corpus: Path = CORPUS) -> Score:
    """Build every corpus repository under `base`, sweep its memory, score the findings."""
    from app.core.memory import check_texts

    repos = [build_repo(source, base) for source in sorted(p for p in corpus.iterdir() if (p / "tree.txt").exists())]
    found: set[Key] = set()
    rot: set[Key] = set()
    traps = 0
    for repo in repos:
        for finding in check_texts(repo.texts, repo.root, repo.memory):
            found.add((f"{repo.name}/{os.path.relpath(finding.file, repo.memory)}", finding.line, finding.kind))
        rot |= {(f"{repo.name}/{file}", line, kind) for file, line, kind in repo.rot}
        traps += len(repo.traps)
    return Score(repos, found, rot, traps)


def main() -> None:
    sys.path.insert(0, str(ROOT))
    verbose = "--verbose" in sys.argv
    with tempfile.TemporaryDirectory(prefix="claudetto-corpus-") as base:
        score = evaluate(Path(base))
    files = sum(len(r.texts) for r in score.repos)
    print(f"memory_precision: {len(score.repos)} repositories, {files} memory files, "
          f"{len(score.rot)} rot labels, {score.traps} traps")
    print(f"memory_precision: precision {score.precision:.3f} (target >= 0.95), "
          f"recall {score.recall:.3f} (target >= 0.9); {len(score.true_positives)} found, "
          f"{len(score.false_positives)} false, {len(score.missed)} missed")
    if verbose or score.false_positives or score.missed:
        for key in sorted(score.false_positives, key=str):
            print(f"  false finding: {key}")
        for key in sorted(score.missed, key=str):
            print(f"  missed rot:    {key}")


if __name__ == "__main__":
    main()
