"""The cheap forms of ObjectMeta helpers give exactly what the plain forms give: the
managedFields manager check without a walk over printable names, finalizer warnings of
no finalizers, the generated-name suffix without ``random.choices``, and UID text from
16 bytes without a 128-bit integer."""

from __future__ import annotations

import os
import random
import unicodedata
import uuid
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

import pytest

from kubewerk.core import meta, validation
from kubewerk.core.errors import FieldError
from kubewerk.core.validation import finalizer_warnings, validate_managed_fields


def _reference_manager_errors(manager: str, here: str) -> list[str]:
    """The manager checks of ``ValidateManagedFields`` written out character by character."""

    def blen(text: str) -> int:
        return len(text.encode("utf-8", "surrogatepass"))

    def printable(ch: str) -> bool:
        return ch == " " or unicodedata.category(ch)[0] in "LMNPS"

    out: list[str] = []
    if blen(manager) > 128:
        out.append(FieldError.too_long(f"{here}.manager", 128).message())
    position = 0
    for ch in manager:
        if not printable(ch):
            code = f"U+{ord(ch):04X}"
            shown = f"{code} '{ch}'" if printable(ch) else code
            out.append(
                FieldError.invalid(
                    f"{here}.manager",
                    manager,
                    f"invalid character {shown} (at position {position})",
                ).message()
            )
        position += blen(ch)
    return out


MANAGERS = {
    "empty": "",
    "plain": "kubectl-client-side-apply",
    "space": "my manager",
    "ascii-128": "m" * 128,
    "ascii-129": "m" * 129,
    "chars-32-of-4-bytes": "\U0001f600" * 32,
    "chars-33-of-4-bytes": "\U0001f600" * 33,
    "chars-33-of-3-bytes": "\u20ac" * 33,
    "chars-43-of-3-bytes": "\u20ac" * 43,
    "nul": "bad\x00name",
    "del": "m\x7f",
    "tab-newline": "a\tb\nc",
    "zero-width-space": "x\u200b",
    "no-break-space": "a\u00a0b",
    "line-separator": "a\u2028b",
    "combining-mark": "e\u0301",
    "private-use": "\ue000",
    "unassigned": "\U000e0080",
    "long-and-bad": "\x01" * 200,
    "lone-surrogate": "a\ud800b",
    "unicode-letters": "gestionnaire-\u00e9t\u00e9-\u65e5\u672c",
}


@pytest.mark.parametrize("name", sorted(MANAGERS))
def test_manager_errors_are_the_character_walks(name: str) -> None:
    manager = MANAGERS[name]
    entry: dict[str, Any] = {"manager": manager, "operation": "Update"}
    got = [e.message() for e in validate_managed_fields([entry])]
    assert got == _reference_manager_errors(manager, "metadata.managedFields[0]")


def test_str_isprintable_is_go_is_print() -> None:
    """The shortcut rests on this: checked here on every 7th code point and all of the
    first 0x3000 (the whole range, run once by hand, has no exception either)."""
    points = list(range(0x3000)) + list(range(0x3000, 0x110000, 7))
    for code in points:
        ch = chr(code)
        go = ch == " " or unicodedata.category(ch)[0] in "LMNPS"
        assert ch.isprintable() == go, hex(code)


@pytest.mark.parametrize(
    "old",
    [
        pytest.param(None, id="create"),
        pytest.param([], id="none-before"),
        pytest.param(["a"], id="some-before"),
    ],
)
def test_no_finalizers_warn_nothing(old: list[str] | None) -> None:
    assert finalizer_warnings([], old) == []
    assert finalizer_warnings((), old) == []
    assert finalizer_warnings(["x"], old) == ([] if old == ["x"] else finalizer_warnings(["x"]))


@pytest.mark.parametrize("prefix", ["bench-", "", "x" * 70, "\u00e9-", "a" * 58])
def test_generated_names_are_random_choices(prefix: str) -> None:
    for seed in range(20):
        random.seed(seed)
        expected = prefix[: meta.MAX_GENERATED_PREFIX] + "".join(
            random.choices("bcdfghjklmnpqrstvwxz2456789", k=5)
        )
        random.seed(seed)
        assert meta.generate_name(prefix) == expected


@pytest.mark.parametrize(
    "raw",
    [
        pytest.param(bytes(16), id="zeros"),
        pytest.param(b"\xff" * 16, id="ones"),
        pytest.param(bytes(range(16)), id="counting"),
        pytest.param(bytes([0x0F, 0xF0] * 8), id="alternating"),
    ],
)
def test_uid_text_is_uuid4s(raw: bytes) -> None:
    assert meta.uid_from_bytes(raw) == str(uuid.UUID(bytes=raw, version=4))


def test_uid_text_is_uuid4s_on_random_bytes() -> None:
    for _ in range(2000):
        raw = os.urandom(16)
        assert meta.uid_from_bytes(raw) == str(uuid.UUID(bytes=raw, version=4))
    text = meta.new_uid()
    assert uuid.UUID(text).version == 4 and str(uuid.UUID(text)) == text


HOSTILE_TEXT = [
    "app",
    "example.com/app",
    "App",
    "-app",
    "app-",
    "a" * 63,
    "a" * 64,
    "example.com/" + "a" * 63,
    "example.com/" + "a" * 64,
    "a" * 253,
    "a" * 254,
    "bench-",
    "bench--",
    "-",
    "",
    ".",
    "..",
    "a.b",
    "a..b",
    "a/b/c",
    "/a",
    "a/",
    "\u00e9",
    "caf\u00e9",
    "\u0430pp",  # Cyrillic a
    "a\x00",
    "a b",
    "a_b",
    "a%b",
    "A" * 10,
]


def _clear_seen() -> None:
    for seen in (
        validation._qualified_seen,
        validation._label_value_seen,
        validation._label_seen,
        validation._prefix_seen,
    ):
        seen.clear()


def _all_answers() -> list[Any]:
    out: list[Any] = []
    for text in HOSTILE_TEXT:
        meta: dict[str, Any] = {
            "name": "n",
            "generateName": text,
            "namespace": text,
            "labels": {text: "v", "k": text},
            "annotations": {text: "v"},
            "finalizers": [text],
        }
        out.append(
            [e.message() for e in validation.validate_object_meta_for_create(meta, namespaced=True)]
        )
        out.append([e.message() for e in validation.validate_labels({text: text})])
        out.append(validation.name_errors(text, "label"))
        out.append(validation.name_errors(text, "subdomain", prefix=True))
    return out


def test_remembered_strings_change_no_answer() -> None:
    """Every answer is the same with the remembered-string sets empty, full of what the
    same inputs left there, and after the inputs in reverse order; a string a check
    refused is never remembered."""
    _clear_seen()
    cold = _all_answers()
    warm = _all_answers()
    assert warm == cold
    HOSTILE_TEXT.reverse()
    try:
        _clear_seen()
        reverse = _all_answers()
    finally:
        HOSTILE_TEXT.reverse()
    reverse_pairs = [reverse[i : i + 4] for i in range(0, len(reverse), 4)][::-1]
    assert [x for group in reverse_pairs for x in group] == cold
    for text in validation._qualified_seen:
        assert validation.is_qualified_name(text) == []
    for text in validation._label_value_seen:
        assert validation.is_label_value(text) == []
    for text in validation._label_seen:
        assert validation.is_dns1123_label(text) == []
    for text in validation._prefix_seen:
        assert validation.name_errors(text, "subdomain", prefix=True) == []


def _reference_managed_fields(entries: list[Any]) -> list[str]:
    """``ValidateManagedFields`` written out check by check (the plain form)."""

    def text(value: Any) -> str:
        return value if isinstance(value, str) else ""

    def blen(value: str) -> int:
        return len(value.encode("utf-8", "surrogatepass"))

    out: list[str] = []
    for i, entry in enumerate(entries):
        item = entry if isinstance(entry, Mapping) else {}
        here = f"metadata.managedFields[{i}]"
        operation = text(item.get("operation"))
        if operation not in ("Apply", "Update"):
            out.append(
                FieldError.invalid(
                    f"{here}.operation", operation, "must be `Apply` or `Update`"
                ).message()
            )
        fields_type = text(item.get("fieldsType"))
        if fields_type and fields_type != "FieldsV1":
            out.append(
                FieldError.invalid(
                    f"{here}.fieldsType", fields_type, "must be `FieldsV1`"
                ).message()
            )
        out.extend(_reference_manager_errors(text(item.get("manager")), here))
        if blen(text(item.get("subresource"))) > 256:
            out.append(FieldError.too_long(f"{here}.subresource", 256).message())
    return out


ENTRY_VALUES: dict[str, list[Any]] = {
    "operation": [None, "Update", "Apply", "apply", "Update ", "", 1, ["Update"]],
    "fieldsType": [None, "", "FieldsV1", "FieldsV2", 7, True, {}],
    "manager": [
        None,
        "kubectl",
        "",
        "m" * 32,
        "m" * 33,
        "\U0001f600" * 32,
        "a\x00",
        5,
        *MANAGERS.values(),
    ],
    "subresource": [
        None,
        "",
        "status",
        "s" * 64,
        "s" * 65,
        "s" * 257,
        "\u20ac" * 85,
        "\u20ac" * 86,
        3,
    ],
}


def _hostile_entries() -> list[Any]:
    base: dict[str, Any] = {"operation": "Update", "fieldsType": "FieldsV1", "manager": "m"}
    out: list[Any] = []
    for field_name, values in ENTRY_VALUES.items():
        for value in values:
            entry = dict(base)
            if value is None:
                entry.pop(field_name, None)
            else:
                entry[field_name] = value
            out.append(entry)
    out += [{}, [], "entry", None, 7, OrderedDict(base), OrderedDict(operation="Patch")]
    out.append({"operation": "Update", "fieldsType": None, "manager": None, "subresource": None})
    out.append({"operation": None, "fieldsType": None, "manager": None, "subresource": None})
    return out


def test_managed_fields_errors_are_the_plain_checks() -> None:
    entries = _hostile_entries()
    for entry in entries:
        assert [e.message() for e in validate_managed_fields([entry])] == (
            _reference_managed_fields([entry])
        ), entry
    assert [e.message() for e in validate_managed_fields(entries)] == (
        _reference_managed_fields(entries)
    )
