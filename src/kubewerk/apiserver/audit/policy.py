"""kube-apiserver's audit ``Policy`` (``audit.k8s.io/v1``): which requests are logged, how much.

``load_policy(path)`` reads a Policy file (YAML or JSON) and ``Policy.evaluate(attrs)``
answers, for a request's authorizer ``Attributes``, the ``RuleDecision``: the level
(``None``, ``Metadata``, ``Request``, ``RequestResponse``), the stages to omit and whether
to drop ``metadata.managedFields`` — as kube-apiserver's policy evaluator does:

- rules are tried in order, the first that matches decides; no match is level ``None``;
- a rule matches when every list it sets matches: ``users`` (the user name),
  ``userGroups`` (any of the user's groups), ``verbs``, ``resources`` (entries of
  ``group`` — ``""`` the core group —, ``resources`` and ``resourceNames``), ``namespaces``
  and ``nonResourceURLs``; an empty or absent list matches everything;
- ``resources``/``namespaces`` rules match resource requests only, ``nonResourceURLs``
  rules non-resource requests only; ``"*"`` matches every resource, ``"pods"`` the pods
  (not their subresources), ``"pods/log"`` one subresource, ``"pods/*"`` every
  subresource of pods, ``"*/scale"`` the scale subresource of any resource; ``""`` in
  ``namespaces`` matches cluster-scoped requests; a ``nonResourceURLs`` entry ending in
  ``*`` matches by prefix;
- ``omitStages`` is the union of the policy's and the rule's; ``omitManagedFields`` is the
  rule's when it sets one, else the policy's.

Validation follows kube's (``validation.ValidatePolicy``): a level is required and must be
one of the four; stages must be known; ``nonResourceURLs`` may not be combined with
``resources`` or ``namespaces``; a ``*`` in a URL only at the end; ``resourceNames`` only
with resources that name no ``*``. Problems raise ``AuditPolicyError`` naming the file and
the field.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import yaml

from kubewerk.apiserver.auth.types import Attributes
from kubewerk.core.errors import FieldError, aggregate_message

__all__ = [
    "LEVELS",
    "STAGES",
    "AuditPolicyError",
    "GroupResources",
    "Policy",
    "PolicyRule",
    "RuleDecision",
    "load_policy",
    "parse_policy",
]

LEVELS: Final = ("None", "Metadata", "Request", "RequestResponse")
STAGES: Final = ("RequestReceived", "ResponseStarted", "ResponseComplete", "Panic")
API_VERSION: Final = "audit.k8s.io/v1"


class AuditPolicyError(ValueError):
    """A Policy that cannot be used; the message names the file and every problem."""


@dataclass(frozen=True, slots=True)
class GroupResources:
    """One ``resources`` entry of a rule."""

    group: str = ""
    resources: tuple[str, ...] = ()
    resource_names: tuple[str, ...] = ()

    def matches(self, attrs: Attributes) -> bool:
        if attrs.api_group != self.group:
            return False
        if self.resources and not _resource_matches(
            self.resources, attrs.resource, attrs.subresource
        ):
            return False
        return not (self.resource_names and attrs.name not in self.resource_names)


def _resource_matches(patterns: Sequence[str], resource: str, subresource: str) -> bool:
    combined = f"{resource}/{subresource}" if subresource else resource
    for p in patterns:
        if p == "*" or p == combined:
            return True
        if subresource and (p == f"{resource}/*" or p == f"*/{subresource}"):
            return True
    return False


@dataclass(frozen=True, slots=True)
class RuleDecision:
    """What the policy decided for one request."""

    level: str
    omit_stages: frozenset[str] = frozenset()
    omit_managed_fields: bool = False

    @property
    def logged(self) -> bool:
        return self.level != "None"

    @property
    def with_request(self) -> bool:
        """The request body is logged (``Request`` and ``RequestResponse``)."""
        return self.level in ("Request", "RequestResponse")

    @property
    def with_response(self) -> bool:
        """The response body is logged (``RequestResponse``)."""
        return self.level == "RequestResponse"


NOT_LOGGED: Final = RuleDecision("None")


@dataclass(frozen=True, slots=True)
class PolicyRule:
    """One rule; empty tuples match everything (see the module doc)."""

    level: str
    users: tuple[str, ...] = ()
    user_groups: tuple[str, ...] = ()
    verbs: tuple[str, ...] = ()
    resources: tuple[GroupResources, ...] = ()
    namespaces: tuple[str, ...] = ()
    non_resource_urls: tuple[str, ...] = ()
    omit_stages: tuple[str, ...] = ()
    omit_managed_fields: bool | None = None

    def matches(self, attrs: Attributes) -> bool:
        user = attrs.user
        if self.users and user.name not in self.users:
            return False
        if self.user_groups and not any(g in self.user_groups for g in user.groups):
            return False
        if self.verbs and attrs.verb not in self.verbs:
            return False
        if attrs.resource_request:
            if self.non_resource_urls:
                return False
            if self.namespaces and attrs.namespace not in self.namespaces:
                return False
            return not (self.resources and not any(gr.matches(attrs) for gr in self.resources))
        if self.resources or self.namespaces:
            return False
        if self.non_resource_urls:
            path = attrs.path
            return any(
                path.startswith(u[:-1]) if u.endswith("*") else path == u
                for u in self.non_resource_urls
            )
        return True


@dataclass(frozen=True, slots=True)
class Policy:
    """A validated audit Policy (see the module doc)."""

    rules: tuple[PolicyRule, ...]
    omit_stages: frozenset[str] = frozenset()
    omit_managed_fields: bool = False

    def evaluate(self, attrs: Attributes) -> RuleDecision:
        """The decision of the first rule matching ``attrs`` (level ``None`` if none)."""
        for rule in self.rules:
            if rule.matches(attrs):
                if rule.level == "None":
                    return NOT_LOGGED
                omf = self.omit_managed_fields
                if rule.omit_managed_fields is not None:
                    omf = rule.omit_managed_fields
                return RuleDecision(rule.level, self.omit_stages | frozenset(rule.omit_stages), omf)
        return NOT_LOGGED

    @property
    def may_log_bodies(self) -> bool:
        """Whether any rule logs request or response bodies."""
        return any(r.level in ("Request", "RequestResponse") for r in self.rules)


def everything(level: str = "Metadata") -> Policy:
    """A policy logging every request at ``level``."""
    return Policy((PolicyRule(level),))


def load_policy(path: str | Path) -> Policy:
    """Read and validate the audit Policy file at ``path``; ``AuditPolicyError`` if unusable."""
    p = Path(path).expanduser()
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise AuditPolicyError(f"cannot read audit policy file {p}: {e}") from e
    try:
        doc = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError as e:
        raise AuditPolicyError(f"failed decoding audit policy file {p}: {e}") from e
    return parse_policy(doc, source=str(p))


def _strings(value: Any, path: str, errors: list[FieldError]) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        errors.append(FieldError.invalid(path, value, "must be a list of strings"))
        return ()
    return tuple(value)


def _stages(value: Any, path: str, errors: list[FieldError]) -> tuple[str, ...]:
    stages = _strings(value, path, errors)
    for i, s in enumerate(stages):
        if s not in STAGES:
            errors.append(FieldError.not_supported(f"{path}[{i}]", s, STAGES))
    return stages


def parse_policy(doc: Any, source: str = "<policy>") -> Policy:
    """Validate a decoded Policy document; ``AuditPolicyError`` lists every problem."""
    where = f"audit policy file {source}"
    if not isinstance(doc, Mapping):
        raise AuditPolicyError(f"failed decoding {where}: not an object")
    if doc.get("kind") != "Policy" or doc.get("apiVersion") != API_VERSION:
        raise AuditPolicyError(
            f"failed decoding {where}: expected kind Policy of apiVersion {API_VERSION}, got "
            f"kind {doc.get('kind')!r} of apiVersion {doc.get('apiVersion')!r}"
        )
    errors: list[FieldError] = []
    omit = _stages(doc.get("omitStages"), "omitStages", errors)
    raw_rules = doc.get("rules")
    if not isinstance(raw_rules, list) or not raw_rules:
        errors.append(FieldError.required("rules", "at least one rule is required"))
        raw_rules = []
    rules: list[PolicyRule] = []
    for i, raw in enumerate(raw_rules):
        rp = f"rules[{i}]"
        if not isinstance(raw, Mapping):
            errors.append(FieldError.invalid(rp, raw, "must be an object"))
            continue
        level = raw.get("level")
        if not level:
            errors.append(FieldError.required(f"{rp}.level", ""))
        elif level not in LEVELS:
            errors.append(FieldError.not_supported(f"{rp}.level", level, LEVELS))
        urls = _strings(raw.get("nonResourceURLs"), f"{rp}.nonResourceURLs", errors)
        namespaces = _strings(raw.get("namespaces"), f"{rp}.namespaces", errors)
        groups: list[GroupResources] = []
        raw_res = raw.get("resources") or []
        if not isinstance(raw_res, list):
            errors.append(FieldError.invalid(f"{rp}.resources", raw_res, "must be a list"))
            raw_res = []
        for j, gr in enumerate(raw_res):
            gp = f"{rp}.resources[{j}]"
            if not isinstance(gr, Mapping):
                errors.append(FieldError.invalid(gp, gr, "must be an object"))
                continue
            group = gr.get("group") or ""
            if not isinstance(group, str):
                errors.append(FieldError.invalid(f"{gp}.group", group, "must be a string"))
                group = ""
            res = _strings(gr.get("resources"), f"{gp}.resources", errors)
            names = _strings(gr.get("resourceNames"), f"{gp}.resourceNames", errors)
            if names and any("*" in r for r in res):
                errors.append(
                    FieldError.invalid(
                        f"{gp}.resourceNames",
                        list(names),
                        "using resource names with wildcard resources is not allowed",
                    )
                )
            groups.append(GroupResources(group, res, names))
        if urls and (groups or namespaces):
            errors.append(
                FieldError.invalid(
                    f"{rp}.nonResourceURLs",
                    list(urls),
                    "rules cannot apply to both regular resources and non-resource URLs",
                )
            )
        for k, u in enumerate(urls):
            if "*" in u[:-1]:
                errors.append(
                    FieldError.invalid(
                        f"{rp}.nonResourceURLs[{k}]", u, "* only allowed at the end of the path"
                    )
                )
        omf = raw.get("omitManagedFields")
        rules.append(
            PolicyRule(
                level=str(level or "None"),
                users=_strings(raw.get("users"), f"{rp}.users", errors),
                user_groups=_strings(raw.get("userGroups"), f"{rp}.userGroups", errors),
                verbs=_strings(raw.get("verbs"), f"{rp}.verbs", errors),
                resources=tuple(groups),
                namespaces=namespaces,
                non_resource_urls=urls,
                omit_stages=_stages(raw.get("omitStages"), f"{rp}.omitStages", errors),
                omit_managed_fields=bool(omf) if omf is not None else None,
            )
        )
    if errors:
        raise AuditPolicyError(f"invalid {where}: {aggregate_message(errors)}")
    return Policy(tuple(rules), frozenset(omit), bool(doc.get("omitManagedFields", False)))
