"""fastjson against json itself: the same value where json.loads parses, a ValueError exactly
where it raises, on fixed documents, hypothesis-made JSON, truncations and random bytes; and
the same in a fresh interpreter that never imported json (where the C scanner's own error
used to escape as SystemError)."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.core import fastjson
from tests.support import ROOT

FIXED: list[str | bytes | bytearray] = [
    "{not json", "", " ", "\n\t ", "[1,", "[1,]", '{"a" 1}', '{"a":1,}', '"abc', '"\\x"', '"a\x01b"',
    "nul", "tru", "-", "01", "1.", ".5", "1e", "+1", "[] []", "[]x", "1 2", "{}", "[]", "null", "true",
    "false", "0", "-0", "-0.0", "1e400", "-1e400", "NaN", "Infinity", "-Infinity", "nan", "inf",
    '"\\ud800"', '"\\udce9"', '"\\ud83d\\ude00"', '"\\u00e9"', '"é"', "\ufeff[]", " [1] ", "[1]\n",
    "\u00a0[1]", '{"a":{"b":[1,2,{"c":null}]}}', '{"a":1,"a":2}', "9" * 5000, "[" * 50 + "]" * 50,
    '"' + "x" * 10000 + '"', "\x00", "[\x00]", "1\x00",
    b"", b"[]", b"\xef\xbb\xbf[1]", b"\xef\xbb\xbf", b"\xff", b"\xff\xfe", b'"\xe9"', b'"caf\xc3\xa9"',
    b'"\xed\xb3\xa9"', b'"\xed\xa0\x80"', b"\x00[\x001\x00]", b"[\x001\x00]\x00", b"\x00\x00\x00[",
    b"[\x00\x00\x00]\x00\x00\x00", b"\x001", b"1\x00", "[1]".encode("utf-16"), "[1]".encode("utf-32"),
    '"é"'.encode("utf-16-le"), '"é"'.encode("utf-16-be"), bytearray(b'{"a": [1, 2]}'),
]


def same(a: Any, b: Any) -> bool:
    """Equal values of equal types (NaN equals NaN; 1, 1.0 and True differ)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    return bool(a == b)


def outcome(loads: Any, doc: str | bytes | bytearray) -> tuple[str, Any]:
    try:
        return "ok", loads(doc)
    except ValueError:
        return "error", None


def agrees(doc: str | bytes | bytearray) -> None:
    want = outcome(json.loads, doc)
    got = outcome(fastjson.loads, doc)
    assert got[0] == want[0], (doc[:200], want, got)
    assert same(got[1], want[1]), (doc[:200], want, got)


@pytest.mark.parametrize("doc", FIXED, ids=range(len(FIXED)))
def test_fixed_documents_agree_with_json(doc: str | bytes) -> None:
    agrees(doc)


def test_errors_are_value_errors_with_a_message() -> None:
    with pytest.raises(ValueError, match="property name"):
        fastjson.loads("{not json")
    with pytest.raises(fastjson.JSONError):
        fastjson.loads(b"\xff")


def test_too_deep_is_a_value_error_where_json_lets_recursion_out() -> None:
    deep = "[" * 200_000 + "]" * 200_000
    with pytest.raises(RecursionError):
        json.loads(deep)
    with pytest.raises(ValueError, match="deep"):
        fastjson.loads(deep)


def test_other_types_are_a_type_error_as_in_json() -> None:
    with pytest.raises(TypeError):
        json.loads(7)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        fastjson.loads(7)  # type: ignore[arg-type]


ANY_TEXT = st.text(st.characters(codec=None, exclude_categories=()), max_size=12)
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | ANY_TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(ANY_TEXT, inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(JSON_VALUES, st.booleans(), st.sampled_from([None, 0, 2, "\t"]))
def test_generated_documents_round_trip_like_json(value: Any, ascii_only: bool, indent: Any) -> None:
    text = json.dumps(value, ensure_ascii=ascii_only, indent=indent)
    agrees(text)
    agrees(text.encode("utf-8", "surrogatepass"))
    assert same(fastjson.loads(text), json.loads(text))


@settings(max_examples=300, deadline=None)
@given(JSON_VALUES, st.data())
def test_truncated_and_spliced_documents_agree(value: Any, data: st.DataObject) -> None:
    text = json.dumps(value, ensure_ascii=False)
    cut = data.draw(st.integers(0, len(text)))
    agrees(text[:cut])
    agrees(text[cut:])
    noise = data.draw(st.text(max_size=3))
    agrees(text[:cut] + noise + text[cut:])
    raw = text.encode("utf-8", "surrogatepass")
    agrees(raw[: data.draw(st.integers(0, len(raw)))])


@settings(max_examples=500, deadline=None)
@given(st.binary(max_size=40))
def test_random_bytes_agree(raw: bytes) -> None:
    agrees(raw)
    agrees(raw.decode("latin-1"))


@settings(max_examples=200, deadline=None)
@given(JSON_VALUES)
def test_dumps_reads_back_as_json_reads_it(value: Any) -> None:
    for ascii_only in (False, True):
        try:
            text = fastjson.dumps(value, ensure_ascii=ascii_only)
        except ValueError:  # NaN or an infinity: refused unless allow_nan
            assert any(isinstance(x, float) and not math.isfinite(x) for x in _leaves(value))
            text = fastjson.dumps(value, ensure_ascii=ascii_only, allow_nan=True)
        assert same(json.loads(text), json.loads(json.dumps(value)))
        if ascii_only:
            assert text.isascii()


def _leaves(value: Any) -> list[Any]:
    if isinstance(value, list):
        return [x for v in value for x in _leaves(v)]
    if isinstance(value, dict):
        return [x for v in value.values() for x in _leaves(v)]
    return [value]


def test_a_lone_surrogate_is_written_as_its_escape_and_reads_back() -> None:
    name = "/tmp/caf\udce9.txt"  # os.fsdecode(b"/tmp/caf\xe9.txt")
    text = fastjson.dumps({"path": name}, ensure_ascii=True)
    assert text == '{"path":"/tmp/caf\\udce9.txt"}'
    assert fastjson.loads(text.encode("ascii")) == {"path": name}


def test_a_failed_dump_leaves_no_trace_on_the_next() -> None:
    shared: dict[str, Any] = {"a": [object()]}
    with pytest.raises(TypeError):
        fastjson.dumps(shared)
    shared["a"] = [1, 2]
    assert fastjson.dumps(shared) == '{"a":[1,2]}'  # not "Circular reference detected"


_FRESH = """
import sys
from app.core import fastjson
docs = [b"{not json", b'"abc', b'{"a" 1}', b'"\\\\x"', b'"a\\x01"', b"[1,", b"\\xff", b"nul"]
for doc in docs:
    try:
        fastjson.loads(doc)
    except ValueError as exc:
        print(type(exc).__name__)
    except BaseException as exc:
        print("WRONG", type(exc).__name__, exc)
print(fastjson.loads(b'{"ok": [1]}'))
"""


def test_in_a_fresh_interpreter_bad_json_is_a_value_error_not_system_error() -> None:
    result = subprocess.run([sys.executable, "-P", "-c", _FRESH], capture_output=True, text=True,
                            cwd=ROOT, timeout=60, check=False)
    assert result.returncode == 0 and result.stderr == "", result
    lines = result.stdout.splitlines()
    assert len(lines) == 9 and not [x for x in lines if x.startswith("WRONG")], lines
    assert lines[-1] == "{'ok': [1]}"


def test_good_json_does_not_import_json() -> None:
    probe = ("import sys\nfrom app.core import fastjson\nfastjson.loads(b'{\"a\": [1, 2.5, null]}')\n"
             "fastjson.dumps({'a': 1}, ensure_ascii=True)\nprint('json' in sys.modules, 're' in sys.modules)")
    result = subprocess.run([sys.executable, "-P", "-c", probe], capture_output=True, text=True,
                            cwd=ROOT, timeout=60, check=False)
    assert result.stdout.split() == ["False", "False"], result
