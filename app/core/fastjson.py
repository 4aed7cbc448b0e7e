"""JSON for the hook hot path without importing `json` (which pulls in `re`: ~7 ms a call).

CPython's `_json` accelerator exposes the C scanner and encoder that `json` itself uses; this
module drives them directly. Where `_json` is missing it falls back to `json`. The results are
the same as json.loads / json.dumps(separators=(",", ":")) for the data claudetto handles.
"""

from __future__ import annotations

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
_encoders: dict[bool, object] = {}


def loads(data: str | bytes | bytearray) -> object:
    """Parse one JSON document; raises JSONError (a ValueError) on anything else."""
    if isinstance(data, bytes | bytearray):
        try:
            text = bytes(data).decode("utf-8-sig" if data[:3] == b"\xef\xbb\xbf" else "utf-8")
        except UnicodeDecodeError as exc:
            raise JSONError(f"not UTF-8: {exc}") from None
    else:
        text = data
    if _scanner is None:  # pragma: no cover
        import json

        try:
            return json.loads(text)
        except ValueError as exc:
            raise JSONError(str(exc)) from None
    start = 0
    end = len(text)
    while start < end and text[start] in _WS:
        start += 1
    while end > start and text[end - 1] in _WS:
        end -= 1
    if start == end:
        raise JSONError("empty document")
    try:
        value, stop = _scanner(text[:end], start)
    except StopIteration as exc:
        raise JSONError(f"invalid JSON at character {exc.value}") from None
    except ValueError as exc:  # JSONDecodeError from inside the scanner
        raise JSONError(str(exc)) from None
    except RecursionError:
        raise JSONError("nested too deeply") from None
    if stop != end:
        raise JSONError(f"extra data at character {stop}")
    return value


def dumps(value: object, *, ensure_ascii: bool = False) -> str:
    """Compact JSON text. Keys must be strings; NaN and infinities are refused."""
    if _json is None:  # pragma: no cover
        import json

        return json.dumps(value, ensure_ascii=ensure_ascii, separators=(",", ":"), allow_nan=False)
    encoder = _encoders.get(ensure_ascii)
    if encoder is None:
        quote = _json.encode_basestring_ascii if ensure_ascii else _json.encode_basestring
        encoder = _json.make_encoder({}, _refuse, quote, None, ":", ",", False, False, False)
        _encoders[ensure_ascii] = encoder
    return "".join(encoder(value, 0))  # type: ignore[operator]


def _refuse(value: object) -> object:
    raise TypeError(f"not JSON serializable: {type(value).__name__}")
