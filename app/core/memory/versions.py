"""Version specs as sets of versions: what a build file admits and what a memory line
claims, both as unions of intervals, so that "the memory's claim and every build-file spec
have no version in common" is one intersection. npm, Poetry, Cargo, PEP 440, Ruby and Maven
readings of a spec; a spec that cannot be read is None (and the check stays silent).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

Version = tuple[int, ...]
#: a set of versions as a union of intervals (low, low included, high, high included);
#: None as a bound is open
Interval = tuple[Version | None, bool, Version | None, bool]
Spec = list[Interval]
EVERY_VERSION: Spec = [(None, False, None, False)]
WIDTH = 6




def _numbers(text: str) -> list[int] | None:
    match = re.fullmatch(r"[vV]?(\d+(?:\.\d+)*)(?:[-+.]?[A-Za-z][\w.+-]*)?", text.strip())
    return [int(n) for n in match.group(1).split(".")][:WIDTH] if match else None


def pad(numbers: Sequence[int]) -> Version:
    return tuple(list(numbers)[:WIDTH] + [0] * (WIDTH - len(numbers)))


def _bump(numbers: Sequence[int], index: int) -> Version:
    head = list(numbers[: index + 1]) + [0] * max(0, index + 1 - len(numbers))
    head[index] += 1
    return pad(head)


def exact(numbers: Sequence[int]) -> Interval:
    return (pad(numbers), True, pad(numbers), True)


def release_line(numbers: Sequence[int]) -> Interval:
    """Every version that starts with `numbers` (`4.1` and `4.1.x` both: 4.1.0 up to 4.2)."""
    return (pad(numbers), True, _bump(numbers, len(numbers) - 1), False)


def caret(numbers: Sequence[int]) -> Interval:
    """npm, Poetry and Cargo `^`: up to the next change of the first non-zero number."""
    index = next((i for i, n in enumerate(numbers) if n != 0), len(numbers) - 1)
    return (pad(numbers), True, _bump(numbers, index), False)


def tilde(numbers: Sequence[int]) -> Interval:
    """npm, Poetry and Cargo `~`: patch updates (minor ones when only a major is given)."""
    return (pad(numbers), True, _bump(numbers, 1 if len(numbers) > 1 else 0), False)


def compatible(numbers: Sequence[int]) -> Interval:
    """PEP 440 `~=` and Ruby `~>`: up to the next change of the second-to-last number."""
    return (pad(numbers), True, _bump(numbers, max(len(numbers) - 2, 0)), False)


def compare(op: str, numbers: Sequence[int]) -> Interval:
    v = pad(numbers)
    return {">=": (v, True, None, False), ">": (v, False, None, False),
            "<=": (None, False, v, True), "<": (None, False, v, False)}[op]


def _meet(a: Interval, b: Interval) -> Interval | None:
    """The intersection of two intervals, or None when it is empty."""
    lo, lo_in = a[0], a[1]
    if b[0] is not None and (lo is None or b[0] > lo or (b[0] == lo and not b[1])):
        lo, lo_in = b[0], b[1]
    hi, hi_in = a[2], a[3]
    if b[2] is not None and (hi is None or b[2] < hi or (b[2] == hi and not b[3])):
        hi, hi_in = b[2], b[3]
    if lo is not None and hi is not None and (lo > hi or (lo == hi and not (lo_in and hi_in))):
        return None
    return (lo, lo_in, hi, hi_in)


def intersect(a: Spec, b: Spec) -> Spec:
    return [m for x in a for y in b if (m := _meet(x, y)) is not None]


def disjoint(a: Spec, b: Spec) -> bool:
    """Whether no version is in both sets: the memory's claim and a build file's spec."""
    return not intersect(a, b)


_CLAUSE = re.compile(r"\s*(===|==|!=|~=|~>|>=|<=|>|<|=|\^|~)?\s*([^\s,]+)\s*$")


def _clause(op: str, version: str, flavour: str) -> Spec | None:
    """One comparator of a spec; None when it cannot be read (`latest`, a URL, a variable)."""
    if op == "!=":
        return EVERY_VERSION  # an exclusion never makes a claim contradict: read it as no limit
    if version in ("*", "x", "X") and op in ("", "=", "=="):
        return EVERY_VERSION
    wildcard = re.fullmatch(r"[vV]?(\d+(?:\.\d+)*)(?:\.[xX*])+|[vV]?(\d+(?:\.\d+)*)\.?\+", version)
    if wildcard and op in ("", "=", "=="):
        return [release_line([int(n) for n in (wildcard.group(1) or wildcard.group(2)).split(".")])]
    numbers = _numbers(version)
    if numbers is None:
        return None
    if op in (">=", ">", "<=", "<"):
        return [compare(op, numbers)]
    if op in ("~=", "~>"):
        return [compatible(numbers)]
    if op == "^":
        return [caret(numbers)]
    if op == "~":
        return [tilde(numbers)]
    if op in ("==", "===", "="):
        return [exact(numbers)]
    # a bare version: what it means depends on the tool
    if flavour == "cargo":
        return [caret(numbers)]
    if flavour == "npm" and len(numbers) < 3:
        return [release_line(numbers)]
    return [exact(numbers)]


def parse_spec(text: str, flavour: str) -> Spec | None:
    """A build file's version spec as a set of versions, or None when it cannot be read.

    `flavour`: "pep" (PEP 440), "poetry", "npm", "cargo", "ruby", "maven" or "exact"."""
    text = text.strip()
    if not text or text in ("*", "x", "X"):
        return EVERY_VERSION
    if flavour == "maven" and text[:1] in "[(":
        return _maven_ranges(text)
    union: Spec = []
    for alternative in text.split("||") if flavour in ("npm", "poetry") else [text]:
        alternative = alternative.strip()
        hyphen = re.fullmatch(r"(\S+)\s+-\s+(\S+)", alternative) if flavour == "npm" else None
        if hyphen:
            low, high = _numbers(hyphen.group(1)), _numbers(hyphen.group(2))
            if low is None or high is None:
                return None
            upper = compare("<=", high) if len(high) >= 3 else (None, False, _bump(high, len(high) - 1), False)
            union += intersect([compare(">=", low)], [upper])
            continue
        separators = r"\s*,\s*|\s+(?=[<>=~^!\d])" if flavour in ("npm", "poetry", "cargo") else r"\s*,\s*"
        current: Spec = EVERY_VERSION
        for part in re.split(separators, alternative):
            if not part.strip():
                continue
            match = _CLAUSE.match(part)
            if match is None:
                return None
            clause = _clause(match.group(1) or "", match.group(2), flavour)
            if clause is None:
                return None
            current = intersect(current, clause)
        union += current
    return union


def _maven_ranges(text: str) -> Spec | None:
    """Maven ranges: `[1.0,2.0)`, `(,1.0]`, `[1.2]`, several joined by commas (a union)."""
    ranges = re.findall(r"([\[(])\s*([^,\])]*?)\s*(?:(,)\s*([^\])]*?)\s*)?([\])])", text)
    if not ranges:
        return None
    spec: Spec = []
    for open_, low, comma, high, close in ranges:
        if not comma:
            high = low
        lo, hi = (_numbers(low) if low else None), (_numbers(high) if high else None)
        if (low and lo is None) or (high and hi is None):
            return None
        spec.append((pad(lo) if lo else None, open_ == "[", pad(hi) if hi else None, close == "]"))
    return spec
