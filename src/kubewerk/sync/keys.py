"""Object identity across sources: group, kind, namespace and name (never the version).

Two objects are "the same object" in a diff or a sync when their :class:`ObjectKey`\\s
are equal, so one served at ``v1alpha1`` in Git and ``v1`` in a cluster match.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

from kubewerk.core.gvk import split_api_version

__all__ = ["GroupKind", "ObjectKey", "key_of"]


class GroupKind(NamedTuple):
    """A kind without its version (``("apps", "Deployment")``, ``("", "ConfigMap")``)."""

    group: str
    kind: str

    def __str__(self) -> str:
        return f"{self.kind}.{self.group}" if self.group else self.kind


class ObjectKey(NamedTuple):
    """group/kind/namespace/name; ``namespace`` is ``""`` for cluster-scoped objects."""

    group: str
    kind: str
    namespace: str
    name: str

    @property
    def group_kind(self) -> GroupKind:
        return GroupKind(self.group, self.kind)

    def __str__(self) -> str:
        gk = f"{self.kind}.{self.group}" if self.group else self.kind
        return f"{gk} {self.namespace}/{self.name}" if self.namespace else f"{gk} {self.name}"


def key_of(obj: Mapping[str, Any], default_namespace: str = "") -> ObjectKey:
    """The key of a manifest or served object. ``ValueError`` when it has no kind or name.

    ``default_namespace`` is used for an object without a string ``metadata.namespace``
    (pass ``""`` for a cluster-scoped kind; the key keeps a namespace such an object
    names). :func:`kubewerk.sync.compare.index_entries` keys manifests with their kind's
    scope and the namespace kubectl would place them in."""
    kind = obj.get("kind")
    meta = obj.get("metadata")
    name = meta.get("name") if isinstance(meta, Mapping) else None
    if not isinstance(kind, str) or not kind:
        raise ValueError("an object without kind")
    if not isinstance(name, str) or not name:
        raise ValueError(f"a {kind} without metadata.name")
    group = split_api_version(str(obj.get("apiVersion") or "")).group
    ns = meta.get("namespace") if isinstance(meta, Mapping) else None
    return ObjectKey(group, kind, ns if isinstance(ns, str) and ns else default_namespace, name)
