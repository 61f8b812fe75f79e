"""kubewerk.sync: many clusters — semantic diff, sync under a conflict policy, drift.

Public API (stable; ``kubewerk.sync.federation`` builds on it)::

    from kubewerk.sync import load, diff_sources, diff_objects, apply_object

    src = load("manifests/")               # or "git:main:deploy", "cluster:prod", "http://..."
    dst = load("cluster:prod")
    report = await diff_sources(src, dst)  # DiffReport: items (ItemDiff), summary(), errors
    for item in report.items:
        item.key, item.status, item.diff.patch   # ObjectKey, added/changed/..., RFC 6902

    d = diff_objects(a, b, shape)          # ObjectDiff of two plain objects
    res = await apply_object(client, obj, "git-wins")   # ApplyResult(action, object)
    await delete_object(client, obj)

- :mod:`~kubewerk.sync.keys`: ``ObjectKey`` (group, kind, namespace, name), ``GroupKind``.
- :mod:`~kubewerk.sync.sources`: ``load(spec)`` → ``ManifestSource`` / ``ClusterSource``;
  ``parse_manifests``; ``SourceError`` for unreadable input.
- :mod:`~kubewerk.sync.normalize`: ``strip_server_fields`` (what a diff ignores) and the
  ``sync.kubewerk.dev/last-synced`` annotation where a sync records its base state.
- :mod:`~kubewerk.sync.shapes` / :mod:`~kubewerk.sync.schemas`: list types, merge keys,
  by-value scalars and CRD defaults per kind (``KindSchemas``).
- :mod:`~kubewerk.sync.diff`: ``diff_objects``, ``same_value``; :mod:`~kubewerk.sync.compare`:
  ``diff_sources`` over two whole sources.
- :mod:`~kubewerk.sync.defaults`: ``defaulted_state`` (an object as a destination would
  store it: CRD schema defaults, else a server dry run) and ``without_defaults`` (what
  ``cluster-wins`` writes back).
- :mod:`~kubewerk.sync.apply`: ``apply_object`` (server-side apply, force under git-wins,
  guarded replace to drop foreign fields), ``delete_object``, ``server_defaulted``.
- :mod:`~kubewerk.sync.engine`: ``sync(source, targets, policy, prune=, dry_run=)`` →
  ``SyncReport``; :mod:`~kubewerk.sync.merge3`: the merge policy's three-way rule.
- :mod:`~kubewerk.sync.drift`: ``DriftController`` (``Drifted`` on a ``SyncTarget``,
  Events, ``kubewerk_drift_objects{cluster,kind}``, optional self-heal).

Layering: imports core, schema, model, client and runtime only (never the embedded API
server): a built-in kind's defaults are read from the destination server with a dry-run
write. A cluster side whose CRDs the user may not list is read the same way, with a
warning (``ClusterSource.warnings``, ``DiffReport.warnings``, ``SyncReport.warnings``).
See docs/sync.md.
"""

from kubewerk.sync.apply import (
    FIELD_MANAGER,
    POLICIES,
    ApplyResult,
    Policy,
    apply_object,
    delete_object,
    last_synced,
    server_defaulted,
)
from kubewerk.sync.compare import DiffReport, ItemDiff, diff_sources
from kubewerk.sync.diff import ObjectDiff, diff_objects, same_value
from kubewerk.sync.drift import SYNC_TARGET_CRD, DriftController
from kubewerk.sync.engine import ObjectResult, SyncReport, TargetReport, sync
from kubewerk.sync.keys import GroupKind, ObjectKey, key_of
from kubewerk.sync.normalize import LAST_SYNCED_ANNOTATION, strip_server_fields
from kubewerk.sync.schemas import KindSchemas
from kubewerk.sync.shapes import ANY, Shape
from kubewerk.sync.sources import ClusterSource, Entry, ManifestSource, Source, SourceError, load

__all__ = [
    "ANY",
    "FIELD_MANAGER",
    "LAST_SYNCED_ANNOTATION",
    "POLICIES",
    "SYNC_TARGET_CRD",
    "ApplyResult",
    "ClusterSource",
    "DiffReport",
    "DriftController",
    "Entry",
    "GroupKind",
    "ItemDiff",
    "KindSchemas",
    "ManifestSource",
    "ObjectDiff",
    "ObjectKey",
    "ObjectResult",
    "Policy",
    "Shape",
    "Source",
    "SourceError",
    "SyncReport",
    "TargetReport",
    "apply_object",
    "delete_object",
    "diff_objects",
    "diff_sources",
    "key_of",
    "last_synced",
    "load",
    "same_value",
    "server_defaulted",
    "strip_server_fields",
    "sync",
]
