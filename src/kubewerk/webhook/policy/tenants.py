"""Tenant constraints: who may act in which tenant and environment, and through which path.

**The tenant model.** A namespace belongs to a tenant and an environment through two
labels: ``kubewerk.dev/tenant`` (:data:`TENANT_LABEL`) and ``kubewerk.dev/environment``
(:data:`ENVIRONMENT_LABEL`). A namespace without the tenant label is outside the model
and nothing here applies to it. A tenanted namespace without an environment label has
the environment ``""``, which only a grant for every environment (``*``) covers.

**Paths.** A path is how a request arrives, named (``gitops``, ``ci``, ``kubectl``) and
defined by :class:`Path`: the identities it comes from (users, groups, ServiceAccounts;
e.g. the GitOps controller's ServiceAccount) and/or the field managers it writes with
(``request.options.fieldManager`` of a create, update or patch). A request arrives
through every path whose identities include the requester (or that names none) and
whose field managers include the request's (or that names none); through the path
:data:`DIRECT` when no path matches. A field manager is chosen by the client, so it
tells apart paths *of one identity* (a person's ``kubectl`` vs the same person's
``helm``) but authenticates nothing: a path that must not be forged, such as GitOps, is
defined by identity. (A VAP cannot see the User-Agent, so paths are not defined by it.)

**Grants.** A :class:`Grant` lets subjects act in tenants and environments (``*``: any)
via paths (``*``: any, including :data:`DIRECT`). A request on an object in a tenanted
namespace is allowed when one grant covers its requester (user name or one of its
groups), the namespace's tenant and environment, and one of the request's paths. A
request on a Namespace itself is checked against the labels it has before and after
(creating, relabelling into or out of, or deleting a tenanted namespace all need a
grant for it). Everything else is denied with 403 Forbidden::

    configmaps "app" is forbidden: ValidatingAdmissionPolicy 'kubewerk-tenant-constraints'
    with binding 'kubewerk-tenant-constraints' denied request: user "alice" may not
    CREATE configmaps in tenant "acme", environment "prod" via direct: no tenant
    constraint grants it (ConfigMap kubewerk-system/kubewerk-tenant-constraints)

:data:`SYSTEM_GRANT` (on by default) lets Kubernetes' own components act anywhere
(the controller manager and its controllers' ServiceAccounts in ``kube-system``, the
scheduler, the nodes), since they write in every namespace (garbage collection, the
namespace controller emptying a deleted namespace, Pod bindings and status).

**What ships.** :func:`tenant_constraints` builds a :class:`TenantPolicy`: a fixed
ValidatingAdmissionPolicy (the same for every set of constraints, in this module's
``tenants.yaml``), its two bindings -- one for objects in tenanted namespaces and
tenanted Namespaces (no constraints ConfigMap: denied), one for Namespaces losing their
tenant label -- and the params: a ConfigMap whose ``grants`` and ``paths`` keys hold the
constraints, one line each, so changing who may do what is ``kubectl apply`` of a
ConfigMap. ``kubewerk gen policy MODULE`` writes the four objects of every
``TenantPolicy`` in the module; :func:`constraints_from_data` reads the YAML form.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path as FilePath
from typing import Any, Final

from .compose import Check, PolicyDefinitionError
from .policy import API_VERSION, ConfigMapParams, Policy

__all__ = [
    "ANY",
    "DIRECT",
    "ENVIRONMENT_LABEL",
    "NAME",
    "PARAMS_NAMESPACE",
    "SYSTEM_GRANT",
    "TENANT_LABEL",
    "Grant",
    "Path",
    "Subjects",
    "TenantPolicy",
    "constraints_from_data",
    "shipped_objects",
    "tenant_constraints",
]

TENANT_LABEL: Final = "kubewerk.dev/tenant"
ENVIRONMENT_LABEL: Final = "kubewerk.dev/environment"
ANY: Final = "*"
DIRECT: Final = "direct"
"""The path of a request that matches no declared path."""
NAME: Final = "kubewerk-tenant-constraints"
"""The policy's, its first binding's and the params ConfigMap's name."""
PARAMS_NAMESPACE: Final = "kubewerk-system"
OPERATIONS: Final = ("CREATE", "UPDATE", "DELETE", "CONNECT")
SHIPPED_YAML: Final = FilePath(__file__).with_name("tenants.yaml")

_NAME: Final = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?\Z")
_FORBIDDEN_CHARS: Final = ("|", "\n", "\r")


def _check_value(value: str, where: str) -> str:
    if not isinstance(value, str) or not value:
        raise PolicyDefinitionError(f"{where}: expected a non-empty string")
    if any(c in value for c in _FORBIDDEN_CHARS):
        raise PolicyDefinitionError(f"{where}: {value!r} may not contain '|' or line breaks")
    return value


def _strings(values: str | Iterable[str], where: str) -> tuple[str, ...]:
    items = (values,) if isinstance(values, str) else tuple(values)
    return tuple(_check_value(v, f"{where}[{i}]") for i, v in enumerate(items))


@dataclass(frozen=True)
class Subjects:
    """Who: user names, group names and ServiceAccounts (``namespace/name``, or
    ``namespace/*`` for every ServiceAccount of a namespace)."""

    users: tuple[str, ...] = ()
    groups: tuple[str, ...] = ()
    service_accounts: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "users", _strings(self.users, "users"))
        object.__setattr__(self, "groups", _strings(self.groups, "groups"))
        accounts = _strings(self.service_accounts, "serviceAccounts")
        for account in accounts:
            ns, sep, name = account.partition("/")
            if not sep or not _NAME.match(ns) or not (name == "*" or name):
                raise PolicyDefinitionError(
                    f"serviceAccounts: {account!r} is not NAMESPACE/NAME or NAMESPACE/*"
                )
        object.__setattr__(self, "service_accounts", accounts)

    def identities(self) -> list[str]:
        """As the policy compares them: ``user:<name>`` and ``group:<name>`` (a
        ServiceAccount is the user ``system:serviceaccount:NS:NAME``; ``NS/*`` the group
        ``system:serviceaccounts:NS``), sorted."""
        out = {f"user:{u}" for u in self.users} | {f"group:{g}" for g in self.groups}
        for account in self.service_accounts:
            ns, _, name = account.partition("/")
            if name == "*":
                out.add(f"group:system:serviceaccounts:{ns}")
            else:
                out.add(f"user:system:serviceaccount:{ns}:{name}")
        return sorted(out)

    def __bool__(self) -> bool:
        return bool(self.users or self.groups or self.service_accounts)


@dataclass(frozen=True)
class Path:
    """A named way requests arrive: from ``subjects`` (any when empty) writing with one
    of ``field_managers`` (any when empty); at least one of the two is given."""

    name: str
    subjects: Subjects = field(default_factory=Subjects)
    field_managers: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not _NAME.match(self.name):
            raise PolicyDefinitionError(
                f"path name {self.name!r}: lower-case letters, digits and '-' only"
            )
        if self.name == DIRECT:
            raise PolicyDefinitionError(
                f"path {DIRECT!r} is the path of requests no declared path matches; "
                "declare another name"
            )
        managers = _strings(self.field_managers, f"path {self.name}: fieldManagers")
        object.__setattr__(self, "field_managers", managers)
        if not self.subjects and not managers:
            raise PolicyDefinitionError(
                f"path {self.name}: give its subjects, its field managers, or both"
            )

    def lines(self) -> list[str]:
        """``name|identity|fieldManager`` lines (``*`` for "any")."""
        identities = self.subjects.identities() or [ANY]
        managers = sorted(set(self.field_managers)) or [ANY]
        return [f"{self.name}|{i}|{m}" for i in identities for m in managers]


@dataclass(frozen=True)
class Grant:
    """``subjects`` may act in ``tenants`` and ``environments`` via ``via`` (each ``*``
    for any; ``via`` names declared paths or :data:`DIRECT`)."""

    subjects: Subjects
    tenants: tuple[str, ...] = (ANY,)
    environments: tuple[str, ...] = (ANY,)
    via: tuple[str, ...] = (ANY,)

    def __post_init__(self) -> None:
        if not self.subjects:
            raise PolicyDefinitionError("a grant needs at least one subject")
        for attr in ("tenants", "environments", "via"):
            values = _strings(getattr(self, attr), attr)
            if not values:
                raise PolicyDefinitionError(f"a grant needs at least one of {attr} (or '*')")
            object.__setattr__(self, attr, values)

    def lines(self) -> list[str]:
        """``identity|tenant|environment|path`` lines."""
        return [
            f"{i}|{t}|{e}|{v}"
            for i in self.subjects.identities()
            for t in sorted(set(self.tenants))
            for e in sorted(set(self.environments))
            for v in sorted(set(self.via))
        ]


SYSTEM_GRANT: Final = Grant(
    Subjects(
        users=("system:kube-controller-manager", "system:kube-scheduler"),
        groups=("system:nodes", "system:serviceaccounts:kube-system"),
    )
)
"""Kubernetes' own components, anywhere (see the module doc)."""


# -- the policy --------------------------------------------------------------------------

_LABELS = "{o}.metadata.?labels.orValue({{}})"
_TARGET = (
    _LABELS
    + "[?'"
    + TENANT_LABEL
    + "'].orValue('') + '|' + "
    + _LABELS
    + "[?'"
    + ENVIRONMENT_LABEL
    + "'].orValue('')"
)
_FIELD = "l.split('|')[{i}]"
VARIABLES: Final = {
    "subjects": (
        "(['user:' + request.userInfo.username] + "
        "request.userInfo.?groups.orValue([]).map(g, 'group:' + g)).join('\\n')"
    ),
    "fieldManager": (
        "type(request.?options.orValue(null)) == map ? "
        "string(request.options.?fieldManager.orValue('')) : ''"
    ),
    "declaredPaths": (
        "params.?data.?paths.orValue('').split('\\n').filter(l, l.split('|').size() == 3 && "
        f"({_FIELD.format(i=1)} == '*' || "
        f"{_FIELD.format(i=1)} in variables.subjects.split('\\n')) && "
        f"({_FIELD.format(i=2)} == '*' || {_FIELD.format(i=2)} == variables.fieldManager))"
        f".map(l, {_FIELD.format(i=0)}).join(', ')"
    ),
    "via": f"variables.declaredPaths == '' ? '{DIRECT}' : variables.declaredPaths",
    "grants": "'\\n' + params.?data.?grants.orValue('') + '\\n'",
    "targets": (
        "(request.resource.group == '' && request.resource.resource == 'namespaces' ? "
        "[object, oldObject].filter(o, o != null).map(o, " + _TARGET.format(o="o") + ") : "
        "namespaceObject == null ? [] : [" + _TARGET.format(o="namespaceObject") + "])"
        ".filter(t, !t.startsWith('|')).join('\\n')"
    ),
    "refused": (
        "variables.targets.split('\\n').filter(t, t != '' && "
        "!variables.subjects.split('\\n').exists(s, "
        "[t.split('|')[0], '*'].exists(tenant, [t.split('|')[1], '*'].exists(env, "
        "(variables.via.split(', ') + ['*']).exists(path, variables.grants.contains("
        "'\\n' + s + '|' + tenant + '|' + env + '|' + path + '\\n'))))))"
        ".join('\\n')"
    ),
}
"""The policy's variables, in evaluation order (each reads only earlier ones). Each
holds a string (lists are joined with line breaks, or ``", "`` for the paths): a grant
line matches when it equals one the request could be granted by -- the request's
identity, its tenant or ``*``, its environment or ``*``, one of its paths or ``*``."""

MESSAGE: Final = (
    "'user \"' + request.userInfo.username + '\" may not ' + request.operation + ' ' + "
    "request.resource.resource + (request.?subResource.orValue('') != '' ? "
    "'/' + request.subResource : '') + "
    "' in tenant \"' + variables.refused.split('\\n')[0].split('|')[0] + "
    "'\", environment \"' + variables.refused.split('\\n')[0].split('|')[1] + "
    "'\" via ' + variables.via + "
    "': no tenant constraint grants it (ConfigMap {ns}/{name})'"
)


@dataclass(frozen=True)
class TenantPolicy(Policy):
    """The tenant constraints as a :class:`~kubewerk.webhook.policy.Policy`: its
    :meth:`to_objects` gives the ValidatingAdmissionPolicy, its two bindings and the
    params ConfigMap (in that order)."""

    grants: tuple[Grant, ...] = ()
    paths: tuple[Path, ...] = ()
    params_namespace: str = PARAMS_NAMESPACE

    @property
    def namespaces_binding_name(self) -> str:
        """The binding that checks Namespaces leaving a tenant."""
        return f"{self.name}-namespaces"

    @property
    def binding_name(self) -> str:
        return self.name

    def params_configmap(self) -> dict[str, Any]:
        """The ConfigMap holding the constraints (``grants`` and ``paths``, one per line,
        sorted)."""
        grants = sorted({line for g in self.grants for line in g.lines()})
        paths = sorted({line for p in self.paths for line in p.lines()})
        return {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": self.name, "namespace": self.params_namespace},
            "data": {
                "grants": "\n".join(grants) + "\n",
                "paths": "\n".join(paths) + "\n" if paths else "",
            },
        }

    def to_binding(self) -> dict[str, Any]:
        """The binding for tenanted namespaces (their objects and themselves)."""
        binding = super().to_binding()
        binding["spec"]["matchResources"] = {
            "namespaceSelector": {
                "matchExpressions": [{"key": TENANT_LABEL, "operator": "Exists"}]
            },
            "objectSelector": {},
        }
        return binding

    def namespaces_binding(self) -> dict[str, Any]:
        """The binding for a Namespace update or delete whatever its labels now (a
        namespace dropping its tenant label no longer matches the first binding);
        without the ConfigMap it allows (the first binding already refuses)."""
        return {
            "apiVersion": API_VERSION,
            "kind": "ValidatingAdmissionPolicyBinding",
            "metadata": {"name": self.namespaces_binding_name},
            "spec": {
                "policyName": self.name,
                "validationActions": list(self.validation_actions),
                "paramRef": {
                    "name": self.name,
                    "namespace": self.params_namespace,
                    "parameterNotFoundAction": "Allow",
                },
                "matchResources": {
                    "resourceRules": [
                        {
                            "apiGroups": [""],
                            "apiVersions": ["v1"],
                            "resources": ["namespaces"],
                            "operations": ["UPDATE", "DELETE"],
                            "scope": "*",
                        }
                    ],
                },
            },
        }

    def fixed_objects(self) -> list[dict[str, Any]]:
        """The policy and its bindings: what does not change with the constraints."""
        return [self.to_policy(), self.to_binding(), self.namespaces_binding()]

    def to_objects(self) -> list[dict[str, Any]]:
        """The policy, its bindings and the params ConfigMap."""
        return [*self.fixed_objects(), self.params_configmap()]


def tenant_constraints(
    grants: Sequence[Grant],
    paths: Sequence[Path] = (),
    *,
    name: str = NAME,
    params_namespace: str = PARAMS_NAMESPACE,
    system_grant: bool = True,
    validation_actions: Sequence[str] = ("Deny",),
) -> TenantPolicy:
    """The :class:`TenantPolicy` for ``grants`` over ``paths`` (plus
    :data:`SYSTEM_GRANT` unless ``system_grant`` is False). Raises
    :class:`~kubewerk.webhook.policy.PolicyDefinitionError` when a grant's ``via``
    names an undeclared path or two paths share a name."""
    names = [p.name for p in paths]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise PolicyDefinitionError(f"path {dupes[0]!r} is declared twice")
    known = {*names, DIRECT, ANY}
    for i, grant in enumerate(grants):
        for via in grant.via:
            if via not in known:
                raise PolicyDefinitionError(
                    f"grants[{i}].via: path {via!r} is not declared "
                    f"(declared: {', '.join(sorted(known - {ANY}))})"
                )
    if not _NAME.match(name) or not _NAME.match(params_namespace):
        raise PolicyDefinitionError("the policy name and params namespace must be DNS labels")
    all_grants = (*grants, SYSTEM_GRANT) if system_grant else tuple(grants)
    check = Check(
        "variables.refused == ''",
        message="no tenant constraint grants this request",
        message_expression=MESSAGE.format(ns=params_namespace, name=name),
        reason="Forbidden",
    )
    return TenantPolicy(
        name=name,
        match=[
            {
                "apiGroups": ["*"],
                "apiVersions": ["*"],
                "resources": ["*/*"],
                "operations": list(OPERATIONS),
                "scope": "*",
            }
        ],
        check=check,
        params=ConfigMapParams(name, params_namespace, "Deny"),
        failure_policy="Fail",
        validation_actions=tuple(validation_actions),
        variables=dict(VARIABLES),
        grants=tuple(all_grants),
        paths=tuple(paths),
        params_namespace=params_namespace,
    )


# -- the YAML form -----------------------------------------------------------------------


def _subjects(data: Any, where: str) -> Subjects:
    if not isinstance(data, Mapping):
        raise PolicyDefinitionError(f"{where}: expected {{users, groups, serviceAccounts}}")
    unknown = sorted(set(data) - {"users", "groups", "serviceAccounts"})
    if unknown:
        raise PolicyDefinitionError(f"{where}: unknown field {unknown[0]!r}")
    try:
        return Subjects(
            tuple(data.get("users") or ()),
            tuple(data.get("groups") or ()),
            tuple(data.get("serviceAccounts") or ()),
        )
    except PolicyDefinitionError as exc:
        raise PolicyDefinitionError(f"{where}.{exc}") from None


def constraints_from_data(data: Any) -> TenantPolicy:
    """A :class:`TenantPolicy` from its YAML form::

    paths:
      - name: gitops
        subjects: {serviceAccounts: [argocd/argocd-application-controller]}
    grants:
      - subjects: {groups: [acme-devs]}
        tenants: [acme]
        environments: [dev, staging]
      - subjects: {serviceAccounts: [argocd/argocd-application-controller]}
        environments: [prod]
        via: [gitops]
    # optional: name, paramsNamespace, systemGrant (default true), validationActions
    """
    if not isinstance(data, Mapping):
        raise PolicyDefinitionError("tenant constraints: expected a mapping")
    unknown = sorted(
        set(data)
        - {"paths", "grants", "name", "paramsNamespace", "systemGrant", "validationActions"}
    )
    if unknown:
        raise PolicyDefinitionError(f"tenant constraints: unknown field {unknown[0]!r}")
    paths: list[Path] = []
    for i, item in enumerate(data.get("paths") or []):
        where = f"paths[{i}]"
        if not isinstance(item, Mapping):
            raise PolicyDefinitionError(f"{where}: expected {{name, subjects, fieldManagers}}")
        subjects = _subjects(item.get("subjects") or {}, f"{where}.subjects")
        try:
            paths.append(
                Path(item.get("name", ""), subjects, tuple(item.get("fieldManagers") or ()))
            )
        except PolicyDefinitionError as exc:
            raise PolicyDefinitionError(f"{where}: {exc}") from None
    grants: list[Grant] = []
    raw_grants = data.get("grants")
    if not isinstance(raw_grants, list):
        raise PolicyDefinitionError("tenant constraints: grants: expected a list")
    for i, item in enumerate(raw_grants):
        where = f"grants[{i}]"
        if not isinstance(item, Mapping):
            raise PolicyDefinitionError(
                f"{where}: expected {{subjects, tenants, environments, via}}"
            )
        try:
            grants.append(
                Grant(
                    _subjects(item.get("subjects"), f"{where}.subjects"),
                    tuple(item.get("tenants") or (ANY,)),
                    tuple(item.get("environments") or (ANY,)),
                    tuple(item.get("via") or (ANY,)),
                )
            )
        except PolicyDefinitionError as exc:
            text = str(exc)
            raise PolicyDefinitionError(
                text if text.startswith(where) else f"{where}: {text}"
            ) from None
    return tenant_constraints(
        grants,
        paths,
        name=str(data.get("name", NAME)),
        params_namespace=str(data.get("paramsNamespace", PARAMS_NAMESPACE)),
        system_grant=bool(data.get("systemGrant", True)),
        validation_actions=tuple(data.get("validationActions") or ("Deny",)),
    )


def shipped_objects() -> list[dict[str, Any]]:
    """The ValidatingAdmissionPolicy and bindings ``tenants.yaml`` ships (the defaults:
    the same whatever the constraints, which live in the params ConfigMap)."""
    return tenant_constraints([]).fixed_objects()
