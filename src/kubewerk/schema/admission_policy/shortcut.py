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

and compiles them into one Python function (generated source: one frame, no call per
node, which is what makes it cheaper than cel-cpp's fixed cost per call). Anything else
(other functions, macros, comprehensions, double/uint/bytes literals, ``request``,
``variables`` …) is not compiled: the caller keeps evaluating it with cel-cpp. The
generated source holds no text of the policy's but through ``repr`` of its literals
and field names.

Guarantee: over plain JSON values as the API server decodes them (str-keyed dicts,
lists, strings, finite floats, booleans, null, integers within int64) a compiled
expression either answers the value cel-cpp answers for the same expression over the
same data, or raises :class:`Unknown` (the validations' evaluator: answers None) — it
never answers an error, a different value or a value of another type. It answers
only when every step is unambiguous:

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
"""Deeper expressions are left to cel-cpp."""

_INT_MIN: Final = -(1 << 63)
_INT_MAX: Final = (1 << 63) - 1
_ORDERS: Final = {"_<_": "<", "_<=_": "<=", "_>_": ">", "_>=_": ">="}
_LITERAL_TYPES: Final = {"bool": "bool", "int": "int", "string": "str", "null": "_NoneType"}


class Unknown(Exception):
    """The shortcut cannot decide this evaluation: cel-cpp must."""


class _Unsupported(Exception):
    """The expression is outside the shortcut's subset."""


class _Missing:
    """The value of an absent key (never a JSON value)."""


_MISSING: Final = _Missing()
_GLOBALS: Final = {
    "_Unknown": Unknown,
    "_MISSING": _MISSING,
    "_INT_MIN": _INT_MIN,
    "_INT_MAX": _INT_MAX,
    "_NoneType": type(None),
    "__builtins__": {"type": type, "dict": dict, "list": list, "str": str, "int": int,
                     "bool": bool, "len": len},
}  # fmt: skip


class _Operand:
    """An emitted sub-expression: Python ``text`` for its value (a local or a literal)
    and, when known when compiling (a literal, or a result that is always a bool or an
    int within int64), the name of its Python type (``static``)."""

    __slots__ = ("static", "text")

    def __init__(self, text: str, static: str = "") -> None:
        self.text = text
        self.static = static


class _Gen:
    """Python statements computing expression values into locals; every undecided step
    raises ``_Unknown``."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.count = 0

    def local(self) -> str:
        self.count += 1
        return f"v{self.count}"

    def emit(self, indent: int, line: str) -> None:
        self.lines.append("    " * indent + line)

    def scalar(self, ind: int, x: _Operand) -> None:
        """Unknown unless ``x`` is an int within int64, a string, a bool or null."""
        if x.static:
            return
        t = x.text
        self.emit(ind, f"if type({t}) is int:")
        self.emit(ind + 1, f"if not _INT_MIN <= {t} <= _INT_MAX: raise _Unknown")
        self.emit(ind, f"elif type({t}) is not str and type({t}) is not bool and {t} is not None:")
        self.emit(ind + 1, "raise _Unknown")

    def same_scalars(self, ind: int, a: _Operand, b: _Operand) -> None:
        """Unknown unless ``a`` and ``b`` are scalars (see :meth:`scalar`) of one type."""
        if a.static and b.static:
            if a.static != b.static:
                raise _Unsupported("operands of different types")
            return
        if b.static and not a.static:
            a, b = b, a
        if a.static:
            # b is dynamic: its type must be the literal's
            self.emit(ind, f"if type({b.text}) is not {a.static}: raise _Unknown")
            if a.static == "int":
                self.emit(ind, f"if not _INT_MIN <= {b.text} <= _INT_MAX: raise _Unknown")
            return
        self.emit(ind, f"if type({a.text}) is not type({b.text}): raise _Unknown")
        self.scalar(ind, a)
        self.emit(ind, f"if type({b.text}) is int and not _INT_MIN <= {b.text} <= _INT_MAX:")
        self.emit(ind + 1, "raise _Unknown")

    def node(self, node: Node, ind: int, depth: int) -> _Operand:
        if depth > MAX_DEPTH:
            raise _Unsupported("too deep")
        kind = node.kind
        if kind == LITERAL:
            static = _LITERAL_TYPES.get(node.lit_kind, "")
            value = node.value
            ok = (
                (static == "bool" and type(value) is bool)
                or (static == "int" and type(value) is int and _INT_MIN <= value <= _INT_MAX)
                or (static == "str" and type(value) is str)
                or (static == "_NoneType" and value is None)
            )
            if not ok:
                raise _Unsupported(f"literal of kind {node.lit_kind}")
            return _Operand(repr(value), static)
        if kind == IDENT or (kind == SELECT and not node.test_only):
            return self.select(node, ind, depth)
        if kind == SELECT:  # has()
            if node.target is None:
                raise _Unsupported("a select without an operand")
            t = self.node(node.target, ind, depth + 1)
            if t.static:
                raise _Unsupported("has() on a bool, int, string or null")
            out = self.local()
            self.emit(ind, f"if type({t.text}) is not dict: raise _Unknown")
            self.emit(ind, f"{out} = {str(node.value)!r} in {t.text}")
            return _Operand(out, "bool")
        if kind == LIST:
            items = [self.node(a, ind, depth + 1) for a in node.args]
            out = self.local()
            self.emit(ind, f"{out} = [{', '.join(i.text for i in items)}]")
            return _Operand(out)
        if kind != CALL:
            raise _Unsupported(f"{kind} node")
        return self.call(node, ind, depth)

    def select(self, node: Node, ind: int, depth: int) -> _Operand:
        keys: list[str] = []
        base = node
        while base.kind == SELECT and not base.test_only and base.target is not None:
            keys.append(str(base.value))
            base = base.target
        keys.reverse()
        out = self.local()
        if base.kind == IDENT:
            name = str(base.value).lstrip(".")
            if name not in VARIABLES:
                raise _Unsupported(f"identifier {name}")
            self.emit(ind, f"{out} = d.get({name!r}, _MISSING)")
        else:
            t = self.node(base, ind, depth + 1)
            self.emit(ind, f"{out} = {t.text}")
        for key in keys:
            self.emit(ind, f"if type({out}) is not dict: raise _Unknown")
            self.emit(ind, f"{out} = {out}.get({key!r}, _MISSING)")
        self.emit(ind, f"if {out} is _MISSING: raise _Unknown")
        return _Operand(out)

    def call(self, node: Node, ind: int, depth: int) -> _Operand:
        fn = str(node.value)
        args = list(node.args)
        if node.target is not None:
            if fn != "size" or args:
                raise _Unsupported(f"member call {fn}")
            args = [node.target]
        n = len(args)
        if fn in ("_&&_", "_||_") and n >= 2:
            return self.logical(args, fn == "_||_", ind, depth)
        parts = [self.node(a, ind, depth + 1) for a in args]
        out = self.local()
        if fn == "!_" and n == 1:
            x = parts[0].text
            self.emit(ind, f"if type({x}) is not bool: raise _Unknown")
            self.emit(ind, f"{out} = not {x}")
            return _Operand(out, "bool")
        if fn == "size" and n == 1:
            x = parts[0].text
            self.emit(ind, f"if type({x}) is not str and type({x}) is not list and "
                           f"type({x}) is not dict:")  # fmt: skip
            self.emit(ind + 1, "raise _Unknown")
            self.emit(ind, f"{out} = len({x})")
            return _Operand(out, "int")
        if n == 2:
            a, b = parts
            if fn in ("_==_", "_!=_"):
                self.same_scalars(ind, a, b)
                self.emit(ind, f"{out} = {a.text} {'==' if fn == '_==_' else '!='} {b.text}")
                return _Operand(out, "bool")
            op = _ORDERS.get(fn)
            if op is not None:
                if a.static == "_NoneType" or b.static == "_NoneType":
                    raise _Unsupported("ordering of null")
                self.same_scalars(ind, a, b)
                if not a.static and not b.static:
                    self.emit(ind, f"if {a.text} is None: raise _Unknown")
                self.emit(ind, f"{out} = {a.text} {op} {b.text}")
                return _Operand(out, "bool")
            if fn == "@in":
                self.contains(a, b, out, ind)
                return _Operand(out, "bool")
        raise _Unsupported(f"function {fn}/{n}")

    def contains(self, x: _Operand, c: _Operand, out: str, ind: int) -> None:
        if c.static:
            raise _Unsupported("in over a bool, int, string or null")
        e = self.local()
        self.emit(ind, f"if type({c.text}) is dict:")
        if x.static and x.static != "str":
            self.emit(ind + 1, "raise _Unknown")
        else:
            if not x.static:
                self.emit(ind + 1, f"if type({x.text}) is not str: raise _Unknown")
            self.emit(ind + 1, f"{out} = {x.text} in {c.text}")
        self.emit(ind, f"elif type({c.text}) is list:")
        self.scalar(ind + 1, x)
        self.emit(ind + 1, f"for {e} in {c.text}:")
        self.same_scalars(ind + 2, _Operand(e), x)
        self.emit(ind + 1, f"{out} = {x.text} in {c.text}")
        self.emit(ind, "else:")
        self.emit(ind + 1, "raise _Unknown")

    def logical(self, args: list[Node], absorbing: bool, ind: int, depth: int) -> _Operand:
        """``&&``/``||``: every operand evaluated (none has an effect), an undecided one
        as ``_MISSING``; the absorbing value when any operand is it, the other when all
        are, else unknown."""
        values: list[str] = []
        for a in args:
            v = self.local()
            self.emit(ind, "try:")
            part = self.node(a, ind + 1, depth + 1)
            self.emit(ind + 1, f"{v} = {part.text}")
            self.emit(ind, "except _Unknown:")
            self.emit(ind + 1, f"{v} = _MISSING")
            values.append(v)
        out = self.local()
        absorb, other = repr(absorbing), repr(not absorbing)
        self.emit(ind, "if " + " or ".join(f"{v} is {absorb}" for v in values) + ":")
        self.emit(ind + 1, f"{out} = {absorb}")
        self.emit(ind, "elif " + " and ".join(f"{v} is {other}" for v in values) + ":")
        self.emit(ind + 1, f"{out} = {other}")
        self.emit(ind, "else:")
        self.emit(ind + 1, "raise _Unknown")
        return _Operand(out, "bool")


def _function(source: str, name: str) -> Any:
    namespace: dict[str, Any] = {}
    try:
        code = compile(source, "<admission shortcut>", "exec")
    except (SyntaxError, RecursionError, MemoryError) as exc:  # e.g. too many nested blocks
        raise _Unsupported(f"generated code does not compile: {exc}") from None
    exec(code, dict(_GLOBALS), namespace)  # the source is generated above: no user text
    return namespace[name]


def compile_node(node: Node) -> Fn:
    """One checked expression as a function of the activation's data (its value, or
    :class:`Unknown`); raises ValueError when it is outside the subset."""
    gen = _Gen()
    try:
        result = gen.node(node, 1, 0)
        gen.emit(1, f"return {result.text}")
        fn: Fn = _function("def _expression(d):\n" + "\n".join(gen.lines), "_expression")
    except _Unsupported as exc:
        raise ValueError(f"not in the shortcut's subset: {exc}") from None
    return fn


def compile_validations(programs: Sequence[Any]) -> Evaluator | None:
    """One evaluator for compiled programs (``cel.Expression``) that must each be a bool:
    it answers their values when every one is decided (see the module docstring), else
    None. None (no evaluator) when any is outside the subset or its checked AST cannot
    be read."""
    if not programs:
        return None
    gen = _Gen()
    results: list[str] = []
    try:
        for program in programs:
            root = decode_checked(program.serialize()).expr
            value = gen.node(root, 2, 0)
            if value.static and value.static != "bool":
                return None
            if not value.static:
                gen.emit(2, f"if type({value.text}) is not bool: return None")
            results.append(value.text)
        gen.emit(2, f"return [{', '.join(results)}]")
        source = "def _validations(d):\n    try:\n" + "\n".join(gen.lines)
        source += "\n    except _Unknown:\n        return None"
        evaluator: Evaluator = _function(source, "_validations")
    except (_Unsupported, ValueError, IndexError, struct.error, AttributeError):
        return None
    return evaluator
