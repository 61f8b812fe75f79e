"""The RBAC authorizer: who holds which rules, from the stored Roles and bindings.

``RbacAuthorizer`` answers as kube's RBAC authorizer (``plugin/pkg/auth/authorizer/rbac``
over ``pkg/registry/rbac/validation``'s ``DefaultRuleResolver``):

- the rules that apply to a user in a namespace are those of every ClusterRoleBinding
  naming the user (by ``User`` name, one of its ``Group`` s, or as the ``ServiceAccount``
  ``system:serviceaccount:NS:NAME``), then, for a namespaced request, those of every
  RoleBinding in that namespace naming it (a ServiceAccount subject without a namespace
  means the binding's own);
- a request is allowed when one of those rules allows it (``rbac_rules``); the reason
  names the first binding that did: ``RBAC: allowed by ClusterRoleBinding "x" of
  ClusterRole "y" to User "z"`` (a RoleBinding as ``"name/namespace"``, a
  ServiceAccount subject as ``"name/namespace"``);
- otherwise it has no opinion: the reason is empty, or, when a binding names a role that
  does not exist, ``RBAC: clusterrole.rbac.authorization.k8s.io "x" not found`` (several
  such errors as ``RBAC: [a, b]``), as kube appends to its 403 message.

RBAC has no deny rules and no notion of ``system:masters``; ``authorizer`` puts the
privileged group in front. Performance: the objects are read from the store once and
indexed (bindings by subject, roles compiled); every change under the RBAC prefix drops
the index and the decision cache, rebuilt on the next question. Decisions are cached
per distinct ``Attributes`` (bounded), so a steady client costs one dict lookup.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from kubewerk.apiserver.auth.rbac_rules import CompiledRule, compile_rules, rule_info
from kubewerk.apiserver.auth.types import SERVICE_ACCOUNT_PREFIX, Attributes, Decision, UserInfo
from kubewerk.apiserver.storage.base import Event, Store

JSON = dict[str, Any]

GROUP = "rbac.authorization.k8s.io"
PREFIX = f"/{GROUP}/"
ROLES = f"{PREFIX}roles/"
CLUSTER_ROLES = f"{PREFIX}clusterroles/"
ROLE_BINDINGS = f"{PREFIX}rolebindings/"
CLUSTER_ROLE_BINDINGS = f"{PREFIX}clusterrolebindings/"

CACHE_LIMIT = 8192
"""Decisions and resolved rule sets kept before the caches start over."""


@dataclass(frozen=True, slots=True)
class Subject:
    """A binding's subject: ``kind`` User, Group or ServiceAccount (others never match)."""

    kind: str
    name: str
    namespace: str = ""

    @classmethod
    def from_json(cls, value: Any) -> Subject:
        data = value if isinstance(value, dict) else {}
        return cls(_str(data.get("kind")), _str(data.get("name")), _str(data.get("namespace")))

    def describe(self, binding_namespace: str) -> str:
        """``User "alice"``, ``ServiceAccount "name/namespace"`` (kube's describeSubject)."""
        if self.kind == "ServiceAccount":
            ns = self.namespace or binding_namespace
            return f'{self.kind} "{self.name}/{ns}"'
        return f'{self.kind} "{self.name}"'

    def applies_to(self, user: UserInfo, namespace: str) -> bool:
        """Whether this subject names ``user`` (``appliesToUser``); ``namespace`` is the
        binding's (empty for a ClusterRoleBinding)."""
        if self.kind == "User":
            return user.name == self.name
        if self.kind == "Group":
            return self.name in user.groups
        if self.kind == "ServiceAccount":
            ns = self.namespace or namespace
            if not ns:
                return False
            return user.name == f"{SERVICE_ACCOUNT_PREFIX}{ns}:{self.name}"
        return False


@dataclass(frozen=True, slots=True)
class Binding:
    """A RoleBinding (``namespace`` set) or ClusterRoleBinding, as the authorizer needs it."""

    name: str
    namespace: str
    role_kind: str
    role_name: str
    subjects: tuple[Subject, ...]

    @classmethod
    def from_json(cls, obj: JSON) -> Binding:
        meta = obj.get("metadata") or {}
        ref = obj.get("roleRef") if isinstance(obj.get("roleRef"), dict) else {}
        assert isinstance(ref, dict)
        subjects = obj.get("subjects") if isinstance(obj.get("subjects"), list) else []
        assert isinstance(subjects, list)
        return cls(
            _str(meta.get("name")),
            _str(meta.get("namespace")),
            _str(ref.get("kind")),
            _str(ref.get("name")),
            tuple(Subject.from_json(s) for s in subjects),
        )

    def first_subject(self, user: UserInfo) -> Subject | None:
        """The first subject naming ``user`` (``appliesTo``), or None."""
        for subject in self.subjects:
            if subject.applies_to(user, self.namespace):
                return subject
        return None

    def describe(self, subject: Subject) -> str:
        """The source of a rule, as the allow reason names it."""
        if self.namespace:
            return (
                f'RoleBinding "{self.name}/{self.namespace}" of {self.role_kind} '
                f'"{self.role_name}" to {subject.describe(self.namespace)}'
            )
        return (
            f'ClusterRoleBinding "{self.name}" of {self.role_kind} "{self.role_name}" '
            f"to {subject.describe('')}"
        )


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


class _SubjectIndex:
    """Bindings by the subjects they name, in a fixed order (by namespace, then name)."""

    __slots__ = ("bindings", "groups", "other", "service_accounts", "users")

    def __init__(self, bindings: list[Binding]) -> None:
        self.bindings = bindings
        self.users: dict[str, list[int]] = {}
        self.groups: dict[str, list[int]] = {}
        self.service_accounts: dict[str, list[int]] = {}
        for position, binding in enumerate(bindings):
            for subject in binding.subjects:
                if subject.kind == "User":
                    table = self.users
                    key = subject.name
                elif subject.kind == "Group":
                    table = self.groups
                    key = subject.name
                elif subject.kind == "ServiceAccount":
                    ns = subject.namespace or binding.namespace
                    if not ns:
                        continue
                    table = self.service_accounts
                    key = f"{SERVICE_ACCOUNT_PREFIX}{ns}:{subject.name}"
                else:
                    continue
                hits = table.setdefault(key, [])
                if not hits or hits[-1] != position:
                    hits.append(position)

    def matching(self, user: UserInfo) -> list[tuple[Binding, Subject]]:
        """The bindings naming ``user``, in index order, each with its first such subject."""
        positions: set[int] = set(self.users.get(user.name, ()))
        positions.update(self.service_accounts.get(user.name, ()))
        for group in user.groups:
            positions.update(self.groups.get(group, ()))
        out = []
        for position in sorted(positions):
            binding = self.bindings[position]
            subject = binding.first_subject(user)
            if subject is not None:
                out.append((binding, subject))
        return out


@dataclass(frozen=True, slots=True)
class ResolvedRules:
    """Every rule that applies to one user in one namespace, each with its source, and
    the errors met resolving them (bindings naming roles that do not exist)."""

    rules: tuple[tuple[Binding, Subject, CompiledRule], ...]
    errors: tuple[str, ...]

    def error_text(self) -> str:
        """The errors as kube's ``utilerrors.NewAggregate`` prints them ("" for none)."""
        unique = list(dict.fromkeys(self.errors))
        if not unique:
            return ""
        if len(unique) == 1:
            return unique[0]
        return "[" + ", ".join(unique) + "]"


class _Index:
    """One consistent view of the stored RBAC objects."""

    __slots__ = ("cluster_bindings", "cluster_roles", "role_bindings", "roles")

    def __init__(self, store: Store) -> None:
        self.roles: dict[tuple[str, str], tuple[CompiledRule, ...]] = {}
        self.cluster_roles: dict[str, tuple[CompiledRule, ...]] = {}
        for _, obj in _items(store, ROLES):
            meta = obj.get("metadata") or {}
            key = (_str(meta.get("namespace")), _str(meta.get("name")))
            self.roles[key] = compile_rules(obj.get("rules"))
        for _, obj in _items(store, CLUSTER_ROLES):
            name = _str((obj.get("metadata") or {}).get("name"))
            self.cluster_roles[name] = compile_rules(obj.get("rules"))
        self.cluster_bindings = _SubjectIndex(
            [Binding.from_json(obj) for _, obj in _items(store, CLUSTER_ROLE_BINDINGS)]
        )
        by_namespace: dict[str, list[Binding]] = {}
        for _, obj in _items(store, ROLE_BINDINGS):
            binding = Binding.from_json(obj)
            by_namespace.setdefault(binding.namespace, []).append(binding)
        self.role_bindings = {ns: _SubjectIndex(items) for ns, items in by_namespace.items()}

    def role_rules(self, kind: str, name: str, namespace: str) -> tuple[CompiledRule, ...] | str:
        """The rules a roleRef names, or the lister's NotFound text."""
        if kind == "ClusterRole":
            rules = self.cluster_roles.get(name)
            if rules is None:
                return f'clusterrole.{GROUP} "{name}" not found'
            return rules
        if kind == "Role":
            rules = self.roles.get((namespace, name))
            if rules is None:
                return f'role.{GROUP} "{name}" not found'
            return rules
        return f'unsupported role reference kind: "{kind}"'

    def resolve(self, user: UserInfo, namespace: str) -> ResolvedRules:
        rules: list[tuple[Binding, Subject, CompiledRule]] = []
        errors: list[str] = []
        sources = self.cluster_bindings.matching(user)
        if namespace:
            local = self.role_bindings.get(namespace)
            if local is not None:
                sources += local.matching(user)
        for binding, subject in sources:
            found = self.role_rules(binding.role_kind, binding.role_name, binding.namespace)
            if isinstance(found, str):
                errors.append(found)
                continue
            rules.extend((binding, subject, rule) for rule in found)
        return ResolvedRules(tuple(rules), tuple(errors))


def _items(store: Store, prefix: str) -> Iterator[tuple[str, JSON]]:
    items, _, _ = store.list(prefix)
    return iter(items)


class RbacAuthorizer:
    """RBAC over the Roles, ClusterRoles and bindings in ``store`` (see the module
    docstring); implements ``types.Authorizer``. Always current: a change in the store
    is seen by the next question."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._index: _Index | None = None
        self._decisions: dict[Attributes, Decision] = {}
        self._resolved: dict[tuple[str, tuple[str, ...], str], ResolvedRules] = {}
        self._unsubscribe = store.subscribe(self._on_event)

    def close(self) -> None:
        """Stop following the store."""
        self._unsubscribe()

    def _on_event(self, ev: Event) -> None:
        if ev.key.startswith(PREFIX):
            self.invalidate()

    def invalidate(self) -> None:
        """Forget the index and every cached answer (the store changed)."""
        self._index = None
        self._decisions = {}
        self._resolved = {}

    def _current(self) -> _Index:
        index = self._index
        if index is None:
            index = self._index = _Index(self.store)
        return index

    def resolve(self, user: UserInfo, namespace: str) -> ResolvedRules:
        """Every rule applying to ``user`` in ``namespace`` ("" : cluster-wide only)."""
        key = (user.name, user.groups, namespace)
        found = self._resolved.get(key)
        if found is None:
            found = self._current().resolve(user, namespace)
            if len(self._resolved) >= CACHE_LIMIT:
                self._resolved = {}
            self._resolved[key] = found
        return found

    def authorize(self, attrs: Attributes) -> Decision:
        """Allowed with the first binding whose rule allows ``attrs``; else no opinion,
        with the resolution errors as the reason (kube's ``RBACAuthorizer.Authorize``)."""
        cached = self._decisions.get(attrs)
        if cached is not None:
            return cached
        resolved = self.resolve(attrs.user, attrs.namespace)
        decision: Decision | None = None
        for binding, subject, rule in resolved.rules:
            if rule.allows(attrs):
                decision = Decision(True, f"RBAC: allowed by {binding.describe(subject)}")
                break
        if decision is None:
            errors = resolved.error_text()
            decision = Decision(False, f"RBAC: {errors}" if errors else "")
        if len(self._decisions) >= CACHE_LIMIT:
            self._decisions = {}
        self._decisions[attrs] = decision
        return decision

    def rules_for(self, user: UserInfo, namespace: str) -> tuple[list[JSON], list[JSON], bool]:
        """The user's rules as SelfSubjectRulesReview lists them; RBAC is never
        incomplete (resolution errors: ``rules_review``)."""
        resource_rules, non_resource_rules, incomplete, _ = self.rules_review(user, namespace)
        return resource_rules, non_resource_rules, incomplete

    def rules_review(
        self, user: UserInfo, namespace: str
    ) -> tuple[list[JSON], list[JSON], bool, str]:
        """``rules_for`` and the evaluation error text ("" for none), in binding order."""
        resolved = self.resolve(user, namespace)
        resource_rules: list[JSON] = []
        non_resource_rules: list[JSON] = []
        for _, _, rule in resolved.rules:
            resource, non_resource = rule_info(rule.rule)
            if resource is not None:
                resource_rules.append(resource)
            if non_resource is not None:
                non_resource_rules.append(non_resource)
        return resource_rules, non_resource_rules, False, resolved.error_text()

    def policy_rules(self, user: UserInfo, namespace: str) -> tuple[list[JSON], str]:
        """The PolicyRules ``user`` holds in ``namespace`` and the resolution error text
        (the owner rules of an escalation check)."""
        resolved = self.resolve(user, namespace)
        return [rule.rule for _, _, rule in resolved.rules], resolved.error_text()

    def role_reference_rules(self, kind: str, name: str, namespace: str) -> list[JSON] | None:
        """The rules of the role a roleRef names (None: no such role)."""
        found = self._current().role_rules(kind, name, namespace)
        if isinstance(found, str):
            return None
        return [rule.rule for rule in found]
