"""Recognising the kernel's own writes when the watch brings them back.

Every write the kernel makes (the finalizer, a transition, a status refresh) comes back
as a watch event, which would enqueue one more reconcile of the same object with nothing
to do. :class:`OwnWrites` drops exactly those events, in the kind's event filter
(:attr:`OwnWrites.predicate`), and nothing else:

- while the kernel reconciles a key (:meth:`OwnWrites.begin` .. :meth:`OwnWrites.end`),
  the key's update events are held back; when the reconcile ends, those whose
  resourceVersion the reconcile wrote are dropped, and if any other was held the key is
  reconciled again (:meth:`OwnWrites.end` answers True);
- after a reconcile that finished without asking for more (no error, no requeue), the
  versions it wrote are remembered for the key, and an update event carrying one of
  them is dropped when it arrives later.

This is safe because the kernel's writes are guarded by the resourceVersion it read: a
write that succeeded means nobody changed the object between that read and the write,
so the version it produced holds no one else's change. Only the kind's own update
events are filtered: creates, deletions, resyncs (an update whose old and new objects
are the same version, which also clears the memory) and anything enqueued by other
means (watches of other kinds, requeues) always reconcile. The memory is a few short
strings per object whose latest version the kernel wrote; deletions remove it.
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
    """The per-kind memory of the kernel's writes (see the module doc)."""

    def __init__(self) -> None:
        self._versions: dict[str, frozenset[str]] = {}
        self._running: dict[str, set[str]] = {}
        self.predicate: Predicate = _DropOwnEchoes(self)
        """Filters the kind's informer events: drops the echoes of the kernel's writes."""

    def __len__(self) -> int:
        return len(self._versions)

    def begin(self, key: str) -> None:
        """A reconcile of ``key`` starts: hold its update events until :meth:`end`."""
        self._versions.pop(key, None)
        self._running[key] = set()

    def end(self, key: str, written: Iterable[str], *, remember: bool) -> bool:
        """The reconcile of ``key`` ended after writing ``written`` (in any order);
        ``remember``: it asked for nothing more, so later echoes of those writes are
        dropped too. True when an update event held meanwhile was not one of those
        writes: the key must be reconciled again."""
        held = self._running.pop(key, set())
        versions = frozenset(v for v in written if v)
        if remember and versions:
            self._versions[key] = versions
        return bool(held - versions)

    def poke(self, key: str) -> None:
        """Forget the versions remembered for ``key``. Not needed to have a key
        reconciled in full — a key enqueued by other means always is (only the kind's own
        update events are filtered) — but harmless: later echoes of the kernel's earlier
        writes then reconcile too."""
        self._versions.pop(key, None)

    def is_own(self, key: str, version: str | None) -> bool:
        """Whether ``version`` of ``key`` is one the kernel wrote in the last reconcile
        of ``key`` that asked for nothing more."""
        versions = self._versions.get(key)
        return versions is not None and version in versions

    def _update(self, key: str, old: str | None, new: str | None) -> bool:
        if new is not None and new == old:
            self._versions.pop(key, None)  # a resync: reconcile in full
            return True
        held = self._running.get(key)
        if held is not None and new is not None:
            held.add(new)  # decided when the running reconcile ends
            return False
        return not self.is_own(key, new)

    def _delete(self, key: str) -> None:
        self._versions.pop(key, None)


class _DropOwnEchoes(Predicate):
    def __init__(self, writes: OwnWrites) -> None:
        self.writes = writes

    def update(self, old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
        return self.writes._update(object_key(new), _version(old), _version(new))

    def delete(self, obj: Mapping[str, Any]) -> bool:
        self.writes._delete(object_key(obj))
        return True
