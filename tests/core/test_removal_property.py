"""Property: whatever tree and whatever path it is asked to remove, `remove()` never removes
or changes anything outside its root, even when a folder or a parent is swapped for a
symlink between its check and the removal.

Trees are generated with symlinks to outside folders and files, symlinked parents, `..`
components, names with newlines and bytes that are not UTF-8, and hard links to outside
files (decoded from drawn bytes: see `trees`). Every link target stays inside the example's own temp folder, so even a broken
removal could only damage that folder. 2,000 examples each (CLAUDETTO_PROPERTY_EXAMPLES
lowers it for a quick local run).

The examples run in a tmpfs (/dev/shm) when there is one, with claudetto's state (and so its
trash) beside them: thousands of tiny trees on a journalled disk cost ten times as much.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from app.core import removal
from app.core.removal import purge_trash, remove

EXAMPLES = int(os.environ.get("CLAUDETTO_PROPERTY_EXAMPLES", "2000"))
SETTINGS = settings(max_examples=EXAMPLES, deadline=None, database=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture,
                                           HealthCheck.too_slow, HealthCheck.data_too_large])

_SPECIAL = [b"a", b"b", b"node_modules", b"x\ny", b"\n", b"\xff\xfe", b"caf\xc3\xa9", b"sp ace",
            b"-rf", b"*", b"\\", b".hidden", b"..."]
# Symlink targets, by key; each resolves inside the example folder (base).
LINK_TARGETS = ["out_dir", "out_file", "out_deep", "base", "root", "dot", "dangling", "rel_out"]
OUT_FILES = ["precious", "od/inner", "od/deeper/leaf"]
MAX_LEAVES = 6  # per top-level node
MAX_DEPTH = 4


class _Bytes:
    """The drawn bytes, one choice at a time; past the end every choice is 0 (the simplest)."""

    def __init__(self, data: bytes) -> None:
        self.data, self.at = data, 0

    def pick(self, among: int = 256) -> int:
        value = self.data[self.at] if self.at < len(self.data) else 0
        self.at += 1
        return value % among


def _name(src: _Bytes) -> bytes:
    """Half the time a name from _SPECIAL, else 1-5 arbitrary bytes (no `/`, no NUL, not `.`/`..`)."""
    if src.pick(2) == 0:
        return _SPECIAL[src.pick(len(_SPECIAL))]
    raw = bytes(src.pick() for _ in range(1 + src.pick(5)))
    return b"_" + raw if raw in (b".", b"..") else raw.replace(b"/", b"_").replace(b"\0", b"_")


def _node(src: _Bytes, leaves: list[int], depth: int = 1) -> tuple[Any, ...]:
    """A folder of up to 3 nodes (half the time, while depth and leaves allow), else a file
    (size 0, 1, 100 or 5000), a symlink to one of LINK_TARGETS or a hard link to an outside file."""
    if src.pick(2) == 0 and depth < MAX_DEPTH and leaves[0] > 0:
        name = _name(src)
        kids = []
        for _ in range(src.pick(4)):
            if leaves[0] <= 0:
                break
            kids.append(_node(src, leaves, depth + 1))
        return ("dir", name, kids)
    leaves[0] -= 1
    name, kind = _name(src), src.pick(3)
    if kind == 1:
        return ("symlink", name, LINK_TARGETS[src.pick(len(LINK_TARGETS))])
    if kind == 2:
        return ("hardlink", name, OUT_FILES[src.pick(len(OUT_FILES))])
    return ("file", name, src.pick(4))


def decode_trees(data: bytes) -> list[tuple[Any, ...]]:
    """1-4 nodes decoded from `data`; all zero bytes give the simplest tree (one empty `a/`)."""
    src = _Bytes(data)
    return [_node(src, [MAX_LEAVES]) for _ in range(1 + src.pick(4))]


# The trees are decoded from 128 drawn bytes rather than drawn as nested strategies: one choice
# for Hypothesis costs ~0.6 ms an example where the same shapes drawn node by node cost ~3.7 ms
# (as many folders, files, links and levels on average: ~6.5 entries, depth up to 4), which
# was most of this test's time. Zero bytes decode to the simplest choices, so a failing
# example still shrinks to a small tree.
trees = st.binary(min_size=128, max_size=128).map(decode_trees)


@pytest.fixture
def base_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Where each example makes its folder; the trash is on the same file system."""
    top = str(tmp_path)
    shm = "/dev/shm"
    if os.path.isdir(shm) and os.access(shm, os.W_OK | os.X_OK):
        top = tempfile.mkdtemp(prefix="claudetto-prop-", dir=shm)
    monkeypatch.setenv("CLAUDETTO_HOME", os.path.join(top, "state"))
    try:
        yield top
    finally:
        if top != str(tmp_path):
            shutil.rmtree(top, ignore_errors=True)


def _make_outside(out: bytes) -> None:
    os.makedirs(out + b"/od/deeper")
    for rel, text in [(b"precious", b"keep me"), (b"od/inner", b"inner"), (b"od/deeper/leaf", b"leaf")]:
        with open(out + b"/" + rel, "wb") as fh:
            fh.write(text)
    # The names a generated path may walk into after a swapped symlink: bait.
    for name in _SPECIAL[:4]:
        with open(out + b"/od/" + name.replace(b"\n", b"_") + b"-bait", "wb") as fh:
            fh.write(b"bait")


def _link_target(key: str, base: bytes) -> bytes:
    return {
        "out_dir": base + b"/outside/od",
        "out_file": base + b"/outside/precious",
        "out_deep": base + b"/outside/od/deeper",
        "base": base,
        "root": base + b"/root",
        "dot": b".",
        "dangling": b"nope",
        "rel_out": b"../outside",
    }[key]


def _build(folder: bytes, nodes: list[Any], base: bytes) -> None:
    for item in nodes:
        kind, name = item[0], item[1]
        path = folder + b"/" + name
        if os.path.lexists(path):
            continue
        if kind == "file":
            with open(path, "wb") as fh:
                fh.write(b"z" * (0, 1, 100, 5000)[item[2]])
        elif kind == "symlink":
            os.symlink(_link_target(item[2], base), path)
        elif kind == "hardlink":
            os.link(base + b"/outside/" + item[2].encode(), path)
        else:
            os.mkdir(path)
            _build(path, item[2], base)


def _fingerprint(top: bytes) -> dict[bytes, tuple[Any, ...]]:
    """Each entry under `top` (and `top`): type, mode, mtime, content hash or link target."""
    out: dict[bytes, tuple[Any, ...]] = {}
    pending = [top]
    while pending:
        path = pending.pop()
        st_ = os.lstat(path)
        if stat.S_ISLNK(st_.st_mode):
            out[path] = ("l", os.readlink(path))
        elif stat.S_ISDIR(st_.st_mode):
            out[path] = ("d", st_.st_mode, st_.st_mtime_ns)
            pending.extend(path + b"/" + name for name in os.listdir(path))
        else:
            with open(path, "rb") as fh:
                digest = hashlib.sha1(fh.read()).hexdigest()
            out[path] = ("f", st_.st_mode, st_.st_mtime_ns, st_.st_size, digest)
    return out


def _candidates(root: bytes) -> list[bytes]:
    """Relative paths worth asking for: every entry, paths through symlinks, `..` tricks."""
    found: list[bytes] = []
    pending = [b""]
    while pending:
        rel = pending.pop()
        folder = root + (b"/" + rel if rel else b"")
        for name in sorted(os.listdir(folder)):
            sub = rel + b"/" + name if rel else name
            found.append(sub)
            full = root + b"/" + sub
            if os.path.islink(full):
                found.extend([sub + b"/od", sub + b"/precious", sub + b"/deeper", sub + b"/..",
                              sub + b"/../outside", sub + b"/inner"])
            elif os.path.isdir(full):
                pending.append(sub)
                found.append(sub + b"/../" + name)
    found.extend([b"", b".", b"..", b"../outside", b"../outside/precious", b"nope", b"nope/x",
                  b"./", b"../root"])
    return found


def _under(path: bytes, top: bytes) -> bool:
    return path == top or path.startswith(top + b"/")


@SETTINGS
@given(tree=trees, data=st.data(), via_alias=st.booleans(),
       trash=st.sampled_from([False, True, None]))
def test_nothing_outside_the_root_is_touched(base_dir: str, tree: list[Any], data: st.DataObject,
                                             via_alias: bool, trash: bool | None) -> None:
    base = os.fsencode(tempfile.mkdtemp(prefix="prop-", dir=base_dir))
    try:
        root, outside = base + b"/root", base + b"/outside"
        os.mkdir(root)
        _make_outside(outside)
        _build(root, tree, base)
        os.symlink(root, base + b"/alias")
        rel = data.draw(st.sampled_from(_candidates(root)), label="path")
        given_root = base + b"/alias" if via_alias else root
        path = given_root + b"/" + rel if rel else given_root
        before_out = _fingerprint(outside)
        before_root = _fingerprint(root)
        target = os.fsencode(removal._target(os.fsdecode(path)))  # before: links may go
        result = remove(path, given_root, "prop", trash=trash, journal=False, spawn=False)
        event(f"{result.status} {result.reason} trashed={result.trashed}")
        if trash is not False:
            purge_trash()
        assert _fingerprint(outside) == before_out
        assert os.readlink(base + b"/alias") == root
        after_root = _fingerprint(root)
        if result.status == "removed":
            assert _under(target, root) and target != root
            assert not os.path.lexists(target)
            assert {p: v for p, v in before_root.items() if not _under(p, target)
                    and p != os.path.dirname(target)} == {
                p: v for p, v in after_root.items() if p != os.path.dirname(target)}
        else:
            assert result.status in ("refused", "missing"), result
            assert after_root == before_root
    finally:
        shutil.rmtree(base, ignore_errors=True)


@SETTINGS
@given(tree=trees, data=st.data(), swap=st.sampled_from(["target", "parent"]),
       bait=st.sampled_from(["out_dir", "out_file", "out_deep", "mirror"]),
       trash=st.sampled_from([False, True, None]))
def test_swap_race_is_left_alone(base_dir: str, tree: list[Any], data: st.DataObject, swap: str,
                                 bait: str, trash: bool | None) -> None:
    base = os.fsencode(tempfile.mkdtemp(prefix="race-", dir=base_dir))
    try:
        root, outside = base + b"/root", base + b"/outside"
        os.mkdir(root)
        _make_outside(outside)
        _build(root, [("dir", b"d", [("dir", b"e", [("file", b"f", 2)])]), *tree], base)
        real = [c for c in _candidates(root)
                if c and not set(c.split(b"/")) & {b"", b".", b".."} and _plain(root, c)]
        if swap == "parent":
            real = [c for c in real if b"/" in c]
        if not real:
            return
        rel = data.draw(st.sampled_from(real), label="path")
        path = root + b"/" + rel
        victim = path if swap == "target" else root + b"/" + rel.rsplit(b"/", 1)[0]
        snapshot: dict[str, Any] = {}

        def race(checked: str) -> None:
            os.rename(victim, base + b"/aside")
            if bait == "mirror":  # the same names on the other side of the link
                mirror = outside + b"/mirror"
                remainder = path[len(victim):].lstrip(b"/")
                os.makedirs(os.path.dirname(mirror + b"/" + remainder) if remainder else mirror,
                            exist_ok=True)
                if remainder:
                    os.makedirs(mirror + b"/" + remainder + b"/kid")
                    with open(mirror + b"/" + remainder + b"/kid/f", "wb") as fh:
                        fh.write(b"mirror")
                else:
                    with open(mirror + b"/f", "wb") as fh:
                        fh.write(b"mirror")
                target = mirror
            else:
                target = _link_target(bait, base)
            os.symlink(target, victim)
            snapshot["out"] = _fingerprint(outside)
            snapshot["target"] = target

        result = remove(path, root, "prop", trash=trash, journal=False, spawn=False,
                        _before_remove=race)
        event(f"{swap} {result.status} {result.reason}")
        if trash is not False:
            purge_trash()
        assert _fingerprint(outside) == snapshot["out"]
        assert os.path.islink(victim) and os.readlink(victim) == snapshot["target"]
        assert result.status in ("refused", "missing"), result
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _plain(root: bytes, rel: bytes) -> bool:
    """`rel` names a real entry inside `root` through real folders only (no symlinked parent)."""
    parts = rel.split(b"/")
    current = root
    for part in parts[:-1]:
        current += b"/" + part
        if os.path.islink(current) or not os.path.isdir(current):
            return False
    full = root + b"/" + rel
    return os.path.lexists(full) and not os.path.islink(full)
