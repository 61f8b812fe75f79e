"""core.yamlgo: YAML read as sigs.k8s.io/yaml (go-yaml v2) reads it."""

from __future__ import annotations

import time
from typing import Any

import pytest
import yaml

from kubewerk.core.yamlgo import (
    GoYAMLError,
    GoYAMLLoader,
    check_aliases,
    compose_document,
    compose_documents,
    go_error_text,
    may_have_aliases,
    node_value,
)


def read(text: str) -> Any:
    node = compose_document(text)
    assert node is not None
    check_aliases(node)
    return node_value(node)


def laughs(levels: int, fanout: int = 10) -> str:
    text = "l0: &l0 [" + ", ".join(["lol"] * fanout) + "]\n"
    for level in range(1, levels):
        text += f"l{level}: &l{level} [" + ", ".join([f"*l{level - 1}"] * fanout) + "]\n"
    return text


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("22:22", "22:22"),  # no base-60
        ("2001-12-14", "2001-12-14"),  # timestamps stay strings
        ("2001-12-14t21:59:43.10-05:00", "2001-12-14t21:59:43.10-05:00"),
        ("y", True),
        ("N", False),
        ("on", True),
        ("off", False),
        ("0777", 511),  # a leading 0 is octal
        ("0o17", 15),
        ("0x1F", 31),
        ("0b101", 5),
        ("1_000", 1000),
        ("9223372036854775808", 9.223372036854776e18),  # beyond int64: float64
        ("1" * 400, "1" * 400),  # beyond float64: the string as written
        ("1e3", 1000.0),
        ("~", None),
        ("!!binary aGVsbG8=", "hello"),
        ("!mine value", "value"),
        ("!!set {a, b}", {"a": None, "b": None}),
        ("'yes'", "yes"),
    ],
)
def test_scalars_as_go_yaml_reads_them(text: str, value: Any) -> None:
    assert read(f"v: {text}\n") == {"v": value}


def test_mapping_keys_become_strings() -> None:
    assert read("1: a\ntrue: b\nn: c\n1.5: d\n0.000001: e\n") == {
        "1": "a",
        "true": "b",
        "false": "c",
        "1.5": "d",
        "1e-06": "e",
    }
    for text, message in (
        ("~: a\n", "unsupported map key of type: <nil>"),
        ("[1]: a\n", "yaml: invalid map key: []interface {}"),
        ("{a: 1}: a\n", "yaml: invalid map key: map[string]interface {}"),
    ):
        with pytest.raises(GoYAMLError, match=message.replace("[", r"\[").replace("{", r"\{")):
            read(text)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("v: .nan\n", "json: unsupported value: NaN"),
        ("v: -.Inf\n", "json: unsupported value: -Inf"),
        ("v: !!bool maybe\n", "yaml: cannot decode !!str `maybe` as a !!bool"),
        ("v: !!binary '!!'\n", "yaml: !!binary value contains invalid base64 data"),
    ],
)
def test_refused_values_say_go_yaml_words_and_their_line(text: str, message: str) -> None:
    with pytest.raises(GoYAMLError) as info:
        read("a: 1\n" + text)
    assert str(info.value) == message and info.value.line == 2


def test_aliases_are_independent_copies() -> None:
    value = read("a: &x {k: [1]}\nb: *x\nc:\n  <<: *x\n  m: 2\n")
    assert value == {"a": {"k": [1]}, "b": {"k": [1]}, "c": {"k": [1], "m": 2}}
    value["a"]["k"].append(2)
    assert value["b"] == {"k": [1]} and value["c"]["k"] == [1]
    # merged mappings are copies too
    value = read("base: &b {x: [1]}\nd:\n  <<: *b\n  y: 3\ne: *b\n")
    value["base"]["x"].append(2)
    assert value["d"]["x"] == [1] and value["e"]["x"] == [1]


@pytest.mark.parametrize(
    "text", ["a: &s {me: *s}\n", "a: &s [*s]\n", "a: &s {<<: *s}\n", "a: &s\n  b:\n    <<: *s\n"]
)
def test_an_anchor_that_contains_itself_is_refused(text: str) -> None:
    node = compose_document(text)
    assert node is not None
    with pytest.raises(GoYAMLError, match=r"^yaml: anchor '.*' value contains itself$"):
        check_aliases(node)


def test_excessive_aliasing_is_refused_before_anything_is_expanded() -> None:
    for levels in (4, 9):
        node = compose_document(laughs(levels))
        assert node is not None
        started = time.perf_counter()
        with pytest.raises(GoYAMLError, match="yaml: document contains excessive aliasing"):
            check_aliases(node)
        assert time.perf_counter() - started < 1.0
    node = compose_document(laughs(2))
    assert node is not None and check_aliases(node)
    assert node_value(node)["l1"] == [["lol"] * 10] * 10
    plain = compose_document("a: [1]\n")
    assert plain is not None and not check_aliases(plain)
    scalar = compose_document("&a x # *a\n")
    assert scalar is not None and not check_aliases(scalar)
    scalars = compose_document("a: &x 1\nb: [" + ", ".join(["*x"] * 2000) + "]\n")
    assert scalars is not None and check_aliases(scalars)  # aliased scalars are seen
    assert node_value(scalars)["b"] == [1] * 2000  # and at most half the decoded nodes


def test_may_have_aliases_never_misses_one() -> None:
    for text in (
        "a: &x 1\nb: *x\n",
        "[&x 1, *x]",
        '{"a":&x 1, "b":*x}',
        "- &x 1\n- *x\n",
        "? &k a\n: *k\n",
        "&x a: 1\n*x : 2\n",
        "a:\n  &x\n  b: 1\nc:\n\t*x\n",
        "\ufeff&x a: *x",
    ):
        assert may_have_aliases(text), text
    for text in ("a: b && c\nd: '*emphasis*'\n", "a: x\n", "a: '&x'\nb: '*'\n", "p: .*\nq: a&b\n"):
        assert not may_have_aliases(text), text


def test_documents_and_errors() -> None:
    nodes = list(compose_documents("a: 1\n---\n---\nb: [x]\n"))
    assert [node_value(n) for n in nodes] == [{"a": 1}, None, {"b": ["x"]}]
    assert nodes[2].start_mark.line == 3
    assert compose_document("") is None
    with pytest.raises(yaml.YAMLError):
        compose_document("a: 1\n---\nb: 2\n")
    with pytest.raises(yaml.YAMLError) as info:
        compose_document("a: [1\nb: 2\n")
    assert go_error_text(info.value).startswith("yaml: line ")


@pytest.mark.parametrize(
    ("text", "value"),
    [
        # a merge key sets its mapping's keys where it stands (go-yaml v2's mapping):
        # it replaces the keys before it and is replaced by those after it
        ("b: &b {x: 1, z: 2}\nm: {x: 0, <<: *b, z: 3}\n", {"x": 1, "z": 3}),
        ("b: &b {x: 1}\nm: {<<: *b, x: 0}\n", {"x": 0}),
        # a sequence of mappings is merged from its last item: earlier items win
        ("a: &a {k: 1, j: 1}\nb: &b {k: 2, i: 2}\nm: {<<: [*a, *b]}\n", {"k": 1, "j": 1, "i": 2}),
        # merges nest: the merged mapping's own merge is set where it stands in it
        ("a: &a {k: 1}\nb: &b {<<: *a, k: 2}\nm: {<<: *b}\n", {"k": 2}),
        # a quoted "<<" is a plain key
        ("m: {'<<': {k: 1}}\n", {"<<": {"k": 1}}),
    ],
    ids=["after-explicit", "before-explicit", "sequence", "nested", "quoted"],
)
def test_merge_keys_are_set_in_document_order(text: str, value: Any) -> None:
    assert read(text)["m"] == value
    # the constructors (which read documents with unusual tags) keep the same rule
    node = compose_document(text)
    assert node is not None
    loader = GoYAMLLoader("")
    try:
        assert loader.construct_document(node)["m"] == value
    finally:
        loader.dispose()


@pytest.mark.parametrize("text", ["m: {<<: 1}\n", "m: {<<: [1]}\n", "m: {<<: [{a: 1}, [2]]}\n"])
def test_a_merge_of_what_is_not_a_mapping_is_go_yamls_error(text: str) -> None:
    with pytest.raises(GoYAMLError) as info:
        read(text)
    assert str(info.value) == "yaml: map merge requires map or sequence of maps as the value"
