"""CEL x-kubernetes-validations: rule semantics, messages, transition rules and every
Kubernetes library (examples follow the Kubernetes CEL documentation)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubewerk.schema import SchemaError, compile_schema

from .conftest import messages


def _rule_schema(rule: str, prop: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "type": "object",
        "x-kubernetes-preserve-unknown-fields": True,
        "x-kubernetes-validations": [{"rule": rule, **extra}],
    }
    if prop is not None:
        spec["properties"] = prop
    return {"type": "object", "properties": {"spec": spec}}


def _eval(rule: str, spec: dict[str, Any], prop: dict[str, Any] | None = None) -> bool:
    cs = compile_schema(_rule_schema(rule, prop))
    errs = cs.validate({"spec": spec})
    assert all(e.field == "spec" for e in errs), messages(errs)
    return not errs


@pytest.mark.parametrize(
    "rule",
    [
        # lists library
        "[1, 2, 3].isSorted()",
        "['a', 'b'].isSorted()",
        "[1, 2, 3].sum() == 6",
        "[1.5, 2.5].sum() == 4.0",
        "[3, 1, 2].min() == 1",
        "[3, 1, 2].max() == 3",
        "[1, 2, 2, 3].indexOf(2) == 1",
        "[1, 2, 2, 3].lastIndexOf(2) == 2",
        "self.names.isSorted()",
        # regex
        "'abc 123'.find('[0-9]+') == '123'",
        "'abc 123 456'.findAll('[0-9]+') == ['123', '456']",
        "'abc 123 456'.findAll('[0-9]+', 1) == ['123']",
        "'xyz'.find('[0-9]+') == ''",
        "self.name.matches('^[a-z]+$')",
        # strings extension
        "'hello'.charAt(1) == 'e'",
        "'hello'.indexOf('l') == 2",
        "'hello'.lastIndexOf('l') == 3",
        "'a,b'.split(',') == ['a', 'b']",
        "['a', 'b'].join('-') == 'a-b'",
        "'Hello'.lowerAscii() == 'hello'",
        "'Hello'.upperAscii() == 'HELLO'",
        "'  x '.trim() == 'x'",
        "'hello'.substring(1, 3) == 'el'",
        "'aXbX'.replace('X', 'y') == 'ayby'",
        "'%s has %d items'.format(['list', 3]) == 'list has 3 items'",
        "'abc'.reverse() == 'cba'",
        "strings.quote('x') == '\"x\"'",
        # optionals
        "self.?missing.orValue('d') == 'd'",
        "self.?name.hasValue()",
        "optional.of(1).value() == 1",
        "!optional.none().hasValue()",
        # url
        "isURL('https://example.com:80/path?query=val#fragment')",
        "!isURL('not a url')",
        "url('https://example.com:80/path').getScheme() == 'https'",
        "url('https://example.com:80/path').getHost() == 'example.com:80'",
        "url('https://example.com:80/path').getHostname() == 'example.com'",
        "url('https://example.com:80/path').getPort() == '80'",
        "url('https://example.com/path with spaces/').getEscapedPath() == '/path with spaces/'",
        "url('https://example.com/path?k1=a&k2=b&k2=c').getQuery() "
        "== {'k1': ['a'], 'k2': ['b', 'c']}",
        # quantity
        "isQuantity('1.3G')",
        "!isQuantity('1.3Gi ')",
        "quantity('1.5G').isGreaterThan(quantity('1G'))",
        "quantity('1Gi').compareTo(quantity('1024Mi')) == 0",
        "quantity('50k').add(quantity('20k')) == quantity('70k')",
        "quantity('50k').sub(20000) == quantity('30k')",
        "quantity('50.703k').asApproximateFloat() == 50703.0",
        "quantity('1.5').isInteger() == false",
        "quantity('50k').asInteger() == 50000",
        "quantity('-5').sign() == -1",
        "quantity('1') == quantity('1000m')",
        # ip and cidr
        "isIP('127.0.0.1')",
        "!isIP('127.0.0.1:80')",
        "ip.isCanonical('127.0.0.1')",
        "!ip.isCanonical('2001:db8:0:0:0:0:0:1')",
        "ip('127.0.0.1').family() == 4",
        "ip('::1').family() == 6",
        "ip('127.0.0.1').isLoopback()",
        "ip('0.0.0.0').isUnspecified()",
        "ip('224.0.0.1').isLinkLocalMulticast()",
        "ip('fe80::1').isLinkLocalUnicast()",
        "ip('192.168.0.1').isGlobalUnicast()",
        "string(ip('2001:db8::1')) == '2001:db8::1'",
        "!isIP('::ffff:1.2.3.4')",
        "isCIDR('192.168.0.0/16')",
        "!isCIDR('192.168.0.0/33')",
        "cidr('192.168.0.0/24').containsIP(ip('192.168.0.1'))",
        "cidr('192.168.0.0/24').containsIP('192.168.0.1')",
        "!cidr('192.168.0.0/24').containsIP('192.168.1.1')",
        "cidr('192.168.0.0/16').containsCIDR(cidr('192.168.10.0/24'))",
        "cidr('192.168.0.0/16').containsCIDR('192.168.10.0/24')",
        "cidr('192.168.0.1/24').ip() == ip('192.168.0.1')",
        "cidr('192.168.0.1/24').masked() == cidr('192.168.0.0/24')",
        "cidr('192.168.0.0/16').prefixLength() == 16",
        "string(cidr('192.168.0.0/16')) == '192.168.0.0/16'",
        # semver
        "isSemver('1.0.0')",
        "!isSemver('1.0')",
        "isSemver('v1.0', true)",
        "semver('1.2.3').major() == 1 && semver('1.2.3').minor() "
        "== 2 && semver('1.2.3').patch() == 3",
        "semver('1.2.3').isLessThan(semver('1.10.0'))",
        "semver('2.0.0').isGreaterThan(semver('2.0.0-rc.1'))",
        "semver('1.2.3').compareTo(semver('1.2.3')) == 0",
        "semver('v01.2', true) == semver('1.2.0')",
        # format
        "!format.dns1123Label().validate('my-label-name').hasValue()",
        "format.dns1123Label().validate('My_Label').hasValue()",
        "!format.dns1123Subdomain().validate('a.b.c').hasValue()",
        "format.named('dns1123Label').hasValue()",
        "!format.named('no-such-format').hasValue()",
        "!format.qualifiedName().validate('example.com/MyName').hasValue()",
        "!format.labelValue().validate('').hasValue()",
        "format.uuid().validate('zzz').hasValue()",
        # sets
        "sets.contains([1, 2, 3, 4], [2, 3])",
        "!sets.contains([1, 2], [3])",
        "sets.equivalent([1, 2, 3], [3, 2, 1])",
        "sets.intersects([1, 2], [2, 3])",
        # macros and core
        "self.names.all(n, n.size() < 10)",
        "self.names.exists(n, n == 'a')",
        "self.names.exists_one(n, n == 'a')",
        "self.names.map(n, n + '!') == ['a!', 'b!']",
        "self.names.filter(n, n != 'a') == ['b']",
        "has(self.name) && !has(self.missing)",
        "self.size() >= 1",
        "duration('1h') > duration('30m')",
        "timestamp('2024-01-01T00:00:00Z') < timestamp('2025-01-01T00:00:00Z')",
        "cel.bind(x, self.names, x.size() == 2)",
    ],
)
def test_library_examples(rule: str) -> None:
    assert _eval(rule, {"name": "abc", "names": ["a", "b"]})


def test_failure_messages() -> None:
    prop = {"min": {"type": "integer"}, "max": {"type": "integer"}}
    cs = compile_schema(
        {
            "type": "object",
            "properties": {
                "spec": {
                    "type": "object",
                    "properties": prop,
                    "x-kubernetes-validations": [
                        {"rule": "self.min <= self.max"},
                        {"rule": "self.min <= self.max", "message": "min must not exceed max"},
                        {
                            "rule": "self.min <= self.max",
                            "messageExpression": "'min ' + string(self.min) "
                            "+ ' exceeds max ' + string(self.max)",
                        },
                        {
                            "rule": "self.min <= self.max",
                            "fieldPath": ".min",
                            "reason": "FieldValueForbidden",
                            "message": "too big",
                        },
                        {
                            "rule": "self.min <= self.max",
                            "fieldPath": ".max",
                            "reason": "FieldValueRequired",
                            "messageExpression": "''",
                            "message": "fallback",
                        },
                        {"rule": "self.min <= self.max", "reason": "FieldValueDuplicate"},
                    ],
                }
            },
        }
    )
    assert messages(cs.validate({"spec": {"min": 5, "max": 1}})) == [
        'spec: Invalid value: "object": failed rule: self.min <= self.max',
        'spec: Invalid value: "object": min must not exceed max',
        'spec: Invalid value: "object": min 5 exceeds max 1',
        "spec.min: Forbidden: too big",
        "spec.max: Required value: fallback",
        'spec: Duplicate value: "object"',
    ]
    assert messages(cs.validate({"spec": {"min": 1, "max": 5}})) == []


def test_runtime_errors_and_null() -> None:
    cs = compile_schema(_rule_schema("self.a.b > 0"))
    assert messages(cs.validate({"spec": {"a": {}}})) == [
        'spec: Invalid value: "object": no such key: b evaluating rule: self.a.b > 0'
    ]
    # rules never run on null values
    nullable = compile_schema(
        {
            "type": "object",
            "properties": {
                "s": {
                    "type": "string",
                    "nullable": True,
                    "x-kubernetes-validations": [{"rule": "self.size() > 3"}],
                }
            },
        }
    )
    assert nullable.validate({"s": None}) == []
    assert messages(nullable.validate({"s": "ab"})) == [
        's: Invalid value: "string": failed rule: self.size() > 3'
    ]


def test_root_rule_and_escaping() -> None:
    cs = compile_schema(
        {
            "type": "object",
            "x-kubernetes-validations": [
                {"rule": "self.spec.__namespace__ == 'x' && self.spec.a__dash__b == 1"}
            ],
            "properties": {
                "spec": {
                    "type": "object",
                    "properties": {"namespace": {"type": "string"}, "a-b": {"type": "integer"}},
                }
            },
        }
    )
    assert cs.validate({"spec": {"namespace": "x", "a-b": 1}}) == []
    assert messages(cs.validate({"spec": {"namespace": "y", "a-b": 1}})) == [
        '<nil>: Invalid value: "object": failed rule: '
        "self.spec.__namespace__ == 'x' && self.spec.a__dash__b == 1"
    ]


def test_number_fields_are_doubles() -> None:
    cs = compile_schema(
        {
            "type": "object",
            "properties": {
                "n": {"type": "number", "x-kubernetes-validations": [{"rule": "self > 1.5"}]}
            },
        }
    )
    assert cs.validate({"n": 2}) == []
    assert messages(cs.validate({"n": 1})) == [
        'n: Invalid value: "number": failed rule: self > 1.5'
    ]


IMMUTABLE = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "properties": {
                "name": {
                    "type": "string",
                    "x-kubernetes-validations": [
                        {"rule": "self == oldSelf", "message": "Value is immutable"}
                    ],
                },
                "replicas": {
                    "type": "integer",
                    "x-kubernetes-validations": [
                        {"rule": "self >= oldSelf", "message": "replicas may only grow"}
                    ],
                },
                "tags": {
                    "type": "object",
                    "additionalProperties": {
                        "type": "string",
                        "x-kubernetes-validations": [
                            {"rule": "self == oldSelf", "message": "tag values are immutable"}
                        ],
                    },
                },
                "ports": {
                    "type": "array",
                    "x-kubernetes-list-type": "map",
                    "x-kubernetes-list-map-keys": ["name"],
                    "items": {
                        "type": "object",
                        "required": ["name"],
                        "properties": {"name": {"type": "string"}, "port": {"type": "integer"}},
                        "x-kubernetes-validations": [
                            {"rule": "self.port == oldSelf.port", "message": "port is immutable"}
                        ],
                    },
                },
                "opt": {
                    "type": "string",
                    "x-kubernetes-validations": [
                        {
                            "rule": "!oldSelf.hasValue() || self == oldSelf.value()",
                            "optionalOldSelf": True,
                            "message": "set once",
                        },
                        {
                            "rule": "oldSelf.hasValue() || self.startsWith('v')",
                            "optionalOldSelf": True,
                            "message": "must start with v on create",
                        },
                    ],
                },
            },
        }
    },
}


def test_transition_rules() -> None:
    cs = compile_schema(IMMUTABLE)
    old = {
        "spec": {
            "name": "a",
            "replicas": 3,
            "tags": {"t": "1"},
            "ports": [{"name": "http", "port": 80}],
            "opt": "v1",
        }
    }
    # create: transition rules without optionalOldSelf do not run
    assert messages(cs.validate({"spec": {"name": "x", "replicas": 1, "opt": "x"}})) == [
        'spec.opt: Invalid value: "string": must start with v on create'
    ]
    new = {
        "spec": {
            "name": "b",
            "replicas": 2,
            "tags": {"t": "2", "new": "ok"},
            "ports": [{"name": "https", "port": 1}, {"name": "http", "port": 81}],
            "opt": "v2",
        }
    }
    assert messages(cs.validate(new, old)) == [
        'spec.name: Invalid value: "string": Value is immutable',
        'spec.replicas: Invalid value: "integer": replicas may only grow',
        'spec.tags[t]: Invalid value: "string": tag values are immutable',
        'spec.ports[1]: Invalid value: "object": port is immutable',
        'spec.opt: Invalid value: "string": set once',
    ]
    assert cs.validate(old, old) == []


def test_compile_errors_raise_schema_error() -> None:
    with pytest.raises(SchemaError) as info:
        compile_schema(_rule_schema("self.x ++ 1"))
    assert (
        info.value.errors[0].field
        == "openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule"
    )
    assert "compilation failed: ERROR: <input>:1:" in info.value.errors[0].detail
    with pytest.raises(SchemaError) as info:
        compile_schema(
            {
                "type": "object",
                "properties": {
                    "s": {"type": "string", "x-kubernetes-validations": [{"rule": "self + 1 == 2"}]}
                },
            }
        )
    assert (
        "found no matching overload for '_+_' applied to '(string, int)'"
        in info.value.errors[0].detail
    )
    with pytest.raises(SchemaError) as info:
        compile_schema(
            {
                "type": "object",
                "properties": {
                    "s": {"type": "string", "x-kubernetes-validations": [{"rule": "self.size()"}]}
                },
            }
        )
    assert info.value.errors[0].detail == "cel expression must evaluate to a bool"


def test_passing_values_are_remembered_and_failures_never() -> None:
    """Rules that read only ``self`` are not re-run on a value they passed before; a
    failing or erroring value is evaluated (and reported) every time."""
    cs = compile_schema(
        _rule_schema(
            "self.n > 0 && self.kind != 'bad'",
            {"n": {"type": "integer"}, "kind": {"type": "string"}},
        )
    )
    for _ in range(3):
        assert cs.validate({"spec": {"n": 1, "kind": "ok"}}) == []
        assert messages(cs.validate({"spec": {"n": 0, "kind": "ok"}})) == [
            "spec: Invalid value: \"object\": failed rule: self.n > 0 && self.kind != 'bad'"
        ]
        assert len(cs.validate({"spec": {"n": 1, "kind": "bad"}})) == 1
    erroring = compile_schema(_rule_schema("self.a.b > 0"))
    for _ in range(2):
        assert len(erroring.validate({"spec": {"a": {}}})) == 1
    # transition rules depend on oldSelf too: never remembered
    moving = compile_schema(_rule_schema("self.n >= oldSelf.n", {"n": {"type": "integer"}}))
    assert moving.validate({"spec": {"n": 2}}, {"spec": {"n": 1}}) == []
    assert len(moving.validate({"spec": {"n": 2}}, {"spec": {"n": 3}})) == 1


def test_remembered_values_are_told_apart_exactly() -> None:
    from kubewerk.schema.cel.rules import _memo_key

    keys = [_memo_key(v) for v in (1, 1.0, True, 0.0, -0.0, "1", None)]
    assert None not in keys[:6] and len(set(keys[:6])) == 6
    assert _memo_key({"a": 1}) != _memo_key({"a": True}) != _memo_key({"a": 1.0})
    assert _memo_key({"a": {"b": 1}}) is None and _memo_key({"a": [1]}) is None
    assert _memo_key("x" * 257) is None and _memo_key({str(i): i for i in range(9)}) is None


_MEMO_VALUES = st.one_of(
    st.integers(-3, 3),
    st.sampled_from([0.0, -0.0, 1.0, 1.5, float("nan")]),
    st.booleans(),
    st.sampled_from(["", "0", "1", "a", "é"]),
    st.none(),
)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.fixed_dictionaries({}, optional={"x": _MEMO_VALUES, "y": _MEMO_VALUES}),
        min_size=1,
        max_size=12,
    )
)
def test_remembered_outcomes_equal_fresh_evaluation(specs: list[dict[str, Any]]) -> None:
    """One schema validating a run of objects (so rules remember what passed) answers
    exactly as a freshly compiled schema does for each object alone."""
    rules = [
        "!has(self.x) || string(self.x) != '0'",
        "!has(self.x) || type(self.x) != int || self.x < 2",
        "!has(self.y) || self.y != true",
        "!has(self.x) || !has(self.y) || self.x != self.y",
    ]
    schema = {
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "x-kubernetes-preserve-unknown-fields": True,
                "x-kubernetes-validations": [{"rule": r} for r in rules],
            }
        },
    }
    shared = compile_schema(schema)
    for spec in specs:
        assert messages(shared.validate({"spec": spec})) == messages(
            compile_schema(schema).validate({"spec": spec})
        )


def test_undeclared_qualified_reference_named_as_cel_go_does() -> None:
    # cel-go names the first identifier of an undeclared `a.b.c` at its own column;
    # cel-cpp names the whole reference at its last dot (one shared translation,
    # kubewerk.schema.cel.error_text, serves CRD rules and admission policies)
    with pytest.raises(SchemaError) as info:
        compile_schema(_rule_schema("self.x == 1 && foo.bar.baz == 2"))
    assert info.value.errors[0].detail.endswith(
        "compilation failed: ERROR: <input>:1:16: undeclared reference to 'foo' "
        "(in container '')\n | self.x == 1 && foo.bar.baz == 2\n | ...............^"
    )
