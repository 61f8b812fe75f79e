"""Query strings as kube-apiserver reads them, for every part of the server that reads
one (the handlers, the authorizer's ``RequestInfo``, the audit log), so that what is
authorized and audited is what is served."""

from __future__ import annotations

import re
from urllib.parse import unquote_to_bytes

__all__ = ["parse_query", "query_flag"]

_BAD_ESCAPE = re.compile(rb"%(?![0-9A-Fa-f]{2})")


def parse_query(raw: bytes) -> dict[str, str]:
    """The query string's parameters as kube-apiserver reads them: Go's ``url.ParseQuery``
    (``+`` is a space; a pair holding a ``;`` or a malformed ``%`` escape is dropped, as
    ``req.URL.Query()`` drops the pairs it cannot parse), and of a repeated parameter the
    first value, as kube's query conversion (``Convert_Slice_string_To_*``) and
    ``Query().Get`` take it. ``dryRun`` is a list there whose every value must be ``All``:
    a repeated one keeps its first value that is not ``All``, so that it is refused as kube
    refuses it. Values are read as UTF-8 (an invalid sequence becomes U+FFFD)."""
    query: dict[str, str] = {}
    for pair in raw.split(b"&"):
        if not pair or b";" in pair or _BAD_ESCAPE.search(pair):
            continue
        key, _, value = pair.partition(b"=")
        name = unquote_to_bytes(key.replace(b"+", b" ")).decode("utf-8", "replace")
        text = unquote_to_bytes(value.replace(b"+", b" ")).decode("utf-8", "replace")
        if name not in query or (name == "dryRun" and query[name] == "All"):
            query[name] = text
    return query


def query_flag(query: dict[str, str], name: str) -> bool:
    """A boolean query parameter as kube-apiserver reads it (apimachinery's
    ``Convert_Slice_string_To_bool``): absent is false; present, it is true unless its
    (first) value is ``0`` or ``false`` in any case, so ``?watch``, ``?watch=`` and
    ``?watch=yes`` all ask for a watch."""
    value = query.get(name)
    return value is not None and value != "0" and value.lower() != "false"
