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
from kubewerk.core.jsoncopy import copy_tree

deep_copy = copy_tree
"""The recursive deep copy (:func:`kubewerk.core.jsoncopy.copy_tree`), by its old name."""

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


class _CopyBudget:
    """The bytes ``copy`` operations have added so far in one patch (evanphx's
    ``AccumulatedCopySizeLimit``: at most ``JSON_PATCH_MAX_COPY_BYTES`` in total)."""

    __slots__ = ("spent",)

    def __init__(self) -> None:
        self.spent = 0


def _field(op: Mapping[str, Any], name: str, failure: str) -> str:
    """The string member ``name`` of ``op``; otherwise fails with ``failure``."""
    value = op.get(name)
    if not isinstance(value, str):
        raise _OpFailed(f"{failure}: {_MISSING}")
    return value


def _locate(root: Any, path: str, failure: str) -> tuple[dict[str, Any] | list[Any], str]:
    """``_find``, failing with ``failure`` when the path's parent does not exist."""
    found = _find(root, path)
    if found is None:
        raise _OpFailed(f"{failure}: {_MISSING}")
    return found


def _op_add(root: Any, op: dict[str, Any], budget: _CopyBudget) -> Any:
    """``add``: insert into an array (``-`` appends) or set an object member; a missing
    ``value`` adds ``null``; the root path fails."""
    path = _field(op, "path", "add operation failed to decode path")
    con, key = _locate(root, path, f'add operation does not apply: doc is missing path: "{path}"')
    try:
        _add(con, key, copy_tree(op.get("value")))
    except _OpFailed as err:
        raise _OpFailed(f"error in add for path: '{path}': {err}") from None
    return root


def _op_remove(root: Any, op: dict[str, Any], budget: _CopyBudget) -> Any:
    """``remove``: delete an existing object member or array element; the root path fails."""
    path = _field(op, "path", "remove operation failed to decode path")
    con, key = _locate(
        root, path, f'remove operation does not apply: doc is missing path: "{path}"'
    )
    try:
        _remove(con, key)
    except _OpFailed as err:
        raise _OpFailed(f"error in remove for path: '{path}': {err}") from None
    return root


def _op_replace(root: Any, op: dict[str, Any], budget: _CopyBudget) -> Any:
    """``replace``: an array element must exist, an object member need not (it is added);
    the root path takes an object or array value and returns it as the new root."""
    path = _field(
        op, "path", "replace operation failed to decode path: operation missing path field"
    )
    value = op.get("value")
    if path == "":
        if not isinstance(value, (dict, list)):
            raise _OpFailed("replace operation value must be object or array: %!w(<nil>)")
        return copy_tree(value)
    con, key = _locate(root, path, f"replace operation does not apply: doc is missing path: {path}")
    try:
        _get(con, key)
    except _OpFailed:
        raise _OpFailed(
            f"replace operation does not apply: doc is missing key: {path}: {_MISSING}"
        ) from None
    _set(con, key, copy_tree(value))
    return root


def _op_move(root: Any, op: dict[str, Any], budget: _CopyBudget) -> Any:
    """``move``: remove ``from`` first, then resolve ``path`` and add the value there (so a
    destination inside the source fails as a missing destination)."""
    src = _field(op, "from", "move operation failed to decode from: operation, missing from field")
    con, key = _locate(root, src, f"move operation does not apply: doc is missing from path: {src}")
    try:
        moved = _get(con, key)
        _remove(con, key)
    except _OpFailed as err:
        # evanphx names the last token here, not the path
        raise _OpFailed(f"error in move for path: '{key}': {err}") from None
    path = _field(op, "path", "move operation failed to decode path: operation missing path field")
    con, key = _locate(
        root, path, f"move operation does not apply: doc is missing destination path: {path}"
    )
    try:
        _add(con, key, moved)
    except _OpFailed as err:
        raise _OpFailed(f"error in move for path: '{path}': {err}") from None
    return root


def _op_test(root: Any, op: dict[str, Any], budget: _CopyBudget) -> Any:
    """``test``: the value at ``path`` equals ``value`` (scalars by their JSON text); a
    missing or ``null`` member passes exactly when ``value`` is absent or ``null``."""
    path = _field(op, "path", "test operation failed to decode path: operation missing path field")
    failed = _OpFailed(f"testing value {path} failed: test failed")
    if path == "":
        if "value" in op and _equal(root, op["value"]):
            return root
        raise failed
    con, key = _locate(root, path, f"test operation does not apply: is missing path: {path}")
    try:
        current = _get(con, key)
    except _OpFailed as err:
        raise _OpFailed(f"error in test for path: '{path}': {err}") from None
    value = op.get("value")
    if current is None:
        if value is None:
            return root
    elif "value" in op and _equal(current, value):
        return root
    raise failed


def _op_copy(root: Any, op: dict[str, Any], budget: _CopyBudget) -> Any:
    """``copy``: add a copy of the value at ``from`` (``null`` for a missing object member)
    at ``path``, within the patch's copy budget."""
    src = _field(op, "from", "copy operation failed to decode from: operation, missing from field")
    con, key = _locate(root, src, f"copy operation does not apply: doc is missing from path: {src}")
    try:
        source = _get(con, key)
    except _OpFailed as err:
        raise _OpFailed(f"error in copy for from: '{src}': {err}") from None
    path = _field(op, "path", "copy operation failed to decode path")
    con, key = _locate(
        root, path, f"copy operation does not apply: doc is missing destination path: {path}"
    )
    if source is not None:
        budget.spent += len(orjson.dumps(source))
    if budget.spent > JSON_PATCH_MAX_COPY_BYTES:
        raise _OpFailed(
            "Unable to complete the copy, the accumulated size increase of copy is "
            f"{budget.spent}, exceeding the limit {JSON_PATCH_MAX_COPY_BYTES}"
        )
    try:
        _add(con, key, copy_tree(source))
    except _OpFailed as err:
        raise _OpFailed(f"error while adding value during copy: {err}") from None
    return root


_Operation = Callable[[Any, dict[str, Any], _CopyBudget], Any]

_OPERATIONS: Final[dict[str, _Operation]] = {
    "add": _op_add,
    "remove": _op_remove,
    "replace": _op_replace,
    "move": _op_move,
    "test": _op_test,
    "copy": _op_copy,
}
"""Each operation applies itself to the root in place and returns the (possibly new) root."""


def _apply_op(root: Any, op: Any, budget: _CopyBudget) -> Any:
    """Apply one operation to ``root`` in place; returns the (possibly new) root.

    An operation that is not an object, or whose ``op`` is not one of the six, fails
    with ``Unexpected kind`` (``unknown`` when ``op`` is missing or not a string).
    """
    kind = op.get("op") if isinstance(op, dict) else None
    apply = _OPERATIONS.get(kind) if isinstance(kind, str) else None
    if apply is None:
        raise _OpFailed(f"Unexpected kind: {kind if isinstance(kind, str) else 'unknown'}")
    return apply(root, op, budget)


def json_patch(doc: Any, ops: Any) -> Any:
    """Apply a decoded RFC 6902 patch document to ``doc`` and return the new document.

    ``ops`` is the decoded request body. Raises ``PatchError`` (an ``ApiError``):
    400 if ``ops`` is not a list of objects (``null`` is an empty patch, as in Go),
    413 for more than 10,000 operations, 422 when an operation cannot be applied.
    The operations are applied all-or-nothing; ``doc`` and ``ops`` are never modified.
    """
    if ops is None:
        return copy_tree(doc)
    if not isinstance(ops, list):
        raise PatchError.bad_request_text(
            f"json: cannot unmarshal {unmarshal_kind(ops)} into Go value of type jsonpatch.Patch"
        )
    for op in ops:
        if op is not None and not isinstance(op, dict):
            raise PatchError.bad_request_text(
                f"json: cannot unmarshal {unmarshal_kind(op)} "
                "into Go value of type jsonpatch.Operation"
            )
    if len(ops) > MAX_JSON_PATCH_OPERATIONS:
        raise PatchError.too_many_operations(len(ops))
    if not isinstance(doc, (dict, list)):
        raise PatchError.cannot_apply(
            f"json: cannot unmarshal {unmarshal_kind(doc)} "
            "into Go value of type jsonpatch.partialDoc"
        )
    root = copy_tree(doc)
    budget = _CopyBudget()
    for op in ops:
        try:
            root = _apply_op(root, op, budget)
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
            doc[key] = copy_tree(value)
        else:
            _merge_docs(current, value)


def merge_patch(doc: Any, patch: Any, *, copy: Callable[[Any], Any] = copy_tree) -> Any:
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
