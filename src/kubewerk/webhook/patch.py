"""``Patch``: the RFC 6902 operations a patching handler states, against the object as
received.

A handler registered with :meth:`kubewerk.webhook.WebhookApp.patching` is given a
:class:`Patch` over the received JSON (``request.object``) and records its changes in
it; the server answers with exactly those operations — no model dumps, no diff::

    @app.patching(Database)
    async def default(db: Database, old: Database | None, req: AdmissionRequest,
                      patch: Patch) -> None:
        if db.spec.replicas is None:
            patch.set(("spec", "replicas"), 1)           # add or replace, as it applies
        patch.set_label("app.kubernetes.io/managed-by", "kubewerk")

**Changes to the typed object are not sent**: ``db`` is for reading; only what is
recorded in ``patch`` reaches kube-apiserver.

Paths are either a sequence of keys and list indices (``("metadata", "labels",
"a/b")``; keys are escaped for you, ``~`` → ``~0`` and ``/`` → ``~1`` per RFC 6901) or a
JSON Pointer string (``"/metadata/labels/a~1b"``, already escaped). A string that does
not start with ``/`` is refused, so ``"spec.replicas"`` cannot be mistaken for a path.

Guarantees:

- every operation is checked as it is recorded against the object as the operations
  so far leave it, and raises :class:`PatchOperationError` (a ``ValueError``) when it
  would not apply; the recorded list therefore applies, in order, to the received
  object with any RFC 6902 implementation (kube-apiserver's included);
- the received object is never changed (the patch keeps its own copies of only the
  containers along the paths it changes);
- values are plain JSON snapshots taken when recorded (a container changed by the
  handler afterwards does not change the patch); pydantic models among them are dumped
  (kubewerk models as :meth:`~kubewerk.model.KubeModel.to_dict` does); a value JSON
  cannot hold raises ``TypeError`` at the call;
- list elements are named by explicit indices in the recorded operations (an append is
  ``add`` at the list's length, never ``-``), so the server's applicability check and
  every implementation read them alike.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, Final

import orjson
from pydantic import BaseModel

from kubewerk.core.patch import decode_pointer_token, encode_pointer_token
from kubewerk.webhook.jsonpatch import INDEX_TOKEN as _INDEX
from kubewerk.webhook.jsonpatch import _same

__all__ = ["Patch", "PatchOperationError", "PatchPath"]

PatchPath = str | Sequence[str | int]
"""A JSON Pointer string (``"/spec/replicas"``, escaped) or the keys and list indices
(``("spec", "replicas")``, not escaped)."""

_BAD_ESCAPE: Final = re.compile(r"~(?![01])")
_INT_MIN: Final = -(2**63)
_INT_END: Final = 2**64  # orjson writes 64-bit integers, signed or not
_MISSING: Any = object()


class PatchOperationError(ValueError):
    """An operation that would not apply to the object as the patch leaves it (or a path
    that cannot name a member); ``str()`` says which and why."""


def _model_json(value: Any) -> Any:
    if isinstance(value, BaseModel):
        to_dict = getattr(value, "to_dict", None)
        if callable(to_dict):
            return to_dict()
        return value.model_dump(mode="json", by_alias=True)
    raise TypeError(f"{type(value).__name__} is not a JSON value")


def _plain(value: Any) -> Any:
    """``value`` as plain JSON owned by the patch (see the module doc)."""
    kind = type(value)
    if kind is str or kind is bool or kind is float or value is None:
        return value
    if kind is int:
        if not _INT_MIN <= value < _INT_END:
            raise TypeError(f"the integer {value} does not fit in 64 bits")
        return value
    try:
        return orjson.loads(orjson.dumps(value, default=_model_json))
    except orjson.JSONEncodeError as exc:
        raise TypeError(f"the value is not JSON: {exc}") from None


def _tokens(path: PatchPath) -> list[str | int]:
    if isinstance(path, str):
        if path == "":
            return []
        if path[0] != "/":
            raise PatchOperationError(
                f"{path!r} is not a JSON Pointer: one starts with '/' (or give the keys "
                "as a sequence, such as ('spec', 'replicas'))"
            )
        out: list[str | int] = []
        for raw in path[1:].split("/"):
            if "~" in raw and _BAD_ESCAPE.search(raw):
                raise PatchOperationError(
                    f"{path!r} is not a JSON Pointer: '~' must be followed by 0 or 1"
                )
            out.append(decode_pointer_token(raw))
        return out
    tokens = list(path)
    for token in tokens:
        if type(token) is int:
            if token < 0:
                raise PatchOperationError(f"list index {token} in {tokens!r} is negative")
        elif type(token) is not str:
            raise TypeError(
                f"a path is made of keys (str) and list indices (int), not "
                f"{type(token).__name__}: {tokens!r}"
            )
    return tokens


def _pointer(tokens: Sequence[str | int]) -> str:
    """The JSON Pointer of ``tokens`` (keys escaped per RFC 6901)."""
    out = ""
    for t in tokens:
        if isinstance(t, str):
            out += f"/{encode_pointer_token(t)}" if ("~" in t or "/" in t) else f"/{t}"
        else:
            out += f"/{t}"
    return out


def _kind(value: Any) -> str:
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "a list"
    if value is None:
        return "null"
    return f"a {type(value).__name__}"


def _index(node: list[Any], token: str | int, failure: str, *, end_ok: bool) -> int:
    """The list index ``token`` names in ``node`` (``-`` and the length itself only when
    ``end_ok``: the position of an added element); ``failure`` begins the message of the
    error raised otherwise."""
    if type(token) is int:
        index = token
    elif token == "-" and end_ok:
        index = len(node)
    elif isinstance(token, str) and _INDEX.fullmatch(token):
        index = int(token)
    else:
        raise PatchOperationError(f"{failure}: {token!r} is not an index of a list")
    if index > len(node) or (index == len(node) and not end_ok):
        raise PatchOperationError(
            f"{failure}: index {index} is out of range for a list of {len(node)}"
        )
    return index


class Patch:
    """RFC 6902 operations recorded against ``received`` (see the module doc).

    Convenience: :meth:`set`, :meth:`discard`, :meth:`append`, :meth:`set_label`,
    :meth:`remove_label`, :meth:`set_annotation`, :meth:`remove_annotation`; raw
    operations: :meth:`add`, :meth:`replace`, :meth:`remove`; reading the object as
    the operations leave it: :meth:`get`.
    """

    __slots__ = ("_doc", "_ops", "_owned")

    def __init__(self, received: dict[str, Any]) -> None:
        self._doc: Any = received
        self._ops: list[dict[str, Any]] = []
        # containers this patch copied (by id, kept alive so no id is reused): only
        # those are changed in place
        self._owned: dict[int, Any] = {}

    # -- what was recorded ------------------------------------------------------------

    @property
    def operations(self) -> list[dict[str, Any]]:
        """A copy of the recorded operations, in order (``op``, ``path``, ``value``)."""
        loaded: list[dict[str, Any]] = orjson.loads(orjson.dumps(self._ops))
        return loaded

    def __len__(self) -> int:
        return len(self._ops)

    def __bool__(self) -> bool:
        return bool(self._ops)

    def __repr__(self) -> str:
        return f"Patch({self._ops!r})"

    # -- raw operations -----------------------------------------------------------------

    def add(self, path: PatchPath, value: Any) -> None:
        """Record ``add``: an object member is created (or, per RFC 6902, replaced when it
        exists); a list element is inserted at the index (``-`` or the list's length
        appends; recorded as the explicit index)."""
        self._record("add", _tokens(path), _plain(value))

    def replace(self, path: PatchPath, value: Any) -> None:
        """Record ``replace`` of a member or element that exists."""
        self._record("replace", _tokens(path), _plain(value))

    def remove(self, path: PatchPath) -> None:
        """Record ``remove`` of a member or element that exists (:meth:`discard` for one
        that may not)."""
        self._record("remove", _tokens(path), None)

    def _record(self, op: str, tokens: list[str | int], value: Any) -> None:
        """Check ``op`` at ``tokens`` against the current state, apply it there and
        record it; ``value`` is already plain JSON (ignored for ``remove``)."""
        parent, key, where = self._parent(tokens, op)
        if isinstance(parent, dict):
            assert isinstance(key, str)
            if op == "add":
                parent[key] = value
            elif key not in parent:
                raise PatchOperationError(f"cannot {op} {where}: there is no such member")
            elif op == "replace":
                parent[key] = value
            else:
                del parent[key]
                self._ops.append({"op": op, "path": where})
                return
            self._ops.append({"op": op, "path": where, "value": value})
            return
        index = _index(parent, key, f"cannot {op} {where}", end_ok=op == "add")
        if key == "-":  # the explicit index, so that every reader sees the same position
            where = f"{where[:-1]}{index}"
        if op == "add":
            parent.insert(index, value)
        elif op == "replace":
            parent[index] = value
        else:
            del parent[index]
            self._ops.append({"op": op, "path": where})
            return
        self._ops.append({"op": op, "path": where, "value": value})

    # -- convenience --------------------------------------------------------------------

    def get(self, path: PatchPath, default: Any = None) -> Any:
        """The value at ``path`` as the recorded operations leave the object, or
        ``default`` when there is none. Read it, don't change it."""
        node = self._doc
        for token in _tokens(path):
            if isinstance(node, dict) and isinstance(token, str):
                node = node.get(token, _MISSING)
                if node is _MISSING:
                    return default
            elif isinstance(node, list):
                if type(token) is int:
                    index = token
                elif isinstance(token, str) and _INDEX.fullmatch(token):
                    index = int(token)
                else:
                    return default
                if index >= len(node):
                    return default
                node = node[index]
            else:
                return default
        return node

    def set(self, path: PatchPath, value: Any) -> None:
        """Make the value at ``path`` equal ``value``: ``replace`` when it exists, ``add``
        when it does not. Missing objects on the way are created (one ``add`` of the
        nested object at the first missing member), as is an object where the path
        meets null; a list element must exist. Nothing is recorded when the value
        already is ``value`` (the same JSON: ``1``, ``1.0`` and ``true`` differ)."""
        tokens = _tokens(path)
        if not tokens:
            raise PatchOperationError("the path names the whole object; name a member")
        value = _plain(value)
        try:
            parent, key, where = self._parent(tokens, "set")
        except PatchOperationError:
            # a parent is missing, null or not a container: the walk below creates it
            # or says what is wrong
            self._set_through(tokens, value)
            return
        # every parent exists (the common case): one walk, the same operation as
        # _set_through records there
        if isinstance(parent, dict):
            assert isinstance(key, str)
            current = parent.get(key, _MISSING)
            if current is _MISSING:
                parent[key] = value
                self._ops.append({"op": "add", "path": where, "value": value})
                return
        else:
            key = _index(parent, key, f"cannot set {where}", end_ok=False)
            current = parent[key]
        if _same(current, value):
            return
        parent[key] = value  # type: ignore[index]
        self._ops.append({"op": "replace", "path": where, "value": value})

    def _set_through(self, tokens: list[str | int], value: Any) -> None:
        """:meth:`set` by a read walk first: creates missing objects and replaces a null
        parent (see there); ``value`` is plain JSON."""
        node = self._doc
        for depth, token in enumerate(tokens):
            if isinstance(node, list):
                index = _index(node, token, f"cannot set {_pointer(tokens)}", end_ok=False)
                child = node[index]
            elif isinstance(node, dict):
                if not isinstance(token, str):
                    raise PatchOperationError(
                        f"cannot set {_pointer(tokens)}: {_pointer(tokens[:depth])} is an "
                        f"object, and {token!r} is not a key"
                    )
                child = node.get(token, _MISSING)
                if child is _MISSING or (child is None and depth + 1 < len(tokens)):
                    # create what is missing from here on
                    nested = _nest(tokens[depth + 1 :], value, tokens)
                    op = "add" if child is _MISSING else "replace"
                    self._record(op, tokens[: depth + 1], nested)
                    return
            else:
                raise PatchOperationError(
                    f"cannot set {_pointer(tokens)}: {_pointer(tokens[:depth])} is "
                    f"{_kind(node)}, not an object or a list"
                )
            node = child
        if _same(node, value):
            return
        self._record("replace", tokens, value)

    def discard(self, path: PatchPath) -> bool:
        """Record ``remove`` of the value at ``path`` if there is one; whether there was."""
        tokens = _tokens(path)
        if tokens and self.get(tokens, _MISSING) is _MISSING:
            return False
        self.remove(tokens)
        return True

    def append(self, path: PatchPath, value: Any) -> None:
        """Add ``value`` at the end of the list at ``path`` (``add`` at its length); when
        there is no list there (absent or null), set it to ``[value]``."""
        tokens = _tokens(path)
        current = self.get(tokens, None) if tokens else self._doc
        if current is None:
            self.set(tokens, [value])
        elif isinstance(current, list):
            self.add([*tokens, len(current)], value)
        else:
            raise PatchOperationError(
                f"cannot append to {_pointer(tokens)}: it is {_kind(current)}, not a list"
            )

    def set_label(self, key: str, value: str) -> None:
        """``metadata.labels[key] = value`` (the map created when absent)."""
        self.set(
            ("metadata", "labels", _string("a label key", key)), _string("a label value", value)
        )

    def remove_label(self, key: str) -> bool:
        """Remove ``metadata.labels[key]`` if present; whether it was."""
        return self.discard(("metadata", "labels", _string("a label key", key)))

    def set_annotation(self, key: str, value: str) -> None:
        """``metadata.annotations[key] = value`` (the map created when absent)."""
        self.set(
            ("metadata", "annotations", _string("an annotation key", key)),
            _string("an annotation value", value),
        )

    def remove_annotation(self, key: str) -> bool:
        """Remove ``metadata.annotations[key]`` if present; whether it was."""
        return self.discard(("metadata", "annotations", _string("an annotation key", key)))

    # -- the walk ---------------------------------------------------------------------

    def _parent(
        self, tokens: list[str | int], op: str
    ) -> tuple[dict[str, Any] | list[Any], str | int, str]:
        """The container (owned: safe to change) holding the path's last token, that
        token, and the path as a pointer; raises when a parent is missing."""
        where = _pointer(tokens)
        if not tokens:
            raise PatchOperationError(f"cannot {op} the whole object (path ''): name a member")
        owned = self._owned
        node = self._doc
        if id(node) not in owned:
            if not isinstance(node, (dict, list)):
                raise PatchOperationError(f"cannot {op} {where}: the object is {_kind(node)}")
            node = self._doc = dict(node) if isinstance(node, dict) else list(node)
            owned[id(node)] = node
        for depth in range(len(tokens) - 1):
            token = tokens[depth]
            slot: str | int
            if isinstance(node, dict):
                if not isinstance(token, str):
                    raise PatchOperationError(
                        f"cannot {op} {where}: {_pointer(tokens[:depth])} is an object, and "
                        f"{token!r} is not a key"
                    )
                child = node.get(token, _MISSING)
                if child is _MISSING:
                    raise PatchOperationError(
                        f"cannot {op} {where}: {_pointer(tokens[: depth + 1])} does not exist"
                    )
                slot = token
            else:
                slot = _index(node, token, f"cannot {op} {where}", end_ok=False)
                child = node[slot]
            if id(child) not in owned:
                if isinstance(child, dict):
                    child = dict(child)
                elif isinstance(child, list):
                    child = list(child)
                else:
                    raise PatchOperationError(
                        f"cannot {op} {where}: {_pointer(tokens[: depth + 1])} is "
                        f"{_kind(child)}, not an object or a list"
                    )
                owned[id(child)] = child
                node[slot] = child
            node = child
        last = tokens[-1]
        if isinstance(node, dict) and not isinstance(last, str):
            raise PatchOperationError(
                f"cannot {op} {where}: {_pointer(tokens[:-1])} is an object, and {last!r} "
                "is not a key"
            )
        return node, last, where


def _nest(rest: Sequence[str | int], value: Any, whole: Sequence[str | int]) -> Any:
    """``value`` inside new objects keyed by ``rest``."""
    for token in reversed(rest):
        if not isinstance(token, str):
            raise PatchOperationError(
                f"cannot set {_pointer(whole)}: the list it names an element of does not exist"
            )
        value = {token: value}
    return value


def _string(what: str, value: Any) -> str:
    if type(value) is not str:
        raise TypeError(f"{what} must be a string, not {type(value).__name__}")
    return value
