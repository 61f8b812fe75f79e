"""Printers of ``rbac.authorization.k8s.io/v1``: Role and ClusterRole print as kube's
default table convertor (kube registers no printer for them: NAME, CREATED AT);
RoleBinding and ClusterRoleBinding as ``printRoleBinding``/``printClusterRoleBinding``
(ROLE, AGE, and wide USERS, GROUPS, SERVICEACCOUNTS)."""

from __future__ import annotations

from typing import Any, Final

from kubewerk.apiserver.printers.core import AGE, CREATED_AT_COLUMNS, created_at_cells
from kubewerk.apiserver.printers.format import age, obj_list, obj_map, obj_str
from kubewerk.apiserver.printers.printer import JSON, Printer
from kubewerk.apiserver.strategy import PrinterColumn

GROUP: Final = "rbac.authorization.k8s.io"

ROLE_REF_DESCRIPTION: Final = (
    "RoleRef can reference a Role in the current namespace or a ClusterRole in the global "
    "namespace. If the RoleRef cannot be resolved, the Authorizer must return an error. "
    "This field is immutable."
)

BINDING_COLUMNS: Final = (
    PrinterColumn("Role", "string", "", ROLE_REF_DESCRIPTION),
    AGE,
    PrinterColumn("Users", "string", "", "Users in the roleBinding", priority=1),
    PrinterColumn("Groups", "string", "", "Groups in the roleBinding", priority=1),
    PrinterColumn(
        "ServiceAccounts", "string", "", "ServiceAccounts in the roleBinding", priority=1
    ),
)


def subjects_strings(subjects: Any) -> tuple[list[str], list[str], list[str]]:
    """``rbac.SubjectsStrings``: user names, group names and ``NAMESPACE/NAME`` of the
    ServiceAccounts, each in the binding's order (other kinds are not shown)."""
    users: list[str] = []
    groups: list[str] = []
    service_accounts: list[str] = []
    for subject in obj_list(subjects):
        s = obj_map(subject)
        kind, name = obj_str(s.get("kind")), obj_str(s.get("name"))
        if kind == "ServiceAccount":
            service_accounts.append(f"{obj_str(s.get('namespace'))}/{name}")
        elif kind == "User":
            users.append(name)
        elif kind == "Group":
            groups.append(name)
    return users, groups, service_accounts


def binding_cells(obj: JSON, now: float) -> list[Any]:
    """ROLE (``KIND/NAME`` of the roleRef), AGE, then the wide USERS, GROUPS and
    SERVICEACCOUNTS, each joined with ``", "`` (the server always prints wide)."""
    ref = obj_map(obj.get("roleRef"))
    users, groups, service_accounts = subjects_strings(obj.get("subjects"))
    return [
        f"{obj_str(ref.get('kind'))}/{obj_str(ref.get('name'))}",
        age(obj, now),
        ", ".join(users),
        ", ".join(groups),
        ", ".join(service_accounts),
    ]


def printers() -> dict[str, Printer]:
    """The Role, ClusterRole, RoleBinding and ClusterRoleBinding printers."""
    created = Printer.of(CREATED_AT_COLUMNS, created_at_cells)
    binding = Printer.of(BINDING_COLUMNS, binding_cells)
    return {
        f"{GROUP}/v1/Role": created,
        f"{GROUP}/v1/ClusterRole": created,
        f"{GROUP}/v1/RoleBinding": binding,
        f"{GROUP}/v1/ClusterRoleBinding": binding,
    }
