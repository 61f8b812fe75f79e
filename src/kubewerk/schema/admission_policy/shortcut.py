"""A conservative Python evaluation of simple admission expressions over JSON values.

A ValidatingAdmissionPolicy's validations are mostly a few field checks
(``has(object.spec.version)``, ``object.spec.replicas <= 3``, ``'app' in
object.metadata.labels``); handing the request's data to cel-cpp for them costs far more
than the checks. :func:`compile_validations` recognises, from the checked AST cel-cpp
produced, expressions made only of:

- the identifiers ``object``, ``oldObject``, ``params``, ``namespaceObject``;
- field selection and ``has()`` (the test-only select);
- bool, int, string and null literals, and list literals of the subset;
- ``==``, ``!=``, ``<``, ``<=``, ``>``, ``>=``, ``in``, ``&&``, ``||``, ``!`` and
  ``size()`` (global or member form);

and compiles each into a Python closure. Anything else (other functions, macros,
comprehensions, double/uint/bytes literals, ``request``, ``variables`` …) is not
compiled: the caller keeps evaluating it with cel-cpp.

Guarantee: over plain JSON values as the API server decodes them (str-keyed dicts,
lists, strings, finite floats, booleans, null, integers within int64) a closure either
answers the value cel-cpp answers for the same expression over the same data, or
raises :class:`Unknown` — it never answers an error, a different value or a value of
another type. It answers only when every step is unambiguous:

- a select answers only on a dict holding the key, ``has()`` only on a dict;
- an ordering compares only two ints within int64, two strings or two bools;
- ``==``/``!=`` compare only two values of one scalar JSON type (int within int64,
  string, bool, null; ``bool`` is never taken for ``int``); doubles, lists and maps are
  left to cel-cpp (NaN, heterogeneous numeric equality);
- ``in`` answers for a string in a dict's keys, or for a scalar in a list whose
  elements all have its type;
- ``size()`` answers for a string (code points), a list or a dict;
- ``!`` answers for a bool; ``&&`` (``||``) answers false (true) when either operand is
  false (true), whatever the other one is — CEL's logical operators absorb errors in
  both directions — and true (false) when both are; otherwise it is unknown.

Everything else is :class:`Unknown`, so every error, its wording and every edge case
stay cel-cpp's. ``tests/schema/test_admission_policy_shortcut.py`` checks the
guarantee against cel-cpp on generated expressions and hostile JSON values.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from kubewerk.schema.cel.checked import CALL, IDENT, LIST, LITERAL, SELECT, Node, decode_checked

__all__ = ["Evaluator", "Unknown", "compile_node", "compile_validations"]

Fn = Callable[[Mapping[str, Any]], Any]
"""A compiled expression: its value over the activation's data, or :class:`Unknown`."""

Evaluator = Callable[[Mapping[str, Any]], "list[bool] | None"]
"""Compiled validations: their boolean values, or None when any is not decided."""

VARIABLES: Final = ("object", "oldObject", "params", "namespaceObject")
"""The activation names a shortcut may read (the request's JSON values)."""

MAX_DEPTH: Final = 64
"""Deeper expressions are left to cel-cpp (no deep Python recursion per evaluation)."""

_INT_MIN: Final = -(1 << 63)
_INT_MAX: Final = (1 << 63) - 1
_SCALARS: Final = (str, int, bool, type(None))
_ORDERS: Final = {
    "_<_": lambda a, b: a < b,
    "_<=_": lambda a, b: a <= b,
    "_>_": lambda a, b: a > b,
    "_>=_": lambda a, b: a >= b,
}


class Unknown(Exception):
    """The shortcut cannot decide this evaluation: cel-cpp must."""


class _Unsupported(Exception):
    """The expression is outside the shortcut's subset."""


def _literal(node: Node) -> Fn:
    kind = node.lit_kind
    value = node.value
    supported = (
        (kind == "bool" and type(value) is bool)
        or (kind == "int" and type(value) is int and _INT_MIN <= value <= _INT_MAX)
        or (kind == "string" and type(value) is str)
        or (kind == "null" and value is None)
    )
    if not supported:
        raise _Unsupported(f"literal of kind {kind}")

    def literal(_d: Mapping[str, Any]) -> Any:
        return value

    return literal


def _path(node: Node) -> tuple[str, tuple[str, ...]] | None:
    """A chain of plain selects over a variable: (variable, keys), else None."""
    keys: list[str] = []
    base = node
    while base.kind == SELECT and not base.test_only and base.target is not None:
        keys.append(str(base.value))
        base = base.target
    if base.kind != IDENT:
        return None
    name = str(base.value).lstrip(".")
    if name not in VARIABLES:
        raise _Unsupported(f"identifier {name}")
    keys.reverse()
    return name, tuple(keys)


def _chain(name: str, keys: tuple[str, ...]) -> Fn:
    def chain(d: Mapping[str, Any]) -> Any:
        if name not in d:
            raise Unknown
        v = d[name]
        for key in keys:
            if type(v) is not dict or key not in v:
                raise Unknown
            v = v[key]
        return v

    return chain


def _has(target: Fn, key: str) -> Fn:
    def has(d: Mapping[str, Any]) -> Any:
        v = target(d)
        if type(v) is not dict:
            raise Unknown
        return key in v

    return has


def _select(target: Fn, key: str) -> Fn:
    def select(d: Mapping[str, Any]) -> Any:
        v = target(d)
        if type(v) is not dict or key not in v:
            raise Unknown
        return v[key]

    return select


def _scalar(v: Any) -> type:
    """The scalar JSON type of ``v`` the shortcut compares, or Unknown."""
    t = type(v)
    if t is int:
        if not _INT_MIN <= v <= _INT_MAX:
            raise Unknown
        return t
    if t is str or t is bool or v is None:
        return t
    raise Unknown


def _equality(left: Fn, right: Fn, negate: bool) -> Fn:
    def equals(d: Mapping[str, Any]) -> Any:
        a = left(d)
        b = right(d)
        if _scalar(a) is not _scalar(b):
            raise Unknown
        return (a != b) if negate else (a == b)

    return equals


def _order(left: Fn, right: Fn, op: Callable[[Any, Any], bool]) -> Fn:
    def order(d: Mapping[str, Any]) -> Any:
        a = left(d)
        b = right(d)
        t = _scalar(a)
        if t is not _scalar(b) or b is None:
            raise Unknown
        return op(a, b)

    return order


def _in(left: Fn, right: Fn) -> Fn:
    def contains(d: Mapping[str, Any]) -> Any:
        x = left(d)
        c = right(d)
        tc = type(c)
        if tc is dict:
            if type(x) is not str:
                raise Unknown
            return x in c
        if tc is not list:
            raise Unknown
        t = _scalar(x)
        for e in c:
            if _scalar(e) is not t:
                raise Unknown
        return x in c

    return contains


def _size(arg: Fn) -> Fn:
    def size(d: Mapping[str, Any]) -> Any:
        v = arg(d)
        t = type(v)
        if t is str or t is list or t is dict:
            return len(v)
        raise Unknown

    return size


def _not(arg: Fn) -> Fn:
    def negation(d: Mapping[str, Any]) -> Any:
        v = arg(d)
        if type(v) is not bool:
            raise Unknown
        return not v

    return negation


def _logical(operands: Sequence[Fn], absorbing: bool) -> Fn:
    """``&&`` (``absorbing`` False) or ``||`` (True): the absorbing value when any operand
    is it, whatever the others are (errors included); the other value when every operand
    is it; otherwise unknown."""

    def logical(d: Mapping[str, Any]) -> Any:
        decided = True
        for f in operands:
            try:
                v = f(d)
            except Unknown:
                decided = False
                continue
            if v is absorbing:
                return absorbing
            if type(v) is not bool:
                decided = False
        if decided:
            return not absorbing
        raise Unknown

    return logical


def _list(elements: Sequence[Fn]) -> Fn:
    def make(d: Mapping[str, Any]) -> Any:
        return [f(d) for f in elements]

    return make


def compile_node(node: Node, depth: int = 0) -> Fn:
    """The closure of one checked expression node; raises ValueError when the expression
    is outside the subset (see the module docstring)."""
    try:
        return _compile(node, depth)
    except _Unsupported as exc:
        raise ValueError(f"not in the shortcut's subset: {exc}") from None


def _compile(node: Node, depth: int) -> Fn:
    if depth > MAX_DEPTH:
        raise _Unsupported("too deep")
    kind = node.kind
    if kind == LITERAL:
        return _literal(node)
    if kind == IDENT or (kind == SELECT and not node.test_only):
        path = _path(node)
        if path is not None:
            return _chain(*path)
        assert node.target is not None
        return _select(_compile(node.target, depth + 1), str(node.value))
    if kind == SELECT:
        if node.target is None:
            raise _Unsupported("a select without an operand")
        return _has(_compile(node.target, depth + 1), str(node.value))
    if kind == LIST:
        return _list([_compile(a, depth + 1) for a in node.args])
    if kind != CALL:
        raise _Unsupported(f"{kind} node")
    fn = str(node.value)
    args = list(node.args)
    if node.target is not None:
        if fn != "size" or args:
            raise _Unsupported(f"member call {fn}")
        args = [node.target]
    parts = [_compile(a, depth + 1) for a in args]
    n = len(parts)
    if fn in ("_&&_", "_||_") and n >= 2:
        return _logical(parts, fn == "_||_")
    if fn == "!_" and n == 1:
        return _not(parts[0])
    if fn == "size" and n == 1:
        return _size(parts[0])
    if n == 2:
        if fn in ("_==_", "_!=_"):
            return _equality(parts[0], parts[1], fn == "_!=_")
        order = _ORDERS.get(fn)
        if order is not None:
            return _order(parts[0], parts[1], order)
        if fn == "@in":
            return _in(parts[0], parts[1])
    raise _Unsupported(f"function {fn}/{n}")


def compile_validations(programs: Sequence[Any]) -> Evaluator | None:
    """One evaluator for compiled programs (``cel.Expression``) that must each be a bool:
    it answers their values when every one is decided (see the module docstring), else
    None. None (no evaluator) when any is outside the subset or its checked AST cannot
    be read."""
    fns: list[Fn] = []
    for program in programs:
        try:
            root = decode_checked(program.serialize()).expr
            fns.append(compile_node(root))
        except (ValueError, IndexError, struct.error, AttributeError):
            return None
    if not fns:
        return None
    compiled = tuple(fns)

    def evaluate(d: Mapping[str, Any]) -> list[bool] | None:
        out: list[bool] = []
        try:
            for f in compiled:
                v = f(d)
                if type(v) is not bool:
                    return None
                out.append(v)
        except Unknown:
            return None
        return out

    return evaluate
