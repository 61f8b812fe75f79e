"""The spec change of one write as an RFC 6902 JSON Patch (the audit log's spec history).

``spec_patch(old, new)`` gives the operations turning ``{"spec": old.spec}`` into
``{"spec": new.spec}`` (a document without ``spec`` when the object is absent — created
or deleted — or has none), so replaying the patches of an object's writes in order from
``{}`` (and back to ``{}`` after a deletion) gives its spec at every version
(``history``). Applying a patch with any RFC 6902 implementation
(``kubewerk.core.patch.json_patch``, evanphx/json-patch) gives the new document exactly:

- object members are compared by key: ``add`` a new one, ``remove`` a vanished one,
  recurse into a changed one when both sides are objects or both arrays, else
  ``replace`` it;
- arrays are compared index by index over their common length, then the extra elements of
  the new one are appended, or the surplus of the old removed from the end backwards;
- ``1``, ``1.0`` and ``true`` are different values; keys are escaped as JSON Pointer
  tokens (``~0``, ``~1``).

The walk keeps its own stack, so no nesting the store accepts is too deep for it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubewerk.core.patch import encode_pointer_token

__all__ = ["diff", "spec_patch"]

JSON = dict[str, Any]


def spec_patch(old: Mapping[str, Any] | None, new: Mapping[str, Any] | None) -> list[JSON]:
    """The patch from ``old``'s spec document to ``new``'s (see the module doc)."""
    return diff(_spec_doc(old), _spec_doc(new))


def _spec_doc(obj: Mapping[str, Any] | None) -> JSON:
    if obj is None or "spec" not in obj:
        return {}
    return {"spec": obj["spec"]}


def _same(a: Any, b: Any) -> bool:
    if a is b:
        return True
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return len(a) == len(b) and all(k in b and _same(v, b[k]) for k, v in a.items())
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def diff(old: Any, new: Any) -> list[JSON]:
    """Operations that turn ``old`` into ``new`` (both plain JSON values)."""
    ops: list[JSON] = []
    stack: list[tuple[str, Any, Any]] = [("", old, new)]
    while stack:
        path, a, b = stack.pop()
        if isinstance(a, dict) and isinstance(b, dict):
            later: list[tuple[str, Any, Any]] = []
            for k, v in a.items():
                p = f"{path}/{encode_pointer_token(k)}"
                if k not in b:
                    ops.append({"op": "remove", "path": p})
                elif not _same(v, b[k]):
                    later.append((p, v, b[k]))
            for k, v in b.items():
                if k not in a:
                    ops.append(
                        {"op": "add", "path": f"{path}/{encode_pointer_token(k)}", "value": v}
                    )
            stack.extend(reversed(later))
        elif isinstance(a, list) and isinstance(b, list):
            common = min(len(a), len(b))
            later = [(f"{path}/{i}", a[i], b[i]) for i in range(common) if not _same(a[i], b[i])]
            tail: list[JSON] = []
            for i in range(common, len(b)):
                tail.append({"op": "add", "path": f"{path}/{i}", "value": b[i]})
            for i in range(len(a) - 1, common - 1, -1):
                tail.append({"op": "remove", "path": f"{path}/{i}"})
            # element changes first (their indexes are valid before the tail changes)
            ops.extend(_flatten(later))
            ops.extend(tail)
        elif not _same(a, b):
            ops.append({"op": "replace", "path": path, "value": b})
    return ops


def _flatten(pairs: list[tuple[str, Any, Any]]) -> list[JSON]:
    out: list[JSON] = []
    for p, a, b in pairs:
        out.extend(diff_at(p, a, b))
    return out


def diff_at(path: str, old: Any, new: Any) -> list[JSON]:
    """``diff(old, new)`` with every path under ``path``."""
    return [{**op, "path": path + op["path"]} for op in diff(old, new)]
