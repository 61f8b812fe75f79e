"""Label and field selectors: grammar, matching and Kubernetes' exact error texts."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubewerk.core.selectors import (
    EVERYTHING,
    NOTHING,
    FieldLabelError,
    FieldSelectorError,
    LabelSelector,
    LabelSelectorError,
    Requirement,
    builtin_field_set,
    convert_builtin_field_label,
    convert_custom_field_label,
    custom_resource_field_set,
    escape_field_value,
    field_value,
    go_sprint,
    is_label_key,
    is_label_value,
    label_selector_from_dict,
    parse_field_selector,
    parse_label_selector,
    unescape_field_value,
)

KEY_REGEX_MSG = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with "
    "an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
    "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)
VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' "
    "or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "
    "'my_value',  or '12345', regex used for validation is "
    "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)


# ----------------------------------------------------------------------- label selectors


@pytest.mark.parametrize(
    ("text", "labels", "expected"),
    [
        ("", {}, True),
        ("a=b", {"a": "b"}, True),
        ("a==b", {"a": "b"}, True),
        ("a=b", {"a": "c"}, False),
        ("a=b", {}, False),
        ("a!=b", {}, True),
        ("a!=b", {"a": "b"}, False),
        ("a!=b", {"a": "c"}, True),
        ("a in (b,c)", {"a": "c"}, True),
        ("a in (b,c)", {"a": "d"}, False),
        ("a in (b,c)", {}, False),
        ("a notin (b,c)", {}, True),
        ("a notin (b,c)", {"a": "b"}, False),
        ("a", {"a": ""}, True),
        ("a", {"b": ""}, False),
        ("!a", {"b": ""}, True),
        ("!a", {"a": "x"}, False),
        ("a=", {"a": ""}, True),
        ("a in ()", {"a": ""}, True),
        ("a>5", {"a": "6"}, True),
        ("a>5", {"a": "5"}, False),
        ("a<5", {"a": "-1"}, True),
        ("a<5", {"a": "x"}, False),
        ("a<5", {}, False),
        ("env in (prod, qa),tier notin (front),!canary", {"env": "qa", "tier": "back"}, True),
        ("env in (prod, qa),tier notin (front),!canary", {"env": "qa", "canary": "1"}, False),
        ("x in (in),y=notin", {"x": "in", "y": "notin"}, True),
        ("  a  =  b  ,  c  ", {"a": "b", "c": "1"}, True),
        ("example.com/app=web", {"example.com/app": "web"}, True),
    ],
)
def test_label_selector_matches(text: str, labels: dict[str, str], expected: bool) -> None:
    assert parse_label_selector(text).matches(labels) is expected


def test_label_selector_string_is_sorted_and_normalised() -> None:
    sel = parse_label_selector("z notin (c,a), !y,x in (foo,,baz), b == c, a")
    assert str(sel) == "a,b==c,x in (,baz,foo),!y,z notin (a,c)"
    assert [r.key for r in sel.requirements] == ["a", "b", "x", "y", "z"]
    assert sel.requirements[2] == Requirement("x", "in", ("", "baz", "foo"))


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a b", "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt"),
        ("a=b c", "found 'c', expected: ',' or 'end of string'"),
        ("a,", "found '', expected: identifier after ','"),
        (",a", "found ',', expected: !, identifier, or 'end of string'"),
        ("!a=b", "found '=', expected: ',' or 'end of string'"),
        ("a in x", "unable to parse requirement: found 'x' expected: '('"),
        ("a in (x", "unable to parse requirement: found '', expected: ',' or ')'"),
        ("a in (x y)", "unable to parse requirement: found 'y', expected: ',' or ')'"),
        ("a in (=)", "unable to parse requirement: found '=', expected: ',', ')' or identifier"),
        ("a in (x,=)", "unable to parse requirement: found '=', expected: ',', or identifier"),
        ("a=(", "unable to parse requirement: found '(', expected: identifier"),
        ("!", "unable to parse requirement: found '', expected: identifier"),
        (
            "a/b/c",
            'unable to parse requirement: <nil>: Invalid value: "a/b/c": a valid label key '
            + KEY_REGEX_MSG
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
        ),
        (
            "-a",
            'unable to parse requirement: <nil>: Invalid value: "-a": name part ' + KEY_REGEX_MSG,
        ),
        (
            "/a",
            "unable to parse requirement: <nil>: Invalid "
            'value: "/a": prefix part must be non-empty',
        ),
        ("a=$", 'unable to parse requirement: values[0][a]: Invalid value: "$": ' + VALUE_MSG),
        (
            "a>x",
            'unable to parse requirement: values[0]: Invalid value: "x": '
            "for 'Gt', 'Lt' operators, the value must be an integer",
        ),
    ],
)
def test_label_selector_errors(text: str, message: str) -> None:
    with pytest.raises(LabelSelectorError) as info:
        parse_label_selector(text)
    assert str(info.value) == message
    assert isinstance(info.value, ValueError)


def test_label_key_errors_combine_with_semicolons() -> None:
    long_name = "a" * 64
    with pytest.raises(LabelSelectorError) as info:
        parse_label_selector(f"Bad_/{long_name}")
    assert str(info.value) == (
        f'unable to parse requirement: <nil>: Invalid value: "Bad_/{long_name}": '
        "prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
        "characters, '-' or '.', and must start and end with an alphanumeric character "
        "(e.g. 'example.com', regex used for validation is "
        "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*'); "
        "name part must be no more than 63 bytes"
    )


def test_two_bad_values_aggregate() -> None:
    with pytest.raises(LabelSelectorError) as info:
        parse_label_selector("a in ($,%)")
    # values are sorted before validation, so '$' (0x24) precedes '%' (0x25)
    assert str(info.value) == (
        'unable to parse requirement: [values[0][a]: Invalid value: "$": '
        + VALUE_MSG
        + ', values[1][a]: Invalid value: "%": '
        + VALUE_MSG
        + "]"
    )


def test_is_label_key_and_value() -> None:
    assert is_label_key("example.com/My.Name-1") == []
    assert is_label_key("") == ["name part must be non-empty", "name part " + KEY_REGEX_MSG]
    assert is_label_value("") == []
    assert is_label_value("a" * 64) == ["must be no more than 63 bytes"]


def test_label_selector_from_dict() -> None:
    assert label_selector_from_dict(None) is NOTHING
    assert not NOTHING.matches({})
    assert label_selector_from_dict({}) == EVERYTHING
    assert EVERYTHING.matches({"x": "y"}) and EVERYTHING.empty()
    sel = label_selector_from_dict(
        {
            "matchLabels": {"b": "1", "a": "2"},
            "matchExpressions": [
                {"key": "c", "operator": "In", "values": ["x", "y"]},
                {"key": "d", "operator": "DoesNotExist"},
                {"key": "e", "operator": "Exists"},
                {"key": "f", "operator": "NotIn", "values": ["z"]},
            ],
        }
    )
    assert str(sel) == "a=2,b=1,c in (x,y),!d,e,f notin (z)"
    assert sel.matches({"a": "2", "b": "1", "c": "y", "e": ""})
    assert not sel.matches({"a": "2", "b": "1", "c": "y", "e": "", "f": "z"})
    assert sel.requires_exact_match("a") == "2"
    assert sel.requires_exact_match("c") is None


@pytest.mark.parametrize(
    ("selector", "message"),
    [
        (
            {"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["1"]}]},
            '"Gt" is not a valid label selector operator',
        ),
        (
            {"matchExpressions": [{"key": "a", "operator": "In", "values": []}]},
            "values: Invalid value: []: for 'in', 'notin' operators, values set can't be empty",
        ),
        (
            {"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x", "<"]}]},
            '[values: Invalid value: ["x","\\u003c"]: values set must be empty for exists and does '
            'not exist, values[1][a]: Invalid value: "<": ' + VALUE_MSG + "]",
        ),
        ({"matchLabels": {"a b": "c"}}, 'key: Invalid value: "a b": name part ' + KEY_REGEX_MSG),
    ],
)
def test_label_selector_from_dict_errors(selector: dict[str, object], message: str) -> None:
    with pytest.raises(LabelSelectorError) as info:
        label_selector_from_dict(selector)
    assert str(info.value) == message


_label_names = st.from_regex(r"[a-z0-9]([a-z0-9._-]{0,10}[a-z0-9])?", fullmatch=True)
_keys = st.one_of(
    _label_names,
    st.builds(
        lambda p, n: f"{p}.io/{n}", st.from_regex(r"[a-z]{1,5}", fullmatch=True), _label_names
    ),
)
_values = st.one_of(st.just(""), _label_names)
_requirements = st.one_of(
    st.builds(
        lambda k, op, v: Requirement(k, op, (v,)),
        _keys,
        st.sampled_from(["=", "==", "!="]),
        _values,
    ),
    st.builds(
        lambda k, op, vs: Requirement(k, op, tuple(sorted(set(vs)))),
        _keys,
        st.sampled_from(["in", "notin"]),
        st.lists(_values, min_size=1, max_size=4),
    ),
    st.builds(lambda k, op: Requirement(k, op, ()), _keys, st.sampled_from(["exists", "!"])),
    st.builds(
        lambda k, op, n: Requirement(k, op, (str(n),)),
        _keys,
        st.sampled_from(["gt", "lt"]),
        st.integers(0, 999),
    ),
)


@settings(max_examples=200, deadline=None)
@given(st.lists(_requirements, max_size=5))
def test_label_selector_format_parse_round_trip(reqs: list[Requirement]) -> None:
    sel = LabelSelector(tuple(sorted(reqs, key=lambda r: r.key)))
    text = str(sel)
    parsed = parse_label_selector(text)
    assert str(parsed) == text
    assert parsed == sel


@settings(max_examples=200, deadline=None)
@given(st.lists(_requirements, max_size=4), st.dictionaries(_keys, _values, max_size=4))
def test_parsed_selector_matches_like_its_requirements(
    reqs: list[Requirement], labels: dict[str, str]
) -> None:
    sel = parse_label_selector(",".join(str(r) for r in reqs))
    assert sel.matches(labels) == all(r.matches(labels) for r in reqs)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=" \t!=(),<>abin-_./$", max_size=20))
def test_label_parser_never_fails_other_than_value_error(text: str) -> None:
    try:
        sel = parse_label_selector(text)
    except LabelSelectorError:
        return
    assert parse_label_selector(str(sel)) == sel


# ----------------------------------------------------------------------- field selectors


def test_field_selector_parse_and_match() -> None:
    sel = parse_field_selector("metadata.name=foo,status.phase!=Active,spec.x==y")
    assert [(r.field, r.operator, r.value) for r in sel.requirements] == [
        ("metadata.name", "=", "foo"),
        ("spec.x", "=", "y"),
        ("status.phase", "!=", "Active"),
    ]
    assert sel.matches({"metadata.name": "foo", "spec.x": "y", "status.phase": "Terminating"})
    assert not sel.matches({"metadata.name": "foo", "spec.x": "y", "status.phase": "Active"})
    assert parse_field_selector("spec.x=").matches({})  # a missing field reads as ""
    assert parse_field_selector("").empty()
    assert parse_field_selector(",,").empty()
    assert parse_field_selector("=").empty()
    assert str(sel) == "metadata.name=foo,spec.x=y,status.phase!=Active"


def test_field_selector_escaping() -> None:
    sel = parse_field_selector(r"a=x\,y\=z\\w")
    assert sel.requirements[0].value == "x,y=z\\w"
    assert str(sel) == r"a=x\,y\=z\\w"
    assert escape_field_value("a,b") == r"a\,b"
    assert unescape_field_value(r"a\,b") == "a,b"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("foo", "invalid selector: 'foo'; can't understand 'foo'"),
        ("b=1,foo", "invalid selector: 'b=1,foo'; can't understand 'foo'"),
        ("a=b=c", "invalid field selector: unescaped character in value: 61"),
        (r"a=b\c", "invalid field selector: invalid escape sequence: \\c"),
        ("a=b\\", "invalid field selector: invalid escape sequence: \\"),
    ],
)
def test_field_selector_errors(text: str, message: str) -> None:
    with pytest.raises(FieldSelectorError) as info:
        parse_field_selector(text)
    assert str(info.value) == message


def test_builtin_field_labels() -> None:
    assert convert_builtin_field_label("v1/ConfigMap", "metadata.namespace") == "metadata.namespace"
    with pytest.raises(FieldLabelError) as info:
        convert_builtin_field_label("v1/ConfigMap", "data.x")
    assert (
        str(info.value)
        == '"data.x" is not a known field selector: only "metadata.name", "metadata.namespace"'
    )
    with pytest.raises(FieldLabelError) as info:
        convert_builtin_field_label("v1/Namespace", "metadata.namespace")
    assert str(info.value) == "field label not supported: metadata.namespace"
    assert convert_builtin_field_label("v1/Namespace", "name") == "metadata.name"
    assert convert_builtin_field_label("Namespace", "status.phase") == "status.phase"
    assert (
        convert_builtin_field_label("events.k8s.io/Event", "regarding.uid") == "involvedObject.uid"
    )
    assert convert_builtin_field_label("v1/Secret", "type") == "type"
    assert (
        convert_builtin_field_label("events.k8s.io/v1/Event", "regarding.name")
        == "involvedObject.name"
    )
    assert (
        convert_builtin_field_label("events.k8s.io/v1/Event", "reportingController")
        == "reportingComponent"
    )
    with pytest.raises(FieldLabelError) as info:
        convert_builtin_field_label("events.k8s.io/v1/Event", "involvedObject.name")
    assert str(info.value) == "field label not supported: involvedObject.name"


def test_builtin_field_sets() -> None:
    core_event = {
        "metadata": {"name": "e", "namespace": "ns"},
        "involvedObject": {"kind": "Pod", "name": "p", "uid": "u"},
        "reason": "Started",
        "type": "Normal",
        "reportingComponent": "kubelet",
    }
    fields = builtin_field_set("v1/Event", core_event)
    assert fields["involvedObject.kind"] == "Pod"
    assert fields["involvedObject.fieldPath"] == ""
    assert fields["source"] == "kubelet"  # falls back to reportingComponent
    new_event = {
        "metadata": {"name": "e", "namespace": "ns"},
        "regarding": {"kind": "Pod", "name": "p"},
        "reportingController": "ctl",
        "deprecatedSource": {"component": "old"},
    }
    fields = builtin_field_set("events.k8s.io/v1/Event", new_event)
    assert fields["involvedObject.name"] == "p" and fields["reportingComponent"] == "ctl"
    assert fields["source"] == "old"
    ns = builtin_field_set(
        "v1/Namespace", {"metadata": {"name": "x"}, "status": {"phase": "Active"}}
    )
    assert ns == {"metadata.name": "x", "name": "x", "status.phase": "Active"}
    sel = parse_field_selector("name=x,status.phase=Active").transform(
        lambda f, v: (convert_builtin_field_label("v1/Namespace", f), v)
    )
    assert sel.matches(ns)


def test_custom_resource_fields() -> None:
    obj = {
        "metadata": {"name": "w", "namespace": "d"},
        "spec": {"color": "red", "size": 3, "on": True, "f": 1e6},
    }
    paths = [".spec.color", ".spec.size", ".spec.on", ".spec.f", ".spec.missing"]
    assert custom_resource_field_set(obj, namespaced=True, selectable_fields=paths) == {
        "metadata.name": "w",
        "metadata.namespace": "d",
        "spec.color": "red",
        "spec.size": "3",
        "spec.on": "true",
        "spec.f": "1e+06",
        "spec.missing": "",
    }
    assert custom_resource_field_set(obj, namespaced=False) == {"metadata.name": "w"}
    assert (
        convert_custom_field_label("spec.color", namespaced=True, selectable_fields=paths)
        == "spec.color"
    )
    with pytest.raises(FieldLabelError) as info:
        convert_custom_field_label("metadata.namespace", namespaced=False)
    assert str(info.value) == "field label not supported: metadata.namespace"
    assert field_value(obj, "spec.color") == "red"
    assert field_value(obj, "spec.color.x") is None


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (0.5, "0.5"),
        (1e6, "1e+06"),
        (123456.0, "123456"),
        (2.0, "2"),
        (1e-5, "1e-05"),
        (1.5e300, "1.5e+300"),
        (-0.25, "-0.25"),
    ],
)
def test_go_sprint_floats(value: float, text: str) -> None:
    assert go_sprint(value) == text
