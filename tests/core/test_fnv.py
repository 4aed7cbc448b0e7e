"""FNV-1a 64: published vectors (with bytes 0x80 and up), the C and Python paths agree."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.core import fnv

# From the FNV test suite (test_fnv.c, Landon Curt Noll), FNV-1a 64-bit.
R10 = 10
VECTORS: list[tuple[bytes, int]] = [
    (b"", 0xCBF29CE484222325),
    (b"a", 0xAF63DC4C8601EC8C),
    (b"foobar", 0x85944171F73967E8),
    (b"foobar\x00", 0x34531CA7168B8F38),
    (b"hello", 0xA430D84680AABD0B),
    (b"\xff\x00\x00\x01", 0x6961196491CC682D),
    (b"\x01\x00\x00\xff", 0xAD2BB1774799DFE9),
    (b"\xff\x00\x00\x02", 0x6961166491CC6314),
    (b"\x02\x00\x00\xff", 0x8D1BB3904A3B1236),
    (b"\xff\x00\x00\x03", 0x6961176491CC64C7),
    (b"\x03\x00\x00\xff", 0xED205D87F40434C7),
    (b"\xff\x00\x00\x04", 0x6961146491CC5FAE),
    (b"\x04\x00\x00\xff", 0xCD3BAF5E44F8AD9C),
    (b"\x54\xc5" * R10, 0x0803564445050395),
    (b"\xc5\x54" * R10, 0xAA1574ECF4642FFD),
    (b"\x5a\xa9" * R10, 0xB7EC8C1A769FB4C1),
    (b"\xa9\x5a" * R10, 0x5D5CFCE63359AB19),
    (b"\x05\xf9\x9d\x03\x4c\x81" * R10, 0x84D47645D02DA3D5),
    (b"\xfe\xdc\xba\x98\x76\x54\x32\x10" * R10, 0x9175CBB2160836C5),
    (b"\xef\xcd\xab\x89\x67\x45\x23\x01" * R10, 0x636806AC222EC985),
    (b"\x01\x23\x45\x67\x89\xab\xcd\xef" * R10, 0xEAD3D8A0F3DFDAA5),
    (b"\x10\x32\x54\x76\x98\xba\xdc\xfe" * R10, 0x6D4821DE275FD5C5),
    (b"\x00" * 500, 0x1FE3FCE62BD816B5),
    (b"\x7f" * 500, 0x39E9F18F2F85E221),
]


def signed_char_fnv1a_64(data: bytes) -> int:
    """The bug of one published C binding: bytes read as signed chars, sign-extended."""
    h = fnv.OFFSET_BASIS
    for byte in data:
        value = byte - 256 if byte >= 0x80 else byte
        h = ((h ^ (value & fnv.MASK)) * fnv.PRIME) & fnv.MASK
    return h


@pytest.mark.parametrize(("data", "expected"), VECTORS)
def test_python_loop_matches_published_vectors(data: bytes, expected: int) -> None:
    assert fnv.fnv1a_64_py(data) == expected
    assert fnv.fnv1a_64(data) == expected


@pytest.mark.parametrize(("data", "expected"), VECTORS)
def test_c_binding_matches_published_vectors(data: bytes, expected: int) -> None:
    if not fnv.c_available():
        pytest.skip("fnv-c is not installed")
    from fnv_c.ext._fnv import ffi, lib

    assert int(lib.fnv1a_64(ffi.from_buffer(data), len(data))) == expected


def test_high_byte_vectors_catch_the_signed_char_bug() -> None:
    high = [(d, e) for d, e in VECTORS if any(b >= 0x80 for b in d)]
    assert len(high) >= 10
    assert all(signed_char_fnv1a_64(d) != e for d, e in high)
    assert not fnv.agrees_with_python(signed_char_fnv1a_64)
    assert fnv.agrees_with_python(fnv.fnv1a_64_py)


def test_long_data_uses_the_c_path_and_agrees() -> None:
    data = bytes(range(256)) * 200  # 51 KB, every byte value
    assert len(data) >= fnv.FAST_MIN_BYTES
    assert fnv.fnv1a_64(data) == fnv.fnv1a_64_py(data)
    assert fnv.fnv1a_64(memoryview(data)) == fnv.fnv1a_64_py(data)
    assert fnv.fnv1a_64(bytearray(data)) == fnv.fnv1a_64_py(data)


def test_chunks_continue_the_hash() -> None:
    data = bytes(range(256)) * 3
    assert fnv.fnv1a_64_py(data[300:], fnv.fnv1a_64_py(data[:300])) == fnv.fnv1a_64_py(data)


def test_hex64_is_sixteen_lowercase_digits() -> None:
    assert fnv.hex64(0xAF63DC4C8601EC8C) == "af63dc4c8601ec8c"
    assert fnv.hex64(1) == "0000000000000001"


@settings(max_examples=60, deadline=None)
@given(st.binary(min_size=0, max_size=3 * fnv.FAST_MIN_BYTES))
def test_c_and_python_agree_on_any_bytes(data: bytes) -> None:
    if not fnv.c_available():
        pytest.skip("fnv-c is not installed")
    from fnv_c.ext._fnv import ffi, lib

    assert int(lib.fnv1a_64(ffi.from_buffer(data), len(data))) == fnv.fnv1a_64_py(data)
    assert fnv.fnv1a_64(data) == fnv.fnv1a_64_py(data)
