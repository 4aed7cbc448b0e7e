"""FNV-1a, 64 bits: the content hash of the edit ledger (seed "The Edit Ledger").

Two implementations give the same value for every byte string:

* the C function of the `fnv-c` package (~0.9 GB/s here, the speed of FNV-1a's serial
  multiply chain), a dependency wherever `fnv-c` publishes wheels, imported lazily; and
* a pure-Python loop (~90 ns a byte: a 10 MB file takes ~0.9 s), the fallback for a
  platform with no wheel (pip would need a C compiler there) or a broken install.

Importing `fnv_c` loads cffi and costs ~1 ms, as much as hashing ~9 KB in Python, and the
ledger runs on every prompt and edit. So data shorter than `FAST_MIN_BYTES` is hashed in
Python and the C module is loaded only for the first longer one. One published C binding of
FNV gets bytes 0x80 and up wrong (it reads them as signed chars); the C function is checked
once against the Python loop on such bytes when it is loaded, and is not used when it
disagrees.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

OFFSET_BASIS = 0xCBF29CE484222325
PRIME = 0x100000001B3
MASK = 0xFFFFFFFFFFFFFFFF

# Shorter data is hashed in Python: below this, loading cffi costs more than it saves.
FAST_MIN_BYTES = 8 * 1024

_SELF_CHECK = bytes(range(256)) + b"\x80\xff\xfe\x7f\x00caf\xc3\xa9"

# None: not tried yet; False: not installed or wrong; else the C hash of a buffer.
_c_hash: Callable[[Any], int] | None | bool = None


def fnv1a_64_py(data: bytes | bytearray | memoryview, start: int = OFFSET_BASIS) -> int:
    """FNV-1a 64 in pure Python; `start` continues a hash over chunks."""
    h = start
    prime, mask = PRIME, MASK
    for byte in data:
        h = ((h ^ byte) * prime) & mask
    return h


def _load_c() -> Callable[[Any], int] | bool:
    """The C hash of `fnv-c` when it is installed and right for every byte value, else False."""
    try:
        from fnv_c.ext._fnv import ffi, lib  # the cffi module: it also takes memoryviews
    except ModuleNotFoundError as exc:
        if exc.name == "fnv_c":  # a platform fnv-c has no wheel for: expected, the Python loop
            return False
        _log_broken(exc)
        return False
    except Exception as exc:  # noqa: BLE001 - installed but broken: the Python loop does the work
        _log_broken(exc)
        return False

    def c_hash(data: Any) -> int:
        return int(lib.fnv1a_64(ffi.from_buffer(data), len(data)))

    if not agrees_with_python(c_hash):
        from app.core.log import log

        log("fnv: the fnv_c module disagrees with FNV-1a 64 on test data; using the Python loop")
        return False
    return c_hash


def _log_broken(exc: BaseException) -> None:
    from app.core.log import log

    log(f"fnv: fnv-c is installed but cannot be loaded ({type(exc).__name__}: {exc}); "
        "hashing in Python (~90 ns a byte)")


def agrees_with_python(candidate: Callable[[Any], int]) -> bool:
    """True when `candidate` gives the Python loop's value on data with every byte value."""
    try:
        return all(candidate(_SELF_CHECK[:n]) == fnv1a_64_py(_SELF_CHECK[:n])
                   for n in (0, 1, 129, len(_SELF_CHECK)))
    except Exception:  # noqa: BLE001 - a broken binding is as good as a wrong one
        return False


def c_available() -> bool:
    """True when the verified C implementation is in use for long data."""
    global _c_hash
    if _c_hash is None:
        _c_hash = _load_c()
    return _c_hash is not False


def fnv1a_64(data: bytes | bytearray | memoryview) -> int:
    """FNV-1a 64 of `data`: C for long data when it is available and right, else Python."""
    if len(data) >= FAST_MIN_BYTES and c_available():
        assert callable(_c_hash)
        return _c_hash(data)
    return fnv1a_64_py(data)


def hex64(value: int) -> str:
    """A hash as the ledger stores it: 16 lowercase hex digits."""
    return f"{value:016x}"
