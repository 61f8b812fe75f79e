"""The compiled selector matchers answer exactly as requirement-by-requirement matching.

``reference_label_match`` / ``reference_field_match`` below are the straightforward
evaluation Kubernetes does (``labels.internalSelector.Matches`` over
``labels.Requirement.Matches``, ``fields.andTerm.Matches``); the matchers in
``kubewerk.core.selector_match`` must give the same answer for every selector and label
set. Selectors and label sets are drawn from small alphabets so that keys and values
collide, requirements contradict and merge, and every operator meets present, absent,
numeric, non-numeric and out-of-range values.
"""

from __future__ import annotations

import random
import re
from collections.abc import Mapping

import pytest

from kubewerk.core.selector_match import FieldMatcher, LabelMatcher, parse_int64
from kubewerk.core.selectors import (
    FieldRequirement,
    FieldSelector,
    LabelSelector,
    Requirement,
    parse_field_selector,
    parse_label_selector,
)

_GO_INT64 = re.compile(r"[+-]?[0-9]+")


def reference_parse_int64(text: str) -> int | None:
    """``strconv.ParseInt(text, 10, 64)`` written out the slow, obvious way."""
    if not _GO_INT64.fullmatch(text):
        return None
    digits = text.lstrip("+-")
    value = 0
    for ch in digits:
        value = value * 10 + (ord(ch) - 48)
        if value > 2**63:
            return None
    if text.startswith("-"):
        value = -value
    return value if -(2**63) <= value <= 2**63 - 1 else None


def reference_requirement_match(req: Requirement, labels: Mapping[str, str]) -> bool:
    """``labels.Requirement.Matches``, one requirement at a time."""
    op = req.operator
    present = req.key in labels
    if op in ("in", "=", "=="):
        return present and labels[req.key] in req.values
    if op in ("notin", "!="):
        return not present or labels[req.key] not in req.values
    if op == "exists":
        return present
    if op == "!":
        return not present
    if op in ("gt", "lt"):
        if not present:
            return False
        have = reference_parse_int64(labels[req.key])
        if have is None or len(req.values) != 1:
            return False
        want = reference_parse_int64(req.values[0])
        if want is None:
            return False
        return have > want if op == "gt" else have < want
    return False


def reference_label_match(sel: LabelSelector, labels: Mapping[str, str]) -> bool:
    """``labels.internalSelector.Matches``: every requirement, in turn."""
    if sel.nothing:
        return False
    return all(reference_requirement_match(r, labels) for r in sel.requirements)


def reference_field_match(sel: FieldSelector, fields: Mapping[str, str]) -> bool:
    """``fields.andTerm.Matches`` over ``hasTerm`` / ``notHasTerm``."""
    for req in sel.requirements:
        have = fields.get(req.field, "")
        if (have == req.value) != (req.operator == "="):
            return False
    return True


KEYS = ("a", "b", "c", "example.com/d")
VALUES = ("", "x", "y", "0", "1", "2", "-1", "+2", "007", "9223372036854775807", "9" * 25, "1x")
OPERATORS = ("in", "notin", "=", "==", "!=", "exists", "!", "gt", "lt")


def _random_requirement(rnd: random.Random, *, odd: bool) -> Requirement:
    """One requirement; ``odd`` also builds ones ``new_requirement`` would refuse (an
    empty ``in``, ``gt`` with two or non-integer values, an unknown operator), which a
    ``Requirement`` built directly may hold."""
    key = rnd.choice(KEYS)
    op = rnd.choice((*OPERATORS, "bogus") if odd else OPERATORS)
    if op in ("exists", "!"):
        values: tuple[str, ...] = ()
    elif op in ("=", "==", "!="):
        values = (rnd.choice(VALUES),)
    elif op in ("gt", "lt"):
        values = (rnd.choice(("0", "1", "2", "-1", "5")),)
        if odd and rnd.random() < 0.3:
            values = rnd.choice(((), ("1", "2"), ("x",), ("9" * 25,)))
    else:
        values = tuple(rnd.sample(VALUES, rnd.randint(0 if odd else 1, 4)))
    return Requirement(key, op, values)


def _random_labels(rnd: random.Random) -> dict[str, str]:
    keys = rnd.sample((*KEYS, "e", "f"), rnd.randint(0, 6))
    return {k: rnd.choice(VALUES) for k in keys}


@pytest.mark.parametrize("seed", range(8))
def test_label_matcher_equals_reference(seed: int) -> None:
    rnd = random.Random(seed)
    checked = 0
    for _ in range(400):
        odd = rnd.random() < 0.2
        reqs = tuple(_random_requirement(rnd, odd=odd) for _ in range(rnd.randint(0, 7)))
        sel = LabelSelector(reqs, nothing=rnd.random() < 0.03)
        for _ in range(12):
            labels = _random_labels(rnd)
            assert sel.matches(labels) == reference_label_match(sel, labels), (sel, labels)
            checked += 1
    assert checked == 400 * 12


def test_label_matcher_matches_both_ways() -> None:
    """The random draw reaches matches and non-matches, through both walks (rules and
    labels) of the matcher, so the equivalence above is not vacuous."""
    rnd = random.Random(99)
    outcomes = set()
    for _ in range(2000):
        reqs = tuple(_random_requirement(rnd, odd=False) for _ in range(rnd.randint(1, 6)))
        labels = _random_labels(rnd)
        sel = LabelSelector(reqs)
        walk = "rules" if len({r.key for r in reqs}) <= len(labels) else "labels"
        outcomes.add((walk, sel.matches(labels)))
    assert outcomes == {("rules", True), ("rules", False), ("labels", True), ("labels", False)}


@pytest.mark.parametrize(
    ("text", "labels", "expected"),
    [
        # contradicting and merging requirements on one key
        ("a=x,a=y", {"a": "x"}, False),
        ("a in (x,y),a in (y,z)", {"a": "y"}, True),
        ("a in (x,y),a notin (x,y)", {"a": "x"}, False),
        ("a,!a", {"a": "x"}, False),
        ("a,!a", {}, False),
        ("!a,!a", {}, True),
        ("a>1,a<3", {"a": "2"}, True),
        ("a>1,a<2", {"a": "2"}, False),
        ("a>1,a>5", {"a": "3"}, False),
        ("a<5,a<1", {"a": "0"}, True),
        ("a>0", {"a": "+1"}, True),
        ("a<0", {"a": "-0"}, False),
        ("a>1", {"a": "007"}, True),
        ("a<1", {"a": "9223372036854775808"}, False),  # out of int64: ParseInt fails
        ("a>1", {"a": "9" * 5000}, False),  # a huge number is not converted
        ("a!=x,b", {"b": ""}, True),
        ("a notin (x),b notin (y)", {}, True),
        ("a notin (x),b notin (y),c", {"c": "1", "a": "x"}, False),
    ],
)
def test_merged_requirements(text: str, labels: dict[str, str], expected: bool) -> None:
    sel = parse_label_selector(text)
    assert sel.matches(labels) is expected
    assert reference_label_match(sel, labels) is expected


def test_odd_requirements_match_nothing_or_everything_as_kubernetes() -> None:
    empty_in = LabelSelector((Requirement("a", "in", ()),))
    empty_notin = LabelSelector((Requirement("a", "notin", ()),))
    two_bounds = LabelSelector((Requirement("a", "gt", ("1", "2")),))
    bogus = LabelSelector((Requirement("a", "like", ("x",)),))
    assert not empty_in.matches({"a": ""})
    assert empty_notin.matches({"a": ""}) and empty_notin.matches({})
    assert not two_bounds.matches({"a": "5"})
    assert not bogus.matches({"a": "x"})
    assert LabelMatcher(bogus.requirements).never
    assert not LabelMatcher(empty_notin.requirements).never


def test_non_string_label_values_equal_no_value() -> None:
    """A malformed label set (a number or list as a value) is read without an error:
    such a value is in no value set, so only ``notin``/``!=``/``exists`` pass."""
    for labels in ({"a": 1}, {"a": ["x"]}, {"a": None}):
        for text, expected in (("a=x", False), ("a!=x", True), ("a", True), ("a>0", False)):
            assert parse_label_selector(text).matches(labels) is expected  # type: ignore[arg-type]


def test_selector_equality_ignores_the_compiled_matcher() -> None:
    one = parse_label_selector("a=b,c")
    two = parse_label_selector("a=b,c")
    one.matches({"a": "b"})
    assert one == two and hash(one) == hash(two) and repr(one) == repr(two)


FIELDS = ("metadata.name", "metadata.namespace", "spec.x")
FIELD_VALUES = ("", "a", "b", "a,b")


@pytest.mark.parametrize("seed", range(4))
def test_field_matcher_equals_reference(seed: int) -> None:
    rnd = random.Random(seed)
    for _ in range(400):
        reqs = tuple(
            FieldRequirement(rnd.choice(FIELDS), rnd.choice(("=", "!=")), rnd.choice(FIELD_VALUES))
            for _ in range(rnd.randint(0, 6))
        )
        sel = FieldSelector(reqs)
        for _ in range(8):
            fields = {f: rnd.choice(FIELD_VALUES) for f in rnd.sample(FIELDS, rnd.randint(0, 3))}
            assert sel.matches(fields) == reference_field_match(sel, fields), (sel, fields)


def test_field_matcher_contradictions() -> None:
    assert FieldMatcher(parse_field_selector("a=x,a=y").requirements).never
    assert FieldMatcher(parse_field_selector("a=x,a!=x").requirements).never
    assert not FieldMatcher(parse_field_selector("a=x,a!=y").requirements).never
    sel = parse_field_selector("a!=,b=")
    assert not sel.matches({}) and sel.matches({"a": "1"}) and not sel.matches({"a": "1", "b": "2"})


INT64_TEXTS = (
    *("0", "-0", "+7", "007", "9223372036854775807", "-9223372036854775808", "0" * 40 + "1"),
    *("9223372036854775808", "-9223372036854775809", "1" * 5000, "", "+", "1_0", "0x1", " 1"),
)


@pytest.mark.parametrize("text", INT64_TEXTS)
def test_parse_int64_as_go(text: str) -> None:
    assert parse_int64(text) == reference_parse_int64(text)
