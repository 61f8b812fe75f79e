"""LIST: pages read from one snapshot, ``continue`` tokens, resourceVersion semantics.

Every page of a paginated list is read at the revision of its first page (the token
carries it), so a client sees one consistent snapshot; a token older than the history the
store keeps answers 410 Expired with kube-apiserver's message. ``resourceVersion`` with
``resourceVersionMatch`` (``Exact``, ``NotOlderThan``) and the 422s Kubernetes gives for
their forbidden combinations are checked here; ``remainingItemCount`` is given when no
selector is set, as kube-apiserver does.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any

import orjson

from kubewerk.apiserver import decode
from kubewerk.apiserver.request import (
    Target,
    make_filter,
    parse_resource_version,
    too_large_resource_version,
)
from kubewerk.apiserver.storage.base import Compacted, FutureRevision, Store
from kubewerk.core.errors import ApiError, FieldError

JSON = dict[str, Any]

# a LIST reads storage in pages of at most this many keys (a huge limit= stays a huge
# limit, not a number storage cannot take)
_MAX_CHUNK = 1 << 20


def list_objects(store: Store, target: Target, query: dict[str, str]) -> tuple[list[JSON], JSON]:
    """The stored objects a LIST of ``target`` with ``query`` answers, and the list metadata
    (``resourceVersion``, ``continue``, ``remainingItemCount``); the caller serves the
    objects in the requested version and wraps them in a List or Table."""
    flt = make_filter(target, query)
    rtype = target.rtype
    prefix = rtype.ns_prefix(target.namespace)
    limit_text = query.get("limit", "")
    try:
        limit = decode.query_int64(limit_text) if limit_text else 0
    except decode.DecodeError as exc:
        raise ApiError.bad_request(str(exc)) from None
    limit = max(limit, 0)
    cont = query.get("continue", "")
    rv_text = query.get("resourceVersion", "")
    rv_match = query.get("resourceVersionMatch", "")
    at_revision: int | None = None
    start_after: str | None = None
    if cont:
        if rv_text and rv_text != "0":
            raise ApiError.bad_request(
                "specifying resource version is not allowed when using continue"
            )
        at_revision, start_after = _decode_continue(cont, prefix)
    elif rv_match and not rv_text:
        raise _invalid_list_options(
            [
                FieldError.forbidden(
                    "resourceVersionMatch",
                    "resourceVersionMatch is forbidden unless resourceVersion is provided",
                )
            ]
        )
    elif rv_text:
        rv = parse_resource_version(rv_text)
        if rv_match == "Exact":
            if rv == 0:
                raise _invalid_list_options(
                    [
                        FieldError.forbidden(
                            "resourceVersionMatch",
                            'resourceVersionMatch "exact" is forbidden for resourceVersion "0"',
                        )
                    ]
                )
            at_revision = rv
        elif rv_match not in ("", "NotOlderThan"):
            raise _invalid_list_options(
                [
                    FieldError.not_supported(
                        "resourceVersionMatch", rv_match, ["Exact", "NotOlderThan"]
                    )
                ]
            )
        elif rv > store.revision:
            raise too_large_resource_version(rv, store.revision)
    items: list[JSON] = []
    revision = store.revision if at_revision is None else at_revision
    last_key: str | None = start_after
    more = False
    while True:
        want = (limit - len(items)) if limit else None
        chunk_size = min(max(want * 2, 64), _MAX_CHUNK) if want else None
        try:
            page, revision, more = store.list(
                prefix,
                at_revision=at_revision if at_revision is not None else None,
                start_after=last_key,
                limit=chunk_size,
            )
        except Compacted:
            raise ApiError.expired(
                "The provided continue parameter is too old to display a consistent list "
                "result. You can start a new list without the continue parameter, or use the "
                "continue token in this response to retrieve the remainder of the results. "
                "Continuing with the provided token results in an inconsistent list - objects "
                "that were created, modified, or deleted between the time the first chunk was "
                "returned and now may show up in the list."
                if cont
                else (f"too old resource version: {at_revision} ({store.compacted_revision})")
            ) from None
        except FutureRevision:
            raise too_large_resource_version(at_revision or 0, store.revision) from None
        at_revision = revision
        stopped_early = False
        for idx, (key, obj) in enumerate(page):
            last_key = key
            if flt(obj):
                items.append(obj)
                if limit and len(items) >= limit:
                    more = more or idx < len(page) - 1
                    stopped_early = True
                    break
        if stopped_early or not more or not page:
            break
    list_meta: JSON = {"resourceVersion": str(revision)}
    if limit and more and last_key is not None:
        list_meta["continue"] = _encode_continue(revision, last_key, prefix)
        if flt.match is None:
            remaining = _remaining(store, prefix, revision, last_key)
            if remaining is not None:
                list_meta["remainingItemCount"] = remaining
    return items, list_meta


def _remaining(store: Store, prefix: str, revision: int, last_key: str) -> int | None:
    if revision == store.revision:
        return store.count(prefix, start_after=last_key)
    try:
        rest, _, _ = store.list(prefix, at_revision=revision, start_after=last_key)
    except (Compacted, FutureRevision):
        return None
    return len(rest)


def _invalid_list_options(errors: list[FieldError]) -> ApiError:
    return ApiError.invalid("ListOptions", "meta.k8s.io", "", errors)


def _encode_continue(revision: int, last_key: str, prefix: str) -> str:
    token = {"v": "meta.k8s.io/v1", "rv": revision, "start": last_key[len(prefix) :] + "\x00"}
    return base64.urlsafe_b64encode(orjson.dumps(token)).decode().rstrip("=")


def _decode_continue(token: str, prefix: str) -> tuple[int, str]:
    try:
        padded = token + "=" * (-len(token) % 4)
        data = orjson.loads(base64.urlsafe_b64decode(padded))
        if data.get("v") != "meta.k8s.io/v1":
            raise ValueError(
                "continue key is not valid: incorrect encoded "
                "start resourceVersion (version meta.k8s.io/v1)"
            )
        rv = int(data["rv"])
        start = str(data["start"])
        if rv <= 0 or not start.endswith("\x00"):
            raise ValueError(
                "continue key is not valid: incorrect encoded "
                "start resourceVersion (version meta.k8s.io/v1)"
            )
        return rv, prefix + start[:-1]
    except (
        ValueError,
        KeyError,
        TypeError,
        AttributeError,
        binascii.Error,
        orjson.JSONDecodeError,
    ) as exc:
        message = (
            str(exc)
            if str(exc).startswith("continue key")
            else "continue key is not valid: " + str(exc)
        )
        raise ApiError.bad_request(message) from None
