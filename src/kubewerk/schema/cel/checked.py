"""The checked expression cel-cpp produces, read back as a small Python AST.

``cel.Expression.serialize()`` returns a ``google.protobuf.Any`` holding a
``cel.expr.CheckedExpr``: the expression with its macros expanded (``all``, ``exists``,
``map``, ``cel.bind`` … become comprehensions, exactly as cel-go expands them), the
overload ids the checker resolved for every call (several when an argument is
``dyn``) and the checked type of every sub-expression. This module decodes that
message with a minimal protobuf wire reader (no protobuf runtime needed) into
:class:`Node` trees and :class:`CelType` values, which the cost estimator walks.

Only the fields the estimator needs are read; unknown fields are skipped, so a newer
cel-cpp that adds fields still decodes.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Final

__all__ = ["CelType", "CheckedAst", "Node", "decode_checked"]

# Node kinds
LITERAL: Final = "literal"
IDENT: Final = "ident"
SELECT: Final = "select"
CALL: Final = "call"
LIST: Final = "list"
MAP: Final = "map"
STRUCT: Final = "struct"
COMPREHENSION: Final = "comprehension"


@dataclass(frozen=True, slots=True)
class CelType:
    """A checked CEL type: ``kind`` is one of bool, int, uint, double, string, bytes,
    duration, timestamp, null, list, map, struct, dyn, type, optional, opaque,
    typeparam, error; ``params`` holds a list's element, a map's key and value, an
    optional's or opaque type's parameters; ``name`` a message, opaque or type
    parameter name."""

    kind: str
    params: tuple[CelType, ...] = ()
    name: str = ""


DYN: Final = CelType("dyn")


@dataclass(slots=True)
class Node:
    """One expression node. ``value`` is a literal's Python value (with ``lit_kind``:
    bool, int, uint, double, string, bytes, null), an identifier's name or a select's
    field name, or a call's function name; ``args`` are a call's arguments, a list's
    elements, a map's alternating keys and values; ``target`` a member call's receiver
    or a select's operand. Comprehensions keep their parts in ``comp``."""

    id: int
    kind: str
    value: object = None
    lit_kind: str = ""
    target: Node | None = None
    args: list[Node] = field(default_factory=list)
    test_only: bool = False
    comp: Comprehension | None = None


@dataclass(slots=True)
class Comprehension:
    iter_var: str
    iter_var2: str
    iter_range: Node
    accu_var: str
    accu_init: Node
    loop_condition: Node
    loop_step: Node
    result: Node


@dataclass(slots=True)
class CheckedAst:
    """The root expression, overload ids by call id and types by expression id."""

    expr: Node
    overloads: dict[int, list[str]]
    types: dict[int, CelType]

    def type_of(self, node: Node) -> CelType:
        return self.types.get(node.id, DYN)


def _varint(b: bytes, i: int) -> tuple[int, int]:
    r = 0
    s = 0
    while True:
        x = b[i]
        i += 1
        r |= (x & 0x7F) << s
        s += 7
        if x < 0x80:
            return r, i


def _fields(b: bytes) -> dict[int, list[int | bytes]]:
    """The fields of one protobuf message: field number → values (ints for varint and
    fixed fields, bytes for length-delimited ones)."""
    out: dict[int, list[int | bytes]] = {}
    i = 0
    n = len(b)
    while i < n:
        key, i = _varint(b, i)
        num, wire = key >> 3, key & 7
        v: int | bytes
        if wire == 0:
            v, i = _varint(b, i)
        elif wire == 2:
            ln, i = _varint(b, i)
            v = b[i : i + ln]
            i += ln
        elif wire == 1:
            v = struct.unpack_from("<Q", b, i)[0]
            i += 8
        elif wire == 5:
            v = struct.unpack_from("<I", b, i)[0]
            i += 4
        else:
            raise ValueError(f"unsupported protobuf wire type {wire}")
        out.setdefault(num, []).append(v)
    return out


def _bytes(f: dict[int, list[int | bytes]], num: int) -> bytes | None:
    v = f.get(num)
    if not v:
        return None
    x = v[0]
    return x if isinstance(x, bytes) else None


def _int(f: dict[int, list[int | bytes]], num: int) -> int:
    v = f.get(num)
    if not v:
        return 0
    x = v[0]
    return x if isinstance(x, int) else 0


def _str(f: dict[int, list[int | bytes]], num: int) -> str:
    b = _bytes(f, num)
    return b.decode() if b is not None else ""


def _signed(v: int) -> int:
    return v - (1 << 64) if v >= 1 << 63 else v


_PRIMITIVES: Final = {1: "bool", 2: "int", 3: "uint", 4: "double", 5: "string", 6: "bytes"}
_WELL_KNOWN: Final = {1: "dyn", 2: "timestamp", 3: "duration"}


def _type(b: bytes) -> CelType:
    f = _fields(b)
    if 1 in f:
        return DYN
    if 2 in f:
        return CelType("null")
    if 3 in f:
        return CelType(_PRIMITIVES.get(_int(f, 3), "dyn"))
    if 4 in f:  # wrapper types: nullable primitives
        return CelType(_PRIMITIVES.get(_int(f, 4), "dyn"))
    if 5 in f:
        return CelType(_WELL_KNOWN.get(_int(f, 5), "dyn"))
    lt = _bytes(f, 6)
    if lt is not None:
        elem = _bytes(_fields(lt), 1)
        return CelType("list", (_type(elem) if elem is not None else DYN,))
    mt = _bytes(f, 7)
    if mt is not None:
        mf = _fields(mt)
        k, v = _bytes(mf, 1), _bytes(mf, 2)
        return CelType(
            "map", (_type(k) if k is not None else DYN, _type(v) if v is not None else DYN)
        )
    if 9 in f:
        return CelType("struct", (), _str(f, 9))
    if 10 in f:
        return CelType("typeparam", (), _str(f, 10))
    if 11 in f:
        return CelType("type")
    if 12 in f:
        return CelType("error")
    at = _bytes(f, 14)
    if at is not None:
        af = _fields(at)
        name = _str(af, 1)
        params = tuple(_type(p) for p in af.get(2, []) if isinstance(p, bytes))
        return CelType("optional" if name == "optional_type" else "opaque", params, name)
    return DYN


def _constant(b: bytes) -> tuple[str, object]:
    f = _fields(b)
    if 1 in f:
        return "null", None
    if 2 in f:
        return "bool", bool(_int(f, 2))
    if 3 in f:
        return "int", _signed(_int(f, 3))
    if 4 in f:
        return "uint", _int(f, 4)
    if 5 in f:
        return "double", struct.unpack("<d", struct.pack("<Q", _int(f, 5)))[0]
    if 6 in f:
        return "string", _str(f, 6)
    if 7 in f:
        return "bytes", _bytes(f, 7) or b""
    if 8 in f:
        return "duration", None
    if 9 in f:
        return "timestamp", None
    return "null", None


def _expr(b: bytes, depth: int = 0) -> Node:
    if depth > 512:
        raise ValueError("expression nested too deeply")
    f = _fields(b)
    eid = _int(f, 2)
    c = _bytes(f, 3)
    if c is not None:
        lk, val = _constant(c)
        return Node(eid, LITERAL, val, lk)
    s = _bytes(f, 4)
    if s is not None:
        return Node(eid, IDENT, _str(_fields(s), 1))
    s = _bytes(f, 5)
    if s is not None:
        sf = _fields(s)
        op = _bytes(sf, 1)
        return Node(
            eid,
            SELECT,
            _str(sf, 2),
            target=_expr(op, depth + 1) if op is not None else None,
            test_only=bool(_int(sf, 3)),
        )
    s = _bytes(f, 6)
    if s is not None:
        cf = _fields(s)
        tgt = _bytes(cf, 1)
        return Node(
            eid,
            CALL,
            _str(cf, 2),
            target=_expr(tgt, depth + 1) if tgt is not None else None,
            args=[_expr(a, depth + 1) for a in cf.get(3, []) if isinstance(a, bytes)],
        )
    s = _bytes(f, 7)
    if s is not None:
        lf = _fields(s)
        return Node(
            eid, LIST, args=[_expr(a, depth + 1) for a in lf.get(1, []) if isinstance(a, bytes)]
        )
    s = _bytes(f, 8)
    if s is not None:
        sf = _fields(s)
        entries: list[Node] = []
        for ent in sf.get(2, []):
            if not isinstance(ent, bytes):
                continue
            ef = _fields(ent)
            key, val = _bytes(ef, 3), _bytes(ef, 4)
            if key is not None:
                entries.append(_expr(key, depth + 1))
            else:
                entries.append(Node(_int(ef, 1), LITERAL, _str(ef, 2), "string"))
            entries.append(_expr(val, depth + 1) if val is not None else Node(0, LITERAL))
        return Node(eid, STRUCT if _str(sf, 1) else MAP, _str(sf, 1), args=entries)
    s = _bytes(f, 9)
    if s is not None:
        cf = _fields(s)

        def part(num: int) -> Node:
            p = _bytes(cf, num)
            return _expr(p, depth + 1) if p is not None else Node(0, LITERAL)

        return Node(
            eid,
            COMPREHENSION,
            comp=Comprehension(
                iter_var=_str(cf, 1),
                iter_var2=_str(cf, 8),
                iter_range=part(2),
                accu_var=_str(cf, 3),
                accu_init=part(4),
                loop_condition=part(5),
                loop_step=part(6),
                result=part(7),
            ),
        )
    return Node(eid, LITERAL, None, "null")


def decode_checked(serialized: bytes) -> CheckedAst:
    """Decode ``cel.Expression.serialize()`` (an ``Any`` wrapping a ``CheckedExpr``)."""
    outer = _fields(serialized)
    inner = _bytes(outer, 2)
    checked = _fields(inner if inner is not None else serialized)
    overloads: dict[int, list[str]] = {}
    for ent in checked.get(2, []):
        if not isinstance(ent, bytes):
            continue
        kv = _fields(ent)
        ref = _bytes(kv, 2)
        if ref is None:
            continue
        ids = [x.decode() for x in _fields(ref).get(3, []) if isinstance(x, bytes)]
        if ids:
            overloads[_signed(_int(kv, 1))] = ids
    types: dict[int, CelType] = {}
    for ent in checked.get(3, []):
        if not isinstance(ent, bytes):
            continue
        kv = _fields(ent)
        t = _bytes(kv, 2)
        if t is not None:
            types[_signed(_int(kv, 1))] = _type(t)
    root = _bytes(checked, 4)
    if root is None:
        raise ValueError("checked expression has no expression")
    return CheckedAst(_expr(root), overloads, types)
