"""JSON for the hook hot path without importing `json` (which pulls in `re`: ~7 ms a call).

CPython's `_json` accelerator exposes the C scanner and encoder that `json` itself uses; this
module drives them directly. Where `_json` is missing it falls back to `json`. `loads` gives
what json.loads gives and raises a ValueError exactly when json.loads raises (a document
nested too deeply is a ValueError here too, where json lets the RecursionError out).

One trap: when the C scanner meets bad JSON it builds json.decoder.JSONDecodeError, but on
3.11 and older it only looks the class up in sys.modules; with `json` never imported (the
point of this module) it returns NULL without an exception and Python raises SystemError.
Bad input is rare, so that path imports json.decoder and scans again.
"""

from __future__ import annotations

import sys

try:
    import _json
except ImportError:  # pragma: no cover - every CPython has it
    _json = None  # type: ignore[assignment]


class JSONError(ValueError):
    """Not valid JSON (a ValueError, like json.JSONDecodeError)."""


_CONSTANTS = {"NaN": float("nan"), "Infinity": float("inf"), "-Infinity": float("-inf")}


class _Context:
    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = _CONSTANTS.__getitem__
    memo: dict[str, str] = {}


_WS = " \t\n\r"
_scanner = _json.make_scanner(_Context()) if _json is not None else None  # type: ignore[arg-type]


def loads(data: str | bytes | bytearray) -> object:
    """Parse one JSON document; raises JSONError (a ValueError) on anything else. Bytes are
    decoded as json.loads decodes them (UTF-8, or UTF-16/32 told by a BOM or by zero bytes)."""
    if isinstance(data, bytes | bytearray):
        try:
            text = bytes(data).decode(_encoding_of(data), "surrogatepass")
        except UnicodeDecodeError as exc:
            raise JSONError(f"not {exc.encoding}: {exc}") from None
    elif isinstance(data, str):
        text = data
    else:
        raise TypeError(f"the JSON object must be str, bytes or bytearray, not {type(data).__name__}")
    if _scanner is None:  # pragma: no cover
        import json

        try:
            return json.loads(text)
        except ValueError as exc:
            raise JSONError(str(exc)) from None
    try:
        return _scan(text)
    except SystemError:  # the scanner's error had no JSONDecodeError class to raise (see above)
        if "json.decoder" in sys.modules:
            raise
        import json.decoder  # noqa: F401 - now the scanner can raise its real error

        return _scan(text)


def _scan(text: str) -> object:
    end = len(text)
    start = 0
    while start < end and text[start] in _WS:
        start += 1
    try:
        value, stop = _scanner(text, start)
    except StopIteration as exc:
        raise JSONError(f"Expecting value: character {exc.value}") from None
    except ValueError as exc:  # JSONDecodeError from inside the scanner
        raise JSONError(str(exc)) from None
    except RecursionError:
        raise JSONError("nested too deeply") from None
    while stop < end and text[stop] in _WS:
        stop += 1
    if stop != end:
        raise JSONError(f"Extra data: character {stop}")
    return value


def _encoding_of(data: bytes | bytearray) -> str:
    """The encoding json.detect_encoding names (RFC 8259 allows UTF-8, -16 and -32)."""
    if data[:4] in (b"\x00\x00\xfe\xff", b"\xff\xfe\x00\x00"):
        return "utf-32"
    if data[:2] in (b"\xfe\xff", b"\xff\xfe"):
        return "utf-16"
    if data[:3] == b"\xef\xbb\xbf":
        return "utf-8-sig"
    if len(data) >= 4:
        if not data[0]:
            return "utf-16-be" if data[1] else "utf-32-be"
        if not data[1]:
            return "utf-16-le" if data[2] or data[3] else "utf-32-le"
    elif len(data) == 2:
        if not data[0]:
            return "utf-16-be"
        if not data[1]:
            return "utf-16-le"
    return "utf-8"


def dumps(value: object, *, ensure_ascii: bool = False, allow_nan: bool = False) -> str:
    """Compact JSON text. Keys must be strings (or numbers, bools, None, as json converts).

    NaN and infinities are refused unless `allow_nan`: a hook's output is read by a strict
    parser. With `ensure_ascii` the text is pure ASCII and a lone surrogate (a path byte
    that is not UTF-8, kept by os.fsdecode as `\\udcXX`) is written as its escape, so it
    reads back to the same str and os.fsencode gives back the same bytes."""
    if _json is None:  # pragma: no cover
        import json

        return json.dumps(value, ensure_ascii=ensure_ascii, separators=(",", ":"), allow_nan=allow_nan)
    quote = _json.encode_basestring_ascii if ensure_ascii else _json.encode_basestring
    # a new encoder (and circular-reference memo) for each call: the C encoder leaves the
    # memo dirty when it fails half-way, and a shared one would then refuse good data
    encoder = _json.make_encoder({}, _refuse, quote, None, ":", ",", False, False, allow_nan)
    return "".join(encoder(value, 0))


def _refuse(value: object) -> object:
    raise TypeError(f"not JSON serializable: {type(value).__name__}")


def members(text: str) -> dict[str, object]:
    """The members of the JSON object that `text` opens which `text` holds whole, in order,
    up to the first one cut short: what a document cut at a read limit still says for sure.

    Raises JSONError when `text` does not open an object."""
    if _scanner is None:  # pragma: no cover
        raise JSONError("no JSON scanner to read a cut document with")
    out: dict[str, object] = {}
    at = _skip(text, 0)
    if text[at:at + 1] != "{":
        raise JSONError("not an object")
    at = _skip(text, at + 1)
    while text[at:at + 1] == '"':
        try:
            key, at = _scanner(text, at)
            at = _skip(text, at)
            if text[at:at + 1] != ":":
                break
            value, at = _scanner(text, _skip(text, at + 1))
        except (StopIteration, ValueError, SystemError, RecursionError):
            break  # the member the cut ends in, and everything after it, are unknown
        out[key] = value
        at = _skip(text, at)
        if text[at:at + 1] != ",":
            break
        at = _skip(text, at + 1)
    return out


def _skip(text: str, at: int) -> int:
    while at < len(text) and text[at] in _WS:
        at += 1
    return at
