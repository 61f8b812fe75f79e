"""Go formatting rules the Kubernetes messages depend on: the one place for them.

Kubernetes builds its error texts with Go's ``fmt`` verbs and ``encoding/json``; a float
printed with ``%v`` reads ``1e+06`` where Python would print ``1000000.0``. These helpers
reproduce the few verbs and encodings the messages use, so the texts match byte for byte.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Final

import orjson

INT64_MIN: Final = -(2**63)
INT64_MAX: Final = 2**63 - 1


@dataclass(frozen=True, slots=True)
class GoText:
    """A value as Kubernetes prints it from a Go value rather than from decoded JSON: a
    struct's ``json.Marshal`` text (Go field order), a literal such as ``0x0``.

    ``FieldError`` messages print ``text`` verbatim, unquoted
    (``kubewerk.core.errors.go_value``); two are equal when their texts are.
    """

    text: str

    def __str__(self) -> str:
        return self.text


def go_float_v(value: float) -> str:
    """``fmt.Sprintf("%v", float64)``: shortest digits, ``%e`` form if exp < -4 or >= 6."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if value == 0:
        return "-0" if math.copysign(1.0, value) < 0 else "0"
    digits, exp = _shortest(abs(value))
    sign = "-" if value < 0 else ""
    # Go's %v is %g with the shortest precision, whose %e threshold is precision 6.
    if exp < -4 or exp >= 6:
        mant = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        esign = "-" if exp < 0 else "+"
        return f"{sign}{mant}e{esign}{abs(exp):02d}"
    return sign + _fixed(digits, exp)


def _shortest(value: float) -> tuple[str, int]:
    """Shortest round-tripping decimal digits of a positive float and its exponent."""
    text = repr(value)
    if "e" in text:
        mant, _, e = text.partition("e")
        exp = int(e)
    else:
        mant, exp = text, 0
    if "." in mant:
        ip, fp = mant.split(".")
    else:
        ip, fp = mant, ""
    if fp == "0":
        fp = ""
    digits = (ip + fp).lstrip("0")
    # position of the decimal point relative to the first significant digit
    lead_zeros = len(ip + fp) - len((ip + fp).lstrip("0"))
    point = len(ip) - lead_zeros  # digits before the point among significant digits
    digits = digits.rstrip("0") or "0"
    return digits, exp + point - 1


def _fixed(digits: str, exp: int) -> str:
    if exp < 0:
        return "0." + "0" * (-exp - 1) + digits
    if exp + 1 >= len(digits):
        return digits + "0" * (exp + 1 - len(digits))
    return digits[: exp + 1] + "." + digits[exp + 1 :]


def go_quote(text: str) -> str:
    """Go's ``%q`` / ``strconv.Quote``."""
    out = ['"']
    for ch in text:
        code = ord(ch)
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ch == "\r":
            out.append("\\r")
        elif ch == "\a":
            out.append("\\a")
        elif ch == "\b":
            out.append("\\b")
        elif ch == "\f":
            out.append("\\f")
        elif ch == "\v":
            out.append("\\v")
        elif code < 0x20 or code == 0x7F:
            out.append(f"\\x{code:02x}")
        elif not ch.isprintable():
            out.append(f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def go_json(value: Any) -> str:
    """``json.Marshal`` of a decoded JSON value (Go key order: sorted)."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return go_json_float(value)
    if isinstance(value, str):
        return _json_str(value)
    if isinstance(value, dict):
        return "{" + ",".join(f"{_json_str(k)}:{go_json(value[k])}" for k in sorted(value)) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(go_json(v) for v in value) + "]"
    return _json_str(str(value))


EXACT_FLOAT_INTS: Final = 2.0**53
"""Below this size every integer is a float64 exactly, and its digits are the float's
shortest round-trip digits (beyond it ``str(int(x))`` would print the binary value)."""


def go_json_float(value: float) -> str:
    """Go's ``encoding/json`` text of a finite ``float64`` (``floatEncoder``): shortest
    round-trip digits, fixed notation for ``1e-6 <= |x| < 1e21`` (an integral value as
    an integer, ``-0.0`` as ``-0``), else exponent notation without the exponent's
    leading zero (``1e-7``, ``1e+21``)."""
    if value == 0:
        return "-0" if math.copysign(1.0, value) < 0 else "0"
    if value.is_integer() and abs(value) < EXACT_FLOAT_INTS:
        return str(int(value))  # its shortest digits, as the integer reads
    digits, exp = _shortest(abs(value))
    sign = "-" if value < 0 else ""
    if exp < -6 or exp >= 21:
        mant = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        esign = "-" if exp < 0 else "+"
        return f"{sign}{mant}e{esign}{abs(exp)}"
    return sign + _fixed(digits, exp)


def _json_str(text: str) -> str:
    out = ['"']
    for ch in text:
        code = ord(ch)
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\r":
            out.append("\\r")
        elif ch == "\t":
            out.append("\\t")
        elif code < 0x20 or ch in "<>&" or code in (0x2028, 0x2029):
            out.append(f"\\u{code:04x}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def json_kind(value: Any) -> str:
    """The OpenAPI type name of a decoded JSON value, as kube-openapi's validation and
    the API server's messages name it: ``object``, ``array``, ``string``, ``boolean``,
    ``integer``, ``number``, ``null``; ``unknown`` for a value with no JSON form.

    Integers outside int64 decode to float64 in Go, so they count as ``number``. (The
    other vocabulary, ``encoding/json``'s error word, is :func:`unmarshal_kind`.)
    """
    t = type(value)
    if t is str:
        return "string"
    if t is dict:
        return "object"
    if t is list:
        return "array"
    if t is bool:
        return "boolean"
    if t is int:
        return "integer" if INT64_MIN <= value <= INT64_MAX else "number"
    if t is float:
        return "number"
    if value is None:
        return "null"
    if isinstance(value, dict):
        return "object"
    if isinstance(value, (list, tuple)):
        return "array"
    if isinstance(value, str):
        return "string"
    return "unknown"


def go_deep_equal(a: Any, b: Any) -> bool:
    """``reflect.DeepEqual`` on Go-decoded JSON: int64 and float64 are different types."""
    ta, tb = json_kind(a), json_kind(b)
    if ta != tb:
        return False
    if ta == "object":
        if len(a) != len(b):
            return False
        return all(k in b and go_deep_equal(v, b[k]) for k, v in a.items())
    if ta == "array":
        return len(a) == len(b) and all(go_deep_equal(x, y) for x, y in zip(a, b, strict=True))
    if ta == "number" and (type(a) is not type(b)):
        # both float64 in Go: an integer beyond int64 is one too (as its nearest float)
        try:
            return float(a) == float(b)
        except OverflowError:  # beyond any float64: no decoded value is
            return False
    return bool(a == b)


def json_equal(a: Any, b: Any) -> bool:
    """Equality of decoded JSON values as text, not as Python values: a boolean equals
    only a boolean (Python counts ``True == 1``); numbers compare by value (``3.0 == 3``,
    unlike :func:`go_deep_equal`); objects regardless of key order. Costs one C-level
    comparison when the values differ and two encodings when they are the same text."""
    if a is b:
        return True
    if a != b:
        return False
    # the same text settles it; else (key order, 3 against 3.0, True against 1, or an
    # integer beyond 64 bits that does not encode) compare structurally
    return json_same_text(a, b) or _strict_equal(a, b)


def json_same_text(a: Any, b: Any) -> bool:
    """Whether two decoded JSON values encode to the same text: types, key order and
    number spelling kept (stricter than :func:`json_equal`); never for values that do not
    encode (an integer beyond 64 bits)."""
    if a is b:
        return True
    try:
        return orjson.dumps(a) == orjson.dumps(b)
    except TypeError:
        return False


def _strict_equal(a: Any, b: Any) -> bool:
    ta, tb = type(a), type(b)
    if ta is bool or tb is bool:
        return ta is tb and a == b
    if ta is dict:
        return (
            tb is dict
            and len(a) == len(b)
            and all(k in b and _strict_equal(v, b[k]) for k, v in a.items())
        )
    if ta is list:
        return (
            tb is list
            and len(a) == len(b)
            and all(_strict_equal(x, y) for x, y in zip(a, b, strict=True))
        )
    return bool(a == b)


def go_sprint(value: Any) -> str:
    """Go's ``fmt.Sprint`` / ``%v`` of a decoded JSON value: strings as is, floats as
    ``%v``, maps as ``map[a:1 b:[x y]]`` (sorted keys), null as ``<nil>``."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return go_float_v(value)
    if value is None:
        return "<nil>"
    if isinstance(value, dict):
        return "map[" + " ".join(f"{k}:{go_sprint(value[k])}" for k in sorted(value)) + "]"
    if isinstance(value, list | tuple):
        return "[" + " ".join(go_sprint(v) for v in value) + "]"
    return str(value)


def go_type(value: Any) -> str:
    """Go's ``%T`` of a decoded JSON value held in an ``interface{}`` (an unstructured
    object's field): ``<nil>``, ``bool``, ``int64``, ``float64``, ``string``,
    ``[]interface {}``, ``map[string]interface {}``."""
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int64"
    if isinstance(value, float):
        return "float64"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "[]interface {}"
    return "map[string]interface {}"


def unmarshal_kind(value: Any) -> str:
    """The word ``encoding/json``'s ``UnmarshalTypeError`` uses for a JSON value
    (``json: cannot unmarshal <kind> into Go ...``): ``bool``, ``number`` (any
    integer or float), ``string``, ``array``, ``object``, ``null``. The OpenAPI type
    names (``boolean``, ``integer`` ...) are :func:`json_kind`'s."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"
