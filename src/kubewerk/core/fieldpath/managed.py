"""Field ownership: ``metadata.managedFields`` entries and the apply / update algorithms
of structured-merge-diff's ``merge.Updater`` with the layers kube-apiserver puts around
it (``k8s.io/apimachinery/pkg/util/managedfields``).

- A manager is identified by (name, operation, apiVersion for ``Update`` only,
  subresource): each ``Update`` in another version is its own entry, an applier keeps
  one entry whatever version it applies in.
- ``update``: the fields a non-apply write added or changed become its manager's; other
  managers lose them; everyone loses removed fields. The manager's ``time`` is set only
  when it gained fields. More than ``MAX_UPDATE_MANAGERS`` updaters: the oldest are
  merged per apiVersion into ``ancient-changes`` entries, as kube's capManagersManager.
- ``apply``: the configuration merged into the live object; fields the applier set
  last time and sets no longer are removed unless another manager owns them; a field
  another manager owns that the configuration sets to another value is a conflict
  (``ApplyConflict``, 409 with kube's message) unless ``force``, which takes it over.
- System metadata (name, uid, resourceVersion, managedFields, ...) is never owned
  (stripMetaManager); ``ignored`` paths (a strategy's reset fields: ``status`` on the
  main resource, ``spec`` on ``/status``) are never owned either.

Only one version of a kind is compared (the request's): kubewerk does not convert the
object into each manager's apiVersion before comparing, as kube-apiserver does for kinds
served in several versions whose fields differ between versions.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from kubewerk.core.errors import ApiError
from kubewerk.core.fieldpath.fieldset import BadFieldsV1, FieldSet
from kubewerk.core.fieldpath.path import field as fe
from kubewerk.core.fieldpath.path import path_string
from kubewerk.core.fieldpath.typed import (
    compare,
    ensure_named_fields_are_members,
    entry_fields_v1,
    equal,
    merge,
    new_fields_v1,
    remove_items,
    to_field_set,
)
from kubewerk.core.fieldpath.types import TypeNode

__all__ = [
    "ANCIENT_CHANGES",
    "APPLY",
    "MAX_UPDATE_MANAGERS",
    "UPDATE",
    "ApplyConflict",
    "BadManagedFields",
    "ManagedFields",
    "Manager",
    "Owned",
    "apply",
    "update",
]

APPLY = "Apply"
UPDATE = "Update"
MAX_UPDATE_MANAGERS = 10  # DefaultMaxUpdateManagers
ANCIENT_CHANGES = "ancient-changes"


@dataclass(frozen=True, slots=True, order=True)
class Manager:
    """A manager's identity (``BuildManagerIdentifier``: no time, no fields; no apiVersion
    for appliers)."""

    name: str
    operation: str
    api_version: str = ""
    subresource: str = ""

    def identifier(self) -> str:
        """The JSON identifier kube keys managers by (Go field order, omitempty); conflicts
        are grouped in its sort order."""
        out: dict[str, str] = {}
        if self.name:
            out["manager"] = self.name
        out["operation"] = self.operation
        if self.api_version:
            out["apiVersion"] = self.api_version
        if self.subresource:
            out["subresource"] = self.subresource
        return json.dumps(out, separators=(",", ":"), ensure_ascii=False)

    def printed(self) -> str:
        """How kube's conflict messages name the manager (``printManager``)."""
        text = _go_quote(self.name)
        if self.subresource:
            text += f" with subresource {_go_quote(self.subresource)}"
        if self.operation == UPDATE:
            text += f" using {self.api_version}"
        return text


def _go_quote(text: str) -> str:
    from kubewerk.core.gofmt import go_quote

    return go_quote(text)


class Owned:
    """What one manager owns: its fields, the apiVersion they were recorded in, whether
    it applied them, and the entry's time (RFC 3339, or None).

    ``v1`` is the ``fieldsV1`` encoding of ``fields`` when it is known (the stored
    entry it was decoded from, or the last encoding made): it is dropped whenever
    ``fields`` is replaced, so it always encodes the current fields. ``fields`` may be
    given as None with ``v1`` (a valid encoding, as ``FieldSet.to_fields_v1`` writes
    them): the set is then decoded the first time it is read. Encoded dicts are shared
    between objects and must not be changed."""

    __slots__ = ("_fields", "api_version", "applied", "time", "v1")

    def __init__(
        self,
        fields: FieldSet | None,
        api_version: str,
        applied: bool,
        time: str | None = None,
        v1: dict[str, Any] | None = None,
    ) -> None:
        if fields is None and v1 is None:
            fields = FieldSet()
        self._fields = fields
        self.api_version = api_version
        self.applied = applied
        self.time = time
        self.v1 = v1

    @property
    def fields(self) -> FieldSet:
        found = self._fields
        if found is None:
            assert self.v1 is not None
            found = self._fields = FieldSet.from_fields_v1(self.v1)
        return found

    @fields.setter
    def fields(self, value: FieldSet) -> None:
        if value is not self._fields:
            self._fields = value
            self.v1 = None

    def empty(self) -> bool:
        """Whether the manager owns nothing (without decoding an encoded set)."""
        if self._fields is None:
            return not self.v1
        return self._fields.empty()

    def encoded(self) -> dict[str, Any]:
        """``fields`` as ``fieldsV1`` (made once, then reused)."""
        if self.v1 is None:
            self.v1 = self.fields.to_fields_v1()
        return self.v1

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Owned):
            return NotImplemented
        return (self.fields, self.api_version, self.applied, self.time) == (
            other.fields,
            other.api_version,
            other.applied,
            other.time,
        )

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Owned({self.fields!r}, {self.api_version!r}, {self.applied!r}, {self.time!r})"


@dataclass(slots=True)
class ManagedFields:
    """Every manager's ``Owned`` fields, by identity."""

    owners: dict[Manager, Owned] = field(default_factory=dict)

    def copy(self) -> ManagedFields:
        return ManagedFields(
            {
                m: Owned(o._fields, o.api_version, o.applied, o.time, o.v1)
                for m, o in self.owners.items()
            }
        )

    # -- the metadata.managedFields encoding ----------------------------------------------

    @classmethod
    def decode(cls, entries: Any, stored: bool = False) -> ManagedFields:
        """Read ``metadata.managedFields``; raises ``BadManagedFields`` (kube's wording)
        for entries that do not decode. ``stored``: the entries are ones ``encode`` wrote
        (a stored object's), so their ``fieldsV1`` are kept as the owners' encodings
        instead of being written again from the decoded sets."""
        out = cls()
        if entries is None:
            return out
        if not isinstance(entries, list):
            raise BadManagedFields("managedFields is not a list")
        for entry in entries:
            if not isinstance(entry, dict):
                raise BadManagedFields("managedFields entry is not an object")
            operation = entry.get("operation") or ""
            api_version = str(entry.get("apiVersion") or "")
            manager = Manager(
                str(entry.get("manager") or ""),
                str(operation),
                "" if operation == APPLY else api_version,
                str(entry.get("subresource") or ""),
            )
            if manager in out.owners:
                raise BadManagedFields(f"duplicate entries for manager {manager.identifier()}")
            fields_type = entry.get("fieldsType") or ""
            raw = entry.get("fieldsV1")
            if fields_type not in ("", "FieldsV1") or (fields_type == "" and raw is not None):
                raise BadManagedFields(f'invalid fieldsType "{fields_type}"')
            time = entry.get("time")
            owned: FieldSet | None = None
            if not (stored and type(raw) is dict and raw):
                # a stored non-empty entry is decoded when (if ever) its set is read
                try:
                    owned = FieldSet.from_fields_v1(raw) if raw is not None else FieldSet()
                except BadFieldsV1 as exc:
                    raise BadManagedFields(f"error decoding fields: {exc}") from None
            out.owners[manager] = Owned(
                owned,
                api_version,
                operation == APPLY,
                time if isinstance(time, str) else None,
                raw if owned is None else None,
            )
        return out

    def encode(self) -> list[dict[str, Any]]:
        """``metadata.managedFields`` as kube writes it: Apply entries before Update
        entries, then by time, manager, apiVersion, subresource; managers owning nothing
        are left out."""
        rows: list[tuple[tuple[Any, ...], dict[str, Any]]] = []
        for manager, owned in self.owners.items():
            if owned.empty():
                continue
            entry: dict[str, Any] = {}
            if manager.name:
                entry["manager"] = manager.name
            entry["operation"] = APPLY if owned.applied else UPDATE
            if owned.api_version:
                entry["apiVersion"] = owned.api_version
            if owned.time:
                entry["time"] = owned.time
            entry["fieldsType"] = "FieldsV1"
            entry["fieldsV1"] = owned.encoded()
            if manager.subresource:
                entry["subresource"] = manager.subresource
            order = (
                entry["operation"],
                _unix(owned.time),
                manager.name,
                owned.api_version,
                manager.subresource,
            )
            rows.append((order, entry))
        if len(rows) > 1:
            rows.sort(key=lambda row: row[0])
        return [entry for _, entry in rows]


_unix_seen: dict[str, int] = {}


def _unix(time: str | None) -> int:
    """Seconds of an entry's RFC 3339 time (0 if none or unreadable); remembered per
    text, since the same few times are read on every write of an object."""
    if not time:
        return 0
    found = _unix_seen.get(time)
    if found is not None:
        return found
    from kubewerk.core.meta import parse_time

    seconds = parse_time(time)
    value = int(seconds) if seconds is not None else 0
    if len(_unix_seen) >= 4096:
        _unix_seen.clear()
    _unix_seen[time] = value
    return value


class BadManagedFields(ValueError):
    """``metadata.managedFields`` that cannot be decoded."""


class ApplyConflict(ApiError):
    """409 Conflict of an apply: the fields other managers own with other values."""

    def __init__(self, conflicts: list[tuple[Manager, tuple[Any, ...]]]) -> None:
        self.conflicts = conflicts
        causes = [
            {
                "reason": "FieldManagerConflict",
                "message": f"conflict with {m.printed()}",
                "field": path_string(p),
            }
            for m, p in conflicts
        ]
        super().__init__(409, "Conflict", _conflict_message(conflicts), {"causes": causes})


def _conflict_message(conflicts: list[tuple[Manager, tuple[Any, ...]]]) -> str:
    if len(conflicts) == 1:
        manager, path = conflicts[0]
        return (
            f"Apply failed with 1 conflict: conflict with {manager.printed()}: {path_string(path)}"
        )
    by_manager: dict[Manager, list[tuple[Any, ...]]] = {}
    for manager, path in conflicts:
        by_manager.setdefault(manager, []).append(path)
    lines: list[str] = []
    for manager in sorted(by_manager, key=Manager.identifier):
        lines.append(f"conflicts with {manager.printed()}:")
        lines.extend(f"- {path_string(p)}" for p in by_manager[manager])
    return f"Apply failed with {len(conflicts)} conflicts: " + "\n".join(lines)


# -- the algorithms -----------------------------------------------------------------------

_STRIPPED = FieldSet.of(
    (fe("apiVersion"),),
    (fe("kind"),),
    (fe("metadata"),),
    *(
        (fe("metadata"), fe(name))
        for name in (
            "name",
            "namespace",
            "creationTimestamp",
            "selfLink",
            "uid",
            "clusterName",
            "generation",
            "managedFields",
            "resourceVersion",
        )
    ),
)


def _without_managed_fields(obj: Any) -> Any:
    if not isinstance(obj, dict):
        return obj
    meta = obj.get("metadata")
    if not isinstance(meta, dict) or "managedFields" not in meta:
        return obj
    out = dict(obj)
    out["metadata"] = {k: v for k, v in meta.items() if k != "managedFields"}
    return out


def _without_server_fields(old: Any, new: Any) -> Any:
    """``old`` without managedFields, and without the resourceVersion when ``new`` has
    none (a write's body has it taken off before ownership is worked out: the write
    does not remove it)."""
    old = _without_managed_fields(old)
    if not isinstance(old, dict) or not isinstance(new, dict):
        return old
    meta = old.get("metadata")
    new_meta = new.get("metadata")
    if (
        isinstance(meta, dict)
        and "resourceVersion" in meta
        and not (isinstance(new_meta, dict) and "resourceVersion" in new_meta)
    ):
        old = dict(old)
        old["metadata"] = {k: v for k, v in meta.items() if k != "resourceVersion"}
    return old


def _settle(
    old: Any,
    new: Any,
    node: TypeNode,
    managed: ManagedFields,
    acting: Manager | None,
    force: bool,
    ignored: FieldSet,
) -> tuple[Any, Any]:
    """structured-merge-diff's ``update``: other managers lose what changed (conflicts
    unless ``force``) and what was removed. Returns the comparison's added/modified
    union and removed set."""
    cmp = compare(old, new, node).exclude(ignored)
    changed = cmp.modified.union(cmp.added)
    conflicts: dict[Manager, FieldSet] = {}
    if changed.empty() and cmp.removed.empty():
        return changed, cmp.removed  # nothing changed: nobody's fields are read
    for manager, owned in managed.owners.items():
        if manager == acting:
            continue
        clash = owned.fields.intersection(changed)
        if not clash.empty():
            conflicts[manager] = clash
    if conflicts and not force:
        listed = [
            (m, p) for m in sorted(conflicts, key=Manager.identifier) for p in conflicts[m].paths()
        ]
        raise ApplyConflict(listed)
    for manager, owned in list(managed.owners.items()):
        if manager == acting:
            continue
        fields = owned.fields
        if manager in conflicts:
            fields = fields.difference(conflicts[manager])
        if not cmp.removed.empty():
            fields = fields.difference(cmp.removed)
        if fields.empty():
            del managed.owners[manager]
        else:
            owned.fields = fields
    return changed, cmp.removed


def update(
    old: Any,
    new: Any,
    node: TypeNode,
    managed: ManagedFields,
    manager: Manager,
    api_version: str,
    now: str,
    ignored: FieldSet | None = None,
) -> ManagedFields:
    """Ownership after a non-apply write from ``old`` (None when creating) to ``new``
    by ``manager`` (an ``Update`` identity); ``managed`` is the ownership before it (not
    changed). Never raises a conflict: an update always takes what it changes."""
    ignored = ignored if ignored is not None else FieldSet()
    if old is None and not managed.owners and not ignored.children and type(new) is dict:
        return _created(new, node, manager, api_version, now, ignored)
    out = managed.copy()
    new_obj = _without_managed_fields(new)
    old_obj = _without_server_fields(old, new_obj) if old is not None else {}
    # the acting manager's own fields are not taken from it (it gets what it changed
    # back below): its set stays the same object when it changes what it owns
    changed, removed = _settle(old_obj, new_obj, node, out, manager, True, ignored)
    mine = changed.recursive_difference(ignored).difference(_STRIPPED)
    previous = out.owners.get(manager)
    if mine.empty():
        if previous is not None and not removed.empty():
            rest = previous.fields.difference(removed)
            if rest.empty():
                del out.owners[manager]
            else:
                previous.fields = rest
        return out
    base = previous.fields.difference(removed) if previous is not None else FieldSet()
    fields = base.union(mine)
    kept = previous.v1 if previous is not None and fields is previous.fields else None
    out.owners[manager] = Owned(fields, api_version, False, now, kept)
    _cap_updaters(out)
    return out


_STRIPPED_TOP = frozenset(("apiVersion", "kind"))
_STRIPPED_META = frozenset(pe[1] for pe in _STRIPPED.child(fe("metadata")).members)


def _created(
    new: dict[str, Any],
    node: TypeNode,
    manager: Manager,
    api_version: str,
    now: str,
    ignored: FieldSet,
) -> ManagedFields:
    """``update`` of a create with no prior ownership, in one walk straight to the
    ``fieldsV1`` of the creator's entry: every field of ``new`` but system metadata and
    the ``ignored`` top-level fields (the same set ``compare`` from nothing gives)."""
    walk = node.resolve(new)
    skip = (
        _STRIPPED_TOP | {pe[1] for pe in ignored.members if pe[0] == 0}
        if ignored.members
        else _STRIPPED_TOP
    )
    out: dict[str, Any] = {}
    if walk.kind == "map" and walk.relation != "atomic":
        for key in sorted(new):
            if key in skip:
                continue
            value = new[key]
            sub = walk.member(key)
            if key == "metadata":
                meta_walk = sub.resolve(value)
                if (
                    type(value) is dict
                    and meta_walk.kind == "map"
                    and meta_walk.relation != "atomic"
                ):
                    meta = {k: v for k, v in value.items() if k not in _STRIPPED_META}
                    inner = new_fields_v1(meta, meta_walk, (fe("metadata"),))
                    if inner:
                        out["f:metadata"] = inner
                continue
            out["f:" + key] = entry_fields_v1(value, sub, (fe(key),))
    managed = ManagedFields()
    if out:
        managed.owners[manager] = Owned(None, api_version, False, now, out)
    return managed


def apply(
    live: Any,
    config: dict[str, Any],
    node: TypeNode,
    managed: ManagedFields,
    manager: Manager,
    api_version: str,
    now: str,
    force: bool,
    ignored: FieldSet | None = None,
) -> tuple[Any, ManagedFields]:
    """Apply ``config`` by ``manager`` (an ``Apply`` identity) to ``live`` (``{}`` when
    the object does not exist yet; without managedFields). Returns the new object (None
    when it equals ``live``: nothing to write but ownership) and the new ownership; raises
    ``ApplyConflict`` and ``typed.ListItemError``."""
    ignored = ignored if ignored is not None else FieldSet()
    out = managed.copy()
    live = _without_managed_fields(live)
    merged = merge(live, config, node)
    last = out.owners.get(manager)
    applied = to_field_set(config, node).recursive_difference(ignored).difference(_STRIPPED)
    out.owners[manager] = Owned(applied, api_version, True, last.time if last else None)
    if last is not None and not last.fields.empty():
        merged = _prune(merged, out, last.fields, node)
    _settle(live, merged, node, out, manager, force, ignored)
    mine = out.owners.get(manager)
    if equal(live, merged):
        if mine is not None and mine.fields.empty():
            del out.owners[manager]
        return None, out
    if mine is not None:
        mine.time = now
    return merged, out


def _prune(merged: Any, managed: ManagedFields, last: FieldSet, node: TypeNode) -> Any:
    """Remove what the applier set last time and nobody (the applier's new set included)
    owns now (``Updater.prune``: remove, add back owned items, add back dangling ones)."""
    last_m = ensure_named_fields_are_members(last, node)
    pruned = remove_items(merged, last_m, node)
    owned = FieldSet()
    for o in managed.owners.values():
        owned = owned.union(o.fields)
    merged_set = ensure_named_fields_are_members(to_field_set(merged, node), node)
    pruned_set = ensure_named_fields_are_members(
        to_field_set(pruned if pruned is not None else {}, node), node
    )
    owned_m = ensure_named_fields_are_members(owned, node)
    kept = remove_items(merged, merged_set.difference(pruned_set.union(owned_m)), node)
    kept_set = ensure_named_fields_are_members(
        to_field_set(kept if kept is not None else {}, node), node
    )
    out = remove_items(merged, merged_set.difference(kept_set).intersection(last_m), node)
    return out if out is not None else {}


def _cap_updaters(managed: ManagedFields) -> None:
    """Merge the oldest ``Update`` entries into per-version ``ancient-changes`` entries
    while there are more than ``MAX_UPDATE_MANAGERS`` (capManagersManager)."""
    updaters = [m for m, o in managed.owners.items() if not o.applied]
    if len(updaters) <= MAX_UPDATE_MANAGERS:
        return
    updaters.sort(key=lambda m: (_unix(managed.owners[m].time), m.identifier()))
    first_of_version: dict[str, Manager] = {}
    count = len(updaters)
    for manager in updaters:
        if count <= MAX_UPDATE_MANAGERS:
            break
        owned = managed.owners[manager]
        version = owned.api_version
        bucket = Manager(ANCIENT_CHANGES, UPDATE, version)
        first = first_of_version.get(version)
        if first is None:
            first_of_version[version] = manager
            continue
        if bucket not in managed.owners:
            managed.owners[bucket] = managed.owners.pop(first)
        held = managed.owners[bucket]
        managed.owners[bucket] = Owned(owned.fields.union(held.fields), version, False, owned.time)
        del managed.owners[manager]
        count -= 1
