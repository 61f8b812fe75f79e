"""Privilege-escalation prevention on writes of Roles, ClusterRoles and their bindings.

kube-apiserver's RBAC registry (``pkg/registry/rbac/*/policybased``) refuses a write that
would hand out permissions the writer does not hold:

- a Role or ClusterRole create/update (an update only when its rules, or a
  ClusterRole's aggregationRule, change) passes if the user is in ``system:masters``, or
  is authorized for the ``escalate`` verb on the role resource (name from the URL: none
  on create), or already holds every rule it writes (``rbac_rules.covers`` over the
  rules RBAC grants the user in the request's namespace); a ClusterRole with an
  aggregationRule also needs every permission (``*`` on ``*.*`` and ``*`` URLs);
- a RoleBinding or ClusterRoleBinding create/update passes if the user is in
  ``system:masters``, or is authorized to ``bind`` the referenced role (resource
  ``roles``/``clusterroles`` named by the roleRef, in the binding's namespace), or holds
  every rule of the referenced role (a role that does not exist: 404 NotFound).

Refusals are 403 Forbidden in kube's words: ``user "alice" (groups=["system:authenticated"])
is attempting to grant RBAC permissions not currently held:`` then one missing rule per
line (``rbac_rules.compact_string``, sorted). Without a request user (the server's own
writes, bootstrap, controllers) nothing is checked, as kube allows a context without one.
"""

from __future__ import annotations

from typing import Any

from kubewerk.apiserver.auth.rbac import GROUP, RbacAuthorizer
from kubewerk.apiserver.auth.rbac_rules import compact_rules, compact_string, covers, go_quote_list
from kubewerk.apiserver.auth.types import (
    SYSTEM_MASTERS,
    Attributes,
    Authorizer,
    UserInfo,
    request_user,
)
from kubewerk.core.errors import ApiError
from kubewerk.core.gofmt import go_quote, json_equal

JSON = dict[str, Any]

FULL_AUTHORITY: tuple[JSON, ...] = (
    {"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]},
    {"verbs": ["*"], "nonResourceURLs": ["*"]},
)
"""What a ClusterRole with an aggregationRule requires of its writer."""


def _rules(obj: JSON | None) -> list[JSON]:
    rules = (obj or {}).get("rules")
    return [r for r in rules if isinstance(r, dict)] if isinstance(rules, list) else []


class EscalationGuard:
    """The checks above for one server: ``authorizer`` answers ``escalate``/``bind`` (the
    server's whole chain), ``rbac`` lists the rules a user holds."""

    def __init__(self, authorizer: Authorizer, rbac: RbacAuthorizer) -> None:
        self.authorizer = authorizer
        self.rbac = rbac

    @staticmethod
    def _privileged(user: UserInfo) -> bool:
        return SYSTEM_MASTERS in user.groups

    def _missing(self, user: UserInfo, namespace: str, rules: list[JSON]) -> str | None:
        """None when ``user`` holds ``rules`` in ``namespace``; else the refusal text."""
        owner, errors = self.rbac.policy_rules(user, namespace)
        ok, missing = covers(owner, rules)
        if ok:
            return None
        lines = sorted({compact_string(rule) for rule in compact_rules(missing)})
        message = (
            f"user {go_quote(user.name)} (groups={go_quote_list(user.groups)}) is attempting "
            "to grant RBAC permissions not currently held:\n" + "\n".join(lines)
        )
        if errors:
            message += f"; resolution errors: [{errors}]"
        return message

    def check_role(self, resource: str, obj: JSON, old: JSON | None) -> None:
        """Refuse (403) a write of a Role (``resource`` ``roles``) or ClusterRole
        (``clusterroles``) that grants what the request's user does not hold."""
        user = request_user()
        if user is None or self._privileged(user):
            return
        unchanged = old is not None and json_equal(obj.get("rules"), old.get("rules"))
        if unchanged and (
            resource == "roles"
            or json_equal(obj.get("aggregationRule"), (old or {}).get("aggregationRule"))
        ):
            return
        meta = obj.get("metadata") or {}
        name = str(meta.get("name") or "")
        namespace = str(meta.get("namespace") or "") if resource == "roles" else ""
        escalate = Attributes(
            user,
            "escalate",
            namespace=namespace,
            api_group=GROUP,
            api_version="*",
            resource=resource,
            name=name if old is not None else "",
        )
        if self.authorizer.authorize(escalate).allowed:
            return
        refusal = self._missing(user, namespace, _rules(obj))
        if refusal is not None:
            raise ApiError.forbidden(resource, GROUP, name, refusal)
        aggregated = resource == "clusterroles" and obj.get("aggregationRule") is not None
        if aggregated and self._missing(user, namespace, list(FULL_AUTHORITY)) is not None:
            raise ApiError.forbidden(
                resource,
                GROUP,
                name,
                "must have cluster-admin privileges to use the aggregationRule",
            )

    def check_binding(self, resource: str, obj: JSON, old: JSON | None) -> None:
        """Refuse (403) a write of a RoleBinding (``resource`` ``rolebindings``) or
        ClusterRoleBinding whose role the request's user may neither bind nor holds."""
        user = request_user()
        if user is None or self._privileged(user):
            return
        meta = obj.get("metadata") or {}
        name = str(meta.get("name") or "")
        namespace = str(meta.get("namespace") or "") if resource == "rolebindings" else ""
        if old is not None and _only_gc_fields_changed(obj, old):
            return
        ref = obj.get("roleRef") if isinstance(obj.get("roleRef"), dict) else {}
        assert isinstance(ref, dict)
        kind = str(ref.get("kind") or "")
        role_name = str(ref.get("name") or "")
        if kind not in ("Role", "ClusterRole"):
            return  # refused by validation
        bind = Attributes(
            user,
            "bind",
            namespace=namespace,
            api_group=str(ref.get("apiGroup") or ""),
            api_version="*",
            resource="roles" if kind == "Role" else "clusterroles",
            name=role_name,
        )
        if self.authorizer.authorize(bind).allowed:
            return
        rules = self.rbac.role_reference_rules(kind, role_name, namespace)
        if rules is None:
            raise ApiError.not_found(
                "roles" if kind == "Role" else "clusterroles", GROUP, role_name
            )
        refusal = self._missing(user, namespace, rules)
        if refusal is not None:
            raise ApiError.forbidden(resource, GROUP, name, refusal)


def _only_gc_fields_changed(obj: JSON, old: JSON) -> bool:
    """Only ownerReferences and finalizers differ (``IsOnlyMutatingGCFields``)."""
    ignored = ("ownerReferences", "finalizers", "resourceVersion", "managedFields")
    new_meta = {k: v for k, v in (obj.get("metadata") or {}).items() if k not in ignored}
    old_meta = {k: v for k, v in (old.get("metadata") or {}).items() if k not in ignored}
    rest_new = {k: v for k, v in obj.items() if k != "metadata"}
    rest_old = {k: v for k, v in old.items() if k != "metadata"}
    return json_equal(new_meta, old_meta) and json_equal(rest_new, rest_old)
