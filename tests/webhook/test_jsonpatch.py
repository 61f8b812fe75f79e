"""The JSON Patch a mutating webhook answers with: applying it gives the changed document."""

from __future__ import annotations

import base64
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubewerk.core.patch import json_patch
from kubewerk.webhook.jsonpatch import applies, diff, encode_patch

CASES: list[tuple[str, Any, Any]] = [
    ("equal", {"a": 1}, {"a": 1}),
    ("add member", {"a": 1}, {"a": 1, "b": {"c": [1]}}),
    ("remove member", {"a": 1, "b": 2}, {"a": 1}),
    ("replace scalar", {"a": 1}, {"a": 2}),
    ("int to float", {"a": 1}, {"a": 1.0}),
    ("bool is not int", {"a": 1}, {"a": True}),
    ("null to value", {"a": None}, {"a": "x"}),
    ("object to list", {"a": {"b": 1}}, {"a": [1]}),
    ("nested change", {"s": {"t": {"u": 1, "v": 2}}}, {"s": {"t": {"u": 1, "v": 3}}}),
    ("array append", {"l": [1, 2]}, {"l": [1, 2, 3, 4]}),
    ("array shrink", {"l": [1, 2, 3, 4]}, {"l": [1]}),
    ("array to empty", {"l": [1, 2]}, {"l": []}),
    ("array insert front", {"l": [2, 3]}, {"l": [1, 2, 3]}),
    ("array of objects", {"l": [{"a": 1}, {"b": 2}]}, {"l": [{"a": 2}, {"b": 2, "c": 3}]}),
    ("arrays nested", {"l": [[1], [2, 3]]}, {"l": [[1, 0], [2]]}),
    ("slash in key", {"m": {"a/b": 1}}, {"m": {"a/b": 2, "c/d": 3}}),
    ("tilde in key", {"m": {"a~b": 1}}, {"m": {"a~b": 2, "~1": 3, "~0/": 4}}),
    ("empty key", {"": 1}, {"": 2}),
    (
        "labels with slashes",
        {"metadata": {"labels": {"app": "x"}}},
        {"metadata": {"labels": {"app": "x", "app.kubernetes.io/managed-by": "kubewerk"}}},
    ),
    ("unicode", {"a": "ä"}, {"a": "ü", "ö": 1}),
]


@pytest.mark.parametrize(("name", "old", "new"), CASES, ids=[c[0] for c in CASES])
def test_patch_applies(name: str, old: Any, new: Any) -> None:
    ops = diff(old, new)
    assert _text(json_patch(old, ops)) == _text(new)
    # and survives the wire: base64 of the JSON
    wire = orjson.loads(base64.b64decode(encode_patch(ops)))
    assert _text(json_patch(old, wire)) == _text(new)
    assert (ops == []) == (_text(old) == _text(new))


def _text(value: Any) -> bytes:
    """JSON text: tells 1, 1.0 and true apart, as a cluster does."""
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)


def test_escaping_is_rfc6901() -> None:
    ops = diff({"m": {}}, {"m": {"a/b~c": 1}})
    assert ops == [{"op": "add", "path": "/m/a~1b~0c", "value": 1}]


def test_only_changes_are_sent() -> None:
    old = {"spec": {"a": 1, "big": list(range(100))}, "metadata": {"name": "x"}}
    new = {
        "spec": {"a": 1, "big": list(range(100))},
        "metadata": {"name": "x", "labels": {"k": "v"}},
    }
    assert diff(old, new) == [{"op": "add", "path": "/metadata/labels", "value": {"k": "v"}}]


def test_array_removals_run_from_the_end() -> None:
    ops = diff({"l": [1, 2, 3, 4]}, {"l": [1]})
    assert [op["path"] for op in ops] == ["/l/3", "/l/2", "/l/1"]


def test_deep_documents_need_no_recursion() -> None:
    old: Any = 0
    new: Any = 1
    for _ in range(5000):
        old, new = {"a": old}, {"a": new}
    ops = diff(old, new)
    assert len(ops) == 1 and ops[0]["path"] == "/a" * 5000


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-5, 5)
    | st.floats(allow_nan=False, allow_infinity=False, width=32)
    | st.text("ab/~", max_size=3),
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(st.text("ab/~", max_size=3), children, max_size=4)
    ),
    max_leaves=20,
)


@settings(max_examples=150, deadline=None)
@given(
    st.dictionaries(st.text("ab/~", max_size=3), json_values, max_size=4),
    st.dictionaries(st.text("ab/~", max_size=3), json_values, max_size=4),
)
def test_any_pair_round_trips(old: dict[str, Any], new: dict[str, Any]) -> None:
    assert applies(old, diff(old, new))
    assert orjson.dumps(
        json_patch(old, diff(old, new)), option=orjson.OPT_SORT_KEYS
    ) == orjson.dumps(new, option=orjson.OPT_SORT_KEYS)


@pytest.mark.parametrize(
    ("doc", "ops"),
    [
        # (a replace of a missing member is refused too, as RFC 6902 says, though
        # evanphx/json-patch v4 would add it)
        ({"a": {}}, [{"op": "remove", "path": "/a/b"}]),
        ({"a": 1}, [{"op": "add", "path": "/a/b", "value": 1}]),
        ({}, [{"op": "add", "path": "/a/b", "value": 1}]),
        ({"l": [1]}, [{"op": "add", "path": "/l/2", "value": 1}]),
        ({"l": [1]}, [{"op": "remove", "path": "/l/0"}, {"op": "remove", "path": "/l/0"}]),
        ({"l": [1]}, [{"op": "replace", "path": "/l/x", "value": 1}]),
        ({"l": [{"a": 1}]}, [{"op": "replace", "path": "/l/1/a", "value": 1}]),
        ({}, [{"op": "add", "path": "", "value": {}}]),
    ],
)
def test_applies_refuses_what_would_fail(doc: Any, ops: list[dict[str, Any]]) -> None:
    assert applies(doc, ops) is False
    with pytest.raises(Exception):  # noqa: B017 - any failure: the real patcher agrees
        json_patch(doc, ops)


def test_applies_follows_array_growth() -> None:
    ops = [{"op": "add", "path": "/l/1", "value": 2}, {"op": "add", "path": "/l/2", "value": 3}]
    assert applies({"l": [1]}, ops) and json_patch({"l": [1]}, ops) == {"l": [1, 2, 3]}
