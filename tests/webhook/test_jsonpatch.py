"""The JSON Patch a mutating webhook answers with: applying it gives the changed document."""

from __future__ import annotations

import base64
import math
import random
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubewerk.core.patch import json_patch
from kubewerk.webhook.jsonpatch import applies, applies_exactly, diff, encode_patch

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


def _reference_diff(old: Any, new: Any) -> list[dict[str, Any]]:
    """The walk :func:`diff` performs, written plainly (one helper call per member): the
    specification its inlined member loops are held to, operation for operation."""

    def same(a: Any, b: Any) -> bool:
        if a is b:
            return True
        if type(a) is not type(b):
            return False
        if not isinstance(a, dict | list):
            return bool(a == b)
        try:
            return a == b and orjson.dumps(a) == orjson.dumps(b)
        except (RecursionError, orjson.JSONEncodeError):
            return False

    def pair(a: Any, b: Any) -> bool:
        return (isinstance(a, dict) and isinstance(b, dict)) or (
            isinstance(a, list) and isinstance(b, list)
        )

    def token(key: str) -> str:
        return key.replace("~", "~0").replace("/", "~1")

    ops: list[dict[str, Any]] = []
    stack: list[tuple[str, Any, Any]] = [("", old, new)]
    while stack:
        path, a, b = stack.pop()
        later: list[tuple[str, Any, Any]] = []
        if isinstance(a, dict) and isinstance(b, dict):
            ops.extend({"op": "remove", "path": f"{path}/{token(k)}"} for k in a if k not in b)
            for key, value in b.items():
                child = f"{path}/{token(key)}"
                if key not in a:
                    ops.append({"op": "add", "path": child, "value": value})
                elif same(a[key], value):
                    continue
                elif pair(a[key], value):
                    later.append((child, a[key], value))
                else:
                    ops.append({"op": "replace", "path": child, "value": value})
        elif isinstance(a, list) and isinstance(b, list):
            common = min(len(a), len(b))
            ops.extend(
                {"op": "add", "path": f"{path}/{i}", "value": b[i]} for i in range(common, len(b))
            )
            ops.extend(
                {"op": "remove", "path": f"{path}/{i}"} for i in range(len(a) - 1, common - 1, -1)
            )
            for i in range(common):
                if same(a[i], b[i]):
                    continue
                if pair(a[i], b[i]):
                    later.append((f"{path}/{i}", a[i], b[i]))
                else:
                    ops.append({"op": "replace", "path": f"{path}/{i}", "value": b[i]})
        elif not same(a, b):
            ops.append({"op": "replace", "path": path, "value": b})
        stack.extend(reversed(later))
    return ops


# hostile leaves: values Python calls equal that JSON tells apart (1, 1.0, True; 0.0 and
# -0.0), NaN (not equal to itself), None, and keys needing escapes
hostile_leaves = st.sampled_from([0, 1, 1.0, True, False, 0.0, -0.0, math.nan, None, "", "a"])
hostile_values = st.recursive(
    hostile_leaves,
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(st.sampled_from(["a", "b", "a/b", "~", ""]), children, max_size=4)
    ),
    max_leaves=16,
)


def _mutated(data: st.DataObject, value: Any) -> Any:
    """``value`` with a few members changed, the rest shared (the same objects)."""
    if isinstance(value, dict):
        out = dict(value)  # same keys in the same order, same member objects
        for key in list(out):
            choice = data.draw(st.integers(0, 5))
            if choice == 0:
                del out[key]
            elif choice == 1:
                out[key] = data.draw(hostile_values)
            elif choice == 2:
                out[key] = _mutated(data, out[key])
        if data.draw(st.booleans()):
            out[data.draw(st.sampled_from(["a", "c", "a/b"]))] = data.draw(hostile_values)
        if data.draw(st.integers(0, 3)) == 0:  # the same members in another order
            out = dict(reversed(list(out.items())))
        return out
    if isinstance(value, list):
        items = [_mutated(data, v) if data.draw(st.booleans()) else v for v in value]
        return items[: data.draw(st.integers(0, len(items)))] + data.draw(
            st.lists(hostile_values, max_size=2)
        )
    return data.draw(hostile_values) if data.draw(st.booleans()) else value


@settings(max_examples=60, deadline=None)
@given(
    st.dictionaries(st.sampled_from(["a", "b", "a/b", "~"]), hostile_values, max_size=4), st.data()
)
def test_diff_is_the_reference_walk_on_hostile_pairs(
    old: dict[str, Any], data: st.DataObject
) -> None:
    new = _mutated(data, old)
    assert diff(old, new) == _reference_diff(old, new)
    assert diff(new, old) == _reference_diff(new, old)
    assert diff(old, old) == [] == _reference_diff(old, old)


_NAN = math.nan
HOSTILE_PAIRS: list[tuple[Any, Any]] = [
    ({"a": [1]}, {"a": [1.0]}),
    ({"a": [True]}, {"a": [1]}),
    ({"a": {"x": 0.0}}, {"a": {"x": -0.0}}),
    ({"a": {"x": 1, "y": [2]}}, {"a": {"y": [2], "x": 1}}),  # equal, members reordered
    ({"a": [_NAN]}, {"a": [_NAN]}),  # the same NaN object in two lists
    ({"a": [float("nan")]}, {"a": [float("nan")]}),  # two NaN objects
    ({"a": _NAN}, {"a": float("nan")}),
    ({"a": 1, "b": None}, {"b": None, "a": True}),
    ({"a": [[1, 1.0]]}, {"a": [[1.0, 1]]}),
]


@pytest.mark.parametrize(("old", "new"), HOSTILE_PAIRS, ids=repr)
def test_diff_is_the_reference_walk_on_equal_looking_values(old: Any, new: Any) -> None:
    assert orjson.dumps(diff(old, new)) == orjson.dumps(_reference_diff(old, new))
    assert orjson.dumps(diff(new, old)) == orjson.dumps(_reference_diff(new, old))


_TOKENS = ["a", "b", "a/b", "~", "0", "1", "2", "-", "01", "+1", "x"]


def _random_value(rng: random.Random, depth: int = 0) -> Any:
    if depth > 2 or rng.random() < 0.4:
        return rng.choice([None, 0, 1.0, True, "s"])
    if rng.random() < 0.5:
        return [_random_value(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    keys = rng.sample(["a", "b", "a/b", "~", "0"], rng.randint(0, 3))
    return {k: _random_value(rng, depth + 1) for k in keys}


def _random_tokens(rng: random.Random, doc: Any) -> list[str]:
    """Mostly along ``doc``'s own members (so that many lists apply), sometimes off."""
    tokens: list[str] = []
    node = doc
    for _ in range(rng.choice([1, 1, 2, 2, 3])):
        if isinstance(node, dict) and node and rng.random() < 0.7:
            key = rng.choice(list(node))
            tokens.append(key)
            node = node[key]
        elif isinstance(node, list) and node and rng.random() < 0.7:
            index = rng.randrange(len(node))
            tokens.append(str(index))
            node = node[index]
        else:
            tokens.append(rng.choice(_TOKENS))
            node = None
    return tokens


def test_applies_exactly_agrees_with_the_patcher() -> None:
    """Hostile operation lists: what ``applies_exactly`` accepts, kube's RFC 6902
    semantics apply; and with canonical indices only, what it refuses fails there too
    (or is a ``replace`` of a missing member, which it refuses as RFC 6902 does)."""
    rng = random.Random(6902)
    seen = {True: 0, False: 0}
    for _ in range(3000):
        doc = _random_value(rng)
        doc = doc if isinstance(doc, dict) else {"a": doc}
        ops: list[dict[str, Any]] = []
        for _ in range(rng.randint(1, 3)):
            tokens = _random_tokens(rng, doc)
            op: dict[str, Any] = {
                "op": rng.choice(["add", "remove", "replace"]),
                "path": "".join("/" + t.replace("~", "~0").replace("/", "~1") for t in tokens),
            }
            if op["op"] != "remove":
                op["value"] = _random_value(rng, 1)
            ops.append(op)
        before = orjson.dumps(doc)
        verdict = applies_exactly(doc, ops)
        assert orjson.dumps(doc) == before  # the document is not changed
        seen[verdict] += 1
        try:
            json_patch(doc, ops)
            patched = True
        except Exception:
            patched = False
        if verdict:
            assert patched, ops
        elif patched:
            tokens = [t for op in ops for t in op["path"].split("/")]
            lenient = "01" in tokens or "+1" in tokens
            assert lenient or any(op["op"] == "replace" for op in ops), (doc, ops)
    assert seen[True] > 500 and seen[False] > 500, seen


def test_applies_exactly_follows_earlier_operations() -> None:
    doc: dict[str, Any] = {"spec": {"x": 1}, "l": [1]}
    inside_added: list[dict[str, Any]] = [
        {"op": "add", "path": "/spec/backup", "value": {"a": 1}},
        {"op": "add", "path": "/spec/backup/b", "value": 2},
        {"op": "replace", "path": "/spec/backup/a", "value": 3},
    ]
    assert applies_exactly(doc, inside_added)
    assert json_patch(doc, inside_added)["spec"]["backup"] == {"a": 3, "b": 2}
    assert not applies(doc, inside_added)  # the diff's check does not follow them
    removed_twice: list[dict[str, Any]] = [{"op": "remove", "path": "/spec/x"}] * 2
    assert applies(doc, removed_twice)  # the diff's check does not follow removals either
    assert not applies_exactly(doc, removed_twice)
    with pytest.raises(Exception):  # noqa: B017 - any failure: the real patcher agrees
        json_patch(doc, removed_twice)
    assert applies_exactly(doc, [{"op": "add", "path": "/l/-", "value": 2}])
    assert doc == {"spec": {"x": 1}, "l": [1]}
    for bad in (
        [{"op": "add", "path": "/a"}],  # no value
        [{"op": "move", "from": "/spec", "path": "/a"}],
        [{"op": "add", "path": "a", "value": 1}],
        [{"op": "add", "path": "", "value": {}}],
        [{"op": "replace", "path": "/l/01", "value": 1}],
        ["add"],
        {"op": "add"},
    ):
        assert applies_exactly(doc, bad) is False


@pytest.mark.parametrize("size", [0, 1, 2, 3, 57, 58, 76, 1000])
def test_the_patch_text_is_standard_base64_of_the_json(size: int) -> None:
    # padding, no line breaks at any length (binascii's encoder, as base64.b64encode)
    ops = [{"op": "add", "path": "/a", "value": "x" * size}]
    text = encode_patch(ops)
    assert text == base64.b64encode(orjson.dumps(ops)).decode("ascii")
    assert "\n" not in text and len(text) % 4 == 0
