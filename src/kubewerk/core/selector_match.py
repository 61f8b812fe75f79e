"""Compiled label and field selector matchers: per-object cost bounded by the object.

A selector is the AND of its requirements, and Kubernetes evaluates it as such
(``labels.internalSelector.Matches`` loops over every requirement). Evaluated that way,
a selector of thousands of requirements costs thousands of steps per object, and a LIST
over many objects holds the server for seconds. The matchers here give exactly the same
answers (``labels.Requirement.Matches`` and ``fields.Selector.Matches`` semantics) at a
cost per object of at most ``min(labels on the object, distinct keys in the selector)``
dictionary look-ups:

- the requirements are grouped by key once, when the matcher is built, into one
  :class:`KeyRule` per key: whether the key must be present (``=``, ``==``, ``in``,
  ``exists``, ``gt``, ``lt``) or absent (``!``), the values it must be one of (the
  intersection of the ``=``/``in`` sets), the values it must not be (the union of the
  ``!=``/``notin`` sets) and the exclusive integer bounds of ``gt``/``lt``;
- a requirement that no label set satisfies (``in ()`` built directly, a ``gt`` whose
  value is not one integer, an unknown operator, contradicting keys) makes the whole
  matcher match nothing;
- an object with fewer labels than the selector has required keys is rejected at once;
  otherwise the shorter of the two (the object's labels, the rules) is walked.

Only the label-set argument is read; the matchers hold no reference to it and keep no
state between calls, so one matcher may be shared between threads.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Final, Protocol

__all__ = [
    "DOES_NOT_EXIST",
    "DOUBLE_EQUALS",
    "EQUALS",
    "EXISTS",
    "GREATER_THAN",
    "IN",
    "LESS_THAN",
    "NOT_EQUALS",
    "NOT_IN",
    "FieldMatcher",
    "KeyRule",
    "LabelMatcher",
    "parse_int64",
]

# selection.Operator values
IN: Final = "in"
NOT_IN: Final = "notin"
EQUALS: Final = "="
DOUBLE_EQUALS: Final = "=="
NOT_EQUALS: Final = "!="
EXISTS: Final = "exists"
DOES_NOT_EXIST: Final = "!"
GREATER_THAN: Final = "gt"
LESS_THAN: Final = "lt"

_INT64_RE: Final = re.compile(r"[+-]?[0-9]+")
_INT64_MIN: Final = -(2**63)
_INT64_MAX: Final = 2**63 - 1
# more digits than any int64 has (19, plus a sign and leading zeros are allowed by Go):
# the number is out of range, or all its extra digits are zeros; both checked below
_INT64_DIGITS: Final = 19


def parse_int64(text: str) -> int | None:
    """Go's ``strconv.ParseInt(text, 10, 64)``; ``None`` where Go reports an error.

    Leading zeros are allowed, as in Go. The text is converted only when it is a decimal
    integer in range, so a huge run of digits costs one regex scan, not a big-int parse.
    """
    if not _INT64_RE.fullmatch(text):
        return None
    digits = text.lstrip("+-").lstrip("0")
    if len(digits) > _INT64_DIGITS:
        return None
    value = int(text)
    if value < _INT64_MIN or value > _INT64_MAX:
        return None
    return value


class LabelRequirementLike(Protocol):
    """What a matcher reads of a label requirement (``selectors.Requirement``)."""

    @property
    def key(self) -> str: ...

    @property
    def operator(self) -> str: ...

    @property
    def values(self) -> tuple[str, ...]: ...


class FieldRequirementLike(Protocol):
    """What a matcher reads of a field requirement (``selectors.FieldRequirement``)."""

    @property
    def field(self) -> str: ...

    @property
    def operator(self) -> str: ...

    @property
    def value(self) -> str: ...


class KeyRule:
    """Everything a selector requires of one label key, merged from its requirements.

    :meth:`accepts` tells whether a present value satisfies all of them; whether the key
    may be absent is ``not required`` (``!=``, ``notin`` and ``!`` pass on an absent key,
    every other operator fails).
    """

    __slots__ = ("absent", "allowed", "denied", "high", "low", "numeric", "required")

    def __init__(self) -> None:
        self.required = False  # =, ==, in, exists, gt, lt
        self.absent = False  # !
        self.allowed: frozenset[str] | None = None  # = / == / in: one of these
        self.denied: set[str] = set()  # != / notin: none of these
        self.numeric = False  # gt / lt: the value must be an int64
        self.low: int | None = None  # gt: value > low
        self.high: int | None = None  # lt: value < high

    def add(self, operator: str, values: tuple[str, ...]) -> bool:
        """Merge one requirement (before :meth:`seal`); False when no label set can
        satisfy that requirement alone."""
        if operator in (IN, EQUALS, DOUBLE_EQUALS):
            self.required = True
            given = frozenset(values)
            self.allowed = given if self.allowed is None else self.allowed & given
            return bool(self.allowed)
        if operator in (NOT_IN, NOT_EQUALS):
            self.denied.update(values)
            return True
        if operator == EXISTS:
            self.required = True
            return True
        if operator == DOES_NOT_EXIST:
            self.absent = True
            return True
        if operator in (GREATER_THAN, LESS_THAN):
            self.required = True
            self.numeric = True
            bound = parse_int64(values[0]) if len(values) == 1 else None
            if bound is None:
                return False
            if operator == GREATER_THAN:
                self.low = bound if self.low is None else max(self.low, bound)
            else:
                self.high = bound if self.high is None else min(self.high, bound)
            return True
        return False  # labels.Requirement.Matches: an unknown operator matches nothing

    def seal(self) -> bool:
        """End merging; False when the merged requirements contradict (present and
        absent, say), so that no label set satisfies them."""
        if self.required and self.absent:
            return False
        if self.low is not None and self.high is not None and self.high - self.low < 2:
            return False  # no integer strictly between them
        return self.allowed is None or not self.allowed <= self.denied

    def accepts(self, value: object) -> bool:
        """True when a label with this value satisfies every requirement on the key."""
        if self.absent:
            return False
        if not isinstance(value, str):
            # a label value is a string; anything else equals none of the values
            return self.allowed is None and not self.numeric
        if self.allowed is not None and value not in self.allowed:
            return False
        if value in self.denied:
            return False
        if self.numeric:
            number = parse_int64(value)
            if number is None:
                return False
            if self.low is not None and number <= self.low:
                return False
            if self.high is not None and number >= self.high:
                return False
        return True


class LabelMatcher:
    """A compiled label selector: ``matches`` answers as ``labels.Selector.Matches``.

    Build with the selector's requirements (any order, duplicates allowed) and
    ``nothing=True`` for ``labels.Nothing()``. Building costs O(total values); each
    :meth:`matches` costs O(min(len(labels), distinct keys)) look-ups.
    """

    __slots__ = ("_never", "_required", "_rules")

    def __init__(self, requirements: Iterable[LabelRequirementLike], *, nothing: bool = False):
        rules: dict[str, KeyRule] = {}
        never = nothing
        for req in requirements:
            rule = rules.get(req.key)
            if rule is None:
                rule = rules[req.key] = KeyRule()
            if not rule.add(req.operator, req.values):
                never = True
        if not all([rule.seal() for rule in rules.values()]):
            never = True
        self._never = never
        self._rules = {} if never else rules
        self._required = sum(1 for rule in rules.values() if rule.required)

    @property
    def never(self) -> bool:
        """True when no label set matches."""
        return self._never

    def matches(self, labels: Mapping[str, str]) -> bool:
        """True if ``labels`` satisfies every requirement of the selector."""
        if self._never:
            return False
        rules = self._rules
        if not rules:
            return True
        required = self._required
        if len(labels) < required:
            return False  # some required key is surely missing
        if len(rules) <= len(labels):
            for key, rule in rules.items():
                if key in labels:
                    if not rule.accepts(labels[key]):
                        return False
                elif rule.required:
                    return False
            return True
        found = 0
        for key, value in labels.items():
            on_key = rules.get(key)
            if on_key is not None:
                if not on_key.accepts(value):
                    return False
                if on_key.required:
                    found += 1
        return found == required


class FieldMatcher:
    """A compiled field selector: ``matches`` answers as ``fields.Selector.Matches``.

    Terms are grouped by field: at most one value a field must equal (two different ones
    contradict) and the set of values it must not equal. A field the set does not hold
    reads as ``""``, as ``fields.Set.Get`` does. Each :meth:`matches` costs one look-up
    per distinct field of the selector (the API server's conversion admits only the few
    field labels a kind supports).
    """

    __slots__ = ("_never", "_rules")

    def __init__(self, requirements: Iterable[FieldRequirementLike]) -> None:
        wanted: dict[str, str] = {}
        denied: dict[str, set[str]] = {}
        never = False
        for req in requirements:
            if req.operator == "=":
                have = wanted.setdefault(req.field, req.value)
                if have != req.value:
                    never = True
            else:
                denied.setdefault(req.field, set()).add(req.value)
        for field, value in wanted.items():
            if value in denied.get(field, ()):
                never = True
        self._never = never
        fields = list(wanted) + [field for field in denied if field not in wanted]
        self._rules: tuple[tuple[str, str | None, frozenset[str]], ...] = tuple(
            (field, wanted.get(field), frozenset(denied.get(field, ()))) for field in fields
        )

    @property
    def never(self) -> bool:
        """True when no field set matches."""
        return self._never

    def matches(self, fields: Mapping[str, str]) -> bool:
        """True if every term holds for ``fields`` (a missing field reads as ``""``)."""
        if self._never:
            return False
        for field, want, denied in self._rules:
            have = fields.get(field, "")
            if want is not None and have != want:
                return False
            if have in denied:
                return False
        return True
