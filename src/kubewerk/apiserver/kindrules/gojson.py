"""What Go's ``encoding/json`` answers for two things kube-apiserver's Secret and ConfigMap
handling asks of it, with Go's exact error texts:

* :func:`map_unmarshal_error` — ``json.Unmarshal(b, &map[string]interface{}{})``, which
  ``ValidateSecret`` runs on a docker config Secret's ``.dockercfg`` /
  ``.dockerconfigjson``: the scanner's syntax errors (``checkValid``, run over the whole
  input before anything is decoded: ``invalid character 'x' looking for beginning of
  value``, ``unexpected end of JSON input``, ...), then ``json: cannot unmarshal array
  into Go value of type map[string]interface {}`` for a top-level value that is not an
  object (``null`` is accepted: it leaves the map as it was).
* :func:`decode_bytes` — a JSON string decoded into a ``[]byte`` field (a Secret's
  ``data``, a ConfigMap's ``binaryData``): ``base64.StdEncoding`` with CR and LF
  skipped; a bad one is ``illegal base64 data at input byte N`` with Go's N.
* :func:`struct_order` — an object's fields in the order Go writes a struct's fields.

Not reproduced: a number too large for a float64 inside an otherwise valid document
(Go: ``json: cannot unmarshal number 1e999 into Go value of type float64``) is accepted.
"""

from __future__ import annotations

import binascii
from typing import Any, Final

from kubewerk.core.gofmt import go_quote

__all__ = ["Base64Error", "decode_bytes", "map_unmarshal_error", "struct_order", "syntax_error"]

MAX_NESTING_DEPTH: Final = 10000
"""``encoding/json``'s ``maxNestingDepth``."""

_SPACE: Final = frozenset(b" \t\r\n")
_DIGITS: Final = frozenset(b"0123456789")
_HEX: Final = frozenset(b"0123456789abcdefABCDEF")
_ESCAPES: Final = frozenset(b'bfnrt\\/"')
_LITERALS: Final = {"t": b"true", "f": b"false", "n": b"null"}

# the parse stack's entries (scanner.go's parseObjectKey, parseObjectValue, parseArrayValue)
_KEY, _VALUE, _ARRAY = 0, 1, 2


class _Syntax(Exception):
    """The scanner stopped: ``str()`` is Go's ``SyntaxError`` text."""


def _quote_char(c: int) -> str:
    """``encoding/json``'s ``quoteChar``: a byte as Go prints it in a syntax error (the
    byte taken as a rune, so a UTF-8 lead byte 0xC3 is ``'Ã'``)."""
    if c == ord("'"):
        return "'\\''"
    if c == ord('"'):
        return "'\"'"
    return "'" + go_quote(chr(c))[1:-1] + "'"


def _error(c: int, context: str) -> _Syntax:
    return _Syntax(f"invalid character {_quote_char(c)} {context}")


class _Scanner:
    """``encoding/json``'s scanner as a state machine over bytes; ``step`` takes one
    byte and raises ``_Syntax`` where Go's scanner returns ``scanError``."""

    def __init__(self) -> None:
        self.stack: list[int] = []
        self.state = "begin_value"
        self.end_top = False
        self.literal = b""
        self.literal_at = 0
        self.hex_left = 0

    def step(self, c: int) -> None:
        state = self.state
        if state == "in_string":
            if c == 0x22:
                self.state = "end_value"
            elif c == 0x5C:
                self.state = "in_string_esc"
            elif c < 0x20:
                raise _error(c, "in string literal")
            return
        if state == "begin_value":
            self._begin_value(c)
        elif state == "begin_value_or_empty":
            if c in _SPACE:
                return
            if c == ord("]"):
                self._end_value(c)
            else:
                self._begin_value(c)
        elif state == "begin_string_or_empty":
            if c in _SPACE:
                return
            if c == ord("}"):
                self.stack[-1] = _VALUE
                self._end_value(c)
            else:
                self._begin_string(c)
        elif state == "begin_string":
            self._begin_string(c)
        elif state == "end_value":
            self._end_value(c)
        elif state == "end_top":
            if c not in _SPACE:
                raise _error(c, "after top-level value")
        elif state == "in_string_esc":
            if c in _ESCAPES:
                self.state = "in_string"
            elif c == ord("u"):
                self.state, self.hex_left = "in_string_esc_u", 4
            else:
                raise _error(c, "in string escape code")
        elif state == "in_string_esc_u":
            if c not in _HEX:
                raise _error(c, "in \\u hexadecimal character escape")
            self.hex_left -= 1
            if not self.hex_left:
                self.state = "in_string"
        else:
            self._number_or_literal(state, c)

    def _number_or_literal(self, state: str, c: int) -> None:
        if state == "neg":
            if c == ord("0"):
                self.state = "zero"
            elif c in _DIGITS:
                self.state = "one"
            else:
                raise _error(c, "in numeric literal")
        elif state == "one":
            if c not in _DIGITS:
                self._after_integer(c)
        elif state == "zero":
            self._after_integer(c)
        elif state == "dot":
            if c not in _DIGITS:
                raise _error(c, "after decimal point in numeric literal")
            self.state = "dot0"
        elif state == "dot0":
            if c in (ord("e"), ord("E")):
                self.state = "e"
            elif c not in _DIGITS:
                self._end_value(c)
        elif state == "e":
            if c in (ord("+"), ord("-")):
                self.state = "esign"
            else:
                self._exponent_digit(c)
        elif state == "esign":
            self._exponent_digit(c)
        elif state == "e0":
            if c not in _DIGITS:
                self._end_value(c)
        else:  # literal: self.literal[self.literal_at] is the byte expected next
            want = self.literal[self.literal_at]
            if c != want:
                word = self.literal.decode()
                raise _error(c, f"in literal {word} (expecting {_quote_char(want)})")
            self.literal_at += 1
            if self.literal_at == len(self.literal):
                self.state = "end_value"

    def _after_integer(self, c: int) -> None:
        if c == ord("."):
            self.state = "dot"
        elif c in (ord("e"), ord("E")):
            self.state = "e"
        else:
            self._end_value(c)

    def _exponent_digit(self, c: int) -> None:
        if c not in _DIGITS:
            raise _error(c, "in exponent of numeric literal")
        self.state = "e0"

    def _push(self, c: int, kind: int, then: str) -> None:
        self.stack.append(kind)
        if len(self.stack) > MAX_NESTING_DEPTH:
            raise _error(c, "exceeded max depth")
        self.state = then

    def _begin_value(self, c: int) -> None:
        if c in _SPACE:
            self.state = "begin_value"
            return
        if c == ord("{"):
            self._push(c, _KEY, "begin_string_or_empty")
        elif c == ord("["):
            self._push(c, _ARRAY, "begin_value_or_empty")
        elif c == 0x22:
            self.state = "in_string"
        elif c == ord("-"):
            self.state = "neg"
        elif c == ord("0"):
            self.state = "zero"
        elif c in _DIGITS:
            self.state = "one"
        elif chr(c) in _LITERALS:
            self.state, self.literal, self.literal_at = "literal", _LITERALS[chr(c)], 1
        else:
            raise _error(c, "looking for beginning of value")

    def _begin_string(self, c: int) -> None:
        if c in _SPACE:
            self.state = "begin_string"
        elif c == 0x22:
            self.state = "in_string"
        else:
            raise _error(c, "looking for beginning of object key string")

    def _end_value(self, c: int) -> None:
        if not self.stack:
            self.state, self.end_top = "end_top", True
            if c not in _SPACE:
                raise _error(c, "after top-level value")
            return
        if c in _SPACE:
            self.state = "end_value"
            return
        top = self.stack[-1]
        if top == _KEY:
            if c != ord(":"):
                raise _error(c, "after object key")
            self.stack[-1] = _VALUE
            self.state = "begin_value"
        elif top == _VALUE:
            if c == ord(","):
                self.stack[-1] = _KEY
                self.state = "begin_string"
            elif c == ord("}"):
                self._pop()
            else:
                raise _error(c, "after object key:value pair")
        elif c == ord(","):
            self.state = "begin_value"
        elif c == ord("]"):
            self._pop()
        else:
            raise _error(c, "after array element")

    def _pop(self) -> None:
        self.stack.pop()
        if self.stack:
            self.state = "end_value"
        else:
            self.state, self.end_top = "end_top", True


def syntax_error(data: bytes) -> str | None:
    """``checkValid``'s error for ``data`` (None: valid JSON), as Go's scanner words it,
    the end of the input included (``eof`` steps one more space through the scanner, so
    ``"-"`` is ``invalid character ' ' in numeric literal``)."""
    scanner = _Scanner()
    try:
        for c in data:
            scanner.step(c)
        if scanner.end_top:
            return None
        scanner.step(0x20)
    except _Syntax as exc:
        return str(exc)
    return None if scanner.end_top else "unexpected end of JSON input"


_KIND_BY_FIRST: Final = {ord("["): "array", 0x22: "string", ord("t"): "bool", ord("f"): "bool"}


def map_unmarshal_error(data: bytes) -> str | None:
    """The error of ``json.Unmarshal(data, &map[string]interface{}{})`` (None: none)."""
    problem = syntax_error(data)
    if problem is not None:
        return problem
    first = data.lstrip(b" \t\r\n")[:1]
    if first in (b"{", b"n"):
        return None
    kind = _KIND_BY_FIRST.get(first[0], "number")
    return f"json: cannot unmarshal {kind} into Go value of type map[string]interface {{}}"


# -- []byte ----------------------------------------------------------------------------


class Base64Error(ValueError):
    """A ``[]byte`` value that is not base64: ``str()`` is Go's ``CorruptInputError``."""


_ALPHABET: Final = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")


def _corrupt_at(src: bytes) -> int | None:
    """The offset ``base64.StdEncoding.Decode`` reports for ``src`` (None: it decodes),
    quantum by quantum as Go's ``decodeQuantum``."""
    si, n = 0, len(src)
    while si < n:
        j = 0
        while j < 4:
            if si == n:
                if j == 0:
                    return None
                return si - j
            c = src[si]
            si += 1
            if c in _ALPHABET:
                j += 1
                continue
            if c in (0x0A, 0x0D):
                continue
            if c != ord("=") or j < 2:
                return si - 1
            if j == 2:  # a second "=" must follow, newlines aside
                while si < n and src[si] in (0x0A, 0x0D):
                    si += 1
                if si == n:
                    return n
                if src[si] != ord("="):
                    return si - 1
                si += 1
            while si < n and src[si] in (0x0A, 0x0D):
                si += 1
            return si if si < n else None
    return None


def decode_bytes(text: str) -> bytes:
    """The bytes a JSON string decodes to in a Go ``[]byte`` field; raises
    ``Base64Error`` (``illegal base64 data at input byte N``) where Go does."""
    raw = text.encode("utf-8", "surrogatepass")
    compact = raw.replace(b"\r", b"").replace(b"\n", b"") if b"\r" in raw or b"\n" in raw else raw
    try:
        return binascii.a2b_base64(compact, strict_mode=True)
    except binascii.Error:
        pass
    at = _corrupt_at(raw)
    if at is None:  # Go reads what Python's strict mode refuses: take Go's reading
        return binascii.a2b_base64(compact)
    raise Base64Error(f"illegal base64 data at input byte {at}")


def struct_order(obj: dict[str, Any], fields: tuple[str, ...]) -> None:
    """Move ``fields`` (those present) to the end of ``obj``, in this order: with the
    fields before them (``apiVersion``, ``kind``, ``metadata``) that is the order Go's
    encoder writes a struct's fields in."""
    for field in fields:
        if field in obj:
            obj[field] = obj.pop(field)
