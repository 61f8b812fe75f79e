"""Go's float64 text (encoding/json ``floatEncoder`` over strconv's shortest digits), the
stored form of decoded numbers (``gonumbers.as_stored``), and the decoder's float mark
that decides whether a custom resource's write walks its object at all."""

from __future__ import annotations

import random
import struct

import orjson
import pytest

from kubewerk.apiserver import decode
from kubewerk.core.gofmt import go_json, go_json_float
from kubewerk.core.gonumbers import as_stored, stored_float

# value → what Go's json.Marshal writes for a float64 holding it
GO_TEXT = [
    (1.0, "1"),
    (100.0, "100"),
    (-0.0, "-0"),
    (0.0, "0"),
    (0.1, "0.1"),
    (2.5, "2.5"),
    (123456.789, "123456.789"),
    (1e-5, "0.00001"),
    (1e-6, "0.000001"),
    (1.5e-6, "0.0000015"),
    (1e-7, "1e-7"),
    (-1e-7, "-1e-7"),
    (1.234e-10, "1.234e-10"),
    (1e-300, "1e-300"),
    (5e-324, "5e-324"),
    (1e20, "100000000000000000000"),
    (9.99e20, "999000000000000000000"),
    (1e21, "1e+21"),
    (1.5e21, "1.5e+21"),
    (1.7976931348623157e308, "1.7976931348623157e+308"),
    (12345678901234567890.0, "12345678901234567000"),
    (2.0**53, "9007199254740992"),
    (2.0**60, "1152921504606847000"),
    (2.0**63, "9223372036854776000"),
    (-(2.0**63), "-9223372036854776000"),
]


@pytest.mark.parametrize(("value", "text"), GO_TEXT)
def test_go_json_float_is_gos_text(value: float, text: str) -> None:
    assert go_json_float(value) == text
    assert go_json(value) == text


# value → (the value answered after storage, its type)
STORED = [
    (1.0, 1),
    (-0.0, 0),
    (-7.0, -7),
    (2.0**53, 9007199254740992),
    (2.0**60, 1152921504606847000),  # Go's digits, read back as an int64
    (2.0**63, 9223372036854776000),  # beyond int64 a float64 again; orjson writes the digits
    (12345678901234567890.0, 12345678901234567000),
    (2.5, 2.5),
    (1e-7, 1e-7),
    (1e21, 1e21),
    (2.0**64, 2.0**64),  # digits beyond 64 bits: stays a float
    (-(2.0**63), -(2.0**63)),
]


@pytest.mark.parametrize(("value", "stored"), STORED)
def test_stored_float(value: float, stored: int | float) -> None:
    got = stored_float(value)
    assert got == stored and type(got) is type(stored)


def test_int64_only_keeps_floats_whose_digits_leave_int64() -> None:
    assert stored_float(2.0**60, int64_only=True) == 1152921504606847000
    got = stored_float(2.0**63, int64_only=True)
    assert type(got) is float and got == 2.0**63


def test_stored_numbers_are_written_with_gos_text_outside_two_known_bands() -> None:
    """orjson writes every stored number as Go writes the float, except the non-integral
    ones in [1e-6, 1e-5) and integral ones whose digits leave [-2**63, 2**64)."""
    rng = random.Random(27)
    checked = 0
    for _ in range(20_000):
        value = struct.unpack("d", rng.getrandbits(64).to_bytes(8, "little"))[0]
        if value != value or value in (float("inf"), float("-inf")):
            continue
        for candidate in (value, float(round(value)), value * 1e-300, float(int(value) % 10**7)):
            if candidate in (float("inf"), float("-inf")):
                continue
            stored = stored_float(candidate)
            size = abs(candidate)
            gap = (not candidate.is_integer() and 1e-6 <= size < 1e-5) or (
                candidate.is_integer() and type(stored) is float and size < 1e21
            )
            if not gap:
                # Go's -0 reads back as the integer 0
                expected = "0" if candidate == 0 else go_json_float(candidate)
                assert orjson.dumps(stored).decode() == expected, candidate
                checked += 1
            # the stored form is stable: storing it again changes nothing
            again = as_stored(orjson.loads(orjson.dumps(stored)))
            assert again == stored and type(again) is type(stored)
    assert checked > 50_000


def test_as_stored_walks_in_place() -> None:
    inner = {"b": 2.5, "c": -0.0, "d": [3.0, "4.0", True, None, 2**70]}
    value = {"a": [1.0, inner], "s": "x"}
    assert as_stored(value) is value
    assert value == {"a": [1, inner], "s": "x"}
    assert inner == {"b": 2.5, "c": 0, "d": [3, "4.0", True, None, 2**70]}
    assert type(inner["c"]) is int
    assert as_stored(5.0) == 5 and type(as_stored(5.0)) is int
    deep: list[object] = [1.0]
    for _ in range(10_000):
        deep = [deep]
    as_stored(deep)  # no recursion


def test_float_mark_follows_what_was_decoded() -> None:
    decode.forget()
    assert not decode.may_hold_floats()
    decode.json_value(b'{"a": 1, "b": "stable.example.com/v1", "e": "e.E"}')
    decode.json_value(b'{"c": [1, 2, {"d": -3}]}')
    assert not decode.may_hold_floats()
    decode.json_value(b'{"image": "nginx:1.25"}')  # a string may look like one: walked, harmless
    assert decode.may_hold_floats()
    decode.forget()
    decode.json_value(b'{"c": 1}')
    assert not decode.may_hold_floats()
    decode.json_value(b'{"e": 1.0}')
    assert decode.may_hold_floats()
    decode.forget()
    decode.json_value(b'{"big": 12345678901234567890}')
    assert decode.may_hold_floats()
    decode.forget()
    decode.yaml_value(b'{"a": 1}')
    assert not decode.may_hold_floats()
    decode.check_depth({"patched": 1.0})  # a patch result no body scan saw
    assert decode.may_hold_floats()
    decode.forget()
    decode.json_value(b'{"a": 1E5}')
    assert decode.may_hold_floats()
    decode.forget()


def test_yaml_numbers_read_as_kube_reads_yaml() -> None:
    value = decode.yaml_value(b"a: 1.0\nb: 2.5\nc: -0.0\nd: 1e2\ne: 12345678901234567890\n")
    assert value == {"a": 1, "b": 2.5, "c": 0, "d": 100, "e": 1.2345678901234567e19}
    assert [type(value[k]) for k in "abcde"] == [int, float, int, int, float]
    decode.forget()


async def test_float_mark_of_a_body_decoded_in_a_worker_thread() -> None:
    body = b'{"pad": "' + b"x" * (decode.OFFLOAD_BYTES + 10) + b'", "n": 1.5}'
    decode.forget()
    token = await decode.predecode(body, False, "the object")
    assert token is not None
    try:
        assert decode.json_value(body)["n"] == 1.5
        assert decode.may_hold_floats()
    finally:
        decode.release(token)
    plain = b'{"pad": "' + b"x" * (decode.OFFLOAD_BYTES + 10) + b'", "n": 1}'
    token = await decode.predecode(plain, False, "the object")
    assert token is not None
    try:
        decode.json_value(plain)
        assert not decode.may_hold_floats()
    finally:
        decode.release(token)
