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

import base64
from typing import Any

import orjson

from kubewerk.core.patch import encode_pointer_token

__all__ = ["diff", "encode_patch"]


def _same(a: Any, b: Any) -> bool:
    """Equal scalars (or a container and anything else, which never are): types must
    agree, so ``1``, ``1.0`` and ``True`` all differ."""
    return type(a) is type(b) and not isinstance(a, dict | list) and bool(a == b)


def diff(old: Any, new: Any) -> list[dict[str, Any]]:
    """The operations that turn ``old`` into ``new`` (see the module doc)."""
    ops: list[dict[str, Any]] = []
    stack: list[tuple[str, Any, Any]] = [("", old, new)]
    while stack:
        path, a, b = stack.pop()
        if isinstance(a, dict) and isinstance(b, dict):
            # removals first, then changes and additions, in key order
            for key in a:
                if key not in b:
                    ops.append({"op": "remove", "path": f"{path}/{encode_pointer_token(key)}"})
            later: list[tuple[str, Any, Any]] = []
            for key, value in b.items():
                child = f"{path}/{encode_pointer_token(key)}"
                if key not in a:
                    ops.append({"op": "add", "path": child, "value": value})
                elif _container_pair(a[key], value):
                    later.append((child, a[key], value))
                elif not _same(a[key], value):
                    ops.append({"op": "replace", "path": child, "value": value})
            # sibling paths are disjoint: their order does not matter; recurse in
            # document order (the stack pops last-in first)
            stack.extend(reversed(later))
        elif isinstance(a, list) and isinstance(b, list):
            common = min(len(a), len(b))
            tail: list[dict[str, Any]] = []
            if len(b) > common:
                tail = [
                    {"op": "add", "path": f"{path}/{i}", "value": b[i]}
                    for i in range(common, len(b))
                ]
            elif len(a) > common:
                tail = [
                    {"op": "remove", "path": f"{path}/{i}"}
                    for i in range(len(a) - 1, common - 1, -1)
                ]
            ops.extend(tail)
            later = []
            for i in range(common):
                if _container_pair(a[i], b[i]):
                    later.append((f"{path}/{i}", a[i], b[i]))
                elif not _same(a[i], b[i]):
                    ops.append({"op": "replace", "path": f"{path}/{i}", "value": b[i]})
            stack.extend(reversed(later))
        elif not _same(a, b):
            ops.append({"op": "replace", "path": path, "value": b})
    return ops


def _container_pair(a: Any, b: Any) -> bool:
    return (isinstance(a, dict) and isinstance(b, dict)) or (
        isinstance(a, list) and isinstance(b, list)
    )


def encode_patch(ops: list[dict[str, Any]]) -> str:
    """``ops`` as the base64 text of ``AdmissionResponse.patch`` (the JSON bytes, standard
    base64 with padding, as Go's ``[]byte`` marshals)."""
    return base64.b64encode(orjson.dumps(ops)).decode("ascii")
