"""One file holding the compiled modules of the frequent hook events, read at a hook's start.

Why: a hook is a fresh interpreter on every prompt and tool call, and Python's path finder
costs ~40-90 µs per module (finders, stats, opening, reading and checking each .pyc) on top
of loading its code. A prompt or a Write imports ~17 of claudetto's modules, ~0.8 ms of a
~14 ms hook; served from this file (hooks/entry.py `Cached`), a module costs a stat and one
read from a file already open.

Never stale: each entry keeps its source's (inode, size, mtime_ns, ctime_ns) as they were
when it was compiled, and a module is served only while its source still has them; a module edited,
reinstalled or pulled since is imported the normal way, and the file is rebuilt after that
hook (`rebuild`, compiling from the source, never from a .pyc whose second-granular stamp can
miss an edit). A file that is missing, unreadable, damaged, of another Python or of another
layout is ignored. Where the code's own `__pycache__` cannot be written (a read-only install)
there is no file and the hooks import as before. Only the frequent events add modules to it,
so it stays small; every event may read it. The code is compiled without docstrings
(`_without_docstrings`).

Layout: 4 bytes (little-endian) giving the length of the index, the index (marshal of
`(CACHE_FORMAT, MAGIC_NUMBER, {name: (source, inode, size, mtime_ns, ctime_ns, is_package,
offset, length) or None})`), then each module's marshalled code at its offset after the index. None
marks a module that cannot be cached (its source unreadable): it is not tried again until the
file is rebuilt for another module. A rebuild writes a temp file and renames it: a hook that
has the old file open keeps reading the old one whole.

This module is imported only after a hook that missed the cache.
"""

from __future__ import annotations

import marshal
import os
import sys
import time

from hooks.entry import CACHE_FORMAT, stamp

TYPE_CHECKING = False
if TYPE_CHECKING:
    import ast
    from typing import Any

    from hooks.entry import Cached

#: at most one rebuild in this many seconds: where sources never keep their stamp (a file
#: system that hands out new inode numbers), every hook would otherwise compile them all again
#: (~0.1 s); a module missed meanwhile is only imported the normal way
REBUILD_EVERY_S = 10.0

#: the bytecode version of this interpreter: a file of another is ignored
MAGIC: bytes = sys.modules["_frozen_importlib_external"].MAGIC_NUMBER


def rebuild(finder: Cached, names: list[str]) -> None:
    """Write the file again through a temp file: the entries whose sources are unchanged, and
    `names` (modules of source this hook imported the normal way) compiled afresh. The temp file is created first, so a folder
    that cannot be written costs one failed open, not a compile."""
    path = finder.path
    try:
        if time.time() - os.stat(path).st_mtime < REBUILD_EVERY_S:
            return
    except OSError:
        pass
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    except OSError:
        return
    try:
        modules: dict[str, tuple[tuple[Any, ...], bytes] | None] = {}
        for name, entry in finder.entries.items():
            if entry is None:
                modules[name] = None
                continue
            code = finder.code(name) if _unchanged(entry) else None
            if code is not None:
                modules[name] = (entry, code)
        for name in names:
            compiled = _compiled(name)
            if compiled is not False:  # False: edited while it was read, tried again next time
                modules[name] = compiled  # type: ignore[assignment]
        with os.fdopen(fd, "wb") as fh:
            fd = -1
            fh.write(_layout(modules))
        os.replace(tmp, path)
        tmp = ""
    finally:
        if fd >= 0:
            os.close(fd)
        if tmp:
            try:
                os.unlink(tmp)
            except OSError:
                pass


def _layout(modules: dict[str, tuple[tuple[Any, ...], bytes] | None]) -> bytes:
    index: dict[str, tuple[Any, ...] | None] = {}
    blobs: list[bytes] = []
    offset = 0
    for name, module in sorted(modules.items()):
        if module is None:
            index[name] = None
            continue
        entry, code = module
        index[name] = (*entry[:6], offset, len(code))
        blobs.append(code)
        offset += len(code)
    head = marshal.dumps((CACHE_FORMAT, MAGIC, index))
    return len(head).to_bytes(4, "little") + head + b"".join(blobs)


def _unchanged(entry: tuple[Any, ...]) -> bool:
    try:
        st = os.stat(entry[0])
    except OSError:
        return False
    return stamp(st) == entry[1:5]


def _compiled(name: str) -> tuple[tuple[Any, ...], bytes] | None | bool:
    """(entry, code) of module `name` (already imported): its source compiled as the import
    system compiles it, with the stat read before the source; False when an edit raced the
    read (the stat after it differs), None when the source cannot be read or compiled."""
    spec = sys.modules[name].__spec__
    source = spec.origin if spec is not None else None
    if not isinstance(source, str):
        return None
    try:
        with open(source, "rb") as fh:
            before = os.fstat(fh.fileno())
            data = fh.read()
        after = os.stat(source)
        if stamp(before) != stamp(after):
            return False
        code = compile(_without_docstrings(data, source), source, "exec", dont_inherit=True)
    except (OSError, SyntaxError, ValueError):
        return None
    is_package = spec is not None and spec.submodule_search_locations is not None
    return (source, *stamp(after), is_package), marshal.dumps(code)



def _without_docstrings(data: bytes, source: str) -> ast.Module:
    """The module's syntax tree without its docstrings (as `python -OO` leaves them out, but
    with every `assert` kept): they are a fifth of the compiled size and half of the time to
    load it, and no hook reads a `__doc__`. Line numbers stay, so a traceback still points
    at the right line of the source."""
    import ast

    tree = ast.parse(data, source)
    for node in ast.walk(tree):
        if not isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        first = node.body[0] if node.body else None
        if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
            if len(node.body) > 1 or isinstance(node, ast.Module):
                del node.body[0]
            else:
                node.body[0] = ast.copy_location(ast.Pass(), first)
    return tree
