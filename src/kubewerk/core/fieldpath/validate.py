"""Typing an applied configuration: what structured-merge-diff's validation reports when
kube-apiserver makes a typed object of a server-side apply configuration (the
``typed.AsTyped`` behind ``failed to create typed patch object``), for the checks that
depend on the shape of the schema rather than on scalar types:

- a field a closed struct does not declare: ``.spec.foo: field not declared in schema``,
  one per object (structured-merge-diff stops iterating a map at its first);
- a list item a set or keyed list cannot name: ``.spec.ports: element 0: associative
  list with keys has an element that omits all key fields ["name"] (and doesn't have
  default values for any key fields)``; the rest of that list is not looked at;
- a key or value that appears twice in a set or keyed list: ``.spec.ports: duplicate
  entries for key [name="a"]``, once per extra occurrence; the items are still looked
  into.

Paths are printed as structured-merge-diff prints them: keyed items by their keys,
set items by their value, items of atomic lists by index. Go visits a map's keys in
random order, so kube fixes neither which undeclared field of an object it names nor
which of the object's other fields it looks into before it stops: here every declared
field is looked into and the first undeclared one by name is named (a list of errors
kube can give), and the errors are listed sorted. Nothing here changes its arguments;
``null`` is accepted anywhere, and a value of the wrong shape (a list where a struct
belongs) is left to admission's validation.
"""

from __future__ import annotations

from typing import Any

from kubewerk.core.fieldpath.path import element_string
from kubewerk.core.fieldpath.typed import ListItemError, item_element
from kubewerk.core.fieldpath.types import ATOMIC, LIST, MAP, TypeNode

__all__ = ["typing_errors"]


def typing_errors(value: Any, node: TypeNode) -> list[str]:
    """What typing ``value`` as ``node`` reports (see the module docstring), sorted, each
    as ``<path>: <message>`` (the message alone at the root); empty when ``value`` types
    cleanly."""
    out: list[str] = []
    _walk(value, node, "", out)
    out.sort()
    return out


def _report(out: list[str], path: str, message: str) -> None:
    out.append(f"{path}: {message}" if path else message)


def _walk(value: Any, node: TypeNode, path: str, out: list[str]) -> None:
    kind = type(value)
    if kind is dict:
        _walk_map(value, node.resolve(value), path, out)
    elif kind is list:
        _walk_list(value, node.resolve(value), path, out)


def _walk_map(value: dict[str, Any], walk: TypeNode, path: str, out: list[str]) -> None:
    if walk.kind != MAP:
        return
    undeclared: str | None = None
    closed = walk.closed
    for key, sub in value.items():  # the errors are sorted at the end: any order will do
        declared = walk.declared(key)
        if declared is None and closed:
            if undeclared is None or key < undeclared:
                undeclared = key
            continue
        if type(sub) is dict or type(sub) is list:
            _walk(sub, declared if declared is not None else walk.element(), f"{path}.{key}", out)
    if undeclared is not None:
        _report(out, f"{path}.{undeclared}", "field not declared in schema")


def _walk_list(value: list[Any], walk: TypeNode, path: str, out: list[str]) -> None:
    if walk.kind != LIST:
        return
    elem = walk.element()
    if walk.relation == ATOMIC:
        for index, item in enumerate(value):
            if type(item) is dict or type(item) is list:
                _walk(item, elem, f"{path}[{index}]", out)
        return
    seen: set[Any] = set()
    for index, item in enumerate(value):
        try:
            pe = item_element(walk, item, index, ())
        except ListItemError as exc:
            _report(out, path, f"element {index}: {exc}")
            return
        if pe in seen:
            _report(out, path, f"duplicate entries for key {element_string(pe)}")
        seen.add(pe)
        if type(item) is dict or type(item) is list:
            _walk(item, elem, path + element_string(pe), out)
