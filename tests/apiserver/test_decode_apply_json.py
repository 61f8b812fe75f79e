"""A YAML body that is plain JSON (how kubectl and the client libraries send apply
patches) is read by orjson only when that gives exactly what the YAML reader gives:
same value, same key order, same errors — on hostile bodies."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from kubewerk.apiserver import decode

DOC: dict[str, Any] = {
    "apiVersion": "demo.kubewerk.dev/v1",
    "kind": "Database",
    "metadata": {"name": "x", "labels": {"app": "bench", "tier": "db"}},
    "spec": {"engine": "postgres", "version": "16", "replicas": 3, "storage": "10Gi"},
}

BODIES: list[bytes] = [
    orjson.dumps(DOC),
    orjson.dumps(DOC, option=orjson.OPT_INDENT_2),
    b'{\n"a": 1,\n"b": {\n"c": [1, 2]\n}\n}',
    b'  \n {"a":1}  \n',
    b'{"a": 1}',
    b'{"a" : 1}',
    b'{"a"\n: 1}',
    b"{}",
    b'{"": ""}',
    b'{"a": null, "b": true, "c": false, "d": [], "e": {}, "f": [null, [[]], {"g": {}}]}',
    # values YAML would read otherwise if they were not quoted
    b'{"on": "yes", "off": "no", "n": "~", "t": "2024-01-01", "o": "0x1F", "s": "1_000"}',
    b'{"a": "x # not a comment", "b": "- item", "c": "key: value", "d": "&anchor *alias"}',
    b'{"a": "{{template}}", "b": "[x]", "c": "!tag", "d": "%directive", "e": "@", "f": "`"}',
    b'{"---": "...", "a": "--- doc", "b": "| block", "c": "> folded", "d": "? key"}',
    b'{"a": "  leading and trailing  ", "b": "two  spaces", "c": " "}',
    b'{"a": ":", "b": ":x", "c": "x:", "d": "\\":"}',
    b'{"a": ":"}',
    # duplicated keys: YAML keeps the last, in the first one's place
    b'{"a": 1, "b": 2, "a": 3}',
    b'{"x": {"a": 1, "a": {"b": 2}}}',
    b'{"a" : 1, "a": 2}',
    # numbers: integers, signs, zero, floats, exponents, big values
    b'{"a": 0, "b": -0, "c": 7, "d": -12, "e": 123456789012345}',
    b'{"a": 1234567890123456, "b": 9223372036854775807, "c": 9223372036854775808}',
    b'{"a": 18446744073709551616, "b": -9223372036854775809}',
    b'{"a": 1.0, "b": 1.5, "c": -0.0, "d": 1e3, "e": 1E-3, "f": 2.5e+10}',
    b'{"a": [1, 2.0, 3]}',
    # escapes, control characters, non-ASCII, tabs, carriage returns
    b'{"a": "\\u00e9", "b": "\\n", "c": "\\/", "d": "\\ud83d\\ude00", "e": "\\"q\\""}',
    b'{"a": "\\u0000"}',
    '{"a": "é", "b": "😀"}'.encode(),
    b'{"a":\t1}',
    b'{"a": 1}\r\n',
    b'{"a": "\x7f"}',
    b'\xef\xbb\xbf{"a": 1}',
    # YAML's merge key, quoted
    b'{"<<": {"a": 1}, "b": 2}',
    # keys near and beyond YAML's 1024-character limit
    orjson.dumps({"k" * 999: 1}),
    orjson.dumps({"k" * 1001: 1}),
    orjson.dumps({"k" * 1030: 1}),
    orjson.dumps({"a": "v" * 5000, "b": {"k" * 1100: [1]}}),
    # not objects, not JSON, broken JSON
    b"[1, 2]",
    b'"text"',
    b"null",
    b"",
    b"   ",
    b'{"a": 1',
    b'{"a": 1}}',
    b'{"a": 1} {"b": 2}',
    b'{"a": undefined}',
    b"{a: 1}",
    b"{'a': 1}",
    b'{"a": 1,}',
    b'{"a": NaN}',
    b'{"a": 1e400}',
    # nesting at and beyond the limit
    b'{"a": ' * 99 + b"1" + b"}" * 99,
    b'{"a": ' * 100 + b"1" + b"}" * 100,
    b'{"a": ' * 101 + b"1" + b"}" * 101,
    b'{"a": ' + b"[" * 120 + b"]" * 120 + b"}",
]


def _read(body: bytes) -> tuple[str, Any]:
    try:
        value = decode.yaml_value(body)
    except decode.DecodeError as exc:
        return type(exc).__name__, str(exc)
    # the bytes tell apart what == does not (1 == 1.0 == True, key order)
    return "value", orjson.dumps(value)


@pytest.mark.parametrize("index", range(len(BODIES)))
def test_plain_json_is_read_as_the_yaml_reader_reads_it(
    index: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    body = BODIES[index]
    fast = _read(body)
    monkeypatch.setattr(decode, "_plain_json_object", lambda body: decode._NOT_PLAIN)
    slow = _read(body)
    assert fast == slow


def test_the_shortcut_is_taken_for_what_clients_send() -> None:
    for body in [*BODIES[:5], BODIES[8], orjson.dumps({"k" * 999: 1})]:
        assert decode._plain_json_object(body) is not decode._NOT_PLAIN, body
    for body in (
        b'{"a" : 1}',
        b'{"a": 1, "a": 2}',
        b'{"a": 1.5}',
        b'{"a": "\\n"}',
        b'{"<<": {}}',
        orjson.dumps({"k" * 1030: 1}),
        b"[1]",
    ):
        assert decode._plain_json_object(body) is decode._NOT_PLAIN, body
