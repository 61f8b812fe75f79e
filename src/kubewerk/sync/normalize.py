"""What a semantic diff ignores: the fields a server manages, not the user.

:func:`strip_server_fields` returns a copy of an object (shallow: only the maps it
changes are copied) without ``metadata.uid``, ``resourceVersion``, ``generation``,
``creationTimestamp``, ``managedFields``, ``selfLink``, ``deletionTimestamp``,
``deletionGracePeriodSeconds``, the ``kubectl.kubernetes.io/last-applied-configuration``
annotation, kubewerk's own sync bookkeeping annotation (:data:`LAST_SYNCED_ANNOTATION`),
and ``status`` (unless ``keep_status``). An ``annotations`` or ``labels`` map left empty
is dropped, as is an empty ``metadata.namespace`` (Kubernetes treats absent and empty the
same for both).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

__all__ = [
    "LAST_APPLIED_ANNOTATION",
    "LAST_SYNCED_ANNOTATION",
    "SERVER_METADATA",
    "strip_server_fields",
]

LAST_APPLIED_ANNOTATION: Final = "kubectl.kubernetes.io/last-applied-configuration"
LAST_SYNCED_ANNOTATION: Final = "sync.kubewerk.dev/last-synced"
"""Where ``kubewerk sync`` keeps, on each synced object in a cluster, the source's state at
the last sync (compact JSON of the stripped object): the base of the ``merge`` policy's
three-way merge and the mark ``--prune`` looks for."""

SERVER_METADATA: Final = frozenset(
    {
        "uid",
        "resourceVersion",
        "generation",
        "creationTimestamp",
        "managedFields",
        "selfLink",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
    }
)
_IGNORED_ANNOTATIONS: Final = frozenset({LAST_APPLIED_ANNOTATION, LAST_SYNCED_ANNOTATION})


def strip_server_fields(obj: Mapping[str, Any], *, keep_status: bool = False) -> dict[str, Any]:
    """A copy of ``obj`` without server-managed fields (see the module docstring). The
    input is never modified; nested values are shared with it, so treat the result as
    read-only or copy it before changing deeper levels."""
    out = dict(obj)
    if not keep_status:
        out.pop("status", None)
    meta = out.get("metadata")
    if isinstance(meta, Mapping):
        m = {k: v for k, v in meta.items() if k not in SERVER_METADATA}
        ann = m.get("annotations")
        if isinstance(ann, Mapping):
            if any(k in _IGNORED_ANNOTATIONS for k in ann):
                ann = {k: v for k, v in ann.items() if k not in _IGNORED_ANNOTATIONS}
            if ann:
                m["annotations"] = ann
            else:
                del m["annotations"]
        elif "annotations" in m and ann is None:
            del m["annotations"]
        for name in ("labels", "namespace", "finalizers", "ownerReferences"):
            if name in m and not m[name]:
                del m[name]
        out["metadata"] = m
    return out
