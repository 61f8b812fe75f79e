"""Encoded answers to plain GETs of single objects, reused while nothing they depend on changed.

A GET of one object without query parameters answers bytes that are a pure function of
the stored object, the resource type serving it (its schemas, versions and deprecation
warnings) and the requested version. kube-apiserver keeps encodings of watch-cache
objects for the same reason. The cache remembers, per request path, the stored object
and resource type an answer was encoded from; a later GET of that path reuses the bytes
only while the store still holds that very object (stores hand out their objects
without copying and replace them on every write, so identity means "unchanged") and the
registry still serves that very resource type (every CRD change installs a new one).

Only stores whose ``get`` returns the stored object itself qualify (the memory store);
with any other store the cache stays empty and every request takes the full path.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

from kubewerk.apiserver.metrics import RequestLabels
from kubewerk.apiserver.registry import Registry, ServedResource
from kubewerk.apiserver.storage.base import Store
from kubewerk.apiserver.storage.memory import MemoryStore

JSON = dict[str, Any]

MAX_ENTRIES = 4096
# the answers kept hold their bytes and pin the stored objects they were encoded from
# (possibly replaced ones, until looked up again): both are bounded through the bytes
MAX_BYTES = 32 * 1024 * 1024
MAX_ENTRY_BYTES = 1024 * 1024  # larger answers are encoded each time (transfer dominates)


class _Entry:
    __slots__ = ("headers", "labels", "obj", "payload", "rtype", "store_key", "type_key")

    def __init__(
        self,
        type_key: tuple[str, str],
        rtype: ServedResource,
        store_key: str,
        obj: JSON,
        headers: list[tuple[bytes, bytes]],
        payload: bytes,
        labels: RequestLabels,
    ) -> None:
        self.type_key = type_key
        self.rtype = rtype
        self.store_key = store_key
        self.obj = obj
        self.headers = headers
        self.payload = payload
        self.labels = labels  # the request's metric labels


class ReadCache:
    """Path → encoded answer of a single-object GET; see the module docstring.

    Guarantees: :meth:`lookup` returns an answer only for a GET without query string,
    body or Table ``Accept``, and only if the bytes equal what the full request path
    would answer now. At most ``MAX_ENTRIES`` answers of at most ``MAX_ENTRY_BYTES`` each,
    ``MAX_BYTES`` together, are kept (oldest dropped first).
    """

    def __init__(self, store: Store, registry: Registry) -> None:
        self.enabled = isinstance(store, MemoryStore)
        self._store = store
        self._types = registry
        # oldest first; an OrderedDict drops its oldest in O(1) (``next(iter(d))`` on a
        # plain dict used as a queue scans the slots its deletions left: ~4 us a drop at
        # 4,096 entries against ~0.6)
        self._entries: OrderedDict[str, _Entry] = OrderedDict()
        self.bytes = 0

    def lookup(self, scope: dict[str, Any]) -> _Entry | None:
        """The cached answer for this request, or None (then take the full path)."""
        path: str = scope["path"]
        entry = self._entries.get(path)
        if entry is None:
            return None
        for name, value in scope["headers"]:
            if name == b"accept":
                if b"as=table" in value.lower():
                    return None
            elif (name == b"content-length" and value != b"0") or name == b"transfer-encoding":
                return None
        if (
            self._store.get(entry.store_key) is not entry.obj
            or self._types.get(*entry.type_key) is not entry.rtype
        ):
            self._forget(path)
            return None
        return entry

    def _forget(self, path: str) -> None:
        entry = self._entries.pop(path, None)
        if entry is not None:
            self.bytes -= len(entry.payload)

    def remember(
        self,
        path: str,
        rtype: ServedResource,
        store_key: str,
        headers: list[tuple[bytes, bytes]],
        payload: bytes,
        labels: RequestLabels,
    ) -> None:
        """Keep the answer just encoded for ``path`` from the object now at ``store_key``."""
        if not self.enabled:
            return
        obj = self._store.get(store_key)
        if obj is None:
            return
        self._forget(path)
        size = len(payload)
        if size > MAX_ENTRY_BYTES:
            return
        entries = self._entries
        while entries and (len(entries) >= MAX_ENTRIES or self.bytes + size > MAX_BYTES):
            _, oldest = entries.popitem(last=False)
            self.bytes -= len(oldest.payload)
        entries[path] = _Entry(
            (rtype.group, rtype.resource), rtype, store_key, obj, headers, payload, labels
        )
        self.bytes += size
