"""The shape of the code, so that a newcomer finds one small place for each thing: no module
over 400 lines in app/, no function over 60 lines or above cyclomatic complexity 20 (radon),
no block of six or more lines repeated in app/ and hooks/ (the `duplicates` tool, where it is
installed). docs/reference.md "Layout" says how to run the same checks by hand.

A module being split by its owner right now is named below; once it is within bounds the
test says so, and it comes off the list."""

from __future__ import annotations

import ast
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
MODULE_MAX = 400
FUNCTION_MAX = 60
COMPLEXITY_MAX = 20

#: Over a bound today, being reshaped by their owners.
STILL_LONG: set[str] = set()
STILL_LONG_FUNCTIONS: set[str] = set()
STILL_COMPLEX: set[str] = set()
#: Pairs of files `duplicates` finds a repeated block in, being rebuilt by their owners.
STILL_REPEATED: set[tuple[str, str]] = set()


def sources(*tops: str) -> list[Path]:
    return sorted(p for top in tops for p in (ROOT / top).rglob("*.py") if "__pycache__" not in p.parts)


def rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def functions(path: Path) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]


def within(found: set[str], allowed: set[str], what: str) -> None:
    assert found - allowed == set(), f"{what}: {sorted(found - allowed)}"
    assert allowed - found == set(), f"within bounds now, take off the list: {sorted(allowed - found)}"


def test_no_module_in_app_is_over_400_lines() -> None:
    long = {rel(p) for p in sources("app") if len(p.read_text(encoding="utf-8").splitlines()) > MODULE_MAX}
    within(long, STILL_LONG, f"modules over {MODULE_MAX} lines")


def test_no_function_is_over_60_lines() -> None:
    long = {f"{rel(p)}:{f.name}" for p in sources("app", "hooks") for f in functions(p)
            if (f.end_lineno or f.lineno) - f.lineno + 1 > FUNCTION_MAX}
    within(long, STILL_LONG_FUNCTIONS, f"functions over {FUNCTION_MAX} lines")


def test_no_function_is_above_complexity_20() -> None:
    from radon.complexity import cc_visit

    found: set[str] = set()
    for path in sources("app", "hooks"):
        blocks = list(cc_visit(path.read_text(encoding="utf-8")))
        while blocks:
            block = blocks.pop()
            blocks += [*getattr(block, "methods", []), *getattr(block, "closures", [])]
            if block.complexity > COMPLEXITY_MAX and not hasattr(block, "methods"):
                found.add(f"{rel(path)}:{block.name}")
    within(found, STILL_COMPLEX, f"functions above complexity {COMPLEXITY_MAX}")


@pytest.mark.skipif(shutil.which("duplicates") is None, reason="the duplicates tool is not installed here")
def test_no_block_of_six_lines_is_repeated_in_app_and_hooks() -> None:
    done = subprocess.run(["duplicates", "--most", "200", "--seconds", "120"], cwd=ROOT, capture_output=True,
                          text=True, timeout=300, check=False)
    assert "incomplete:" not in done.stdout, done.stdout
    pairs: set[tuple[str, str]] = set()
    for line in done.stdout.splitlines():
        words = line.split()
        if len(words) >= 4 and words[0].startswith("D") and words[2] == "~":
            a, b = (word.rsplit(":", 1)[0] for word in (words[1], words[3]))
            if all(side.startswith(("app/", "hooks/")) for side in (a, b)):
                pairs.add((min(a, b), max(a, b)))
    assert pairs - STILL_REPEATED == set(), f"repeated blocks: {sorted(pairs - STILL_REPEATED)}"
    assert STILL_REPEATED - pairs == set(), f"no longer repeated, take off the list: {sorted(STILL_REPEATED - pairs)}"
