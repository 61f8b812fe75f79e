"""Least-privilege RBAC for a :class:`~kubewerk.lifecycle.Platform`.

:func:`platform_permissions` extends :func:`kubewerk.runtime.rbac.manager_permissions`
with what the lifecycle kernel does for each registered kind, instead of the runtime's
general rule for a controller:

- ``get``, ``list``, ``watch`` of the kind (its informer) and ``patch`` of
  ``<plural>/status`` (transitions, conditions, ``observedGeneration``);
- ``patch`` of the kind only when the kernel keeps its finalizer on it (a teardown
  handler or teardown gate, or ``finalizer=True``): the finalizer is added and removed
  with a guarded merge patch, the kernel writes nothing else on the object;
- ``get``, ``list``, ``watch`` of every kind the kind's refs name (the dependency
  engine follows them from the caches; a ref to a Secret reads Secrets);
- ``delete`` of the kind when a ref of it cascades to a registered kind: deleting the
  target deletes its dependents first, and the engine sends those deletes;
- ``watch`` sources added with :meth:`Platform.watch`: ``get``, ``list``, ``watch``;
- rules declared with :func:`kubewerk.runtime.rbac.rbac` on a kind's handler, teardown
  handler or gate checks, and with :func:`~kubewerk.runtime.rbac.declare` on the
  platform or its manager.

Events (every transition records one) and the Lease come from the manager's part.
"""

from __future__ import annotations

from typing import Any

from kubewerk.client.resources import ResourceType, is_model_class, resource_type_of
from kubewerk.lifecycle.platform import KindRegistration, Platform
from kubewerk.model.ref_fields import references_of
from kubewerk.model.refs import ExternalKind, OnDelete
from kubewerk.runtime.rbac import (
    READ_VERBS,
    Permissions,
    cache_scope,
    controller_permissions,
    declared_rules,
    manager_permissions,
    rbac_objects,
)

__all__ = ["keeps_finalizer", "operator_rbac", "platform_permissions"]


def keeps_finalizer(platform: Platform, registration: KindRegistration) -> bool:
    """Whether the kernel keeps its finalizer on the kind's objects (as it decides)."""
    if registration.finalizer is not None:
        return registration.finalizer
    return registration.teardown is not None or bool(
        platform.gates_for(registration, teardown=True)
    )


def _label(group: str, kind: str) -> str:
    return f"{kind}.{group}" if group else kind


def platform_permissions(
    platform: Platform,
    *,
    namespace: str = "default",
    leader_election: bool | None = None,
) -> Permissions:
    """Every permission ``platform`` (and anything else its manager runs) needs; see
    the module doc. Raises :class:`~kubewerk.model.errors.ModelDefinitionError` when a
    kind's refs cannot be resolved, ``ValueError`` when a ref names a kind whose plural
    is unknown (neither registered nor given as a class)."""
    manager = platform.manager
    registrations = list(platform.kinds.values())
    perms = manager_permissions(
        manager,
        namespace=namespace,
        leader_election=leader_election,
        skip=[r.controller for r in registrations],
    )
    by_label: dict[str, ResourceType] = {r.label: r.rt for r in registrations}
    for registration in sorted(registrations, key=lambda r: r.label):
        rt = registration.rt
        controller_permissions(
            perms,
            manager,
            registration.controller,
            owner_writes=keeps_finalizer(platform, registration),
        )
        cascades = False
        for ref in references_of(registration.kind) if is_model_class(registration.kind) else ():
            label = _label(ref.group, ref.kind)
            target = by_label.get(label)
            if target is None:
                if ref.target is None:
                    raise ValueError(
                        f"{registration.label}{ref.field_path}: names {label}, which is not "
                        "registered on the platform and has no class to read its plural from"
                    )
                target = _target_type(ref.target)
            perms.grant(target, READ_VERBS, cache_scope(manager, target))
            if ref.on_delete is OnDelete.CASCADE and label in by_label:
                cascades = True
        if cascades:
            perms.grant(rt, ("delete",), cache_scope(manager, rt))
        sources: list[Any] = [registration.handler, registration.teardown]
        sources.extend(g.check for g in platform.gates_for(registration, teardown=False))
        sources.extend(g.check for g in platform.gates_for(registration, teardown=True))
        for source in sources:
            for declared in declared_rules(source) if source is not None else ():
                perms.add_rule(declared)
    for declared in declared_rules(platform):
        perms.add_rule(declared)
    return perms


def _target_type(cls: type) -> ResourceType:
    """The ResourceType of a ref's target class (a Resource or an ExternalKind)."""
    if issubclass(cls, ExternalKind):
        return ResourceType(cls.group, cls.version, cls.kind, cls.plural, cls.namespaced)
    return resource_type_of(cls)


def operator_rbac(
    target: Any,
    namespace: str,
    *,
    name: str | None = None,
    leader_election: bool | None = None,
) -> list[dict[str, Any]]:
    """The ServiceAccount ``namespace/name`` (default: the manager's name) and the roles
    and bindings granting what ``target`` (a Manager or a Platform) needs, as
    :func:`~kubewerk.runtime.rbac.rbac_objects` lists them."""
    if isinstance(target, Platform):
        perms = platform_permissions(target, namespace=namespace, leader_election=leader_election)
        manager = target.manager
    else:
        perms = manager_permissions(target, namespace=namespace, leader_election=leader_election)
        manager = target
    return rbac_objects(perms, name or manager.name, namespace)
