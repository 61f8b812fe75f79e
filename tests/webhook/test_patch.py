"""``Patch``: operations recorded against the received object, checked as recorded, and
applied by an RFC 6902 implementation (kube's semantics: kubewerk.core.patch) to exactly
the state the patch reports."""

from __future__ import annotations

import copy
import random
from typing import Any

import pytest

from kubewerk.core.patch import encode_pointer_token as escape
from kubewerk.core.patch import json_patch
from kubewerk.model import KubeModel
from kubewerk.webhook import Patch, PatchOperationError
from kubewerk.webhook.jsonpatch import applies_exactly


def received() -> dict[str, Any]:
    return {
        "apiVersion": "example.com/v1",
        "kind": "Database",
        "metadata": {"name": "db", "labels": {"app": "db"}, "finalizers": None},
        "spec": {
            "engine": "postgres",
            "replicas": 1,
            "tags": ["a", "b"],
            "nothing": None,
            "a/b~c": "odd key",
            "": "empty key",
            "nested": {"deep": {"x": 1}},
        },
    }


def check(doc: dict[str, Any], patch: Patch) -> dict[str, Any]:
    """The patch applies to ``doc`` (unchanged by recording) and gives ``patch.get(())``."""
    ops = patch.operations
    assert applies_exactly(doc, ops)
    out = json_patch(doc, ops)
    assert out == patch.get(())
    return dict(out)


def test_set_chooses_add_or_replace_from_the_received_json() -> None:
    doc = received()
    before = copy.deepcopy(doc)
    patch = Patch(doc)
    patch.set(("spec", "replicas"), 3)
    patch.set(("spec", "storageGi"), 10)
    patch.set(("spec", "nothing"), "now")  # a null member exists: replaced
    patch.set(("spec", "tags", 1), "B")
    assert patch.operations == [
        {"op": "replace", "path": "/spec/replicas", "value": 3},
        {"op": "add", "path": "/spec/storageGi", "value": 10},
        {"op": "replace", "path": "/spec/nothing", "value": "now"},
        {"op": "replace", "path": "/spec/tags/1", "value": "B"},
    ]
    assert doc == before  # the received object is never changed
    out = check(doc, patch)
    assert out["spec"]["tags"] == ["a", "B"] and out["spec"]["storageGi"] == 10


def test_set_creates_missing_objects_and_replaces_a_null_parent() -> None:
    doc = received()
    patch = Patch(doc)
    patch.set(("spec", "backup", "schedule"), "@daily")
    patch.set(("spec", "backup", "keep"), 3)  # the object just added is there now
    patch.set(("spec", "nothing", "x", "y"), True)
    assert patch.operations == [
        {"op": "add", "path": "/spec/backup", "value": {"schedule": "@daily"}},
        {"op": "add", "path": "/spec/backup/keep", "value": 3},
        {"op": "replace", "path": "/spec/nothing", "value": {"x": {"y": True}}},
    ]
    check(doc, patch)


def test_set_of_the_same_json_records_nothing() -> None:
    doc = received()
    patch = Patch(doc)
    patch.set(("spec", "replicas"), 1)
    patch.set(("spec", "nested"), {"deep": {"x": 1}})
    patch.set_label("app", "db")
    assert not patch and len(patch) == 0
    # 1.0 and True are other JSON values than 1
    patch.set(("spec", "replicas"), 1.0)
    patch.set(("spec", "nested", "deep", "x"), True)
    assert [op["value"] for op in patch.operations] == [1.0, True]


def test_keys_are_escaped_and_pointers_unescaped() -> None:
    doc = received()
    patch = Patch(doc)
    patch.set(("spec", "a/b~c"), "x")
    patch.set("/spec/a~1b~0c", "y")
    patch.set(("spec", ""), "z")
    patch.set_label("example.com/~tilde", "1")
    patch.set_annotation("a/b", "2")
    assert [op["path"] for op in patch.operations] == [
        "/spec/a~1b~0c",
        "/spec/a~1b~0c",
        "/spec/",
        "/metadata/labels/example.com~1~0tilde",
        "/metadata/annotations",
    ]
    out = check(doc, patch)
    assert out["spec"]["a/b~c"] == "y" and out["spec"][""] == "z"
    assert out["metadata"]["labels"]["example.com/~tilde"] == "1"
    assert out["metadata"]["annotations"] == {"a/b": "2"}
    # "~01" is "~1" once unescaped (one pass, left to right), not "/"
    patch.set("/spec/~01", "w")
    assert patch.get(("spec", "~1")) == "w"
    assert patch.operations[-1]["path"] == "/spec/~01"


def test_labels_and_annotations() -> None:
    doc = received()
    del doc["metadata"]["labels"]
    patch = Patch(doc)
    patch.set_label("a", "1")  # creates metadata.labels
    patch.set_label("b", "2")  # then adds to it
    assert patch.remove_label("a") is True
    assert patch.remove_label("missing") is False
    assert patch.remove_annotation("missing") is False  # no annotations map at all
    assert patch.operations == [
        {"op": "add", "path": "/metadata/labels", "value": {"a": "1"}},
        {"op": "add", "path": "/metadata/labels/b", "value": "2"},
        {"op": "remove", "path": "/metadata/labels/a"},
    ]
    check(doc, patch)
    # no metadata at all: created too
    bare: dict[str, Any] = {"spec": {}}
    patch = Patch(bare)
    patch.set_annotation("note", "x")
    assert patch.operations == [
        {"op": "add", "path": "/metadata", "value": {"annotations": {"note": "x"}}}
    ]
    check(bare, patch)
    with pytest.raises(TypeError, match="a label value must be a string, not int"):
        patch.set_label("n", 1)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="an annotation key must be a string"):
        patch.set_annotation(None, "x")  # type: ignore[arg-type]


def test_append_and_discard() -> None:
    doc = received()
    patch = Patch(doc)
    patch.append(("spec", "tags"), "c")
    patch.append("/spec/tags", "d")
    patch.append(("metadata", "finalizers"), "example.com/cleanup")  # null: set to a list
    patch.append(("spec", "more"), {"k": 1})  # absent: set to a list
    patch.append(("spec", "more"), {"k": 2})
    assert patch.discard(("spec", "tags", 0)) is True
    assert patch.discard(("spec", "engine")) is True
    assert patch.discard(("spec", "engine")) is False  # already gone
    assert patch.discard(("spec", "no", "such", "path")) is False
    assert patch.operations == [
        {"op": "add", "path": "/spec/tags/2", "value": "c"},
        {"op": "add", "path": "/spec/tags/3", "value": "d"},
        {"op": "replace", "path": "/metadata/finalizers", "value": ["example.com/cleanup"]},
        {"op": "add", "path": "/spec/more", "value": [{"k": 1}]},
        {"op": "add", "path": "/spec/more/1", "value": {"k": 2}},
        {"op": "remove", "path": "/spec/tags/0"},
        {"op": "remove", "path": "/spec/engine"},
    ]
    out = check(doc, patch)
    assert out["spec"]["tags"] == ["b", "c", "d"]
    patch.append(("spec", "engine"), 1)  # removed above: the check reads the new state
    assert patch.operations[-1] == {"op": "add", "path": "/spec/engine", "value": [1]}
    with pytest.raises(PatchOperationError, match="cannot append to /spec/replicas: it is a"):
        patch.append(("spec", "replicas"), 1)


def test_raw_operations() -> None:
    doc = received()
    patch = Patch(doc)
    patch.add("/spec/tags/0", "first")
    patch.add("/spec/tags/-", "last")  # recorded as the explicit index
    patch.replace("/spec/nested/deep", {"y": 2})
    patch.remove(("spec", "a/b~c"))
    patch.add(("spec", "replicas"), 5)  # add over an existing member replaces it (RFC 6902)
    assert patch.operations == [
        {"op": "add", "path": "/spec/tags/0", "value": "first"},
        {"op": "add", "path": "/spec/tags/3", "value": "last"},
        {"op": "replace", "path": "/spec/nested/deep", "value": {"y": 2}},
        {"op": "remove", "path": "/spec/a~1b~0c"},
        {"op": "add", "path": "/spec/replicas", "value": 5},
    ]
    out = check(doc, patch)
    assert out["spec"]["tags"] == ["first", "a", "b", "last"]


# (what, the call, the error's words): each would not apply, or names no member
REFUSED: list[tuple[str, Any, str]] = [
    ("replace missing", lambda p: p.replace(("spec", "x"), 1), "cannot replace /spec/x: there is"),
    ("remove missing", lambda p: p.remove("/spec/x"), "cannot remove /spec/x: there is no such"),
    ("missing parent", lambda p: p.add(("spec", "x", "y"), 1), "/spec/x does not exist"),
    ("scalar parent", lambda p: p.add("/spec/engine/x", 1), "/spec/engine is a str, not an"),
    ("null parent", lambda p: p.add("/spec/nothing/x", 1), "/spec/nothing is null, not an"),
    ("index past end", lambda p: p.replace(("spec", "tags", 2), 1), "index 2 is out of range"),
    ("add past end", lambda p: p.add("/spec/tags/3", 1), "index 3 is out of range for a list"),
    ("leading zero", lambda p: p.remove("/spec/tags/01"), "'01' is not an index of a list"),
    ("signed index", lambda p: p.remove("/spec/tags/+1"), "'+1' is not an index of a list"),
    ("dash remove", lambda p: p.remove("/spec/tags/-"), "'-' is not an index of a list"),
    ("negative int", lambda p: p.remove(("spec", "tags", -1)), "list index -1 in"),
    ("key on list", lambda p: p.set(("spec", "tags", "x"), 1), "'x' is not an index of a list"),
    ("int on object", lambda p: p.set(("spec", 0), 1), "/spec is an object, and 0 is not a key"),
    ("int key add", lambda p: p.add(("spec", 0), 1), "/spec is an object, and 0 is not a key"),
    ("not a pointer", lambda p: p.set("spec.replicas", 1), "'spec.replicas' is not a JSON Po"),
    ("bad escape", lambda p: p.set("/spec/a~2", 1), "'~' must be followed by 0 or 1"),
    ("trailing tilde", lambda p: p.remove("/spec/a~"), "'~' must be followed by 0 or 1"),
    ("whole object", lambda p: p.replace("", {}), "cannot replace the whole object"),
    ("set whole", lambda p: p.set((), {}), "the path names the whole object"),
    ("set into scalar", lambda p: p.set(("spec", "engine", "x"), 1), "/spec/engine is a str"),
    ("new list elem", lambda p: p.set(("spec", "new", 0), 1), "the list it names an element"),
]


@pytest.mark.parametrize(("what", "call", "words"), REFUSED, ids=[r[0] for r in REFUSED])
def test_operations_that_would_not_apply_are_refused(what: str, call: Any, words: str) -> None:
    doc = received()
    before = copy.deepcopy(doc)
    patch = Patch(doc)
    patch.set(("spec", "replicas"), 2)
    with pytest.raises(PatchOperationError) as err:
        call(patch)
    assert words in str(err.value)
    assert isinstance(err.value, ValueError)
    # nothing recorded, nothing changed, the earlier operation still applies
    assert patch.operations == [{"op": "replace", "path": "/spec/replicas", "value": 2}]
    assert doc == before
    check(doc, patch)


def test_values_are_plain_json_snapshots() -> None:
    class Backup(KubeModel):
        schedule: str
        keep_days: int | None = None

    doc = received()
    patch = Patch(doc)
    value = {"list": [1, 2]}
    patch.set(("spec", "value"), value)
    value["list"].append(3)  # changed after recording: not in the patch
    patch.set(("spec", "backup"), Backup(schedule="@daily", keep_days=3))
    patch.set(("spec", "tuple"), ("a", "b"))
    assert patch.operations[0]["value"] == {"list": [1, 2]}
    assert patch.operations[1]["value"] == {"schedule": "@daily", "keepDays": 3}
    assert patch.operations[2]["value"] == ["a", "b"]
    with pytest.raises(TypeError, match="not JSON"):
        patch.set(("spec", "x"), {1, 2})
    with pytest.raises(TypeError, match="does not fit in 64 bits"):
        patch.set(("spec", "x"), 2**64)
    with pytest.raises(TypeError, match=r"keys \(str\) and list indices \(int\)"):
        patch.set(("spec", 1.5), 1)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        patch.set(("spec", True), 1)  # a bool is not an index
    assert len(patch) == 3
    # reading the recorded state: later operations see earlier ones
    assert patch.get(("spec", "backup", "keepDays")) == 3
    assert patch.get("/spec/tags/1") == "b"
    assert patch.get(("spec", "tags", 5), "none") == "none"
    assert patch.get(("spec", "engine", "x"), "none") == "none"


def test_the_received_object_is_shared_not_copied_until_changed() -> None:
    doc = received()
    patch = Patch(doc)
    patch.set(("spec", "replicas"), 4)
    state = patch.get(())
    assert state is not doc and state["spec"] is not doc["spec"]
    # untouched subtrees are the received ones
    assert state["metadata"] is doc["metadata"]
    assert state["spec"]["nested"] is doc["spec"]["nested"]


def _random_doc(rng: random.Random, depth: int = 0) -> Any:
    if depth > 3 or rng.random() < 0.3:
        return rng.choice([None, 1, 1.0, True, "s", "", "a/b"])
    if rng.random() < 0.5:
        return [_random_doc(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    keys = ["a", "b", "~", "/", "~1", "0", "-", ""]
    return {k: _random_doc(rng, depth + 1) for k in rng.sample(keys, rng.randint(0, 4))}


def _random_path(rng: random.Random, doc: Any) -> list[str | int]:
    """A path that mostly follows the document, sometimes stepping off it."""
    path: list[str | int] = []
    node = doc
    while rng.random() < 0.75:
        if isinstance(node, dict) and node and rng.random() < 0.8:
            key = rng.choice(list(node))
            path.append(key)
            node = node[key]
        elif isinstance(node, list) and node and rng.random() < 0.8:
            index = rng.randrange(len(node) + 1)
            path.append(index)
            node = node[index] if index < len(node) else None
        else:
            off: list[str | int] = ["a", "new", "~x/y", 0, 2]
            path.append(rng.choice(off))
            break
    return path


def test_random_operations_apply_as_recorded() -> None:
    """Hostile sequences on random documents: every accepted operation list applies to
    the received document (kube's RFC 6902 semantics) and gives the patch's own state;
    a refused operation records nothing; the received document never changes."""
    rng = random.Random(14)
    accepted = refused = 0
    for _ in range(400):
        doc = {"root": _random_doc(rng)}
        before = copy.deepcopy(doc)
        patch = Patch(doc)
        for _ in range(rng.randint(1, 8)):
            state = patch.get(())
            path = _random_path(rng, state)
            as_pointer = rng.random() < 0.5
            where: Any = path
            if as_pointer:
                where = "".join("/" + (escape(t) if isinstance(t, str) else str(t)) for t in path)
            value = _random_doc(rng, 2)
            count = len(patch)
            action = rng.choice(["add", "replace", "remove", "set", "discard", "append"])
            try:
                if action in ("add", "replace", "set", "append"):
                    getattr(patch, action)(where, value)
                else:
                    getattr(patch, action)(where)
            except PatchOperationError:
                refused += 1
                assert len(patch) == count
                assert patch.get(()) == state
            else:
                accepted += 1
            assert doc == before
        ops = patch.operations
        assert applies_exactly(doc, ops)
        assert json_patch(doc, ops) == patch.get(())
    assert accepted > 500 and refused > 100  # both sides exercised


def test_set_records_what_the_read_walk_records() -> None:
    """``set``'s one-walk path (every parent exists) against its read-walk-first path
    (``_set_through``, which also creates parents) on random documents and paths: the
    same operations, the same state, or the same error."""
    rng = random.Random(56)
    fast_taken = 0
    for _ in range(1500):
        doc = {"root": _random_doc(rng)}
        paths = [_random_path(rng, doc) for _ in range(3)]
        one, two = Patch(doc), Patch(doc)
        for path in paths:
            if not path:
                continue  # set refuses the whole object before either walk
            value = _random_doc(rng, 2)
            outcome: list[str | None] = []
            for call in (one.set, two._set_through):
                try:
                    call(path, value)
                    outcome.append(None)
                except PatchOperationError as exc:
                    outcome.append(str(exc))
            assert outcome[0] == outcome[1], (doc, path)
            assert one.operations == two.operations
            assert one.get(()) == two.get(())
            fast_taken += outcome[0] is None
    assert fast_taken > 1000
