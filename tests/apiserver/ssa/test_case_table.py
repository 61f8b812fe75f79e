"""The server-side apply case table: structured-merge-diff's semantics re-expressed
(its merge tests: multiple appliers, sets, keyed lists, leaves, nested lists, conflicts,
field removal, atomic and granular maps, duplicates) and the server-side apply docs'
examples, run against ``kubewerk.core.fieldpath`` alone.

Each case is a sequence of operations (``apply``, ``force`` apply, ``update``) by named
managers, then the expected object and the paths each manager owns (as kube prints
them), or the expected conflicts of the last operation.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from kubewerk.core.fieldpath import (
    APPLY,
    UPDATE,
    ApplyConflict,
    FieldSet,
    ListItemError,
    ManagedFields,
    Manager,
    apply,
    path_string,
    update,
)
from kubewerk.core.fieldpath.types import (
    DEDUCED,
    TypeNode,
    list_of,
    map_of,
    scalar,
    struct,
)

S = scalar()
# one schema per family, as structured-merge-diff's tests declare them
SETS = struct({"list": list_of(S, "set"), "other": S})
KEYED = struct(
    {
        "list": list_of(struct({"name": S, "value": S, "extra": S}), "map", ("name",)),
        "other": S,
    }
)
MULTI_KEY = struct(
    {"ports": list_of(struct({"port": S, "protocol": S, "target": S}), "map", ("port", "protocol"))}
)
ATOMIC_LIST = struct({"list": list_of(S, "atomic"), "other": S})
LEAVES = struct({"a": S, "b": S, "c": S, "numeric": S, "string": S, "bool": S})
NESTED = struct(
    {
        "outer": list_of(
            struct(
                {
                    "name": S,
                    "value": S,
                    "inner": list_of(struct({"name": S, "value": S}), "map", ("name",)),
                    "tags": list_of(S, "set"),
                }
            ),
            "map",
            ("name",),
        )
    }
)
MAPS = struct(
    {
        "labels": map_of(S),
        "atomicMap": map_of(S, atomic=True),
        "spec": struct({"replicas": S, "selector": struct({"app": S}, atomic=True), "x": S}),
        "free": map_of(struct({"a": S, "b": S})),
    }
)


@dataclass
class Op:
    kind: str  # apply | force | update
    manager: str
    obj: Any


@dataclass
class Case:
    name: str
    schema: TypeNode
    ops: list[Op]
    obj: Any = None
    owned: dict[str, list[str]] = field(default_factory=dict)
    conflicts: list[tuple[str, str]] | None = None
    error: str | None = None


def A(manager: str, obj: Any) -> Op:
    return Op("apply", manager, obj)


def F(manager: str, obj: Any) -> Op:
    return Op("force", manager, obj)


def U(manager: str, obj: Any) -> Op:
    return Op("update", manager, obj)


CASES: list[Case] = [
    # ---- leaves --------------------------------------------------------------------------
    Case("apply one field", LEAVES, [A("a", {"a": 1})], {"a": 1}, {"a": [".a"]}),
    Case(
        "two appliers, disjoint fields",
        LEAVES,
        [A("a", {"a": 1}), A("b", {"b": 2})],
        {"a": 1, "b": 2},
        {"a": [".a"], "b": [".b"]},
    ),
    Case(
        "same value, shared ownership",
        LEAVES,
        [A("a", {"a": 1}), A("b", {"a": 1})],
        {"a": 1},
        {"a": [".a"], "b": [".a"]},
    ),
    Case(
        "different value conflicts",
        LEAVES,
        [A("a", {"a": 1}), A("b", {"a": 2})],
        conflicts=[("a", ".a")],
    ),
    Case(
        "force takes over",
        LEAVES,
        [A("a", {"a": 1, "b": 1}), F("b", {"a": 2})],
        {"a": 2, "b": 1},
        {"a": [".b"], "b": [".a"]},
    ),
    Case(
        "removing an owned-only field deletes it",
        LEAVES,
        [A("a", {"a": 1, "b": 2}), A("a", {"a": 1})],
        {"a": 1},
        {"a": [".a"]},
    ),
    Case(
        "a field another applier shares survives removal",
        LEAVES,
        [A("a", {"a": 1, "b": 2}), A("b", {"b": 2}), A("a", {"a": 1})],
        {"a": 1, "b": 2},
        {"a": [".a"], "b": [".b"]},
    ),
    Case(
        "a field an updater took survives removal",
        LEAVES,
        [A("a", {"a": 1, "b": 2}), U("u", {"a": 1, "b": 3}), A("a", {"a": 1})],
        {"a": 1, "b": 3},
        {"a": [".a"], "u": [".b"]},
    ),
    Case(
        "update takes fields from an applier",
        LEAVES,
        [A("a", {"a": 1}), U("u", {"a": 5})],
        {"a": 5},
        {"u": [".a"]},
    ),
    Case(
        "apply after update conflicts with the updater",
        LEAVES,
        [U("u", {"a": 5}), A("a", {"a": 1})],
        conflicts=[("u", ".a")],
    ),
    Case(
        "apply after update with the same value shares",
        LEAVES,
        [U("u", {"a": 5}), A("a", {"a": 5})],
        {"a": 5},
        {"a": [".a"], "u": [".a"]},
    ),
    Case(
        "numeric 1 and 1.0 are the same value",
        LEAVES,
        [A("a", {"numeric": 1}), A("b", {"numeric": 1.0})],
        {"numeric": 1},
        {"a": [".numeric"], "b": [".numeric"]},
    ),
    Case(
        "true and 1 are different values",
        LEAVES,
        [A("a", {"bool": True}), A("b", {"bool": 1})],
        conflicts=[("a", ".bool")],
    ),
    Case(
        "null is a value one owns",
        LEAVES,
        [A("a", {"a": None})],
        {"a": None},
        {"a": [".a"]},
    ),
    Case(
        "update removing a field removes it from every owner",
        LEAVES,
        [A("a", {"a": 1, "b": 1}), A("b", {"b": 1}), U("u", {"a": 1})],
        {"a": 1},
        {"a": [".a"]},
    ),
    Case(
        "an updater keeps what it changed over several writes",
        LEAVES,
        [U("u", {"a": 1}), U("u", {"a": 1, "b": 2})],
        {"a": 1, "b": 2},
        {"u": [".a", ".b"]},
    ),
    Case(
        "a no-op update gives no ownership",
        LEAVES,
        [A("a", {"a": 1}), U("u", {"a": 1})],
        {"a": 1},
        {"a": [".a"]},
    ),
    Case(
        "multiple conflicts from two managers",
        LEAVES,
        [A("a", {"a": 1}), A("b", {"b": 1}), A("c", {"a": 2, "b": 2})],
        conflicts=[("a", ".a"), ("b", ".b")],
    ),
    Case(
        "forced apply with several conflicts takes all",
        LEAVES,
        [A("a", {"a": 1}), A("b", {"b": 1}), F("c", {"a": 2, "b": 2})],
        {"a": 2, "b": 2},
        {"c": [".a", ".b"]},
    ),
    Case(
        "re-applying the same configuration changes nothing",
        LEAVES,
        [A("a", {"a": 1}), A("a", {"a": 1})],
        {"a": 1},
        {"a": [".a"]},
    ),
    Case(
        "an applier may change its own field",
        LEAVES,
        [A("a", {"a": 1}), A("a", {"a": 2})],
        {"a": 2},
        {"a": [".a"]},
    ),
    Case(
        "applying nothing releases and removes everything",
        LEAVES,
        [A("a", {"a": 1, "b": 1}), A("a", {})],
        {},
        {},
    ),
    # ---- sets ----------------------------------------------------------------------------
    Case(
        "set items are owned one by one",
        SETS,
        [A("a", {"list": ["a", "b"]})],
        {"list": ["a", "b"]},
        {"a": ['.list[="a"]', '.list[="b"]']},
    ),
    Case(
        "two appliers add to a set",
        SETS,
        [A("a", {"list": ["a", "b"]}), A("b", {"list": ["c"]})],
        {"list": ["a", "b", "c"]},
        {"a": ['.list[="a"]', '.list[="b"]'], "b": ['.list[="c"]']},
    ),
    Case(
        "removing a set item only its applier owned",
        SETS,
        [A("a", {"list": ["a", "b"]}), A("b", {"list": ["c"]}), A("a", {"list": ["a"]})],
        {"list": ["a", "c"]},
        {"a": ['.list[="a"]'], "b": ['.list[="c"]']},
    ),
    Case(
        "a shared set item stays",
        SETS,
        [A("a", {"list": ["a", "b"]}), A("b", {"list": ["b"]}), A("a", {"list": ["a"]})],
        {"list": ["a", "b"]},
        {"a": ['.list[="a"]'], "b": ['.list[="b"]']},
    ),
    Case(
        "set items never conflict (their value is their name)",
        SETS,
        [A("a", {"list": ["x"]}), A("b", {"list": ["x", "y"]})],
        {"list": ["x", "y"]},
        {"a": ['.list[="x"]'], "b": ['.list[="x"]', '.list[="y"]']},
    ),
    Case(
        "new set items go where the configuration puts them",
        SETS,
        [A("a", {"list": ["a", "c"]}), A("b", {"list": ["b", "c"]})],
        {"list": ["a", "b", "c"]},
        {"a": ['.list[="a"]', '.list[="c"]'], "b": ['.list[="b"]', '.list[="c"]']},
    ),
    Case(
        "numbers in a set",
        SETS,
        [A("a", {"list": [1, 2]}), A("a", {"list": [2]})],
        {"list": [2]},
        {"a": [".list[=2]"]},
    ),
    Case(
        "a set item that is a map is refused",
        SETS,
        [A("a", {"list": [{"x": 1}]})],
        error="associative list without keys has an element that's a map type",
    ),
    Case(
        "an explicit null in a set is refused",
        SETS,
        [A("a", {"list": [None]})],
        error="associative list without keys has an element that's an explicit null",
    ),
    Case(
        "duplicate set items in an applied configuration are refused",
        SETS,
        [A("a", {"list": ["a", "a"]})],
        error='duplicate entries for key [="a"]',
    ),
    Case(
        "update of a set: added item owned by the updater",
        SETS,
        [A("a", {"list": ["a"]}), U("u", {"list": ["a", "b"]})],
        {"list": ["a", "b"]},
        {"a": ['.list[="a"]'], "u": ['.list[="b"]']},
    ),
    Case(
        "update removing a set item removes ownership",
        SETS,
        [A("a", {"list": ["a", "b"]}), U("u", {"list": ["b"]})],
        {"list": ["b"]},
        {"a": ['.list[="b"]']},
    ),
    # ---- keyed lists ---------------------------------------------------------------------
    Case(
        "keyed list items and their fields",
        KEYED,
        [A("a", {"list": [{"name": "a", "value": 1}]})],
        {"list": [{"name": "a", "value": 1}]},
        {"a": ['.list[name="a"]', '.list[name="a"].name', '.list[name="a"].value']},
    ),
    Case(
        "remove_one (structured-merge-diff multiple appliers)",
        KEYED,
        [
            A("one", {"list": [{"name": "a"}, {"name": "b"}]}),
            A("two", {"list": [{"name": "c"}]}),
            A("one", {"list": [{"name": "a"}]}),
        ],
        {"list": [{"name": "a"}, {"name": "c"}]},
        {
            "one": ['.list[name="a"]', '.list[name="a"].name'],
            "two": ['.list[name="c"]', '.list[name="c"].name'],
        },
    ),
    Case(
        "same value in a keyed item: no conflict",
        KEYED,
        [
            A("one", {"list": [{"name": "a", "value": 0}]}),
            A("two", {"list": [{"name": "a", "value": 0}]}),
        ],
        {"list": [{"name": "a", "value": 0}]},
        {
            "one": ['.list[name="a"]', '.list[name="a"].name', '.list[name="a"].value'],
            "two": ['.list[name="a"]', '.list[name="a"].name', '.list[name="a"].value'],
        },
    ),
    Case(
        "change a keyed item's value: conflict",
        KEYED,
        [
            A("one", {"list": [{"name": "a", "value": 0}]}),
            A("two", {"list": [{"name": "a", "value": 1}]}),
        ],
        conflicts=[("one", '.list[name="a"].value')],
    ),
    Case(
        "force on a keyed item's value",
        KEYED,
        [
            A("one", {"list": [{"name": "a", "value": 0}]}),
            F("two", {"list": [{"name": "a", "value": 1}]}),
        ],
        {"list": [{"name": "a", "value": 1}]},
        {
            "one": ['.list[name="a"]', '.list[name="a"].name'],
            "two": ['.list[name="a"]', '.list[name="a"].name', '.list[name="a"].value'],
        },
    ),
    Case(
        "two appliers own different fields of one item",
        KEYED,
        [
            A("one", {"list": [{"name": "a", "value": 0}]}),
            A("two", {"list": [{"name": "a", "extra": "x"}]}),
        ],
        {"list": [{"name": "a", "value": 0, "extra": "x"}]},
        {
            "one": ['.list[name="a"]', '.list[name="a"].name', '.list[name="a"].value'],
            "two": ['.list[name="a"]', '.list[name="a"].extra', '.list[name="a"].name'],
        },
    ),
    Case(
        "dropping a shared item keeps the other applier's fields",
        KEYED,
        [
            A("one", {"list": [{"name": "a", "value": 0}]}),
            A("two", {"list": [{"name": "a", "extra": "x"}]}),
            A("one", {"list": []}),
        ],
        {"list": [{"name": "a", "extra": "x"}]},
        {"two": ['.list[name="a"]', '.list[name="a"].extra', '.list[name="a"].name']},
    ),
    Case(
        "new items keep the configuration's order relative to shared ones",
        KEYED,
        [
            A("one", {"list": [{"name": "a"}, {"name": "c"}]}),
            A("two", {"list": [{"name": "b"}, {"name": "c"}]}),
        ],
        {"list": [{"name": "a"}, {"name": "b"}, {"name": "c"}]},
        {
            "one": [
                '.list[name="a"]',
                '.list[name="a"].name',
                '.list[name="c"]',
                '.list[name="c"].name',
            ],
            "two": [
                '.list[name="b"]',
                '.list[name="b"].name',
                '.list[name="c"]',
                '.list[name="c"].name',
            ],
        },
    ),
    Case(
        "the configuration reorders shared items",
        KEYED,
        [
            A("one", {"list": [{"name": "a"}, {"name": "b"}]}),
            A("one", {"list": [{"name": "b"}, {"name": "a"}]}),
        ],
        {"list": [{"name": "b"}, {"name": "a"}]},
        {
            "one": [
                '.list[name="a"]',
                '.list[name="a"].name',
                '.list[name="b"]',
                '.list[name="b"].name',
            ]
        },
    ),
    Case(
        "two-field keys",
        MULTI_KEY,
        [A("a", {"ports": [{"port": 80, "protocol": "TCP", "target": 8080}]})],
        {"ports": [{"port": 80, "protocol": "TCP", "target": 8080}]},
        {
            "a": [
                '.ports[port=80,protocol="TCP"]',
                '.ports[port=80,protocol="TCP"].port',
                '.ports[port=80,protocol="TCP"].protocol',
                '.ports[port=80,protocol="TCP"].target',
            ]
        },
    ),
    Case(
        "same port, other protocol: another item",
        MULTI_KEY,
        [
            A("a", {"ports": [{"port": 53, "protocol": "TCP"}]}),
            A("b", {"ports": [{"port": 53, "protocol": "UDP"}]}),
        ],
        {"ports": [{"port": 53, "protocol": "TCP"}, {"port": 53, "protocol": "UDP"}]},
        {
            "a": [
                '.ports[port=53,protocol="TCP"]',
                '.ports[port=53,protocol="TCP"].port',
                '.ports[port=53,protocol="TCP"].protocol',
            ],
            "b": [
                '.ports[port=53,protocol="UDP"]',
                '.ports[port=53,protocol="UDP"].port',
                '.ports[port=53,protocol="UDP"].protocol',
            ],
        },
    ),
    Case(
        "a keyed item without its key is refused",
        KEYED,
        [A("a", {"list": [{"value": 1}]})],
        error=(
            ".list: element 0: associative list with keys has an element that omits all key "
            'fields ["name"]'
        ),
    ),
    Case(
        "a non-map keyed item is refused",
        KEYED,
        [A("a", {"list": ["a"]})],
        error="associative list with keys may not have non-map elements",
    ),
    Case(
        "duplicate keys in an applied configuration are refused",
        KEYED,
        [A("a", {"list": [{"name": "a"}, {"name": "a"}]})],
        error='duplicate entries for key [name="a"]',
    ),
    Case(
        "duplicates already live are kept and owned as one item",
        KEYED,
        [U("u", {"list": [{"name": "a", "value": 1}, {"name": "a", "value": 2}]})],
        {"list": [{"name": "a", "value": 1}, {"name": "a", "value": 2}]},
        {"u": [".list", '.list[name="a"]']},
    ),
    Case(
        "an update changing a keyed item's field takes that field",
        KEYED,
        [
            A("one", {"list": [{"name": "a", "value": 0}]}),
            U("u", {"list": [{"name": "a", "value": 9}]}),
        ],
        {"list": [{"name": "a", "value": 9}]},
        {
            "one": ['.list[name="a"]', '.list[name="a"].name'],
            "u": ['.list[name="a"].value'],
        },
    ),
    Case(
        "an update adding an item owns the whole item",
        KEYED,
        [
            A("one", {"list": [{"name": "a"}]}),
            U("u", {"list": [{"name": "a"}, {"name": "b", "value": 1}]}),
        ],
        {"list": [{"name": "a"}, {"name": "b", "value": 1}]},
        {
            "one": ['.list[name="a"]', '.list[name="a"].name'],
            "u": ['.list[name="b"]', '.list[name="b"].name', '.list[name="b"].value'],
        },
    ),
    # ---- atomic lists --------------------------------------------------------------------
    Case(
        "an atomic list is one leaf",
        ATOMIC_LIST,
        [A("a", {"list": ["a", "b"]})],
        {"list": ["a", "b"]},
        {"a": [".list"]},
    ),
    Case(
        "an atomic list is replaced, not merged",
        ATOMIC_LIST,
        [A("a", {"list": ["a", "b"]}), F("b", {"list": ["c"]})],
        {"list": ["c"]},
        {"b": [".list"]},
    ),
    Case(
        "a different atomic list conflicts",
        ATOMIC_LIST,
        [A("a", {"list": ["a", "b"]}), A("b", {"list": ["c"]})],
        conflicts=[("a", ".list")],
    ),
    Case(
        "an equal atomic list is shared",
        ATOMIC_LIST,
        [A("a", {"list": ["a"]}), A("b", {"list": ["a"]})],
        {"list": ["a"]},
        {"a": [".list"], "b": [".list"]},
    ),
    Case(
        "update of one atomic list item takes the whole list",
        ATOMIC_LIST,
        [A("a", {"list": ["a", "b"]}), U("u", {"list": ["a", "c"]})],
        {"list": ["a", "c"]},
        {"u": [".list"]},
    ),
    # ---- nested lists ----------------------------------------------------------------------
    Case(
        "nested keyed lists: inner items owned separately",
        NESTED,
        [
            A("a", {"outer": [{"name": "o", "inner": [{"name": "i1", "value": 1}]}]}),
            A("b", {"outer": [{"name": "o", "inner": [{"name": "i2", "value": 2}]}]}),
        ],
        {
            "outer": [
                {"name": "o", "inner": [{"name": "i1", "value": 1}, {"name": "i2", "value": 2}]}
            ]
        },
        {
            "a": [
                '.outer[name="o"]',
                '.outer[name="o"].inner[name="i1"]',
                '.outer[name="o"].inner[name="i1"].name',
                '.outer[name="o"].inner[name="i1"].value',
                '.outer[name="o"].name',
            ],
            "b": [
                '.outer[name="o"]',
                '.outer[name="o"].inner[name="i2"]',
                '.outer[name="o"].inner[name="i2"].name',
                '.outer[name="o"].inner[name="i2"].value',
                '.outer[name="o"].name',
            ],
        },
    ),
    Case(
        "nested conflict names the inner path",
        NESTED,
        [
            A("a", {"outer": [{"name": "o", "inner": [{"name": "i", "value": 1}]}]}),
            A("b", {"outer": [{"name": "o", "inner": [{"name": "i", "value": 2}]}]}),
        ],
        conflicts=[("a", '.outer[name="o"].inner[name="i"].value')],
    ),
    Case(
        "removing an outer item keeps another applier's inner items",
        NESTED,
        [
            A("a", {"outer": [{"name": "o", "value": 1}]}),
            A("b", {"outer": [{"name": "o", "tags": ["t"]}]}),
            A("a", {"outer": []}),
        ],
        {"outer": [{"name": "o", "tags": ["t"]}]},
        {"b": ['.outer[name="o"]', '.outer[name="o"].name', '.outer[name="o"].tags[="t"]']},
    ),
    Case(
        "removing an outer item only one applier had removes it all",
        NESTED,
        [
            A("a", {"outer": [{"name": "o", "inner": [{"name": "i"}], "tags": ["t"]}]}),
            A("a", {"outer": []}),
        ],
        {},
        {},
    ),
    # ---- maps ------------------------------------------------------------------------------
    Case(
        "granular map keys are owned one by one",
        MAPS,
        [A("a", {"labels": {"x": "1"}}), A("b", {"labels": {"y": "2"}})],
        {"labels": {"x": "1", "y": "2"}},
        {"a": [".labels.x"], "b": [".labels.y"]},
    ),
    Case(
        "a granular map key conflicts alone",
        MAPS,
        [A("a", {"labels": {"x": "1", "y": "1"}}), A("b", {"labels": {"x": "2"}})],
        conflicts=[("a", ".labels.x")],
    ),
    Case(
        "an atomic map is one leaf",
        MAPS,
        [A("a", {"atomicMap": {"x": "1", "y": "2"}})],
        {"atomicMap": {"x": "1", "y": "2"}},
        {"a": [".atomicMap"]},
    ),
    Case(
        "an atomic map is replaced whole",
        MAPS,
        [A("a", {"atomicMap": {"x": "1", "y": "2"}}), F("b", {"atomicMap": {"z": "3"}})],
        {"atomicMap": {"z": "3"}},
        {"b": [".atomicMap"]},
    ),
    Case(
        "an atomic struct (a label selector) conflicts whole",
        MAPS,
        [
            A("a", {"spec": {"selector": {"app": "x"}}}),
            A("b", {"spec": {"selector": {"app": "y"}}}),
        ],
        conflicts=[("a", ".spec.selector")],
    ),
    Case(
        "a struct field is not owned itself, its leaves are",
        MAPS,
        [A("a", {"spec": {"replicas": 1}})],
        {"spec": {"replicas": 1}},
        {"a": [".spec.replicas"]},
    ),
    Case(
        "an empty struct applied is owned",
        MAPS,
        [A("a", {"spec": {}})],
        {"spec": {}},
        {"a": [".spec"]},
    ),
    Case(
        "a free-form map key is owned with its contents",
        MAPS,
        [A("a", {"free": {"k": {"a": 1}}})],
        {"free": {"k": {"a": 1}}},
        {"a": [".free.k", ".free.k.a"]},
    ),
    Case(
        "removing the last leaf of a struct removes the struct",
        MAPS,
        [A("a", {"spec": {"replicas": 1}}), A("a", {"labels": {"x": "1"}})],
        {"labels": {"x": "1"}},
        {"a": [".labels.x"]},
    ),
    Case(
        "a struct with another owner's leaf stays",
        MAPS,
        [A("a", {"spec": {"replicas": 1, "x": 1}}), A("b", {"spec": {"x": 1}}), A("a", {})],
        {"spec": {"x": 1}},
        {"b": [".spec.x"]},
    ),
    Case(
        "update adding a container owns the container (the '.' entry)",
        MAPS,
        [U("u", {"labels": {"x": "1"}})],
        {"labels": {"x": "1"}},
        {"u": [".labels", ".labels.x"]},
    ),
    Case(
        "update of a leaf in an existing map owns only the leaf",
        MAPS,
        [A("a", {"labels": {"x": "1"}}), U("u", {"labels": {"x": "2"}})],
        {"labels": {"x": "2"}},
        {"u": [".labels.x"]},
    ),
    Case(
        "deduced (schemaless) maps are granular",
        DEDUCED,
        [A("a", {"m": {"x": 1}}), A("b", {"m": {"y": 2}})],
        {"m": {"x": 1, "y": 2}},
        {"a": [".m", ".m.x"], "b": [".m", ".m.y"]},
    ),
    Case(
        "deduced lists are atomic",
        DEDUCED,
        [A("a", {"l": [1, 2]}), A("b", {"l": [3]})],
        conflicts=[("a", ".l")],
    ),
]


def _owned_paths(managed: ManagedFields) -> dict[str, list[str]]:
    return {
        m.name: sorted(path_string(p) for p in o.fields.paths())
        for m, o in managed.owners.items()
        if not o.fields.empty()
    }


def _run(case: Case) -> tuple[Any, ManagedFields]:
    obj: Any = {}
    managed = ManagedFields()
    for op in case.ops:
        if op.kind == "update":
            new = op.obj
            managed = update(
                obj, new, case.schema, managed, Manager(op.manager, UPDATE, "v1"), "v1", "t"
            )
            obj = new
        else:
            result, managed = apply(
                obj,
                op.obj,
                case.schema,
                managed,
                Manager(op.manager, APPLY),
                "v1",
                "t",
                op.kind == "force",
            )
            if result is not None:
                obj = result
    return obj, managed


def test_the_table_has_at_least_60_cases() -> None:
    assert len(CASES) >= 60
    assert len({c.name for c in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_case(case: Case) -> None:
    if case.error is not None:
        with pytest.raises(ListItemError, match=_escape(case.error)):
            _run(case)
        return
    if case.conflicts is not None:
        with pytest.raises(ApplyConflict) as info:
            _run(case)
        got = [(m.name, path_string(p)) for m, p in info.value.conflicts]
        assert got == case.conflicts
        return
    obj, managed = _run(case)
    assert obj == case.obj
    assert _owned_paths(managed) == {k: sorted(v) for k, v in case.owned.items()}


def _escape(text: str) -> str:
    import re

    return re.escape(text)


def test_sets_compare_equal_regardless_of_build_order() -> None:
    from kubewerk.core.fieldpath.path import field

    a = FieldSet.of((field("a"),), (field("b"), field("c")))
    b = FieldSet.of((field("b"), field("c")), (field("a"),))
    assert a == b
