"""``rbac.authorization.k8s.io/v1`` Role, ClusterRole, RoleBinding, ClusterRoleBinding, and
the ``authorization.k8s.io/v1`` access reviews, as kube-apiserver serves them.

- Validation is kube's (``pkg/apis/rbac/validation``): names are path segments; every
  rule needs ``verbs``; a resource rule needs ``apiGroups`` and ``resources`` and may not
  name objects of several resources; non-resource URLs only in ClusterRoles and never
  mixed with resources; a binding's ``roleRef`` is ``rbac.authorization.k8s.io``
  ``Role``/``ClusterRole`` (ClusterRoleBindings: ``ClusterRole`` only), named, and
  immutable (``cannot change roleRef``); subjects are ``User``/``Group`` (apiGroup
  ``rbac.authorization.k8s.io``) or ``ServiceAccount`` (apiGroup empty, a valid name, a
  namespace in ClusterRoleBindings); an aggregationRule needs a selector and valid ones.
- Defaults are kube's (``pkg/apis/rbac/v1/defaults.go``): a binding's empty
  ``roleRef.apiGroup`` is ``rbac.authorization.k8s.io``, as is a ``User``/``Group``
  subject's; applied before the escalation check and again after mutating admission.
- Stored as kube's protobuf storage hands them back (``k8s.io/api/rbac/v1`` types):
  ``rules`` is never omitted, so a Role or ClusterRole without rules, or with
  ``rules: []``, is served with ``"rules": null``; every ``omitempty`` field that is
  empty goes (a binding's ``subjects``, a rule's ``apiGroups``/``resources``/
  ``resourceNames``/``nonResourceURLs``, a subject's ``apiGroup``/``namespace``, a
  selector's ``matchLabels``/``matchExpressions``/``values``); ``roleRef`` always
  carries ``apiGroup``, ``kind`` and ``name``.
- Writes are checked for privilege escalation (``auth.rbac_escalation``) once a server
  attaches its authorizer (``RbacServing``).
- ``RbacServing`` installs everything on a server: the kinds, the escalation checks, the
  bootstrap policy (``auth.bootstrap_roles``) and the ClusterRole aggregation controller
  (kube-controller-manager's ``clusterrole-aggregation``: an aggregated ClusterRole's
  rules are the rules of the ClusterRoles its selectors match, by name order, each rule
  once; kept current on every ClusterRole change, synchronously; written as kube's
  controller writes them, a forced apply of ``rules`` by
  ``clusterrole-aggregation-controller``).
- The review kinds are create-only and never stored: ``auth.reviews`` answers them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kubewerk.apiserver import fieldmanager
from kubewerk.apiserver.auth import bootstrap_roles
from kubewerk.apiserver.auth.authorizer import RbacChain
from kubewerk.apiserver.auth.rbac import CLUSTER_ROLES, GROUP
from kubewerk.apiserver.auth.rbac_escalation import EscalationGuard
from kubewerk.apiserver.auth.reviews import Reviews
from kubewerk.apiserver.auth.types import Authorizer, UserInfo
from kubewerk.apiserver.kindrules.gojson import struct_order
from kubewerk.apiserver.kinds.catalog import KindRow, resource_type
from kubewerk.apiserver.kinds.typed import TypedKindStrategy
from kubewerk.apiserver.registry import Registry, ServedResource
from kubewerk.apiserver.request import RestResponse, Target
from kubewerk.apiserver.rest import ResourceApi
from kubewerk.apiserver.storage.base import Event, KeyExists, RevisionConflict, Store
from kubewerk.core.errors import ApiError, FieldError
from kubewerk.core.gofmt import GoText, go_json, json_equal
from kubewerk.core.jsoncopy import copy_json
from kubewerk.core.selectors import LabelSelectorError, label_selector_from_dict
from kubewerk.core.validation import is_dns1123_subdomain, is_path_segment_name
from kubewerk.schema.admission_policy.validation import validate_label_selector

if TYPE_CHECKING:
    from kubewerk.apiserver.app import ApiServer

JSON = dict[str, Any]

AUTHORIZATION_GROUP = "authorization.k8s.io"
_ROLE_KINDS = ("Role", "ClusterRole")


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _dict(value: Any) -> JSON:
    return value if isinstance(value, dict) else {}


def validate_policy_rule(rule: Any, namespaced: bool, path: str) -> list[FieldError]:
    """``ValidatePolicyRule``."""
    rule = _dict(rule)
    errs: list[FieldError] = []
    if not _list(rule.get("verbs")):
        errs.append(FieldError.required(f"{path}.verbs", "verbs must contain at least one value"))
    urls = _list(rule.get("nonResourceURLs"))
    if urls:
        if namespaced:
            errs.append(
                FieldError.invalid(
                    f"{path}.nonResourceURLs",
                    urls,
                    "namespaced rules cannot apply to non-resource URLs",
                )
            )
        if (
            _list(rule.get("apiGroups"))
            or _list(rule.get("resources"))
            or _list(rule.get("resourceNames"))
        ):
            errs.append(
                FieldError.invalid(
                    f"{path}.nonResourceURLs",
                    urls,
                    "rules cannot apply to both regular resources and non-resource URLs",
                )
            )
        return errs
    if not _list(rule.get("apiGroups")):
        errs.append(
            FieldError.required(
                f"{path}.apiGroups", "resource rules must supply at least one api group"
            )
        )
    if not _list(rule.get("resources")):
        errs.append(
            FieldError.required(
                f"{path}.resources", "resource rules must supply at least one resource"
            )
        )
    if _list(rule.get("resourceNames")) and len(_list(rule.get("resources"))) > 1:
        errs.append(
            FieldError.required(
                f"{path}.resourceNames", "resource names cannot apply to multiple resources"
            )
        )
    return errs


def _validate_subject(subject: Any, namespaced: bool, path: str) -> list[FieldError]:
    subject = _dict(subject)
    errs: list[FieldError] = []
    name = subject.get("name") if isinstance(subject.get("name"), str) else ""
    api_group = subject.get("apiGroup") if isinstance(subject.get("apiGroup"), str) else ""
    kind = subject.get("kind") if isinstance(subject.get("kind"), str) else ""
    if not name:
        errs.append(FieldError.required(f"{path}.name"))
    if kind == "ServiceAccount":
        if name:
            errs.extend(
                FieldError.invalid(f"{path}.name", name, m) for m in is_dns1123_subdomain(name)
            )
        if api_group:
            errs.append(FieldError.not_supported(f"{path}.apiGroup", api_group, [""]))
        if not namespaced and not subject.get("namespace"):
            errs.append(FieldError.required(f"{path}.namespace"))
    elif kind in ("User", "Group"):
        if not name:
            what = "user" if kind == "User" else "group"
            errs.append(FieldError.invalid(f"{path}.name", name, f"{what} name cannot be empty"))
        if api_group != GROUP:
            errs.append(FieldError.not_supported(f"{path}.apiGroup", api_group, [GROUP]))
    else:
        errs.append(
            FieldError.not_supported(f"{path}.kind", kind, ["ServiceAccount", "User", "Group"])
        )
    return errs


def validate_binding(obj: JSON, old: JSON | None, namespaced: bool) -> list[FieldError]:
    """``ValidateRoleBinding`` / ``ValidateClusterRoleBinding`` (+ the update's roleRef)."""
    errs: list[FieldError] = []
    ref = _dict(obj.get("roleRef"))
    api_group = ref.get("apiGroup") if isinstance(ref.get("apiGroup"), str) else ""
    kind = ref.get("kind") if isinstance(ref.get("kind"), str) else ""
    name = ref.get("name") if isinstance(ref.get("name"), str) else ""
    if api_group != GROUP:
        errs.append(FieldError.not_supported("roleRef.apiGroup", api_group, [GROUP]))
    kinds = list(_ROLE_KINDS) if namespaced else ["ClusterRole"]
    if kind not in kinds:
        errs.append(FieldError.not_supported("roleRef.kind", kind, kinds))
    if not name:
        errs.append(FieldError.required("roleRef.name"))
    else:
        errs.extend(FieldError.invalid("roleRef.name", name, m) for m in is_path_segment_name(name))
    for i, subject in enumerate(_list(obj.get("subjects"))):
        errs.extend(_validate_subject(subject, namespaced, f"subjects[{i}]"))
    if old is not None and not json_equal(_role_ref(obj), _role_ref(old)):
        errs.append(
            FieldError.invalid("roleRef", _go_role_ref(_role_ref(obj)), "cannot change roleRef")
        )
    return errs


def _role_ref(obj: JSON) -> JSON:
    ref = _dict(obj.get("roleRef"))
    return {k: ref.get(k) or "" for k in ("apiGroup", "kind", "name")}


def _go_role_ref(ref: JSON) -> GoText:
    """A roleRef as a field error prints the internal ``rbac.RoleRef`` struct (JSON of its
    untagged Go fields)."""
    return GoText(
        "{"
        + ",".join(
            f'"{field}":{go_json(ref[key])}'
            for field, key in (("APIGroup", "apiGroup"), ("Kind", "kind"), ("Name", "name"))
        )
        + "}"
    )


def validate_role(obj: JSON, namespaced: bool) -> list[FieldError]:
    """``ValidateRole`` / ``ValidateClusterRole``."""
    errs: list[FieldError] = []
    for i, rule in enumerate(_list(obj.get("rules"))):
        errs.extend(validate_policy_rule(rule, namespaced, f"rules[{i}]"))
    aggregation = obj.get("aggregationRule")
    if not namespaced and isinstance(aggregation, dict):
        selectors = _list(aggregation.get("clusterRoleSelectors"))
        if not selectors:
            errs.append(
                FieldError.required(
                    "aggregationRule.clusterRoleSelectors",
                    "at least one clusterRoleSelector required if aggregationRule is non-nil",
                )
            )
        for i, selector in enumerate(selectors):
            errs.extend(
                validate_label_selector(selector, f"aggregationRule.clusterRoleSelectors[{i}]")
            )
    return errs


_RULE_LISTS = ("apiGroups", "resources", "resourceNames", "nonResourceURLs")
_SUBJECT_STRINGS = ("apiGroup", "namespace")


def set_binding_defaults(obj: JSON) -> None:
    """``SetDefaults_RoleBinding``/``SetDefaults_ClusterRoleBinding`` and
    ``SetDefaults_Subject``: an empty ``roleRef.apiGroup`` is the RBAC group, and so is
    the empty ``apiGroup`` of a ``User`` or ``Group`` subject."""
    ref = obj.get("roleRef")
    if isinstance(ref, dict) and not ref.get("apiGroup"):
        ref["apiGroup"] = GROUP
    for subject in _list(obj.get("subjects")):
        user_or_group = isinstance(subject, dict) and subject.get("kind") in ("User", "Group")
        if user_or_group and not subject.get("apiGroup"):
            subject["apiGroup"] = GROUP


def _selector_as_stored(selector: Any) -> None:
    if not isinstance(selector, dict):
        return
    if selector.get("matchLabels") in ({}, None):
        selector.pop("matchLabels", None)
    expressions = selector.get("matchExpressions")
    if expressions in ([], None):
        selector.pop("matchExpressions", None)
    for expression in _list(expressions):
        if isinstance(expression, dict) and expression.get("values") in ([], None):
            expression.pop("values", None)


def as_stored(kind: str, obj: JSON) -> JSON:
    """``obj`` (changed in place) as kube's storage gives an RBAC object back: the Go
    type's JSON after a protobuf round trip (see the module docstring), fields in the
    Go struct's order."""
    if kind in _ROLE_KINDS:
        rules = obj.get("rules")
        if not isinstance(rules, list) or not rules:
            obj["rules"] = None
        else:
            for rule in rules:
                if isinstance(rule, dict):
                    for field in _RULE_LISTS:
                        if field in rule and rule[field] in ([], None):
                            del rule[field]
                    struct_order(rule, ("verbs", *_RULE_LISTS))
        aggregation = obj.get("aggregationRule")
        if isinstance(aggregation, dict):
            selectors = aggregation.get("clusterRoleSelectors")
            if selectors in ([], None):
                aggregation.pop("clusterRoleSelectors", None)
            for selector in _list(selectors):
                _selector_as_stored(selector)
        struct_order(obj, ("rules", "aggregationRule"))
        return obj
    subjects = obj.get("subjects")
    if not isinstance(subjects, list) or not subjects:
        obj.pop("subjects", None)
    else:
        for subject in subjects:
            if isinstance(subject, dict):
                for field in _SUBJECT_STRINGS:
                    if field in subject and not subject[field]:
                        del subject[field]
                struct_order(subject, ("kind", "apiGroup", "name", "namespace"))
    ref = obj.get("roleRef")
    if isinstance(ref, dict):
        for field in ("apiGroup", "kind", "name"):
            ref.setdefault(field, "")
        struct_order(ref, ("apiGroup", "kind", "name"))
    struct_order(obj, ("subjects", "roleRef"))
    return obj


class RbacStrategy(TypedKindStrategy):
    """A typed RBAC kind: path-segment names, kube's defaults and validation, escalation
    checks, stored as kube stores it."""

    name_rule = "path-segment"

    guard: EscalationGuard | None = None
    """Set by ``RbacServing.attach``; None: writes are not checked for escalation."""

    @property
    def _namespaced(self) -> bool:
        return self.kind in ("Role", "RoleBinding")

    @property
    def _resource(self) -> str:
        return self.kind.lower() + "s"

    def _check(self, obj: JSON, old: JSON | None) -> None:
        guard = self.guard
        if guard is None:
            return
        if self.kind in _ROLE_KINDS:
            guard.check_role(self._resource, obj, old)
        else:
            guard.check_binding(self._resource, obj, old)

    def _default(self, obj: JSON) -> None:
        if self.kind not in _ROLE_KINDS:
            set_binding_defaults(obj)

    def prepare_for_create(self, obj: JSON) -> None:
        super().prepare_for_create(obj)
        self._default(obj)  # decoding defaults before the storage's escalation check
        self._check(obj, None)

    def prepare_for_update(self, new: JSON, old: JSON) -> None:
        super().prepare_for_update(new, old)
        self._default(new)
        self._check(new, old)

    def default(self, obj: JSON) -> None:
        super().default(obj)
        self._default(obj)

    def to_storage(self, obj: JSON) -> JSON:
        return as_stored(self.kind, obj)

    def validate(self, obj: JSON, old: JSON | None) -> list[FieldError]:
        if self.kind in _ROLE_KINDS:
            return validate_role(obj, self._namespaced)
        return validate_binding(obj, old, self._namespaced)


class ReviewStrategy(TypedKindStrategy):
    """An access review kind: create-only, answered by ``auth.reviews``, never stored."""


def _rows() -> tuple[KindRow, ...]:
    rbac = RbacStrategy.for_kind
    review = ReviewStrategy.for_kind
    return (
        KindRow(GROUP, ("v1",), "Role", "roles", strategy=rbac),
        KindRow(GROUP, ("v1",), "ClusterRole", "clusterroles", namespaced=False, strategy=rbac),
        KindRow(GROUP, ("v1",), "RoleBinding", "rolebindings", strategy=rbac),
        KindRow(
            GROUP,
            ("v1",),
            "ClusterRoleBinding",
            "clusterrolebindings",
            namespaced=False,
            strategy=rbac,
        ),
        KindRow(
            AUTHORIZATION_GROUP,
            ("v1",),
            "SubjectAccessReview",
            "subjectaccessreviews",
            namespaced=False,
            strategy=review,
        ),
        KindRow(
            AUTHORIZATION_GROUP,
            ("v1",),
            "SelfSubjectAccessReview",
            "selfsubjectaccessreviews",
            namespaced=False,
            strategy=review,
        ),
        KindRow(
            AUTHORIZATION_GROUP,
            ("v1",),
            "LocalSubjectAccessReview",
            "localsubjectaccessreviews",
            strategy=review,
        ),
        KindRow(
            AUTHORIZATION_GROUP,
            ("v1",),
            "SelfSubjectRulesReview",
            "selfsubjectrulesreviews",
            namespaced=False,
            strategy=review,
        ),
    )


def resource_types() -> list[ServedResource]:
    """Fresh ``ServedResource`` objects for the four RBAC kinds and the four reviews (the
    reviews with the single verb ``create``)."""
    out = []
    for row in _rows():
        rtype = resource_type(row)
        if row.group == AUTHORIZATION_GROUP:
            rtype.verbs = ("create",)
        out.append(rtype)
    return out


def is_review(rtype: ServedResource) -> bool:
    """Whether ``rtype`` is one of the access reviews (answered, never stored)."""
    return isinstance(rtype.strategy, ReviewStrategy)


# -- aggregation ------------------------------------------------------------------


def aggregated_rules(role: JSON, roles: list[JSON]) -> list[JSON] | None:
    """The rules of an aggregated ClusterRole: those of every other ClusterRole one of its
    selectors matches, in name order, each rule once (None: not aggregated)."""
    rule = role.get("aggregationRule")
    if not isinstance(rule, dict):
        return None
    selectors = []
    for selector in _list(rule.get("clusterRoleSelectors")):
        try:
            selectors.append(label_selector_from_dict(_dict(selector)))
        except (LabelSelectorError, ValueError):
            continue
    own = _dict(role.get("metadata")).get("name")
    out: list[JSON] = []
    for other in sorted(roles, key=lambda r: str(_dict(r.get("metadata")).get("name") or "")):
        meta = _dict(other.get("metadata"))
        if meta.get("name") == own:
            continue
        labels = {k: v for k, v in _dict(meta.get("labels")).items() if isinstance(v, str)}
        if not any(s.matches(labels) for s in selectors):
            continue
        for policy in _list(other.get("rules")):
            if isinstance(policy, dict) and not any(json_equal(policy, o) for o in out):
                out.append(copy_json(policy))
    return out


BOOTSTRAP_WRITER = {"fieldManager": "kube-apiserver"}
"""The bootstrap policy is written by kube-apiserver itself (its loopback client's user
agent names the manager)."""

AGGREGATION_MANAGER = "clusterrole-aggregation-controller"
"""The field manager kube-controller-manager's aggregation controller applies as."""


def _applied_rules(rtype: ServedResource, role: JSON, rules: list[JSON]) -> JSON:
    """``role`` with ``rules``, written as kube's aggregation controller writes them: a
    forced server-side apply of the rules alone by ``clusterrole-aggregation-controller``
    (its managedFields entry: ``Apply``, ``f:rules``), stored as kube stores it (no rules:
    ``null``). Carries ``role``'s resourceVersion (for ``ResourceApi.write_back``)."""
    config = {
        "apiVersion": f"{GROUP}/v1",
        "kind": "ClusterRole",
        "metadata": {"name": _dict(role.get("metadata")).get("name", "")},
        "rules": rules,
    }
    query = {"fieldManager": AGGREGATION_MANAGER, "force": "true"}
    try:
        updated = fieldmanager.apply_config(rtype, "v1", None, role, config, query)
    except ApiError:  # a live object the apply cannot type: the rules without ownership
        updated = copy_json(role)
        updated["rules"] = copy_json(rules)
    updated["metadata"]["resourceVersion"] = role["metadata"]["resourceVersion"]
    return as_stored("ClusterRole", updated)


class RbacServing:
    """RBAC on one server (see the module docstring). ``install`` adds the kinds (if the
    registry lacks them) and bootstraps the default policy; ``attach`` turns on the
    escalation checks with the server's authorizer."""

    def __init__(self, store: Store, registry: Registry, api: ResourceApi) -> None:
        self.store = store
        self.registry = registry
        self.api = api
        self._aggregating = False
        self._unsubscribe = store.subscribe(self._on_event)

    def close(self) -> None:
        """Stop the aggregation controller."""
        self._unsubscribe()

    def install(self) -> None:
        """Serve the RBAC kinds, write the bootstrap policy, aggregate once."""
        for rtype in resource_types():
            if is_review(rtype):
                continue
            if self.registry.get(rtype.group, rtype.resource) is None:
                self.registry.add(rtype)
        self.bootstrap()
        self.aggregate()

    def attach(self, guard: EscalationGuard | None) -> None:
        """Check RBAC writes with ``guard`` (None: no checks)."""
        for resource in ("roles", "clusterroles", "rolebindings", "clusterrolebindings"):
            rtype = self.registry.get(GROUP, resource)
            if rtype is not None and isinstance(rtype.strategy, RbacStrategy):
                rtype.strategy.guard = guard

    def bootstrap(self) -> None:
        """Create or reconcile the default ClusterRoles and ClusterRoleBindings."""
        for resource, defaults in (
            ("clusterroles", bootstrap_roles.cluster_roles()),
            ("clusterrolebindings", bootstrap_roles.cluster_role_bindings()),
        ):
            rtype = self.registry.get(GROUP, resource)
            if rtype is None:
                continue
            for default in defaults:
                name = default["metadata"]["name"]
                key = rtype.key("", name)
                current = self.store.get(key)
                wanted = bootstrap_roles.reconciled(default, current)
                if wanted is None:
                    continue
                if current is None:
                    try:
                        self.api.create(Target(rtype, "v1", None), wanted, BOOTSTRAP_WRITER)
                    except ApiError:
                        continue
                else:
                    wanted = copy_json(wanted)
                    wanted["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
                    try:
                        self.api.write_back(key, wanted)
                    except (RevisionConflict, KeyExists):
                        continue

    def _on_event(self, ev: Event) -> None:
        if ev.key.startswith(CLUSTER_ROLES) and not self._aggregating:
            self.aggregate()

    def aggregate(self) -> None:
        """Bring every aggregated ClusterRole's rules up to date (writes only changes)."""
        rtype = self.registry.get(GROUP, "clusterroles")
        if rtype is None:
            return
        self._aggregating = True
        try:
            items, _, _ = self.store.list(CLUSTER_ROLES)
            roles = [obj for _, obj in items]
            for key, role in items:
                rules = aggregated_rules(role, roles)
                if rules is None or json_equal(rules, role.get("rules") or []):
                    continue
                updated = _applied_rules(rtype, role, rules)
                try:
                    self.api.write_back(key, updated)
                except RevisionConflict:
                    continue
        finally:
            self._aggregating = False


def install_rbac(server: ApiServer) -> RbacServing:
    """RBAC on ``server``: the four kinds served, the bootstrap policy written, the
    aggregation controller running, the four access reviews answered by the server's
    authorizer, and — when that authorizer is ``auth.authorizer.RbacChain`` — writes of
    roles and bindings checked for escalation. Returns the controller (``close`` stops
    it)."""
    serving = RbacServing(server.store, server.registry, server.api)
    serving.install()
    authorizer: Authorizer = server.guard.authorizer
    if isinstance(authorizer, RbacChain):
        serving.attach(EscalationGuard(authorizer, authorizer.rbac))
    reviews = Reviews(authorizer)

    def answer(target: Target, body: JSON, user: UserInfo, query: dict[str, str]) -> RestResponse:
        answered = reviews.create(target.rtype.resource, target.namespace, body, user)
        answered["apiVersion"] = target.api_version
        return RestResponse(201, answered)

    for rtype in resource_types():
        if is_review(rtype):
            server.serve_create(rtype, answer)
    return serving


__all__ = [
    "RbacServing",
    "RbacStrategy",
    "ReviewStrategy",
    "aggregated_rules",
    "as_stored",
    "install_rbac",
    "is_review",
    "resource_types",
    "set_binding_defaults",
    "validate_binding",
    "validate_policy_rule",
    "validate_role",
]
