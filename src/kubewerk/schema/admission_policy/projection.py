"""What of its activation a compiled admission expression can read, and the activation
values cut down to that.

An expression reads an activation variable (``object``, ``params`` …) only through an
identifier node of its checked AST; every use of that identifier either is the operand
of a chain of field selections (``object.spec.replicas``, ``has(object.spec.x)``) or
uses the value whole (``object.spec.all(…)`` uses ``object.spec`` whole, ``object``
passed to a function or indexed with ``[…]`` or ``.?`` uses ``object`` whole). So the
value of every select chain over a variable is all an evaluation can observe of it.

:func:`expression_reads` walks the checked AST once at compile time and answers, per
variable, a :data:`Projection`: the selected keys, each with what is read under it
(None: the whole value). Identifiers of comprehension variables that share a
variable's name are counted as reads of the variable too (a superset, never less).
:func:`project` cuts a JSON value down to a projection: maps (plain ``dict``) keep only
the selected keys that are present, with their values cut down in turn; any other value
(a list, a string, a number, null) is kept whole. Every select chain of the expression
then yields what it yields on the whole value — the same value, the same ``no such
key`` error for an absent key, the same presence for ``has()``, the same type error for
a select on a non-map — since each step selects a key the projection kept whenever the
original has it.

What a projection does not keep is never handed to CEL, so it cannot fail to convert:
the cut is equivalent only for values CEL converts whole without error, which plain
JSON values as the API server decodes them always are (``kubewerk.apiserver.decode``:
str-keyed dicts, lists, strings, finite floats, booleans, null, integers within
int64). The engine projects only when its caller says its values are such.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from typing import Any, Final

from kubewerk.schema.cel.checked import COMPREHENSION, IDENT, SELECT, Node, decode_checked

Projection = dict[str, "Projection | None"]
"""The keys of a map an expression selects, each with the projection of its value
(None: the value is read whole)."""

Selects = Mapping[str, "Projection | None"]
"""Per activation variable read, its projection (None, or absent: read whole)."""

PROJECTED: Final = ("object", "oldObject", "params", "namespaceObject")
"""The variables whose values are JSON taken from the request (the others the engine
builds itself)."""


def merge(a: Projection | None, b: Projection | None) -> Projection | None:
    """A projection that keeps what either keeps (None, the whole value, absorbs)."""
    if a is None or b is None:
        return None
    out = dict(a)
    for key, sub in b.items():
        out[key] = merge(out[key], sub) if key in out else sub
    return out


def merge_selects(a: Selects, b: Selects) -> dict[str, Projection | None]:
    """The variables and projections of two expressions together."""
    out = dict(a)
    for name, proj in b.items():
        out[name] = merge(out[name], proj) if name in out else proj
    return out


def _path(keys: list[str]) -> Projection | None:
    proj: Projection | None = None
    for key in reversed(keys):
        proj = {key: proj}
    return proj


def _children(node: Node) -> list[Node]:
    out: list[Node] = []
    if node.target is not None:
        out.append(node.target)
    out.extend(node.args)
    comp = node.comp
    if node.kind == COMPREHENSION and comp is not None:
        out += [
            comp.iter_range,
            comp.accu_init,
            comp.loop_condition,
            comp.loop_step,
            comp.result,
        ]
    return out


def ast_reads(root: Node, names: tuple[str, ...]) -> dict[str, Projection | None]:
    """The variables of ``names`` the expression ``root`` reads, with their projections."""
    found: dict[str, Projection | None] = {}
    stack = [root]
    while stack:
        node = stack.pop()
        keys: list[str] = []
        base = node
        while base.kind == SELECT:
            if base.target is None:
                raise ValueError("a select without an operand")
            keys.append(str(base.value))
            base = base.target
        if base.kind == IDENT:
            name = str(base.value).lstrip(".")
            if name in names:
                keys.reverse()
                proj = _path(keys)
                found[name] = merge(found[name], proj) if name in found else proj
            continue
        # a select over something else (a call's result, a literal map …): what it
        # selects from is computed from its parts, which are walked
        stack.extend(_children(base))
    return found


def expression_reads(
    program: Any, names: tuple[str, ...]
) -> tuple[frozenset[str], dict[str, Projection | None]]:
    """The variables of ``names`` a compiled program (``cel.Expression``) may read, and
    their projections, from its checked AST (names in string literals or comments are
    not reads); when the AST cannot be read, every name counts as read whole."""
    try:
        found = ast_reads(decode_checked(program.serialize()).expr, names)
    except (ValueError, IndexError, struct.error):
        found = {name: None for name in names}
    return frozenset(found), found


def project(value: Any, projection: Projection | None) -> Any:
    """``value`` cut down to ``projection`` (see the module docstring); ``value`` itself
    when read whole or not a plain dict."""
    if projection is None or type(value) is not dict:
        return value
    return {
        key: value[key] if sub is None else project(value[key], sub)
        for key, sub in projection.items()
        if key in value
    }
