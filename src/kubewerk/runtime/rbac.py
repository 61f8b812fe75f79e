"""Least-privilege RBAC for an operator, derived from what its manager does.

:func:`manager_permissions` reads a :class:`~kubewerk.runtime.Manager` (before it starts)
and lists every permission the runtime's own code paths need; :func:`rbac_objects`
turns them into the ServiceAccount, ClusterRole, Roles and bindings to deploy
(``kubewerk gen rbac MODULE:MANAGER`` writes them as YAML). What is derived, per
controller:

- **the kind it reconciles** (``For``): ``get``, ``list``, ``watch`` (its informer);
  ``patch`` (finalizers are added and removed with a guarded merge patch); ``patch``
  on ``<plural>/status`` (:meth:`Context.patch_status`);
- **the kinds it owns** (``Owns``, children written by :meth:`Context.create_or_update`):
  ``get``, ``list``, ``watch``, ``create``, ``update``, ``patch``, and ``delete`` --
  kube's OwnerReferencesPermissionEnforcement admission plugin refuses a change of an
  existing object's ownerReferences (the runtime re-asserts the controller reference
  when it adopts or repairs a child) to a user who may not delete that object; and on
  the owner, ``update`` of ``<plural>/finalizers``, which the same plugin requires of
  whoever sets ``blockOwnerDeletion: true`` (every controller reference the runtime
  writes) on a reference to it;
- **the kinds it watches** through a mapping function: ``get``, ``list``, ``watch``;
- **Events**: the recorder writes ``events.k8s.io/v1`` Events (``create``, and ``patch``
  for a series) in the namespace of the object they are about (``default`` for a
  cluster-scoped one);
- **the Lease** when leader election is on: ``create`` on ``coordination.k8s.io``
  ``leases`` and ``get``/``update`` of the Lease named ``leader_election_id``, in the
  Lease's namespace (a Role there);
- anything **declared**: :func:`rbac` on a reconcile function (kubebuilder's
  ``+kubebuilder:rbac`` markers) and :func:`declare` on a manager, for what a reconcile
  does beyond the runtime's helpers (reading a Secret with the client, deleting
  something, calling another API).

Scope follows the caches: a namespaced kind the manager watches in every namespace is
granted by the ClusterRole; with ``Manager(namespaces=[...])`` (or a per-kind
:class:`~kubewerk.runtime.informer.Scope`) by a Role in each of those namespaces;
cluster-scoped kinds always by the ClusterRole. Reading ``/version`` and discovery needs
nothing: kube's default ``system:public-info-viewer`` and ``system:discovery`` roles
grant them to every authenticated user.

The output is deterministic and sorted as controller-gen's: one rule per API group and
set of verbs (and resourceNames), resources sorted within it, rules sorted by group
then resources; verbs sorted.
"""

from __future__ import annotations

import contextlib
import weakref
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, TypeVar

from kubewerk.client.resources import EVENT, LEASE, ResourceType, resource_type_of

__all__ = [
    "CHILD_VERBS",
    "READ_VERBS",
    "Permission",
    "Permissions",
    "Rule",
    "cache_scope",
    "controller_permissions",
    "declare",
    "declared_rules",
    "manager_permissions",
    "rbac",
    "rbac_objects",
    "rule",
]

F = TypeVar("F", bound=Callable[..., Any])

READ_VERBS: Final = ("get", "list", "watch")
"""What an informer and a cache read need."""
CHILD_VERBS: Final = ("create", "delete", "get", "list", "patch", "update", "watch")
"""What a controller needs on the children it owns (see the module doc for ``delete``)."""
EVENT_VERBS: Final = ("create", "patch")
LEASE_CREATE: Final = ("create",)
LEASE_HOLD: Final = ("get", "update")

RBAC_GROUP: Final = "rbac.authorization.k8s.io"
_MARKER: Final = "__kubewerk_rbac__"


@dataclass(frozen=True, slots=True)
class Rule:
    """One declared rule: kube's ``PolicyRule`` plus where it applies.

    ``namespace`` None grants it cluster-wide (the ClusterRole); a name grants it in
    that namespace only (a Role there). Either ``resources`` (with ``api_groups``) or
    ``non_resource_urls`` (cluster-wide only) is set, never both; ``resources`` may name
    a subresource (``deployments/scale``). Built by :func:`rule`, which checks it.
    """

    api_groups: tuple[str, ...] = ()
    resources: tuple[str, ...] = ()
    verbs: tuple[str, ...] = ()
    resource_names: tuple[str, ...] = ()
    non_resource_urls: tuple[str, ...] = ()
    namespace: str | None = None


def rule(
    groups: str | Sequence[str] = "",
    resources: str | Sequence[str] = (),
    verbs: str | Sequence[str] = (),
    *,
    names: Sequence[str] = (),
    urls: Sequence[str] = (),
    namespace: str | None = None,
) -> Rule:
    """A rule to declare: ``rule("", "secrets", ["get"])``, ``rule("apps",
    ["deployments", "deployments/scale"], "get;update")`` (verbs as a list or
    ``;``-separated as in kubebuilder markers), ``rule(urls=["/healthz"], verbs="get")``.

    Any verb string is kept (``escalate``, ``bind``, ``impersonate``... are verbs too).
    Raises ``ValueError`` for a rule kube-apiserver would refuse or that grants nothing:
    no verbs, both or neither of resources and URLs, URLs in a namespace.
    """
    group_list = (groups,) if isinstance(groups, str) else tuple(groups)
    resource_list = (resources,) if isinstance(resources, str) else tuple(resources)
    verb_list = tuple(v for v in verbs.split(";") if v) if isinstance(verbs, str) else tuple(verbs)
    if not verb_list:
        raise ValueError("an RBAC rule needs at least one verb")
    if urls:
        if resource_list or names:
            raise ValueError("an RBAC rule names either resources or non-resource URLs")
        if namespace is not None:
            raise ValueError("non-resource URLs can only be granted cluster-wide")
        return Rule(verbs=tuple(sorted(set(verb_list))), non_resource_urls=tuple(sorted(set(urls))))
    if not resource_list:
        raise ValueError("an RBAC rule needs resources or non-resource URLs")
    return Rule(
        api_groups=tuple(sorted(set(group_list))),
        resources=tuple(sorted(set(resource_list))),
        verbs=tuple(sorted(set(verb_list))),
        resource_names=tuple(sorted(set(names))),
        namespace=namespace,
    )


def rbac(*rules: Rule) -> Callable[[F], F]:
    """Declare what a reconcile (or lifecycle handler) needs beyond the runtime's
    helpers, as kubebuilder's ``+kubebuilder:rbac`` markers do::

        @mgr.reconciler(Database)
        @rbac(rule("", "secrets", "get"))
        async def reconcile(db, ctx): ...

    The function is returned unchanged (the rules ride on it); the order of decorators
    does not matter."""

    def mark(fn: F) -> F:
        existing: tuple[Rule, ...] = getattr(fn, _MARKER, ())
        setattr(fn, _MARKER, existing + tuple(rules))
        return fn

    return mark


_DECLARED: weakref.WeakKeyDictionary[Any, list[Rule]] = weakref.WeakKeyDictionary()


def declare(owner: Any, *rules: Rule) -> None:
    """Declare rules for everything ``owner`` (a Manager, or a Platform) runs, e.g. what
    a runnable needs: ``declare(mgr, rule("", "configmaps", "get;list;watch"))``."""
    _DECLARED.setdefault(owner, []).extend(rules)


def declared_rules(obj: Any) -> tuple[Rule, ...]:
    """The rules :func:`rbac` put on a function, or :func:`declare` on an object."""
    found: list[Rule] = list(getattr(obj, _MARKER, ()))
    with contextlib.suppress(TypeError):  # not weak-referenceable: nothing declared on it
        found.extend(_DECLARED.get(obj, ()))
    return tuple(found)


@dataclass(frozen=True, order=True, slots=True)
class Permission:
    """One atomic grant: ``verb`` on ``group``/``resource`` (``plural`` or
    ``plural/subresource``), optionally only the object ``name``, in ``namespace``
    (None: cluster-wide); or ``verb`` on the non-resource ``url``."""

    namespace: str | None
    group: str
    resource: str
    name: str
    verb: str
    url: str = ""


class Permissions:
    """A set of :class:`Permission`, grown by the derivation and rendered as rules."""

    def __init__(self) -> None:
        self.items: set[Permission] = set()

    def grant(
        self,
        rt: ResourceType,
        verbs: Iterable[str],
        namespaces: Sequence[str] | None,
        *,
        subresource: str = "",
        names: Sequence[str] = (),
    ) -> None:
        """``verbs`` on ``rt`` (``rt/subresource``) in ``namespaces`` (None: every
        namespace; ignored for a cluster-scoped kind), optionally only ``names``."""
        resource = f"{rt.plural}/{subresource}" if subresource else rt.plural
        spaces: Sequence[str | None] = (
            [None] if namespaces is None or not rt.namespaced else list(namespaces)
        )
        for ns in spaces:
            for verb in verbs:
                for name in names or ("",):
                    self.items.add(Permission(ns, rt.group, resource, name, verb))

    def add_rule(self, declared: Rule) -> None:
        """Every permission a declared :class:`Rule` grants."""
        if declared.non_resource_urls:
            for url in declared.non_resource_urls:
                for verb in declared.verbs:
                    self.items.add(Permission(None, "", "", "", verb, url))
            return
        for group in declared.api_groups:
            for resource in declared.resources:
                for verb in declared.verbs:
                    for name in declared.resource_names or ("",):
                        self.items.add(Permission(declared.namespace, group, resource, name, verb))

    def namespaces(self) -> list[str | None]:
        """None (cluster-wide) first when present, then the namespaces, sorted."""
        spaces = {p.namespace for p in self.items}
        return ([None] if None in spaces else []) + sorted(s for s in spaces if s is not None)

    def rules(self, namespace: str | None) -> list[dict[str, Any]]:
        """The PolicyRules granting exactly this set's permissions in ``namespace``
        (None: the cluster-wide ones), normalised as controller-gen does: verbs merged
        per (group, resource, names), then resources merged per (group, names, verbs)."""
        unnamed: dict[tuple[str, str], set[str]] = {}
        named: dict[tuple[str, str, str], set[str]] = {}
        urls: dict[str, set[str]] = {}
        for p in self.items:
            if p.namespace != namespace:
                continue
            if p.url:
                urls.setdefault(p.url, set()).add(p.verb)
            elif p.name:
                named.setdefault((p.group, p.resource, p.name), set()).add(p.verb)
            else:
                unnamed.setdefault((p.group, p.resource), set()).add(p.verb)
        verbs_of: dict[tuple[str, str, tuple[str, ...]], set[str]] = {
            (group, resource, ()): verbs for (group, resource), verbs in unnamed.items()
        }
        for (group, resource, name), verbs in named.items():
            # a grant on every object of the resource covers the named ones
            extra = verbs - unnamed.get((group, resource), set())
            if extra:
                verbs_of[(group, resource, (name,))] = extra
        # names with the same verbs on the same resource share a rule
        merged_names: dict[tuple[str, str, tuple[str, ...]], set[str]] = {}
        for (group, resource, names_key), verbs in verbs_of.items():
            key = (group, resource, tuple(sorted(verbs)))
            merged_names.setdefault(key, set()).update(names_key)
        grouped: dict[tuple[str, tuple[str, ...], tuple[str, ...]], set[str]] = {}
        for (group, resource, verbs_key), names_set in merged_names.items():
            grouped.setdefault((group, tuple(sorted(names_set)), verbs_key), set()).add(resource)
        out: list[dict[str, Any]] = []
        for (group, names_key, verbs_key), resources in sorted(
            grouped.items(), key=lambda item: (item[0][0], sorted(item[1]), item[0][1])
        ):
            entry: dict[str, Any] = {"apiGroups": [group], "resources": sorted(resources)}
            if names_key:
                entry["resourceNames"] = list(names_key)
            entry["verbs"] = list(verbs_key)
            out.append(entry)
        merged_urls: dict[tuple[str, ...], set[str]] = {}
        for url, verbs in urls.items():
            merged_urls.setdefault(tuple(sorted(verbs)), set()).add(url)
        for verbs_key, url_set in sorted(merged_urls.items(), key=lambda i: sorted(i[1])):
            out.append({"nonResourceURLs": sorted(url_set), "verbs": list(verbs_key)})
        return out


def cache_scope(manager: Any, rt: ResourceType) -> Sequence[str] | None:
    """The namespaces the manager's cache watches ``rt`` in (None: all)."""
    for kind, scope in (manager.by_kind or {}).items():
        if resource_type_of(kind) == rt:
            spaces = scope.namespaces
            return None if spaces is None else tuple(spaces)
    spaces = manager.namespaces
    return None if spaces is None else tuple(spaces)


def _event_namespaces(manager: Any, reconciled: Iterable[ResourceType]) -> Sequence[str] | None:
    """Where the recorder writes Events about the reconciled kinds: the objects'
    namespaces, and ``default`` for cluster-scoped ones (None: every namespace)."""
    spaces: set[str] = set()
    for rt in reconciled:
        if not rt.namespaced:
            spaces.add("default")
            continue
        scope = cache_scope(manager, rt)
        if scope is None:
            return None
        spaces.update(scope)
    return sorted(spaces)


def controller_permissions(
    perms: Permissions,
    manager: Any,
    controller: Any,
    *,
    owner_writes: bool = True,
) -> None:
    """Grant what one controller needs (see the module doc). ``owner_writes`` False
    leaves out the patch of the reconciled kind itself (a layer above that knows its
    controller never writes it, such as the lifecycle kernel, passes False)."""
    rt: ResourceType = controller.rt
    scope = cache_scope(manager, rt)
    perms.grant(rt, READ_VERBS, scope)
    perms.grant(rt, ("patch",), scope, subresource="status")
    if owner_writes:
        perms.grant(rt, ("patch",), scope)
    owns_children = False
    for watch in controller.watches:
        child = resource_type_of(watch.kind)
        if watch.mapper is None:
            owns_children = True
            perms.grant(child, CHILD_VERBS, cache_scope(manager, child))
        else:
            perms.grant(child, READ_VERBS, cache_scope(manager, child))
    if owns_children:
        perms.grant(rt, ("update",), scope, subresource="finalizers")
    for declared in declared_rules(controller.reconcile_fn):
        perms.add_rule(declared)


def manager_permissions(
    manager: Any,
    *,
    namespace: str = "default",
    leader_election: bool | None = None,
    skip: Iterable[Any] = (),
) -> Permissions:
    """Every permission ``manager`` needs (see the module doc).

    ``namespace`` is where the operator runs (its ServiceAccount's namespace, where the
    Lease goes unless the manager names another); ``leader_election`` overrides the
    manager's setting (``kubewerk run --leader-elect`` turns it on at run time);
    controllers in ``skip`` are left to the caller (a layer above that derives them
    itself)."""
    perms = Permissions()
    skipped = {id(c) for c in skip}
    reconciled: list[ResourceType] = []
    for controller in manager.controllers:
        reconciled.append(controller.rt)
        if id(controller) not in skipped:
            controller_permissions(perms, manager, controller)
    if manager.controllers:
        perms.grant(EVENT, EVENT_VERBS, _event_namespaces(manager, reconciled))
    elect = manager.leader_election if leader_election is None else leader_election
    if elect:
        lease_ns = manager.leader_election_namespace or namespace
        perms.grant(LEASE, LEASE_CREATE, [lease_ns])
        perms.grant(LEASE, LEASE_HOLD, [lease_ns], names=[manager.leader_election_id])
    for declared in declared_rules(manager):
        perms.add_rule(declared)
    return perms


def rbac_objects(
    perms: Permissions,
    name: str,
    namespace: str,
    *,
    labels: Mapping[str, str] | None = None,
) -> list[dict[str, Any]]:
    """The objects granting ``perms`` to the ServiceAccount ``namespace/name``, in
    apply order: the ServiceAccount, the ClusterRole ``name`` (cluster-wide rules), a
    Role ``name`` in each namespace with namespaced rules, then the ClusterRoleBinding
    and RoleBindings (each named ``name``). Roles with no rules are left out."""

    def meta(ns: str | None = None) -> dict[str, Any]:
        out: dict[str, Any] = {"name": name}
        if ns is not None:
            out["namespace"] = ns
        if labels:
            out["labels"] = dict(labels)
        return out

    subject = {"kind": "ServiceAccount", "name": name, "namespace": namespace}
    objects: list[dict[str, Any]] = [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta(namespace)}
    ]
    bindings: list[dict[str, Any]] = []
    for ns in perms.namespaces():
        rules = perms.rules(ns)
        if not rules:
            continue
        kind = "ClusterRole" if ns is None else "Role"
        objects.append(
            {"apiVersion": f"{RBAC_GROUP}/v1", "kind": kind, "metadata": meta(ns), "rules": rules}
        )
        bindings.append(
            {
                "apiVersion": f"{RBAC_GROUP}/v1",
                "kind": f"{kind}Binding",
                "metadata": meta(ns),
                "roleRef": {"apiGroup": RBAC_GROUP, "kind": kind, "name": name},
                "subjects": [dict(subject)],
            }
        )
    return objects + bindings
