"""The authorizer chain kube-apiserver builds for ``--authorization-mode=RBAC``.

kube-apiserver puts a privileged-group authorizer first (members of ``system:masters``
are allowed everything, with no reason) and then the configured modes, joined as a union
(``k8s.io/apiserver/pkg/authorization/union``): the first authorizer that allows
decides; when none does, the request is denied with the non-empty reasons of all of them
joined by newlines. Rule listing (SelfSubjectRulesReview) asks only the modes, so a
``system:masters`` member lists what RBAC grants it (``cluster-admin`` through the
bootstrap binding), as on a cluster.

``rbac_authorizer(store)`` builds that chain over a store; ``rules_review`` answers a
SelfSubjectRulesReview from any ``Authorizer``; ``AlwaysAllow`` (``types``) is the
authorizer with authorization off.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from kubewerk.apiserver.auth.rbac import RbacAuthorizer
from kubewerk.apiserver.auth.types import (
    SYSTEM_MASTERS,
    AlwaysAllow,
    Attributes,
    Authorizer,
    Decision,
    UserInfo,
)
from kubewerk.apiserver.storage.base import Store

JSON = dict[str, Any]


@runtime_checkable
class ReviewingAuthorizer(Protocol):
    """An authorizer that also reports the errors met listing a user's rules."""

    def rules_review(
        self, user: UserInfo, namespace: str
    ) -> tuple[list[JSON], list[JSON], bool, str]: ...


class PrivilegedGroups:
    """Allows every request of a member of one of ``groups`` (reason empty); no opinion
    on anyone else (kube's ``authorizerfactory.NewPrivilegedGroups``). Lists no rules."""

    def __init__(self, groups: Sequence[str] = (SYSTEM_MASTERS,)) -> None:
        self.groups = frozenset(groups)

    def authorize(self, attrs: Attributes) -> Decision:
        if not self.groups.isdisjoint(attrs.user.groups):
            return Decision(True)
        return Decision(False)

    def rules_for(self, user: UserInfo, namespace: str) -> tuple[list[JSON], list[JSON], bool]:
        return [], [], False


class Union:
    """Authorizers asked in order (``union.New``): the first allow decides; otherwise no
    opinion with the non-empty reasons joined by newlines. ``rule_resolvers`` are the
    authorizers whose rules a SelfSubjectRulesReview lists (default: all)."""

    def __init__(
        self,
        authorizers: Sequence[Authorizer],
        rule_resolvers: Sequence[Authorizer] | None = None,
    ) -> None:
        self.authorizers = tuple(authorizers)
        self.rule_resolvers = tuple(authorizers if rule_resolvers is None else rule_resolvers)

    def authorize(self, attrs: Attributes) -> Decision:
        reasons: list[str] = []
        for authorizer in self.authorizers:
            decision = authorizer.authorize(attrs)
            if decision.allowed:
                return decision
            if decision.reason:
                reasons.append(decision.reason)
        return Decision(False, "\n".join(reasons))

    def rules_for(self, user: UserInfo, namespace: str) -> tuple[list[JSON], list[JSON], bool]:
        resource_rules, non_resource_rules, incomplete, _ = self.rules_review(user, namespace)
        return resource_rules, non_resource_rules, incomplete

    def rules_review(
        self, user: UserInfo, namespace: str
    ) -> tuple[list[JSON], list[JSON], bool, str]:
        """Every resolver's rules in order; incomplete if any is; the errors joined as
        kube's aggregate prints them."""
        resource_rules: list[JSON] = []
        non_resource_rules: list[JSON] = []
        incomplete = False
        errors: list[str] = []
        for resolver in self.rule_resolvers:
            res, non_res, inc, error = rules_review(resolver, user, namespace)
            resource_rules += res
            non_resource_rules += non_res
            incomplete = incomplete or inc
            if error:
                errors.append(error)
        text = errors[0] if len(errors) == 1 else ("[" + ", ".join(errors) + "]" if errors else "")
        return resource_rules, non_resource_rules, incomplete, text


class RbacChain(Union):
    """``system:masters`` then RBAC over ``store``: what ``--authorization-mode=RBAC``
    answers. ``rbac`` is the RBAC authorizer itself (escalation checks read its rules)."""

    def __init__(self, store: Store) -> None:
        self.rbac = RbacAuthorizer(store)
        super().__init__([PrivilegedGroups(), self.rbac], [self.rbac])

    def close(self) -> None:
        """Stop following the store."""
        self.rbac.close()


def rbac_authorizer(store: Store) -> RbacChain:
    """The authorizer of a server with RBAC on, over ``store``."""
    return RbacChain(store)


def rules_review(
    authorizer: Authorizer, user: UserInfo, namespace: str
) -> tuple[list[JSON], list[JSON], bool, str]:
    """``(resourceRules, nonResourceRules, incomplete, evaluationError)`` of ``user`` in
    ``namespace``: from ``rules_review`` when the authorizer has it, else ``rules_for``
    with no error text."""
    if isinstance(authorizer, ReviewingAuthorizer):
        return authorizer.rules_review(user, namespace)
    resource_rules, non_resource_rules, incomplete = authorizer.rules_for(user, namespace)
    return resource_rules, non_resource_rules, incomplete, ""


__all__ = [
    "AlwaysAllow",
    "PrivilegedGroups",
    "RbacChain",
    "Union",
    "rbac_authorizer",
    "rules_review",
]
