"""JSON Patch (RFC 6902) and JSON merge patch (RFC 7386) as kube-apiserver applies them.

Kubernetes does not apply the RFCs literally: it uses ``gopkg.in/evanphx/json-patch.v4``
from its patch handler (``k8s.io/apiserver/pkg/endpoints/handlers/patch.go``, v0.36),
and this module reproduces that library's behaviour, quirks included, because users move
between kubewerk and real clusters:

JSON Patch (``application/json-patch+json``)
    * ``replace`` of a missing *object member* adds it (only array indexes are checked);
    * ``add`` without ``value`` writes ``null``; ``copy`` from a missing object member
      writes ``null``;
    * negative array indexes count from the end (``-1`` is the last element; for ``add``
      ``-1`` appends); indexes are parsed like Go's ``strconv.Atoi`` (``+1``, ``01``);
    * the path ``""`` works only for ``replace`` (value must be an object or array) and
      ``test``; ``add``/``remove``/``move``/``copy`` at the root fail;
    * the text before the first ``/`` of a path is ignored (``a/b`` acts as ``/b``);
    * ``move`` removes the source before it resolves the destination;
    * ``copy`` operations may add at most 3 MiB in total (``--json-patch-max-copy-bytes``);
    * at most 10,000 operations (413).

    HTTP mapping (as the handler does it): a patch document that does not decode as a
    list of objects is **400 BadRequest** with Go's decoding message; more than 10,000
    operations is **413**; any failure while applying (failed ``test``, missing path,
    bad index, unknown op) is **422 Invalid** whose message is always ``the server
    rejected our request due to an error in our request`` (``NewGenericServerResponse``
    drops the library's text; we keep it in ``PatchError.detail`` for logs).

Merge patch (``application/merge-patch+json``)
    RFC 7386, except as evanphx v4: ``null`` inside objects nested in *arrays* of newly
    set values is pruned too; a ``null``/scalar patch is **400** ``Invalid JSON Patch``;
    an array patch replaces the whole document (the caller's decoding then fails).

Neither function mutates its arguments, and the result shares no containers with them.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any, Final

import orjson

from kubewerk.core.errors import ApiError
from kubewerk.core.gofmt import go_quote, unmarshal_kind

__all__ = [
    "JSON_PATCH_MAX_COPY_BYTES",
    "MAX_JSON_PATCH_OPERATIONS",
    "PatchError",
    "decode_pointer_token",
    "deep_copy",
    "encode_pointer_token",
    "json_patch",
    "merge_patch",
]

MAX_JSON_PATCH_OPERATIONS: Final = 10_000
"""``maxJSONPatchOperations`` in the apiserver's patch handler."""

JSON_PATCH_MAX_COPY_BYTES: Final = 3 * 1024 * 1024
"""kube-apiserver's default ``JSONPatchMaxCopyBytes`` (``AccumulatedCopySizeLimit``)."""

_INVALID_MESSAGE: Final = "the server rejected our request due to an error in our request"


class PatchError(ApiError):
    """A patch Kubernetes rejects, as the ``Status`` the API server answers with.

    ``detail`` is the underlying library error text (the one Kubernetes logs); for 422
    errors it is not part of ``message``, exactly as in Kubernetes.
    """

    def __init__(
        self,
        code: int,
        reason: str,
        message: str,
        detail: str,
        details: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(code, reason, message, details)
        self.detail = detail

    @classmethod
    def bad_request_text(cls, text: str) -> PatchError:
        """400 BadRequest whose message is ``text``."""
        return cls(400, "BadRequest", text, text)

    @classmethod
    def cannot_apply(cls, detail: str) -> PatchError:
        """422 from ``NewGenericServerResponse(422, ...)``: generic message, empty details."""
        return cls(422, "Invalid", _INVALID_MESSAGE, detail, {})

    @classmethod
    def too_many_operations(cls, count: int) -> PatchError:
        """413 for a JSON patch longer than ``MAX_JSON_PATCH_OPERATIONS``."""
        text = (
            f"The allowed maximum operations in a JSON patch is {MAX_JSON_PATCH_OPERATIONS}, "
            f"got {count}"
        )
        return cls(413, "RequestEntityTooLarge", f"Request entity too large: {text}", text)

    def to_status(self) -> dict[str, Any]:
        status = super().to_status()
        if self.details is not None and "details" not in status:
            status["details"] = dict(self.details)
        return status


def deep_copy(value: Any) -> Any:
    """A deep copy of a decoded JSON value (dicts and lists are copied, scalars shared)."""
    if isinstance(value, dict):
        return {k: deep_copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [deep_copy(v) for v in value]
    return value


def decode_pointer_token(token: str) -> str:
    """RFC 6901: ``~1`` → ``/`` then ``~0`` → ``~`` (a single left-to-right pass)."""
    return token.replace("~1", "/").replace("~0", "~") if "~" in token else token


def encode_pointer_token(token: str) -> str:
    """RFC 6901 escaping of one reference token (``~`` → ``~0``, ``/`` → ``~1``)."""
    return token.replace("~", "~0").replace("/", "~1")


# ---------------------------------------------------------------------------- JSON Patch


class _OpFailed(Exception):
    """An operation failed; the text is evanphx/json-patch's error message."""


_ATOI_RE: Final = re.compile(r"[+-]?[0-9]+")
_MISSING: Final = "missing value"
_BAD_INDEX: Final = "invalid index referenced"


def _atoi(key: str) -> int:
    """Go's ``strconv.Atoi`` with its error text."""
    if not _ATOI_RE.fullmatch(key):
        raise _OpFailed(f"strconv.Atoi: parsing {go_quote(key)}: invalid syntax")
    value = int(key)
    if not -(2**63) <= value < 2**63:
        raise _OpFailed(f"strconv.Atoi: parsing {go_quote(key)}: value out of range")
    return value


def _bad_index(idx: int) -> _OpFailed:
    return _OpFailed(f"Unable to access invalid index: {idx}: {_BAD_INDEX}")


def _get(con: dict[str, Any] | list[Any], key: str) -> Any:
    """``container.get``: a missing object member is ``None`` (no error)."""
    if isinstance(con, dict):
        return con.get(key)
    idx = _atoi(key)
    if idx < 0:
        if idx < -len(con):
            raise _bad_index(idx)
        idx += len(con)
    if idx >= len(con):
        raise _bad_index(idx)
    return con[idx]


def _add(con: dict[str, Any] | list[Any], key: str, value: Any) -> None:
    if isinstance(con, dict):
        con[key] = value
        return
    if key == "-":
        con.append(value)
        return
    try:
        idx = _atoi(key)
    except _OpFailed as err:
        raise _OpFailed(f"value was not a proper array index: '{key}': {err}") from None
    size = len(con) + 1
    if idx >= size:
        raise _bad_index(idx)
    if idx < 0:
        if idx < -size:
            raise _bad_index(idx)
        idx += size
    con.insert(idx, value)


def _set(con: dict[str, Any] | list[Any], key: str, value: Any) -> None:
    """``replace``'s write; the caller has already checked the index with ``_get``."""
    if isinstance(con, dict):
        con[key] = value
        return
    idx = _atoi(key)
    if idx < 0:
        idx += len(con)
    con[idx] = value


def _remove(con: dict[str, Any] | list[Any], key: str) -> None:
    if isinstance(con, dict):
        if key not in con:
            raise _OpFailed(f"Unable to remove nonexistent key: {key}: {_MISSING}")
        del con[key]
        return
    idx = _atoi(key)
    if idx >= len(con):
        raise _bad_index(idx)
    if idx < 0:
        if idx < -len(con):
            raise _bad_index(idx)
        idx += len(con)
    del con[idx]


def _find(root: Any, path: str) -> tuple[dict[str, Any] | list[Any], str] | None:
    """``findObject``: the container holding the path's last token, and that token."""
    split = path.split("/")
    if len(split) < 2:
        return None
    doc = root
    for part in split[1:-1]:
        try:
            nxt = _get(doc, decode_pointer_token(part))
        except _OpFailed:
            return None
        if not isinstance(nxt, (dict, list)):
            return None
        doc = nxt
    return doc, decode_pointer_token(split[-1])


def _path(op: Mapping[str, Any], field: str = "path") -> str | None:
    value = op.get(field)
    return value if isinstance(value, str) else None


def _go_number_text(value: int | float, from_document: bool) -> str:
    """The raw JSON text Go compares numbers by (document numbers are Go-encoded)."""
    if isinstance(value, int):
        return str(value)
    if from_document and value == int(value) and abs(value) < 1e21:
        return str(int(value))
    return repr(value)


def _equal(doc_value: Any, patch_value: Any) -> bool:
    """evanphx ``lazyNode.equal``: structural; scalars compare by their JSON text."""
    if isinstance(doc_value, dict):
        if not isinstance(patch_value, dict) or len(doc_value) != len(patch_value):
            return False
        return all(k in patch_value and _equal(v, patch_value[k]) for k, v in doc_value.items())
    if isinstance(doc_value, list):
        if not isinstance(patch_value, list) or len(doc_value) != len(patch_value):
            return False
        return all(_equal(a, b) for a, b in zip(doc_value, patch_value, strict=True))
    if isinstance(doc_value, bool) or isinstance(patch_value, bool):
        return doc_value is patch_value
    if isinstance(doc_value, (int, float)) and isinstance(patch_value, (int, float)):
        return _go_number_text(doc_value, True) == _go_number_text(patch_value, False)
    return type(doc_value) is type(patch_value) and doc_value == patch_value


def _apply_op(root: Any, op: Any, copied: list[int]) -> Any:
    """Apply one operation to ``root`` in place; returns the (possibly new) root."""
    kind = op.get("op") if isinstance(op, dict) else None
    if not isinstance(kind, str):
        kind = "unknown"
    if not isinstance(op, dict):
        raise _OpFailed(f"Unexpected kind: {kind}")
    value = op.get("value")
    has_value = "value" in op and value is not None
    if kind == "add":
        path = _path(op)
        if path is None:
            raise _OpFailed(f"add operation failed to decode path: {_MISSING}")
        found = _find(root, path)
        if found is None:
            raise _OpFailed(
                f'add operation does not apply: doc is missing path: "{path}": {_MISSING}'
            )
        try:
            _add(found[0], found[1], deep_copy(value))
        except _OpFailed as err:
            raise _OpFailed(f"error in add for path: '{path}': {err}") from None
        return root
    if kind == "remove":
        path = _path(op)
        if path is None:
            raise _OpFailed(f"remove operation failed to decode path: {_MISSING}")
        found = _find(root, path)
        if found is None:
            raise _OpFailed(
                f'remove operation does not apply: doc is missing path: "{path}": {_MISSING}'
            )
        try:
            _remove(found[0], found[1])
        except _OpFailed as err:
            raise _OpFailed(f"error in remove for path: '{path}': {err}") from None
        return root
    if kind == "replace":
        path = _path(op)
        if path is None:
            raise _OpFailed(
                f"replace operation failed to decode path: operation missing path field: {_MISSING}"
            )
        if path == "":
            if not isinstance(value, (dict, list)):
                raise _OpFailed("replace operation value must be object or array: %!w(<nil>)")
            return deep_copy(value)
        found = _find(root, path)
        if found is None:
            raise _OpFailed(
                f"replace operation does not apply: doc is missing path: {path}: {_MISSING}"
            )
        try:
            _get(found[0], found[1])
        except _OpFailed:
            raise _OpFailed(
                f"replace operation does not apply: doc is missing key: {path}: {_MISSING}"
            ) from None
        _set(found[0], found[1], deep_copy(value))
        return root
    if kind == "move":
        src = _path(op, "from")
        if src is None:
            raise _OpFailed(
                f"move operation failed to decode from: operation, missing from field: {_MISSING}"
            )
        found = _find(root, src)
        if found is None:
            raise _OpFailed(
                f"move operation does not apply: doc is missing from path: {src}: {_MISSING}"
            )
        con, key = found
        try:
            moved = _get(con, key)
            _remove(con, key)
        except _OpFailed as err:
            raise _OpFailed(f"error in move for path: '{key}': {err}") from None
        path = _path(op)
        if path is None:
            raise _OpFailed(
                f"move operation failed to decode path: operation missing path field: {_MISSING}"
            )
        found = _find(root, path)
        if found is None:
            raise _OpFailed(
                f"move operation does not apply: doc is missing destination path: {path}: {_MISSING}"
            )
        try:
            _add(found[0], found[1], moved)
        except _OpFailed as err:
            raise _OpFailed(f"error in move for path: '{path}': {err}") from None
        return root
    if kind == "test":
        path = _path(op)
        if path is None:
            raise _OpFailed(
                f"test operation failed to decode path: operation missing path field: {_MISSING}"
            )
        if path == "":
            if "value" in op and _equal(root, value):
                return root
            raise _OpFailed(f"testing value {path} failed: test failed")
        found = _find(root, path)
        if found is None:
            raise _OpFailed(f"test operation does not apply: is missing path: {path}: {_MISSING}")
        try:
            current = _get(found[0], found[1])
        except _OpFailed as err:
            raise _OpFailed(f"error in test for path: '{path}': {err}") from None
        if current is None:
            if not has_value:
                return root
        elif "value" in op and _equal(current, value):
            return root
        raise _OpFailed(f"testing value {path} failed: test failed")
    if kind == "copy":
        src = _path(op, "from")
        if src is None:
            raise _OpFailed(
                f"copy operation failed to decode from: operation, missing from field: {_MISSING}"
            )
        found = _find(root, src)
        if found is None:
            raise _OpFailed(
                f"copy operation does not apply: doc is missing from path: {src}: {_MISSING}"
            )
        try:
            source = _get(found[0], found[1])
        except _OpFailed as err:
            raise _OpFailed(f"error in copy for from: '{src}': {err}") from None
        path = _path(op)
        if path is None:
            raise _OpFailed(f"copy operation failed to decode path: {_MISSING}")
        found = _find(root, path)
        if found is None:
            raise _OpFailed(
                f"copy operation does not apply: doc is missing destination path: {path}: {_MISSING}"
            )
        if source is not None:
            copied[0] += len(orjson.dumps(source))
        if copied[0] > JSON_PATCH_MAX_COPY_BYTES:
            raise _OpFailed(
                "Unable to complete the copy, the accumulated size increase of copy is "
                f"{copied[0]}, exceeding the limit {JSON_PATCH_MAX_COPY_BYTES}"
            )
        try:
            _add(found[0], found[1], deep_copy(source))
        except _OpFailed as err:
            raise _OpFailed(f"error while adding value during copy: {err}") from None
        return root
    raise _OpFailed(f"Unexpected kind: {kind}")


def json_patch(doc: Any, ops: Any) -> Any:
    """Apply a decoded RFC 6902 patch document to ``doc`` and return the new document.

    ``ops`` is the decoded request body. Raises ``PatchError`` (an ``ApiError``):
    400 if ``ops`` is not a list of objects (``null`` is an empty patch, as in Go),
    413 for more than 10,000 operations, 422 when an operation cannot be applied.
    The operations are applied all-or-nothing; ``doc`` and ``ops`` are never modified.
    """
    if ops is None:
        return deep_copy(doc)
    if not isinstance(ops, list):
        raise PatchError.bad_request_text(
            f"json: cannot unmarshal {unmarshal_kind(ops)} into Go value of type jsonpatch.Patch"
        )
    for op in ops:
        if op is not None and not isinstance(op, dict):
            raise PatchError.bad_request_text(
                f"json: cannot unmarshal {unmarshal_kind(op)} into Go value of type jsonpatch.Operation"
            )
    if len(ops) > MAX_JSON_PATCH_OPERATIONS:
        raise PatchError.too_many_operations(len(ops))
    if not isinstance(doc, (dict, list)):
        raise PatchError.cannot_apply(
            f"json: cannot unmarshal {unmarshal_kind(doc)} into Go value of type jsonpatch.partialDoc"
        )
    root = deep_copy(doc)
    copied = [0]
    for op in ops:
        try:
            root = _apply_op(root, op, copied)
        except _OpFailed as err:
            raise PatchError.cannot_apply(str(err)) from None
    return root


# --------------------------------------------------------------------------- merge patch


def _prune_nulls(value: Any) -> Any:
    """evanphx ``pruneNulls``: drop null members of objects, recursively; arrays keep nulls."""
    if isinstance(value, dict):
        return {k: _prune_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_prune_nulls(v) for v in value]
    return value


def _merge_docs(doc: dict[str, Any], patch: Mapping[str, Any]) -> None:
    for key, value in patch.items():
        if value is None:
            doc.pop(key, None)
            continue
        current = doc.get(key)
        if current is None or not isinstance(current, dict):
            doc[key] = _prune_nulls(value)
        elif not isinstance(value, dict):
            doc[key] = deep_copy(value)
        else:
            _merge_docs(current, value)


def merge_patch(doc: Any, patch: Any, *, copy: Callable[[Any], Any] = deep_copy) -> Any:
    """Apply an RFC 7386 JSON merge patch as Kubernetes does; returns the new document.

    ``null`` members delete, objects merge recursively, anything else replaces. Raises
    ``PatchError`` 400 ``Invalid JSON Patch`` for a ``null`` or scalar patch. An array
    patch becomes the whole result (Kubernetes then fails to decode it as an object).
    ``doc`` and ``patch`` are never modified. ``copy`` makes the deep copy of ``doc`` the
    result starts from (a caller whose documents are plain decoded JSON may pass a
    faster one).
    """
    if isinstance(patch, dict):
        if not isinstance(doc, dict):
            return _prune_nulls(patch)
        result = copy(doc)
        _merge_docs(result, patch)
        return result
    if isinstance(patch, list):
        return _prune_nulls(patch)
    raise PatchError.bad_request_text("Invalid JSON Patch")
