"""The admission shortcut (``schema.admission_policy.shortcut``) against cel-cpp.

Whenever the shortcut answers an expression over JSON data, cel-cpp answers the same
value of the same type (differential, on generated expressions of the subset and
hostile JSON values); the shortcut answers the common cases (so the agreement is not
vacuous); and the engine decides as before with it (denials, errors and non-JSON data
still go through cel-cpp).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubewerk.schema.admission_policy import engine
from kubewerk.schema.admission_policy.cel_env import compile_expression, evaluate_once
from kubewerk.schema.admission_policy.engine import compile_policy, validate
from kubewerk.schema.admission_policy.matching import Match
from kubewerk.schema.admission_policy.request import Request, UserInfo
from kubewerk.schema.admission_policy.shortcut import (
    Unknown,
    compile_node,
    compile_validations,
)
from kubewerk.schema.cel.checked import decode_checked

INT_MAX = (1 << 63) - 1
INT_MIN = -(1 << 63)
KEYS = ("a", "b", "app", "spec")
UNI = "aé😀\u00a0\u0301Z\u4e2d\uffff\U0010fffd"


def _cel(text: str, data: dict[str, Any]) -> tuple[bool, Any]:
    """(True, value) or (False, error text) of cel-cpp."""
    c = compile_expression(
        text, returns=None, params=True, authorizer=True, declared_variables=None
    )
    assert c.ok, c.detail
    return _run(c.program, data)


def _run(program: Any, data: dict[str, Any]) -> tuple[bool, Any]:
    try:
        r = evaluate_once(program, data)
    except RuntimeError as exc:
        return False, str(exc)
    if r.type().name() == "ERROR":
        return False, str(r.value())
    return True, r.plain_value()


def _same(a: Any, b: Any) -> bool:
    """Equal with equal types all the way down (True is not 1)."""
    if type(a) is not type(b):
        return False
    if type(a) is list:
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if type(a) is dict:
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return bool(a == b)


def _shortcut(text: str) -> Any:
    c = compile_expression(
        text, returns=None, params=True, authorizer=True, declared_variables=None
    )
    if not c.ok:
        return None
    try:
        return compile_node(decode_checked(c.program.serialize()).expr)
    except ValueError:
        return None


# ------------------------------------------------------------------ generators
def _quote(s: str) -> str:
    return '"' + s + '"'


strings = st.text(alphabet=UNI, max_size=4)
LEAVES: list[Any] = [
    None, True, False, 0, 1, -1, 3, 5, INT_MAX, INT_MIN, INT_MAX - 1, INT_MIN + 1,
    "", "a", "b", "app", "é", "e\u0301", "😀", "\uffff", "\U0010fffd", "\u4e2d",
    0.0, -0.0, 1.0, 3.0, 2.5, -1e300, 9.223372036854776e18,
    [], {}, [1, 3], ["a", "app"], [1, "a"], [True, 1], [None], [1.0], [[1]],
    {"app": "x"}, {"a": 1, "b": "a"}, {"": None, "é": []},
]  # fmt: skip
leaves = st.one_of(st.sampled_from(LEAVES), strings, st.integers(-5, 5))
inner_objects = st.fixed_dictionaries({}, optional={k: leaves for k in KEYS})
objects = st.fixed_dictionaries(
    {}, optional={k: st.one_of(leaves, inner_objects, inner_objects) for k in KEYS}
)

paths = st.builds(
    lambda var, keys: ".".join((var, *keys)),
    st.sampled_from(["object", "object", "oldObject", "params", "namespaceObject"]),
    st.lists(st.sampled_from(KEYS), max_size=2),
)
int_lits = st.one_of(
    st.integers(-5, 5).map(str),
    st.sampled_from([str(INT_MAX), str(INT_MIN + 1), "-" + str(INT_MAX)]),
)
str_lits = st.one_of(
    st.sampled_from(['"a"', '"app"', '""', '"é"', '"😀"', "'b'"]), strings.map(_quote)
)
# expressions by checked type: dyn values (paths), bools, ints, strings, lists
dyns: st.SearchStrategy[str] = paths


def _bools(inner_bool: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    operand = st.one_of(dyns, ints_e, strs_e)
    same = st.one_of(
        st.tuples(st.one_of(dyns, ints_e), st.one_of(dyns, ints_e)),
        st.tuples(st.one_of(dyns, strs_e), st.one_of(dyns, strs_e)),
        st.tuples(st.one_of(dyns, inner_bool), st.one_of(dyns, inner_bool)),
    )
    return st.one_of(
        st.builds(
            lambda ab, op: f"({ab[0]} {op} {ab[1]})",
            same,
            st.sampled_from(["==", "!=", "<", "<=", ">", ">="]),
        ),
        st.builds(lambda a: f"({a} == null)", dyns),
        st.builds(lambda a, b: f"({a} in {b})", operand, st.one_of(dyns, lists_e)),
        st.builds(
            lambda a, op, b: f"({a} {op} {b})",
            st.one_of(inner_bool, dyns),
            st.sampled_from(["&&", "||"]),
            st.one_of(inner_bool, dyns),
        ),
        st.one_of(inner_bool, dyns).map(lambda x: f"!{x}"),
    )


ints_e = st.one_of(
    int_lits,
    st.one_of(dyns, str_lits).map(lambda x: f"size({x})"),
    dyns.map(lambda x: f"{x}.size()"),
)
strs_e = st.one_of(str_lits)
lists_e = st.lists(st.one_of(int_lits, str_lits, dyns, st.just("null")), max_size=3).map(
    lambda xs: "[" + ", ".join(xs) + "]"
)
bool_atoms = st.one_of(
    st.sampled_from(["true", "false"]),
    paths.map(lambda p: f"has({p}.a)" if "." not in p else f"has({p})"),
)
expressions = st.recursive(bool_atoms, _bools, max_leaves=5)


# ------------------------------------------------------------------ differential
def test_shortcut_agrees_with_cel_cpp_whenever_it_answers() -> None:
    stats: Counter[str] = Counter()

    @settings(
        max_examples=100,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    )
    @given(
        text=expressions,
        datas=st.lists(
            st.fixed_dictionaries(
                {
                    "object": objects,
                    "oldObject": st.one_of(st.none(), objects),
                    "params": st.one_of(st.none(), objects),
                    "namespaceObject": st.one_of(st.none(), objects),
                }
            ),
            min_size=2,
            max_size=4,
        ),
    )
    def check(text: str, datas: list[dict[str, Any]]) -> None:
        c = compile_expression(
            text, returns=None, params=True, authorizer=True, declared_variables=None
        )
        if not c.ok:
            stats["not compiled"] += 1
            return
        try:
            fn = compile_node(decode_checked(c.program.serialize()).expr)
        except ValueError:
            stats["outside the subset"] += 1
            return
        for data in datas:
            try:
                value = fn(data)
            except Unknown:
                stats["unknown"] += 1
                continue
            stats["answered"] += 1
            ok, want = _run(c.program, data)
            assert ok, f"{text} over {data!r}: shortcut {value!r}, cel-cpp error {want}"
            assert _same(value, want), f"{text} over {data!r}: shortcut {value!r}, cel {want!r}"

    check()
    # not vacuous: most compiled expressions are in the subset, and the shortcut
    # answers a good share of evaluations
    assert stats["outside the subset"] == 0, stats
    total = stats["answered"] + stats["unknown"]
    assert stats["answered"] >= total // 3, stats
    assert stats["unknown"] >= total // 10, stats


# expression, data, the shortcut's value (Unknown: left to cel-cpp)
CASES: list[tuple[str, str, dict[str, Any], Any]] = [
    ("has-present", "has(object.spec.version)", {"object": {"spec": {"version": "1"}}}, True),
    ("has-absent", "has(object.spec.version)", {"object": {"spec": {}}}, False),
    ("has-null-value", "has(object.spec.version)", {"object": {"spec": {"version": None}}}, True),
    ("has-on-null", "has(object.spec.version)", {"object": {"spec": None}}, Unknown),
    ("has-on-list", "has(object.spec.version)", {"object": {"spec": []}}, Unknown),
    ("has-missing-parent", "has(object.spec.version)", {"object": {}}, Unknown),
    ("le-int", "object.spec.replicas <= 3", {"object": {"spec": {"replicas": 3}}}, True),
    ("le-int-edge", "object.spec.replicas <= 3", {"object": {"spec": {"replicas": INT_MIN}}}, True),
    ("le-big", "object.spec.replicas <= 3", {"object": {"spec": {"replicas": INT_MAX}}}, False),
    ("le-uint", "object.spec.replicas <= 3", {"object": {"spec": {"replicas": 1 << 63}}}, Unknown),
    ("le-float", "object.spec.replicas <= 3", {"object": {"spec": {"replicas": 2.0}}}, Unknown),
    ("le-bool", "object.spec.replicas <= 3", {"object": {"spec": {"replicas": True}}}, Unknown),
    ("le-str", "object.spec.replicas <= 3", {"object": {"spec": {"replicas": "2"}}}, Unknown),
    ("le-missing", "object.spec.replicas <= 3", {"object": {"spec": {}}}, Unknown),
    ("eq-bool-int", "object.a == 1", {"object": {"a": True}}, Unknown),
    ("eq-float-int", "object.a == 1", {"object": {"a": 1.0}}, Unknown),
    ("eq-null", "object.a == null", {"object": {"a": None}}, True),
    ("eq-null-int", "object.a == null", {"object": {"a": 1}}, Unknown),
    ("eq-null-missing", "object.a == null", {"object": {}}, Unknown),
    ("eq-missing-missing", "object.a == object.b", {"object": {}}, Unknown),
    ("eq-uint", "object.a == object.b", {"object": {"a": 1 << 63, "b": 1 << 63}}, Unknown),
    ("lt-int-uint", "object.a < object.b", {"object": {"a": 1, "b": 1 << 63}}, Unknown),
    ("in-uint", "object.a in object.l", {"object": {"a": 1 << 63, "l": [1 << 63]}}, Unknown),
    ("in-list-uint", "object.a in object.l", {"object": {"a": 1, "l": [1 << 63, 1]}}, Unknown),
    ("ne-str", "object.a != 'x'", {"object": {"a": "x\u0301"}}, True),
    ("lt-unicode", "object.a < object.b", {"object": {"a": "\uffff", "b": "😀"}}, True),
    ("lt-bool", "object.a < object.b", {"object": {"a": False, "b": True}}, True),
    ("lt-null", "object.a < object.b", {"object": {"a": None, "b": None}}, Unknown),
    ("in-map", "'app' in object.l", {"object": {"l": {"app": "x"}}}, True),
    ("in-map-absent", "'app' in object.l", {"object": {"l": {}}}, False),
    ("in-list", "object.a in ['x', 'y']", {"object": {"a": "y"}}, True),
    ("in-list-mixed", "object.a in object.l", {"object": {"a": 1, "l": [True, 1]}}, Unknown),
    ("in-list-empty", "object.a in object.l", {"object": {"a": 1, "l": []}}, False),
    ("in-int-map", "object.a in object.l", {"object": {"a": 1, "l": {"1": 2}}}, Unknown),
    ("size-str", "size(object.a) == 3", {"object": {"a": "a😀\u0301"}}, True),
    ("size-map", "object.a.size()", {"object": {"a": {"x": 1}}}, 1),
    ("size-int", "size(object.a)", {"object": {"a": 1}}, Unknown),
    ("and-absorbs", "has(object.l) && 'app' in object.l", {"object": {}}, False),
    ("and-absorbs-right", "object.x && false", {"object": {"x": "s"}}, False),
    ("and-undecided", "object.x && true", {"object": {"x": "s"}}, Unknown),
    ("or-absorbs", "object.missing.x || true", {"object": {}}, True),
    ("or-undecided", "object.missing.x || false", {"object": {}}, Unknown),
    ("not-non-bool", "!object.a", {"object": {"a": 0}}, Unknown),
    ("object-null", "has(object.a)", {"object": None}, Unknown),
    ("params-null", "params.a == 1", {"object": {}, "params": None}, Unknown),
    (
        "ns-object",
        "namespaceObject.metadata.name == 'n'",
        {"namespaceObject": {"metadata": {"name": "n"}}},
        True,
    ),
]


@pytest.mark.parametrize(
    ("text", "data", "want"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_shortcut_edges(text: str, data: dict[str, Any], want: Any) -> None:
    fn = _shortcut(text)
    assert fn is not None
    data = {"object": None, "oldObject": None, "params": None, "namespaceObject": None, **data}
    if want is Unknown:
        with pytest.raises(Unknown):
            fn(data)
        return
    value = fn(data)
    assert _same(value, want)
    ok, cel_value = _cel(text, data)
    assert ok and _same(cel_value, want)


@pytest.mark.parametrize(
    "text",
    [
        "object.a == 1.5",
        "object.a == 1u",
        "object.a == b'x'",
        "object.l.all(x, x > 0)",
        "request.operation == 'CREATE'",
        "object.a.startsWith('x')",
        "object.a > 0 ? true : false",
        "object['a'] == 1",
        "{'a': 1}.a == 1",
        "int(object.a) == 1",
        "object.a + 1 == 2",
    ],
)
def test_outside_the_subset_is_not_compiled(text: str) -> None:
    assert _shortcut(text) is None


# ------------------------------------------------------------------ the engine
POLICY = {
    "apiVersion": "admissionregistration.k8s.io/v1",
    "kind": "ValidatingAdmissionPolicy",
    "metadata": {"name": "p"},
    "spec": {
        "validations": [
            {"expression": "has(object.spec.version)", "message": "spec.version is required"},
            {"expression": "object.spec.replicas <= 3", "message": "at most 3 replicas"},
            {
                "expression": "has(object.metadata.labels) && 'app' in object.metadata.labels",
                "messageExpression": "'database ' + object.metadata.name + ' has no app label'",
            },
        ]
    },
}


def _request(obj: Any) -> Request:
    return Request(
        operation="CREATE",
        kind=("demo.kubewerk.dev", "v1", "Database"),
        resource=("demo.kubewerk.dev", "v1", "databases"),
        object=obj,
        namespace="ns",
        user=UserInfo("u"),
    )


def _match() -> Match:
    return Match(("demo.kubewerk.dev", "v1", "databases"), ("demo.kubewerk.dev", "v1", "Database"))


GOOD = {
    "metadata": {"name": "db", "labels": {"app": "x"}},
    "spec": {"version": "16", "replicas": 2},
}


def test_policy_has_a_shortcut_and_compile_validations_agrees() -> None:
    policy = compile_policy(POLICY)
    assert policy.shortcut is not None
    evaluator = compile_validations([v.expression.program for v in policy.validations])
    assert evaluator is not None
    assert evaluator({"object": GOOD}) == [True, True, True]
    assert evaluator({"object": {**GOOD, "spec": {"replicas": 5}}}) == [False, False, True]
    assert evaluator({"object": {**GOOD, "spec": {"replicas": 5.0}}}) is None


@pytest.mark.parametrize(
    "obj",
    [
        GOOD,
        {**GOOD, "spec": {"replicas": 5}},
        {**GOOD, "spec": {"version": "1", "replicas": "5"}},
        {"metadata": {"name": "db"}, "spec": {"version": "1", "replicas": 1}},
        {"metadata": {"name": "db", "labels": None}, "spec": {"version": "1", "replicas": 1}},
        {"metadata": {"name": "db", "labels": {"app": 1}}, "spec": {"replicas": INT_MAX}},
        {"metadata": {"name": "db"}},
    ],
    ids=["good", "too-many", "replicas-str", "no-labels", "null-labels", "big", "no-spec"],
)
def test_engine_decides_the_same_with_and_without_the_shortcut(obj: dict[str, Any]) -> None:
    with_shortcut = compile_policy(POLICY)
    without = compile_policy(POLICY)
    without.shortcut = None
    a = validate(with_shortcut, _request(obj), _match(), None, json_values=True)
    b = validate(without, _request(obj), _match(), None, json_values=True)
    c = validate(with_shortcut, _request(obj), _match(), None, json_values=False)
    assert a == b == c


def test_the_shortcut_answers_an_admitted_request_without_cel(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    policy = compile_policy(POLICY)

    def no_cel(*_a: Any, **_k: Any) -> Any:
        raise AssertionError("cel-cpp called")

    monkeypatch.setattr(engine, "evaluate_once", no_cel)
    result = validate(policy, _request(GOOD), _match(), None, json_values=True)
    assert result.all_admit
    # not over values the caller does not vouch for as plain JSON
    with pytest.raises(AssertionError, match="cel-cpp called"):
        validate(policy, _request(GOOD), _match(), None, json_values=False)
