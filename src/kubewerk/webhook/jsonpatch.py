"""The RFC 6902 JSON Patch a mutating webhook answers with, computed from two documents.

:func:`diff` gives operations that turn ``old`` into ``new`` (both plain JSON values):

- object members are compared by key: a missing one is ``add``-ed, a vanished one
  ``remove``-d, a changed one recursed into when both sides are objects (or both arrays)
  and otherwise ``replace``-d;
- arrays are compared position by position over their common length, then the extra
  elements of ``new`` are appended (``add`` at their index) or the surplus of ``old``
  removed from the end backwards, so every index is valid when its operation runs;
- keys are escaped as JSON Pointer tokens (``~`` → ``~0``, ``/`` → ``~1``);
- ``1`` and ``1.0`` are different values (kube-apiserver keeps the difference), and
  ``True`` is not ``1``.

Applying the result to ``old`` with any RFC 6902 implementation (kube-apiserver's
``evanphx/json-patch``, :func:`kubewerk.core.patch.json_patch`) gives ``new``. The walk
is iterative, so no document is too deep for it; values in operations are ``new``'s own
containers (not copies): serialise them before changing ``new`` again.
"""

from __future__ import annotations

import binascii
import re
from typing import Any, Final

import orjson

from kubewerk.core.patch import decode_pointer_token, encode_pointer_token

__all__ = ["INDEX_TOKEN", "applies", "applies_exactly", "diff", "encode_patch"]

INDEX_TOKEN: Final = re.compile(r"0|[1-9][0-9]*")
"""A list index as a JSON Pointer token names it canonically (RFC 6901: decimal, no
leading zero, no sign)."""


def _same(a: Any, b: Any) -> bool:
    """Equal as JSON values: ``1``, ``1.0`` and ``True`` all differ (Python's ``==`` says
    they are equal; their JSON texts say they are not)."""
    if a is b:
        return True
    if type(a) is not type(b):
        return False
    if not isinstance(a, _CONTAINERS):
        return bool(a == b)
    return _same_containers(a, b)


def _same_containers(a: Any, b: Any) -> bool:
    """:func:`_same` of two containers of one type."""
    try:
        return a == b and _dumps(a) == _dumps(b)
    except (RecursionError, orjson.JSONEncodeError):
        return False  # too deep to compare at once: the walk compares it level by level


_dumps = orjson.dumps
_MISSING: Any = object()


def _token(key: str) -> str:
    return encode_pointer_token(key) if ("~" in key or "/" in key) else key


def diff(old: Any, new: Any) -> list[dict[str, Any]]:
    """The operations that turn ``old`` into ``new`` (see the module doc).

    Unchanged subtrees cost one C-level comparison each: a member is descended into only
    when it differs. (The member loops spell :func:`_same` out, since they run once per
    member of every changed object: ``_same(x, y)`` is ``x is y``, or the same type and
    ``x == y`` for scalars, or :func:`_same_containers` for containers.)
    """
    ops: list[dict[str, Any]] = []
    emit = ops.append
    stack: list[tuple[str, Any, Any]] = [("", old, new)]
    while stack:
        path, a, b = stack.pop()
        if isinstance(a, dict) and isinstance(b, dict):
            # removals first, then changes and additions, in key order
            for key in a:
                if key not in b:
                    emit({"op": "remove", "path": f"{path}/{_token(key)}"})
            later: list[tuple[str, Any, Any]] = []
            for key, value in b.items():
                current = a.get(key, _MISSING)
                if current is value:
                    continue
                if current is _MISSING and key not in a:
                    emit({"op": "add", "path": f"{path}/{_token(key)}", "value": value})
                    continue
                kind = type(current)
                if kind is type(value):
                    if not isinstance(current, _CONTAINERS):
                        if current == value:
                            continue
                        emit({"op": "replace", "path": f"{path}/{_token(key)}", "value": value})
                        continue
                    if _same_containers(current, value):
                        continue
                    later.append((f"{path}/{_token(key)}", current, value))
                elif _container_pair(current, value):
                    later.append((f"{path}/{_token(key)}", current, value))
                else:
                    emit({"op": "replace", "path": f"{path}/{_token(key)}", "value": value})
            # sibling paths are disjoint: their order does not matter; recurse in
            # document order (the stack pops last-in first)
            if later:
                stack.extend(reversed(later))
        elif isinstance(a, list) and isinstance(b, list):
            common = min(len(a), len(b))
            if len(b) > common:
                ops.extend(
                    {"op": "add", "path": f"{path}/{i}", "value": b[i]}
                    for i in range(common, len(b))
                )
            elif len(a) > common:
                ops.extend(
                    {"op": "remove", "path": f"{path}/{i}"}
                    for i in range(len(a) - 1, common - 1, -1)
                )
            later = []
            for i in range(common):
                if _same(a[i], b[i]):
                    continue
                if _container_pair(a[i], b[i]):
                    later.append((f"{path}/{i}", a[i], b[i]))
                else:
                    emit({"op": "replace", "path": f"{path}/{i}", "value": b[i]})
            stack.extend(reversed(later))
        elif not _same(a, b):
            emit({"op": "replace", "path": path, "value": b})
    return ops


def _container_pair(a: Any, b: Any) -> bool:
    return (isinstance(a, dict) and isinstance(b, dict)) or (
        isinstance(a, list) and isinstance(b, list)
    )


def applies(doc: Any, ops: list[dict[str, Any]]) -> bool:
    """Whether ``ops`` (as :func:`diff` writes them: ``add``, ``remove``, ``replace``)
    apply to ``doc`` in order, without copying or changing it: every parent exists with
    the right container type, every replaced or removed member exists, and every array
    index is in range for the array's length at that point."""
    lengths: dict[int, int] = {}  # id(list) -> its length after the operations so far
    for op in ops:
        path = op["path"]
        if path == "":
            if op["op"] != "replace":
                return False
            continue
        tokens = [decode_pointer_token(t) for t in path.split("/")[1:]]
        node = doc
        for token in tokens[:-1]:
            if isinstance(node, dict):
                if token not in node:
                    return False
                node = node[token]
            elif isinstance(node, list):
                if not token.isdigit() or int(token) >= lengths.get(id(node), len(node)):
                    return False
                node = node[int(token)]
            else:
                return False
        last = tokens[-1]
        if isinstance(node, dict):
            if op["op"] != "add" and last not in node:
                return False
        elif isinstance(node, list):
            size = lengths.get(id(node), len(node))
            if not last.isdigit():
                return False
            index = int(last)
            if op["op"] == "add":
                if index > size:
                    return False
                lengths[id(node)] = size + 1
            else:
                if index >= size:
                    return False
                if op["op"] == "remove":
                    lengths[id(node)] = size - 1
        else:
            return False
    return True


def applies_exactly(doc: Any, ops: Any) -> bool:
    """Whether ``ops`` (``add``, ``remove`` and ``replace`` operations, list indices
    written canonically, ``-`` for an append) apply to ``doc`` in order, each checked
    against the document as the earlier ones leave it — a member added by one operation
    may be changed by a later one, a removed one no longer exists — so that any RFC 6902
    implementation applies them. ``doc`` is not changed: the walk copies only the
    containers along the paths of operations that a later one may read (shallowly), and
    shares operations' values. Anything else (another operation, a missing or
    non-string path or value, a path not starting with ``/``, a sign or leading zero in
    an index) is False."""
    if not isinstance(ops, list):
        return False
    owned: dict[int, Any] = {}  # containers copied here (kept alive: no id reuse)
    root = doc
    final = len(ops) - 1
    for i, op in enumerate(ops):
        if not isinstance(op, dict):
            return False
        kind, path = op.get("op"), op.get("path")
        if kind not in _OPS or not isinstance(path, str) or not path.startswith("/"):
            return False
        if kind != "remove" and "value" not in op:
            return False
        if not isinstance(root, _CONTAINERS):
            return False
        tokens = path[1:].split("/")
        if "~" in path:
            tokens = [decode_pointer_token(t) for t in tokens]
        write = i < final  # the last operation is only checked: nothing reads after it
        if write:
            root = _owned(root, owned)
        node = root
        for token in tokens[:-1]:
            slot: str | int
            if isinstance(node, dict):
                child = node.get(token, _MISSING)
                if child is _MISSING:
                    return False
                slot = token
            elif INDEX_TOKEN.fullmatch(token) and int(token) < len(node):
                slot = int(token)
                child = node[slot]
            else:
                return False
            if not isinstance(child, _CONTAINERS):
                return False
            if write:
                mine = _owned(child, owned)
                if mine is not child:
                    node[slot] = mine
                child = mine
            node = child
        last = tokens[-1]
        if isinstance(node, dict):
            if kind != "add" and last not in node:
                return False
            if write:
                if kind == "remove":
                    del node[last]
                else:
                    node[last] = op["value"]
            continue
        if kind == "add" and last == "-":
            if write:
                node.append(op["value"])
            continue
        if not INDEX_TOKEN.fullmatch(last):
            return False
        index = int(last)
        if index > len(node) or (index == len(node) and kind != "add"):
            return False
        if write:
            if kind == "add":
                node.insert(index, op["value"])
            elif kind == "replace":
                node[index] = op["value"]
            else:
                del node[index]
    return True


_OPS: Final = frozenset({"add", "remove", "replace"})
_CONTAINERS: Final = (dict, list)  # a tuple: ``dict | list`` would be built on every call


def _owned(node: Any, owned: dict[int, Any]) -> Any:
    """``node`` when it is one of ``owned``, else a shallow copy now in ``owned``."""
    if id(node) in owned:
        return node
    copied = dict(node) if isinstance(node, dict) else list(node)
    owned[id(copied)] = copied
    return copied


def encode_patch(ops: list[dict[str, Any]]) -> str:
    """``ops`` as the base64 text of ``AdmissionResponse.patch`` (the JSON bytes, standard
    base64 with padding, as Go's ``[]byte`` marshals): ``base64.b64encode``'s own
    call, without its Python wrapper."""
    return _b64(orjson.dumps(ops), newline=False).decode("ascii")


_b64 = binascii.b2a_base64
