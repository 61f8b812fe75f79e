"""Label and field selectors with Kubernetes' exact grammar, matching and error texts.

Behaviour follows k8s.io/apimachinery v0.36 (Kubernetes 1.36): ``pkg/labels/selector.go``
(the label selector lexer/parser and ``NewRequirement``), ``pkg/apis/meta/v1/helpers.go``
(``LabelSelectorAsSelector``), ``pkg/fields/selector.go`` (field selector parsing and
escaping) and the field-label conversion functions the API server applies before it
filters a list (``runtime.DefaultMetaV1FieldSelectorConversion``, the core/v1 and
events.k8s.io/v1 conversions, and apiextensions' ``crConverter.ConvertFieldLabel``).

Errors are ``ValueError`` subclasses whose ``str()`` is exactly the text Kubernetes puts
into the ``message`` of the ``400 BadRequest`` ``Status`` it answers with (the API
server wraps the parse error verbatim: ``errors.NewBadRequest(err.Error())``), e.g.::

    unable to parse requirement: <nil>: Invalid value: "a/b/c": a valid label key ...
    found 'b', expected: ',' or 'end of string'
    invalid selector: 'foo'; can't understand 'foo'
    field label not supported: spec.color
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from typing import Any, Final

from kubewerk.core.gofmt import go_quote, go_sprint
from kubewerk.core.selector_match import (
    DOES_NOT_EXIST,
    DOUBLE_EQUALS,
    EQUALS,
    EXISTS,
    GREATER_THAN,
    IN,
    LESS_THAN,
    NOT_EQUALS,
    NOT_IN,
    FieldMatcher,
    LabelMatcher,
    parse_int64,
)

__all__ = [
    "EVERYTHING",
    "NOTHING",
    "FieldLabelError",
    "FieldRequirement",
    "FieldSelector",
    "FieldSelectorError",
    "LabelSelector",
    "LabelSelectorError",
    "Requirement",
    "builtin_field_set",
    "canonical_kind_key",
    "convert_builtin_field_label",
    "convert_custom_field_label",
    "custom_resource_field_set",
    "escape_field_value",
    "field_value",
    "go_sprint",
    "is_label_key",
    "is_label_value",
    "kind_key",
    "label_selector_from_dict",
    "new_requirement",
    "parse_field_selector",
    "parse_label_selector",
    "supported_field_labels",
    "unescape_field_value",
]


class LabelSelectorError(ValueError):
    """A label selector Kubernetes rejects; ``str()`` is Kubernetes' exact message."""


class FieldSelectorError(ValueError):
    """A field selector Kubernetes cannot parse; ``str()`` is Kubernetes' exact message."""


class FieldLabelError(ValueError):
    """A field selector naming a field the resource does not support (also a 400)."""


# --------------------------------------------------------------------------------------
# label key / value syntax (k8s.io/apimachinery/pkg/api/validate/content/kube.go)

_DNS1123_LABEL_FMT: Final = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_SUBDOMAIN_FMT: Final = _DNS1123_LABEL_FMT + "(\\." + _DNS1123_LABEL_FMT + ")*"
_DNS1123_SUBDOMAIN_RE: Final = re.compile(_DNS1123_SUBDOMAIN_FMT)
_DNS1123_SUBDOMAIN_MSG: Final = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
    "'-' or '.', and must start and end with an alphanumeric character"
)
_LABEL_KEY_FMT: Final = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_LABEL_KEY_RE: Final = re.compile(_LABEL_KEY_FMT)
_LABEL_KEY_MSG: Final = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
    "with an alphanumeric character"
)
_LABEL_VALUE_FMT: Final = "(" + _LABEL_KEY_FMT + ")?"
_LABEL_VALUE_RE: Final = re.compile(_LABEL_VALUE_FMT)
_LABEL_VALUE_MSG: Final = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', "
    "'_' or '.', and must start and end with an alphanumeric character"
)


def regex_error(msg: str, fmt: str, *examples: str) -> str:
    """``content.RegexError``: the message, examples and the regex Kubernetes prints."""
    if not examples:
        return f"{msg} (regex used for validation is '{fmt}')"
    shown = " or ".join(f"'{e}', " for e in examples)
    return f"{msg} (e.g. {shown}regex used for validation is '{fmt}')"


def max_len_error(length: int) -> str:
    """``content.MaxLenError``."""
    return f"must be no more than {length} bytes"


def _byte_len(value: str) -> int:
    return len(value.encode("utf-8", "surrogatepass"))


def _is_dns1123_subdomain(value: str) -> list[str]:
    errs: list[str] = []
    if _byte_len(value) > 253:
        errs.append(max_len_error(253))
    if not _DNS1123_SUBDOMAIN_RE.fullmatch(value):
        errs.append(regex_error(_DNS1123_SUBDOMAIN_MSG, _DNS1123_SUBDOMAIN_FMT, "example.com"))
    return errs


def is_label_key(value: str) -> list[str]:
    """``content.IsLabelKey`` (a.k.a. ``IsQualifiedName``): the error strings, or ``[]``."""
    errs: list[str] = []
    parts = value.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errs.append("prefix part must be non-empty")
        else:
            errs.extend("prefix part " + m for m in _is_dns1123_subdomain(prefix))
    else:
        return [
            "a valid label key "
            + regex_error(_LABEL_KEY_MSG, _LABEL_KEY_FMT, "MyName", "my.name", "123-abc")
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    if not name:
        errs.append("name part must be non-empty")
    elif _byte_len(name) > 63:
        errs.append("name part " + max_len_error(63))
    if not _LABEL_KEY_RE.fullmatch(name):
        errs.append(
            "name part "
            + regex_error(_LABEL_KEY_MSG, _LABEL_KEY_FMT, "MyName", "my.name", "123-abc")
        )
    return errs


def is_label_value(value: str) -> list[str]:
    """``content.IsLabelValue``: the error strings, or ``[]``."""
    errs: list[str] = []
    if _byte_len(value) > 63:
        errs.append(max_len_error(63))
    if not _LABEL_VALUE_RE.fullmatch(value):
        errs.append(regex_error(_LABEL_VALUE_MSG, _LABEL_VALUE_FMT, "MyValue", "my_value", "12345"))
    return errs


# --------------------------------------------------------------------------------------
# rendering helpers for field.Error messages


def _go_json(value: Any) -> str:
    """Go's ``json.Marshal`` text (HTML-escaping, compact) for a bad value."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _field_invalid(path: str, value: Any, detail: str) -> str:
    """``field.Invalid(path, value, detail).Error()`` with field.Error's value rendering."""
    if isinstance(value, str):
        shown = go_quote(value)
    elif value is None:
        shown = "null"
    else:
        shown = _go_json(value)
    return f"{path}: Invalid value: {shown}: {detail}"


def _field_not_supported(path: str, value: str, valid: Sequence[str]) -> str:
    quoted = ", ".join(go_quote(v) for v in valid)
    return f"{path}: Unsupported value: {go_quote(value)}: supported values: {quoted}"


def _aggregate(messages: Sequence[str]) -> str:
    """``utilerrors.NewAggregate(...).Error()``: one message, or ``[a, b]`` deduplicated."""
    seen: list[str] = []
    for msg in messages:
        if msg not in seen:
            seen.append(msg)
    if len(seen) == 1:
        return seen[0]
    return "[" + ", ".join(seen) + "]"


# --------------------------------------------------------------------------------------
# label selectors

# the selection.Operator values are those of selector_match (imported above)
_BINARY_OPERATORS: Final = (IN, NOT_IN, EQUALS, DOUBLE_EQUALS, NOT_EQUALS, GREATER_THAN, LESS_THAN)
_VALID_OPERATORS: Final = (*_BINARY_OPERATORS, EXISTS, DOES_NOT_EXIST)


def _join_path(path: str | None, child: str) -> str:
    return child if path is None else f"{path}.{child}"


@dataclass(frozen=True, slots=True)
class Requirement:
    """One label requirement (``labels.Requirement``): a key, an operator, values.

    ``operator`` is a ``selection.Operator`` value: ``in``, ``notin``, ``=``, ``==``,
    ``!=``, ``exists``, ``!`` (does not exist), ``gt`` or ``lt``. ``values`` keeps the
    order given; ``str()`` sorts them, as Kubernetes does.
    """

    key: str
    operator: str
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        """``Requirement.Matches``: NotIn and ``!=`` also match when the key is absent."""
        op = self.operator
        if op in (IN, EQUALS, DOUBLE_EQUALS):
            return self.key in labels and labels[self.key] in self.values
        if op in (NOT_IN, NOT_EQUALS):
            return self.key not in labels or labels[self.key] not in self.values
        if op == EXISTS:
            return self.key in labels
        if op == DOES_NOT_EXIST:
            return self.key not in labels
        if op in (GREATER_THAN, LESS_THAN):
            if self.key not in labels or len(self.values) != 1:
                return False
            have = parse_int64(labels[self.key])
            want = parse_int64(self.values[0])
            if have is None or want is None:
                return False
            return have > want if op == GREATER_THAN else have < want
        return False

    def __str__(self) -> str:
        """``Requirement.String()``: ``k in (a,b)``, ``k=v``, ``!k``, ``k>3`` ..."""
        op = self.operator
        if op == DOES_NOT_EXIST:
            return "!" + self.key
        if op == EXISTS:
            return self.key
        symbol = {
            EQUALS: "=",
            DOUBLE_EQUALS: "==",
            NOT_EQUALS: "!=",
            IN: " in ",
            NOT_IN: " notin ",
            GREATER_THAN: ">",
            LESS_THAN: "<",
        }.get(op, "")
        values = self.values[0] if len(self.values) == 1 else ",".join(sorted(self.values))
        if op in (IN, NOT_IN):
            values = f"({values})"
        return self.key + symbol + values


def new_requirement(
    key: str, operator: str, values: Iterable[str], *, path: str | None = None
) -> Requirement:
    """``labels.NewRequirement``: validate and build one requirement.

    ``path`` is the field path the errors are reported under (``None`` as in the query
    string parser and ``LabelSelectorAsSelector``, so that fields read ``key``,
    ``values`` and ``values[0][key]``). Raises ``LabelSelectorError`` with the aggregated
    message, exactly as Kubernetes' aggregated ``field.ErrorList``.
    """
    vals = list(values)
    errors: list[str] = []
    key_errs = is_label_key(key)
    if key_errs:
        errors.append(_field_invalid(_join_path(path, "key"), key, "; ".join(key_errs)))
    values_path = _join_path(path, "values")
    if operator in (IN, NOT_IN):
        if not vals:
            errors.append(
                _field_invalid(
                    values_path, vals, "for 'in', 'notin' operators, values set can't be empty"
                )
            )
    elif operator in (EQUALS, DOUBLE_EQUALS, NOT_EQUALS):
        if len(vals) != 1:
            errors.append(
                _field_invalid(
                    values_path, vals, "exact-match compatibility requires one single value"
                )
            )
    elif operator in (EXISTS, DOES_NOT_EXIST):
        if vals:
            errors.append(
                _field_invalid(
                    values_path, vals, "values set must be empty for exists and does not exist"
                )
            )
    elif operator in (GREATER_THAN, LESS_THAN):
        if len(vals) != 1:
            errors.append(
                _field_invalid(
                    values_path, vals, "for 'Gt', 'Lt' operators, exactly one value is required"
                )
            )
        for i, val in enumerate(vals):
            if parse_int64(val) is None:
                errors.append(
                    _field_invalid(
                        f"{values_path}[{i}]",
                        val,
                        "for 'Gt', 'Lt' operators, the value must be an integer",
                    )
                )
    else:
        errors.append(
            _field_not_supported(_join_path(path, "operator"), operator, _VALID_OPERATORS)
        )
    for i, val in enumerate(vals):
        value_errs = is_label_value(val)
        if value_errs:
            errors.append(_field_invalid(f"{values_path}[{i}][{key}]", val, "; ".join(value_errs)))
    if errors:
        raise LabelSelectorError(_aggregate(errors))
    return Requirement(key, operator, tuple(vals))


@dataclass(frozen=True, slots=True)
class LabelSelector:
    """A label selector: the AND of its requirements, sorted by key.

    ``nothing=True`` is ``labels.Nothing()`` (a nil ``metav1.LabelSelector``), which
    matches no object; no requirements and ``nothing=False`` is ``labels.Everything()``.
    """

    requirements: tuple[Requirement, ...] = ()
    nothing: bool = False
    _matcher: LabelMatcher | None = dataclass_field(
        default=None, init=False, repr=False, compare=False, hash=False
    )

    def matches(self, labels: Mapping[str, str]) -> bool:
        """True if every requirement matches ``labels`` (``labels.Selector.Matches``).

        The requirements are compiled into a :class:`LabelMatcher` on first use, so a
        call costs O(min(len(labels), distinct keys)), whatever the number of requirements.
        """
        matcher = self._matcher
        if matcher is None:
            matcher = LabelMatcher(self.requirements, nothing=self.nothing)
            object.__setattr__(self, "_matcher", matcher)  # a cache: equal either way
        return matcher.matches(labels)

    def empty(self) -> bool:
        """``Selector.Empty()``: True when the selector does not restrict anything."""
        return not self.nothing and not self.requirements

    def requires_exact_match(self, key: str) -> str | None:
        """``RequiresExactMatch``: the single value ``key`` must have, if the selector fixes it."""
        for req in self.requirements:
            if req.key == key:
                if req.operator in (EQUALS, DOUBLE_EQUALS, IN) and len(req.values) == 1:
                    return req.values[0]
                return None
        return None

    def __str__(self) -> str:
        """``Selector.String()``; parsing it again gives an equal selector."""
        return ",".join(str(r) for r in self.requirements)


EVERYTHING: Final = LabelSelector()
NOTHING: Final = LabelSelector(nothing=True)

# lexer tokens
(
    _T_EOS,
    _T_CLOSE,
    _T_COMMA,
    _T_NOT,
    _T_DEQ,
    _T_EQ,
    _T_GT,
    _T_ID,
    _T_IN,
    _T_LT,
    _T_NEQ,
    _T_NOTIN,
    _T_OPEN,
) = range(13)
_STRING_TO_TOKEN: Final = {
    ")": _T_CLOSE,
    ",": _T_COMMA,
    "!": _T_NOT,
    "==": _T_DEQ,
    "=": _T_EQ,
    ">": _T_GT,
    "in": _T_IN,
    "<": _T_LT,
    "!=": _T_NEQ,
    "notin": _T_NOTIN,
    "(": _T_OPEN,
}
# One token of labels.Lexer after the blanks before it, in NUL-free text (see
# _without_nul): the longest special-symbol token (only "==" and "!=" have two symbols, so
# a run of symbols splits greedily into them), or an identifier/keyword up to the next
# symbol or blank.
_TOKEN_RE: Final = re.compile(r"[ \t\r\n]*(==|!=|[=!(),<>]|[^ \t\r\n=!(),<>]+)")
# a NUL where labels.Lexer starts a token: the end of its input
_EOS_NUL_RE: Final = re.compile(r"(?:\A|[ \t\r\n\x00])\x00")
_PAREN_OPERATORS: Final = {_T_IN: IN, _T_NOTIN: NOT_IN}
_EXACT_OPERATORS: Final = {
    _T_EQ: EQUALS,
    _T_DEQ: DOUBLE_EQUALS,
    _T_GT: GREATER_THAN,
    _T_LT: LESS_THAN,
    _T_NEQ: NOT_EQUALS,
}


def _without_nul(text: str) -> str:
    """The text with the meaning ``labels.Lexer`` gives its NUL bytes, without them.

    The lexer reads a NUL where a token would start (after blanks, at the start, after
    another NUL) as the end of the input, and a NUL right after a token as the end of
    that token, which it then drops. So the text is cut at the first NUL of the first
    kind, and each NUL of the second kind becomes a blank, which ends a token and is
    skipped the same way.
    """
    if "\x00" not in text:
        return text
    eos = _EOS_NUL_RE.search(text)
    if eos is not None:
        text = text[: eos.end() - 1]
    return text.replace("\x00", " ")


def _lex(text: str) -> tuple[list[int], list[str]]:
    """Tokenise NUL-free text as ``labels.Lexer`` does: the token kinds and literals,
    ending with EOS.

    Kubernetes' lexer reads bytes; the symbols and blanks it stops at are ASCII, which
    UTF-8 never uses inside a multi-byte character, so reading characters splits the
    input at the same places. One regex pass, memory proportional to the input.
    """
    literals: list[str] = _TOKEN_RE.findall(text)
    kinds = [_STRING_TO_TOKEN.get(lit, _T_ID) for lit in literals]
    kinds.append(_T_EOS)
    literals.append("")
    return kinds, literals


class _Parser:
    """The recursive-descent parser of ``labels.Parse`` with its exact error texts, over
    NUL-free text (``_without_nul``).

    Key and value checks are remembered per distinct literal for the one parse, so that
    a selector repeating keys and values validates each once.
    """

    def __init__(self, text: str) -> None:
        self.kinds, self.literals = _lex(text)
        self.pos = 0
        self.key_errors: dict[str, str] = {}  # literal -> its key errors ("" when valid)
        self.good_values: set[str] = set()

    def lookahead(self, values: bool = True) -> tuple[int, str]:
        tok = self.kinds[self.pos]
        if values and tok in (_T_IN, _T_NOTIN):
            tok = _T_ID
        return tok, self.literals[self.pos]

    def consume(self, values: bool = True) -> tuple[int, str]:
        pos = self.pos
        self.pos = pos + 1
        tok = self.kinds[pos]
        if values and tok in (_T_IN, _T_NOTIN):
            tok = _T_ID
        return tok, self.literals[pos]

    def parse(self, *, after_comma: bool = False) -> list[Requirement]:
        """The requirements; ``after_comma`` parses a tail of a selector that follows a
        comma (the first token must then start a requirement)."""
        reqs: list[Requirement] = []
        if after_comma:
            tok, lit = self.lookahead()
            if tok not in (_T_ID, _T_NOT):
                raise LabelSelectorError(f"found '{lit}', expected: identifier after ','")
        while True:
            tok, lit = self.lookahead()
            if tok in (_T_ID, _T_NOT):
                try:
                    reqs.append(self.parse_requirement())
                except LabelSelectorError as err:
                    raise LabelSelectorError(f"unable to parse requirement: {err}") from None
                tok, lit = self.consume()
                if tok == _T_EOS:
                    return reqs
                if tok == _T_COMMA:
                    tok2, lit2 = self.lookahead()
                    if tok2 not in (_T_ID, _T_NOT):
                        raise LabelSelectorError(f"found '{lit2}', expected: identifier after ','")
                else:
                    raise LabelSelectorError(f"found '{lit}', expected: ',' or 'end of string'")
            elif tok == _T_EOS:
                return reqs
            else:
                raise LabelSelectorError(
                    f"found '{lit}', expected: !, identifier, or 'end of string'"
                )

    def parse_requirement(self) -> Requirement:
        operator = ""
        tok, literal = self.consume()
        if tok == _T_NOT:
            operator = DOES_NOT_EXIST
            tok, literal = self.consume()
        if tok != _T_ID:
            raise LabelSelectorError(f"found '{literal}', expected: identifier")
        key_errs = self.key_errors.get(literal)
        if key_errs is None:
            key_errs = self.key_errors[literal] = "; ".join(is_label_key(literal))
        if key_errs:
            raise LabelSelectorError(_field_invalid("<nil>", literal, key_errs))
        key = literal
        if operator != DOES_NOT_EXIST and self.kinds[self.pos] in (_T_EOS, _T_COMMA):
            operator = EXISTS
        if operator in (EXISTS, DOES_NOT_EXIST):
            # NewRequirement would check the key (just checked) and that there are no values
            return Requirement(key, operator)
        operator = self.parse_operator()
        if operator in (IN, NOT_IN):
            values = sorted(self.parse_values())
        else:
            values = [self.parse_exact_value()]
        return self.requirement(key, operator, values)

    def requirement(self, key: str, operator: str, values: list[str]) -> Requirement:
        """``NewRequirement`` for a valid key and the values the parser read (one for the
        exact operators, at least one for ``in``/``notin``); ``new_requirement`` gives
        the exact error whenever a check fails."""
        good = self.good_values
        for value in values:
            if value not in good:
                if is_label_value(value):
                    return new_requirement(key, operator, values)  # raises
                good.add(value)
        if operator in (GREATER_THAN, LESS_THAN) and parse_int64(values[0]) is None:
            return new_requirement(key, operator, values)  # raises
        return Requirement(key, operator, tuple(values))

    def parse_operator(self) -> str:
        tok, lit = self.consume(values=False)
        operator = _PAREN_OPERATORS.get(tok) or _EXACT_OPERATORS.get(tok)
        if operator is None:
            raise LabelSelectorError(f"found '{lit}', expected: {', '.join(_BINARY_OPERATORS)}")
        return operator

    def parse_values(self) -> set[str]:
        tok, lit = self.consume()
        if tok != _T_OPEN:
            raise LabelSelectorError(f"found '{lit}' expected: '('")
        tok, lit = self.lookahead()
        if tok in (_T_ID, _T_COMMA):
            values = self.parse_identifiers_list()
            if self.consume()[0] != _T_CLOSE:
                raise LabelSelectorError(f"found '{lit}', expected: ')'")
            return values
        if tok == _T_CLOSE:
            self.consume()
            return {""}
        raise LabelSelectorError(f"found '{lit}', expected: ',', ')' or identifier")

    def parse_identifiers_list(self) -> set[str]:
        values: set[str] = set()
        while True:
            tok, lit = self.consume()
            if tok == _T_ID:
                values.add(lit)
                tok2, lit2 = self.lookahead()
                if tok2 == _T_COMMA:
                    continue
                if tok2 == _T_CLOSE:
                    return values
                raise LabelSelectorError(f"found '{lit2}', expected: ',' or ')'")
            if tok == _T_COMMA:
                if not values:
                    values.add("")
                tok2, _ = self.lookahead()
                if tok2 == _T_CLOSE:
                    values.add("")
                    return values
                if tok2 == _T_COMMA:
                    values.add("")
                continue
            raise LabelSelectorError(f"found '{lit}', expected: ',', or identifier")

    def parse_exact_value(self) -> str:
        tok, _ = self.lookahead()
        if tok in (_T_EOS, _T_COMMA):
            return ""
        tok, lit = self.consume()
        if tok == _T_ID:
            return lit
        raise LabelSelectorError(f"found '{lit}', expected: identifier")


def _by_key(req: Requirement) -> str:
    return req.key


_W: Final = "[ \\t\\r\\n]*+"  # blanks, possessive: what follows is never one
_ID: Final = "[^ \\t\\r\\n=!(),<>\\x00]++"  # a whole identifier token (possessive)
# One requirement, in any of the forms a valid one takes, and the separator after it:
# "!key", "key", "key<op>value" (op one of == != = < >; the value may be empty), and
# "key in (v1, v2)" / "key notin (...)", where an empty list item is the value "" (as
# Kubernetes' parseIdentifiersList reads "()", "(,a)", "(a,)", "(a,,b)"); blanks anywhere
# the lexer skips them. These are all the forms of a valid requirement. Groups: "!" /
# its key / key / op / value / in-notin / list / separator.
_COMMON_REQUIREMENT_RE: Final = re.compile(
    f"{_W}(?:(!){_W}({_ID})|({_ID}){_W}(?:(==|!=|=|<|>){_W}({_ID})?"
    f"|(in|notin){_W}\\({_W}((?:{_ID})?+(?:{_W},{_W}(?:{_ID})?+)*+){_W}\\))?){_W}(,|\\Z)"
)
_LIST_SPLIT_RE: Final = re.compile(f"{_W},{_W}")
# a label key without prefix, or a non-empty label value, that is surely valid: ASCII, at
# most 63 characters (= bytes); what it does not match, is_label_key/is_label_value judge
_SHORT_NAME_RE: Final = re.compile("[A-Za-z0-9](?:[-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?")
_EXACT_SYMBOLS: Final = {
    "=": EQUALS,
    "==": DOUBLE_EQUALS,
    "!=": NOT_EQUALS,
    ">": GREATER_THAN,
    "<": LESS_THAN,
}


def _parse_common(text: str) -> tuple[list[Requirement], int | None]:
    """Read NUL-free text as a sequence of ``_COMMON_REQUIREMENT_RE`` requirements with
    valid keys and values, by anchored regex matches.

    Returns the requirements read and ``None`` when that was the whole text, or the
    requirements before the first one that is not of that kind (or invalid) and the
    index where that one starts (0, or just after a comma). They are what ``_Parser``
    reads from the same text. Identical requirements share one ``Requirement`` and each
    distinct key and value is validated once, so a long selector costs little more than
    the scan.
    """
    reqs: list[Requirement] = []
    append = reqs.append
    seen: dict[tuple[str | None, ...], Requirement] = {}
    keys_ok: dict[str, bool] = {}
    values_ok: dict[str, bool] = {}
    match = _COMMON_REQUIREMENT_RE.match
    pos = 0
    while True:
        found = match(text, pos)  # anchored: no rescans of the text after a mismatch
        if found is None:
            return reqs, pos
        groups = found.groups()
        shape = groups[:7]
        req = seen.get(shape)
        if req is None:
            req = _common_requirement(shape, keys_ok, values_ok)
            if req is None:
                return reqs, pos
            seen[shape] = req
        append(req)
        pos = found.end()
        if not groups[7]:  # the end of the text, not a comma
            return reqs, None


def _common_requirement(
    shape: tuple[str | None, ...], keys_ok: dict[str, bool], values_ok: dict[str, bool]
) -> Requirement | None:
    """The requirement one ``_COMMON_REQUIREMENT_RE`` match reads, or ``None`` when a key
    or value is invalid (the exact parser then reports it)."""
    negated, absent_key, key, symbol, value, list_op, items = shape
    key = absent_key if negated else key
    assert key is not None
    ok = keys_ok.get(key)
    if ok is None:
        ok = keys_ok[key] = bool(_SHORT_NAME_RE.fullmatch(key)) or not is_label_key(key)
    if not ok:
        return None
    if negated:
        return Requirement(key, DOES_NOT_EXIST)
    if list_op is not None:
        assert items is not None
        values = sorted(set(_LIST_SPLIT_RE.split(items)))  # "" for empty items
        operator = IN if list_op == "in" else NOT_IN
    elif symbol is not None:
        values = [value or ""]
        operator = _EXACT_SYMBOLS[symbol]
        if operator in (GREATER_THAN, LESS_THAN) and parse_int64(values[0]) is None:
            return None
    else:
        return Requirement(key, EXISTS)
    for item in values:
        ok = values_ok.get(item)
        if ok is None:
            ok = values_ok[item] = bool(_SHORT_NAME_RE.fullmatch(item)) or not is_label_value(item)
        if not ok:
            return None
    return Requirement(key, operator, tuple(values))


def parse_label_selector(text: str) -> LabelSelector:
    """``labels.Parse``: the ``labelSelector`` query parameter grammar.

    Supports ``k=v``, ``k==v``, ``k!=v``, ``k in (a,b)``, ``k notin (a,b)``, ``k``,
    ``!k`` and Kubernetes' ``k>N`` / ``k<N``, separated by commas; ``""`` selects
    everything. Raises ``LabelSelectorError`` with Kubernetes' message.

    Time and memory are linear in the input (a 1 MiB selector parses in well under a
    second); the requirements are sorted by key (code point order is UTF-8 byte order,
    which Kubernetes sorts by), stably.
    """
    text = _without_nul(text)
    reqs, stop = _parse_common(text)
    if stop is not None:
        # a requirement the common forms do not cover (an error, mostly): the exact
        # parser reads the rest of the text, from the start of that requirement on
        reqs.extend(_Parser(text[stop:]).parse(after_comma=stop > 0))
    reqs.sort(key=_by_key)
    return LabelSelector(tuple(reqs))


_DICT_OPERATORS: Final = {
    "In": IN,
    "NotIn": NOT_IN,
    "Exists": EXISTS,
    "DoesNotExist": DOES_NOT_EXIST,
}


def label_selector_from_dict(selector: Mapping[str, Any] | None) -> LabelSelector:
    """``metav1.LabelSelectorAsSelector`` for a ``metav1.LabelSelector`` as a dict.

    ``None`` selects nothing; ``{}`` (no matchLabels, no matchExpressions) selects
    everything. ``matchLabels`` are processed in key order (Go's map order is random,
    so which error is reported first for several bad entries is not fixed there).
    """
    if selector is None:
        return NOTHING
    match_labels = selector.get("matchLabels") or {}
    match_exprs = selector.get("matchExpressions") or []
    if not match_labels and not match_exprs:
        return EVERYTHING
    reqs: list[Requirement] = []
    for key in sorted(match_labels):
        reqs.append(new_requirement(key, EQUALS, [match_labels[key]]))
    for expr in match_exprs:
        op_name = expr.get("operator", "")
        op = _DICT_OPERATORS.get(op_name)
        if op is None:
            raise LabelSelectorError(
                f"{go_quote(str(op_name))} is not a valid label selector operator"
            )
        reqs.append(new_requirement(expr.get("key", ""), op, list(expr.get("values") or [])))
    reqs.sort(key=lambda r: r.key.encode("utf-8", "surrogatepass"))
    return LabelSelector(tuple(reqs))


# --------------------------------------------------------------------------------------
# field selectors


@dataclass(frozen=True, slots=True)
class FieldRequirement:
    """One field selector term. ``operator`` is ``=`` (also for ``==``) or ``!=``."""

    field: str
    operator: str
    value: str

    def matches(self, fields: Mapping[str, str]) -> bool:
        """A missing field reads as ``""``, exactly as ``fields.Set.Get``."""
        have = fields.get(self.field, "")
        return have == self.value if self.operator == "=" else have != self.value

    def __str__(self) -> str:
        return f"{self.field}{self.operator}{escape_field_value(self.value)}"


@dataclass(frozen=True, slots=True)
class FieldSelector:
    """A field selector: the AND of its requirements (sorted as Kubernetes sorts terms)."""

    requirements: tuple[FieldRequirement, ...] = ()
    _matcher: FieldMatcher | None = dataclass_field(
        default=None, init=False, repr=False, compare=False, hash=False
    )

    def matches(self, fields: Mapping[str, str]) -> bool:
        """True if every term matches ``fields`` (a ``fields.Set``).

        The terms are compiled into a :class:`FieldMatcher` on first use: a call costs one
        look-up per distinct field, whatever the number of terms.
        """
        matcher = self._matcher
        if matcher is None:
            matcher = FieldMatcher(self.requirements)
            object.__setattr__(self, "_matcher", matcher)  # a cache: equal either way
        return matcher.matches(fields)

    def empty(self) -> bool:
        """True when the selector selects everything."""
        return not self.requirements

    def requires_exact_match(self, field: str) -> str | None:
        """The value ``field`` must equal, if an ``=`` term fixes it."""
        for req in self.requirements:
            if req.field == field and req.operator == "=":
                return req.value
        return None

    def transform(self, fn: Callable[[str, str], tuple[str, str]]) -> FieldSelector:
        """``Selector.Transform``: rewrite each term; terms mapped to ``("", "")`` vanish."""
        out: list[FieldRequirement] = []
        for req in self.requirements:
            field, value = fn(req.field, req.value)
            if field or value:
                out.append(FieldRequirement(field, req.operator, value))
        return FieldSelector(tuple(out))

    def __str__(self) -> str:
        return ",".join(str(r) for r in self.requirements)


def escape_field_value(value: str) -> str:
    """``fields.EscapeValue``: backslash-escape ``\\``, ``,`` and ``=``."""
    return value.replace("\\", "\\\\").replace(",", "\\,").replace("=", "\\=")


def unescape_field_value(value: str) -> str:
    """``fields.UnescapeValue`` with its exact error texts."""
    if not any(c in value for c in "\\,="):
        return value
    if _ESCAPED_VALUE_RE.fullmatch(value):
        # every backslash starts an escape here, so each "\\," and "\\=" is one, and the
        # backslashes left are pairs
        return value.replace("\\,", ",").replace("\\=", "=").replace("\\\\", "\\")
    out: list[str] = []
    in_slash = False
    for ch in value:
        if in_slash:
            if ch in "\\,=":
                out.append(ch)
            else:
                raise FieldSelectorError(f"invalid field selector: invalid escape sequence: \\{ch}")
            in_slash = False
            continue
        if ch == "\\":
            in_slash = True
        elif ch in ",=":
            raise FieldSelectorError(
                f"invalid field selector: unescaped character in value: {ord(ch)}"
            )
        else:
            out.append(ch)
    if in_slash:
        raise FieldSelectorError("invalid field selector: invalid escape sequence: \\")
    return "".join(out)


# one term of a field selector (escaped characters, and a backslash ending the text,
# included) and the comma or end of text after it
_FIELD_TERM_RE: Final = re.compile(r"((?:[^\\,]|\\.)*+\\?)(,|\Z)", re.DOTALL)
_TERM_OPERATOR_RE: Final = re.compile("!=|==|=")
# a value fields.UnescapeValue accepts: no unescaped ',' or '=', only escapes of \ , =
_ESCAPED_VALUE_RE: Final = re.compile(r"(?:[^\\,=]|\\[\\,=])*+")


def _split_terms(text: str) -> list[str]:
    """``fields.splitTerms``: split at commas not escaped by a backslash."""
    if not text:
        return []
    if "\\" not in text:
        return text.split(",")
    terms: list[str] = []
    # the matches follow each other; after the one at the end of the text comes only
    # an empty one, at the end again
    for term, sep in _FIELD_TERM_RE.findall(text):
        terms.append(term)
        if not sep:
            break
    return terms


def _split_term(term: str) -> tuple[str, str, str] | None:
    """``fields.splitTerm``: at the first place an operator starts (``!=`` before ``==``
    before ``=`` at one place), escaped or not."""
    found = _TERM_OPERATOR_RE.search(term)
    if found is None:
        return None
    return term[: found.start()], found.group(), term[found.end() :]


def parse_field_selector(text: str) -> FieldSelector:
    """``fields.ParseSelector``: ``a=b``, ``a==b``, ``a!=b`` joined by commas.

    Values may escape ``\\``, ``,`` and ``=`` with a backslash. Neither field names nor
    values are trimmed (as in Kubernetes). Raises ``FieldSelectorError``.
    """
    parts = sorted(_split_terms(text))  # code point order is Go's byte order
    reqs: list[FieldRequirement] = []
    last_part: str | None = None
    last_req: FieldRequirement | None = None
    for part in parts:
        if part == last_part:  # sorted: a repeated term comes right after itself
            if last_req is not None:
                reqs.append(last_req)
            continue
        last_part, last_req = part, None
        if not part:
            continue
        split = _split_term(part)
        if split is None:
            raise FieldSelectorError(f"invalid selector: '{text}'; can't understand '{part}'")
        lhs, op, rhs = split
        value = unescape_field_value(rhs)
        if not lhs and not value:
            continue  # Transform drops terms that are empty on both sides
        last_req = FieldRequirement(lhs, "!=" if op == "!=" else "=", value)
        reqs.append(last_req)
    return FieldSelector(tuple(reqs))


# --------------------------------------------------------------------------------------
# field sets and the field labels each resource supports


def kind_key(api_version: str, kind: str) -> str:
    """The key naming a built-in kind in this module and in ``strategic``: ``v1/Secret``."""
    return f"{api_version}/{kind}"


_KIND_ALIASES: Final = {
    "Namespace": "v1/Namespace",
    "ConfigMap": "v1/ConfigMap",
    "Secret": "v1/Secret",
    "ServiceAccount": "v1/ServiceAccount",
    "Event": "v1/Event",
    "events.k8s.io/Event": "events.k8s.io/v1/Event",
    "Lease": "coordination.k8s.io/v1/Lease",
    "coordination.k8s.io/Lease": "coordination.k8s.io/v1/Lease",
    "apiextensions.k8s.io/CustomResourceDefinition": (
        "apiextensions.k8s.io/v1/CustomResourceDefinition"
    ),
}


def canonical_kind_key(key: str) -> str:
    """``apiVersion/Kind`` for a built-in kind named so, as ``group/Kind`` or a bare core
    ``Kind`` (``Secret``, ``events.k8s.io/Event``, ``Lease``); other keys unchanged."""
    return _KIND_ALIASES.get(key, key)


_META_NAMESPACED: Final = ("metadata.name", "metadata.namespace")

# kind key -> label -> the label the field set uses. Kinds with no entry accept only
# metadata.name / metadata.namespace with runtime.DefaultMetaV1FieldSelectorConversion.
_FIELD_LABELS: Final[dict[str, dict[str, str]]] = {
    "v1/Namespace": {
        "metadata.name": "metadata.name",
        "name": "metadata.name",
        "status.phase": "status.phase",
    },
    "v1/Secret": {
        "metadata.name": "metadata.name",
        "metadata.namespace": "metadata.namespace",
        "type": "type",
    },
    "v1/Event": {
        label: label
        for label in (
            "involvedObject.kind",
            "involvedObject.namespace",
            "involvedObject.name",
            "involvedObject.uid",
            "involvedObject.apiVersion",
            "involvedObject.resourceVersion",
            "involvedObject.fieldPath",
            "reason",
            "reportingComponent",
            "source",
            "type",
            "metadata.namespace",
            "metadata.name",
        )
    },
    "events.k8s.io/v1/Event": {
        "reason": "reason",
        "regarding.kind": "involvedObject.kind",
        "regarding.namespace": "involvedObject.namespace",
        "regarding.name": "involvedObject.name",
        "regarding.uid": "involvedObject.uid",
        "regarding.apiVersion": "involvedObject.apiVersion",
        "regarding.resourceVersion": "involvedObject.resourceVersion",
        "regarding.fieldPath": "involvedObject.fieldPath",
        "reportingController": "reportingComponent",
        "source": "source",
        "type": "type",
        "metadata.namespace": "metadata.namespace",
        "metadata.name": "metadata.name",
    },
    # the workload kinds (core/v1 and batch/v1 field label conversions; apps/v1 has none,
    # so its ReplicaSet takes the default metadata-only conversion despite its field set)
    "v1/Pod": {
        **{
            label: label
            for label in (
                "metadata.name",
                "metadata.namespace",
                "spec.nodeName",
                "spec.restartPolicy",
                "spec.schedulerName",
                "spec.serviceAccountName",
                "spec.hostNetwork",
                "status.phase",
                "status.podIP",
                "status.podIPs",
                "status.nominatedNodeName",
            )
        },
        "spec.host": "spec.nodeName",  # what clients of the first v1 sent
    },
    "v1/Node": {"metadata.name": "metadata.name", "spec.unschedulable": "spec.unschedulable"},
    "v1/ReplicationController": {
        label: label for label in ("metadata.name", "metadata.namespace", "status.replicas")
    },
    "v1/Service": {
        label: label
        for label in ("metadata.namespace", "metadata.name", "spec.clusterIP", "spec.type")
    },
    "batch/v1/Job": {
        label: label for label in ("metadata.name", "metadata.namespace", "status.successful")
    },
}

# kind key -> the message of a label its conversion rejects, where it is not the usual
# "field label not supported: X"
_FIELD_LABEL_ERRORS: Final[dict[str, Callable[[str], str]]] = {
    "batch/v1/Job": lambda label: f"field label {go_quote(label)} not supported for Job",
}


def supported_field_labels(key: str) -> frozenset[str]:
    """The field labels a built-in kind accepts in a field selector."""
    table = _FIELD_LABELS.get(canonical_kind_key(key))
    return frozenset(table) if table is not None else frozenset(_META_NAMESPACED)


def convert_builtin_field_label(key: str, label: str) -> str:
    """``Scheme.ConvertFieldLabel`` for a built-in kind: the label the field set uses.

    Raises ``FieldLabelError`` with the kind's exact text: ``field label not supported:
    X`` for kinds with their own conversion (Namespace, Secret, both Events, Pod, Node,
    ReplicationController, Service), ``field label "X" not supported for Job`` for
    batch/v1 Job, else ``"X" is not a known field selector: only "metadata.name",
    "metadata.namespace"``.
    """
    table = _FIELD_LABELS.get(canonical_kind_key(key))
    if table is None:
        if label in _META_NAMESPACED:
            return label
        raise FieldLabelError(
            f"{go_quote(label)} is not a known field selector: "
            'only "metadata.name", "metadata.namespace"'
        )
    mapped = table.get(label)
    if mapped is None:
        message = _FIELD_LABEL_ERRORS.get(canonical_kind_key(key))
        raise FieldLabelError(message(label) if message else f"field label not supported: {label}")
    return mapped


def convert_custom_field_label(
    label: str, *, namespaced: bool, selectable_fields: Iterable[str] = ()
) -> str:
    """apiextensions' ``crConverter.ConvertFieldLabel`` for a custom resource.

    ``selectable_fields`` are the served version's ``selectableFields[].jsonPath``
    values (``.spec.color``); the label is the path without its leading dot.
    """
    if label == "metadata.name" or (namespaced and label == "metadata.namespace"):
        return label
    if label in {p.removeprefix(".") for p in selectable_fields}:
        return label
    raise FieldLabelError(f"field label not supported: {label}")


def field_value(obj: Mapping[str, Any], path: str) -> str | None:
    """The value at dotted ``path`` (``spec.color`` or ``.spec.color``) as ``fmt.Sprint``.

    ``None`` when the path is absent or null (a selectable field then reads as ``""``).
    Only simple dotted paths, as CRD ``selectableFields`` allow (no array notation).
    """
    cur: Any = obj
    for part in path.removeprefix(".").split("."):
        if not isinstance(cur, Mapping) or part not in cur:
            return None
        cur = cur[part]
    if cur is None:
        return None
    return go_sprint(cur)


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def custom_resource_field_set(
    obj: Mapping[str, Any], *, namespaced: bool, selectable_fields: Iterable[str] = ()
) -> dict[str, str]:
    """The ``fields.Set`` a custom resource is filtered on (apiextensions ``GetAttrs``)."""
    meta = _meta(obj)
    out = {"metadata.name": _str(meta.get("name"))}
    if namespaced:
        out["metadata.namespace"] = _str(meta.get("namespace"))
    for json_path in selectable_fields:
        value = field_value(obj, json_path)
        out[json_path.removeprefix(".")] = "" if value is None else value
    return out


def builtin_field_set(key: str, obj: Mapping[str, Any]) -> dict[str, str]:
    """The ``fields.Set`` Kubernetes filters a built-in object on (``ToSelectableFields``).

    Both Event representations give the same internal names (``involvedObject.*``,
    ``reportingComponent``, ``source``), as in Kubernetes where they share storage.
    """
    key = canonical_kind_key(key)
    meta = _meta(obj)
    name = _str(meta.get("name"))
    namespace = _str(meta.get("namespace"))
    if key == "v1/Namespace":
        status = obj.get("status")
        phase = _str(status.get("phase")) if isinstance(status, Mapping) else ""
        return {"metadata.name": name, "name": name, "status.phase": phase}
    if key == "v1/Node":
        spec = obj.get("spec")
        unschedulable = isinstance(spec, Mapping) and spec.get("unschedulable") is True
        return {"metadata.name": name, "spec.unschedulable": _go_bool(unschedulable)}
    out = {"metadata.name": name, "metadata.namespace": namespace}
    if key in _WORKLOAD_FIELD_SETS:
        out.update(_WORKLOAD_FIELD_SETS[key](obj))
    elif key == "v1/Secret":
        out["type"] = _str(obj.get("type"))
    elif key in ("v1/Event", "events.k8s.io/v1/Event"):
        core = key == "v1/Event"
        ref = obj.get("involvedObject" if core else "regarding")
        ref = ref if isinstance(ref, Mapping) else {}
        src = obj.get("source" if core else "deprecatedSource")
        src = src if isinstance(src, Mapping) else {}
        reporting = _str(obj.get("reportingComponent" if core else "reportingController"))
        for part in (
            "kind",
            "namespace",
            "name",
            "uid",
            "apiVersion",
            "resourceVersion",
            "fieldPath",
        ):
            out[f"involvedObject.{part}"] = _str(ref.get(part))
        out["reason"] = _str(obj.get("reason"))
        out["reportingComponent"] = reporting
        out["source"] = _str(src.get("component")) or reporting
        out["type"] = _str(obj.get("type"))
    return out


def _go_bool(value: bool) -> str:
    """``strconv.FormatBool``."""
    return "true" if value else "false"


def _section(obj: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    value = obj.get(name)
    return value if isinstance(value, Mapping) else {}


def _go_int(value: Any) -> str:
    """``strconv.Itoa`` of an integer field (``0`` when absent)."""
    return str(value) if isinstance(value, int) and not isinstance(value, bool) else "0"


def _pod_fields(obj: Mapping[str, Any]) -> dict[str, str]:
    """The Pod strategy's ``ToSelectableFields`` beyond metadata (``status.podIPs`` is a
    label the conversion accepts but the set does not hold, so it matches only ``""``)."""
    spec = _section(obj, "spec")
    status = _section(obj, "status")
    pod_ips = status.get("podIPs")
    pod_ip = ""
    if isinstance(pod_ips, list) and pod_ips and isinstance(pod_ips[0], Mapping):
        pod_ip = _str(pod_ips[0].get("ip"))
    else:
        pod_ip = _str(status.get("podIP"))  # v1's podIP becomes podIPs[0] on conversion
    return {
        "spec.nodeName": _str(spec.get("nodeName")),
        "spec.restartPolicy": _str(spec.get("restartPolicy")),
        "spec.schedulerName": _str(spec.get("schedulerName")),
        "spec.serviceAccountName": _str(spec.get("serviceAccountName")),
        "spec.hostNetwork": _go_bool(spec.get("hostNetwork") is True),
        "status.phase": _str(status.get("phase")),
        "status.podIP": pod_ip,
        "status.nominatedNodeName": _str(status.get("nominatedNodeName")),
    }


_WORKLOAD_FIELD_SETS: Final[dict[str, Callable[[Mapping[str, Any]], dict[str, str]]]] = {
    "v1/Pod": _pod_fields,
    "v1/ReplicationController": lambda obj: {
        "status.replicas": _go_int(_section(obj, "status").get("replicas"))
    },
    "apps/v1/ReplicaSet": lambda obj: {
        "status.replicas": _go_int(_section(obj, "status").get("replicas"))
    },
    "v1/Service": lambda obj: {
        "spec.clusterIP": _str(_section(obj, "spec").get("clusterIP")),
        "spec.type": _str(_section(obj, "spec").get("type")),
    },
    "batch/v1/Job": lambda obj: {
        "status.successful": _go_int(_section(obj, "status").get("succeeded"))
    },
}
