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
    equal,
    merge,
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


@dataclass(slots=True)
class Owned:
    """What one manager owns: its fields, the apiVersion they were recorded in, whether
    it applied them, and the entry's time (RFC 3339, or None)."""

    fields: FieldSet
    api_version: str
    applied: bool
    time: str | None = None


@dataclass(slots=True)
class ManagedFields:
    """Every manager's ``Owned`` fields, by identity."""

    owners: dict[Manager, Owned] = field(default_factory=dict)

    def copy(self) -> ManagedFields:
        return ManagedFields(
            {m: Owned(o.fields, o.api_version, o.applied, o.time) for m, o in self.owners.items()}
        )

    # -- the metadata.managedFields encoding ----------------------------------------------

    @classmethod
    def decode(cls, entries: Any) -> ManagedFields:
        """Read ``metadata.managedFields``; raises ``BadManagedFields`` (kube's wording)
        for entries that do not decode."""
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
            try:
                owned = FieldSet.from_fields_v1(raw) if raw is not None else FieldSet()
            except BadFieldsV1 as exc:
                raise BadManagedFields(f"error decoding fields: {exc}") from None
            time = entry.get("time")
            out.owners[manager] = Owned(
                owned, api_version, operation == APPLY, time if isinstance(time, str) else None
            )
        return out

    def encode(self) -> list[dict[str, Any]]:
        """``metadata.managedFields`` as kube writes it: Apply entries before Update
        entries, then by time, manager, apiVersion, subresource; managers owning nothing
        are left out."""
        rows: list[tuple[tuple[Any, ...], dict[str, Any]]] = []
        for manager, owned in self.owners.items():
            if owned.fields.empty():
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
            entry["fieldsV1"] = owned.fields.to_fields_v1()
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
        rows.sort(key=lambda row: row[0])
        return [entry for _, entry in rows]


def _unix(time: str | None) -> int:
    if not time:
        return 0
    from kubewerk.core.meta import parse_time

    seconds = parse_time(time)
    return int(seconds) if seconds is not None else 0


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
    out = managed.copy()
    old_obj = _without_managed_fields(old) if old is not None else {}
    changed, removed = _settle(
        old_obj, _without_managed_fields(new), node, out, None, True, ignored
    )
    mine = changed.recursive_difference(ignored).difference(_STRIPPED)
    previous = out.owners.get(manager)
    if mine.empty():
        if previous is not None:
            rest = previous.fields.difference(removed)
            if rest.empty():
                del out.owners[manager]
            else:
                previous.fields = rest
        return out
    base = previous.fields.difference(removed) if previous is not None else FieldSet()
    out.owners[manager] = Owned(base.union(mine), api_version, False, now)
    _cap_updaters(out)
    return out


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
