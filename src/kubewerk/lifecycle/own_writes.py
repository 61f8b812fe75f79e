"""Recognising the kernel's own writes when the watch brings them back.

Every write the kernel makes (the finalizer, a transition, a status refresh) comes back
as a watch event and would enqueue one more reconcile of the same object, which would
find nothing to do. :class:`OwnWrites` remembers, per object key, the resourceVersions the
kernel wrote in the last reconcile of the key, when that reconcile finished without
asking for more (no error, no requeue), and:

- drops the update events that carry one of those resourceVersions (:meth:`predicate`);
- when such an event arrived while the reconcile was still running (the key was marked
  dirty and is reconciled again), :meth:`is_own` tells the next reconcile that the
  cached object is still one of the kernel's own writes, so the kernel skips it (the
  events of the later writes follow, and are the kernel's own as well).

This is safe because the kernel's writes are guarded by the resourceVersion it read: a
write that succeeded means nobody changed the object between that read and the write,
so the version it produced holds no one else's change. Resyncs (an update whose old and
new objects are the same version) always pass and clear the memory, so periodic
reconciles still call the handler. The memory is one short string per object whose
latest versions the kernel wrote; deletions remove it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from kubewerk.core.gvk import object_key
from kubewerk.runtime.predicates import Predicate

__all__ = ["OwnWrites"]


def _version(obj: Mapping[str, Any]) -> str | None:
    meta = obj.get("metadata")
    if not isinstance(meta, Mapping):
        return None
    rv = meta.get("resourceVersion")
    return str(rv) if rv else None


class OwnWrites:
    """The per-kind memory of the kernel's last writes (see the module doc)."""

    def __init__(self) -> None:
        self._versions: dict[str, frozenset[str]] = {}
        self.predicate: Predicate = _DropOwnEchoes(self)
        """Filters the kind's informer events: drops the echoes of the kernel's writes."""

    def __len__(self) -> int:
        return len(self._versions)

    def remember(self, key: str, versions: Iterable[str]) -> None:
        """The reconcile of ``key`` finished with nothing left to do after writing
        ``versions`` (none: it wrote nothing; nothing is remembered)."""
        written = frozenset(v for v in versions if v)
        if written:
            self._versions[key] = written

    def forget(self, key: str) -> None:
        """The next reconcile of ``key`` must run in full."""
        self._versions.pop(key, None)

    def is_own(self, key: str, obj: Mapping[str, Any]) -> bool:
        """Whether ``obj`` (the cached object of ``key``) is one of the kernel's writes
        in the last reconcile of ``key``."""
        versions = self._versions.get(key)
        return versions is not None and _version(obj) in versions


class _DropOwnEchoes(Predicate):
    def __init__(self, writes: OwnWrites) -> None:
        self.writes = writes

    def update(self, old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
        key = object_key(new)
        version = _version(new)
        if version is not None and version == _version(old):
            self.writes.forget(key)  # a resync: reconcile in full
            return True
        return not self.writes.is_own(key, new)

    def delete(self, obj: Mapping[str, Any]) -> bool:
        self.writes.forget(object_key(obj))
        return True
