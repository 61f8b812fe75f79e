"""RBAC policy rules as data: matching a request, covering other rules, and their text.

Pure functions over ``rbac.authorization.k8s.io/v1`` ``PolicyRule`` objects (JSON dicts)
with the semantics of kube's RBAC authorizer and registry:

- ``CompiledRule`` matches ``Attributes`` exactly as ``RuleAllows`` does
  (``pkg/apis/rbac/v1/evaluation_helpers.go``): ``*`` verbs, groups and resources; a
  request for a subresource matches ``resource/sub`` or ``*/sub``; ``resourceNames``
  restrict to named objects, so a rule with names never matches a request without one
  (list, watch, create, deletecollection); non-resource URLs match exactly, ``*``, or by
  prefix when the rule ends in ``*``.
- ``covers`` is ``validation.Covers`` (component-helpers): the servant rules broken down
  into one verb, group, resource and name each, every piece covered by one owner rule.
- ``compact_rules`` and ``compact_string`` give the missing rules of an escalation
  refusal in kube's words (``{APIGroups:[""], Resources:["pods"], Verbs:["get"]}``).

Nothing here reads storage or knows users; ``rbac`` resolves who holds which rules.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from kubewerk.apiserver.auth.types import Attributes
from kubewerk.core.gofmt import go_quote

JSON = dict[str, Any]

ALL = "*"


def _strings(value: Any) -> tuple[str, ...]:
    """A rule's string list (absent or malformed: empty; non-strings skipped)."""
    if not isinstance(value, list):
        return ()
    return tuple(v for v in value if isinstance(v, str))


class CompiledRule:
    """One PolicyRule prepared for matching: sets for the exact values and flags for the
    wildcards, so that a match is a handful of set lookups.

    ``rule`` is the rule as stored (what ``rules_for`` lists); the compiled form never
    changes it."""

    __slots__ = (
        "all_groups",
        "all_resources",
        "all_urls",
        "all_verbs",
        "groups",
        "names",
        "resources",
        "rule",
        "sub_wildcards",
        "url_prefixes",
        "urls",
        "verbs",
    )

    def __init__(self, rule: JSON) -> None:
        self.rule = rule
        verbs = _strings(rule.get("verbs"))
        groups = _strings(rule.get("apiGroups"))
        resources = _strings(rule.get("resources"))
        urls = _strings(rule.get("nonResourceURLs"))
        self.verbs = frozenset(verbs)
        self.all_verbs = ALL in self.verbs
        self.groups = frozenset(groups)
        self.all_groups = ALL in self.groups
        self.resources = frozenset(resources)
        self.all_resources = ALL in self.resources
        # "*/scale" lets any resource's "scale" subresource through
        self.sub_wildcards = frozenset(r[2:] for r in resources if r.startswith("*/") and r[2:])
        self.names = frozenset(_strings(rule.get("resourceNames")))
        self.urls = frozenset(urls)
        self.all_urls = ALL in self.urls
        self.url_prefixes = tuple(u.rstrip("*") for u in urls if u.endswith("*"))

    def allows(self, attrs: Attributes) -> bool:
        """Whether this rule allows the request (kube's ``RuleAllows``)."""
        if not (self.all_verbs or attrs.verb in self.verbs):
            return False
        if attrs.resource_request:
            if not (self.all_groups or attrs.api_group in self.groups):
                return False
            sub = attrs.subresource
            if not self.all_resources:
                combined = f"{attrs.resource}/{sub}" if sub else attrs.resource
                if combined not in self.resources and not (sub and sub in self.sub_wildcards):
                    return False
            return not self.names or attrs.name in self.names
        if self.all_urls:
            return True
        path = attrs.path
        if path in self.urls:
            return True
        return any(path.startswith(prefix) for prefix in self.url_prefixes)


def compile_rules(rules: Any) -> tuple[CompiledRule, ...]:
    """The compiled form of a role's ``rules`` (entries that are not objects skipped)."""
    if not isinstance(rules, list):
        return ()
    return tuple(CompiledRule(rule) for rule in rules if isinstance(rule, dict))


# -- covering (escalation checks) --------------------------------------------------


def breakdown_rule(rule: JSON) -> list[JSON]:
    """The rule as rules of one group, resource, verb (and name) each, then one
    non-resource URL and verb each (``BreakdownRule``)."""
    verbs = _strings(rule.get("verbs"))
    names = _strings(rule.get("resourceNames"))
    out: list[JSON] = []
    for group in _strings(rule.get("apiGroups")):
        for resource in _strings(rule.get("resources")):
            for verb in verbs:
                base = {"apiGroups": [group], "resources": [resource], "verbs": [verb]}
                if names:
                    out.extend({**base, "resourceNames": [name]} for name in names)
                else:
                    out.append(base)
    for url in _strings(rule.get("nonResourceURLs")):
        out.extend({"nonResourceURLs": [url], "verbs": [verb]} for verb in verbs)
    return out


def _resources_cover(owner: Sequence[str], wanted: Sequence[str]) -> bool:
    if ALL in owner or all(r in owner for r in wanted):
        return True
    for path in wanted:
        if path in owner:
            continue
        if "/" not in path:
            return False
        if "*/" + path.split("/", 1)[1] not in owner:
            return False
    return True


def _url_covers(owner: str, sub: str) -> bool:
    return owner == sub or (owner.endswith("*") and sub.startswith(owner.rstrip("*")))


def rule_covers(owner: JSON, sub: JSON) -> bool:
    """Whether ``owner`` covers ``sub`` (a rule of at most one verb, resource and name):
    ``ruleCovers``."""
    owner_verbs = _strings(owner.get("verbs"))
    owner_groups = _strings(owner.get("apiGroups"))
    owner_names = _strings(owner.get("resourceNames"))
    owner_urls = _strings(owner.get("nonResourceURLs"))
    sub_names = _strings(sub.get("resourceNames"))
    verbs_ok = ALL in owner_verbs or all(v in owner_verbs for v in _strings(sub.get("verbs")))
    groups_ok = ALL in owner_groups or all(
        g in owner_groups for g in _strings(sub.get("apiGroups"))
    )
    resources_ok = _resources_cover(
        _strings(owner.get("resources")), _strings(sub.get("resources"))
    )
    urls_ok = all(
        any(_url_covers(o, path) for o in owner_urls)
        for path in _strings(sub.get("nonResourceURLs"))
    )
    if not sub_names:
        names_ok = not owner_names
    else:
        names_ok = not owner_names or all(n in owner_names for n in sub_names)
    return verbs_ok and groups_ok and resources_ok and names_ok and urls_ok


def covers(owner_rules: Sequence[JSON], servant_rules: Iterable[JSON]) -> tuple[bool, list[JSON]]:
    """Whether ``owner_rules`` allow everything ``servant_rules`` allow, and the broken-down
    servant rules they do not (``validation.Covers``)."""
    uncovered: list[JSON] = []
    for servant in servant_rules:
        for sub in breakdown_rule(servant):
            if not any(rule_covers(owner, sub) for owner in owner_rules):
                uncovered.append(sub)
    return not uncovered, uncovered


def compact_rules(rules: Sequence[JSON]) -> list[JSON]:
    """Rules of one group and one resource and nothing but verbs merged into one rule per
    group/resource; every other rule kept as it is (``CompactRules``)."""
    compacted: list[JSON] = []
    simple: dict[tuple[str, str], JSON] = {}
    for rule in rules:
        groups = _strings(rule.get("apiGroups"))
        resources = _strings(rule.get("resources"))
        is_simple = (
            not rule.get("resourceNames")
            and not rule.get("nonResourceURLs")
            and len(groups) == 1
            and len(resources) == 1
            and set(rule) <= {"apiGroups", "resources", "verbs"}
        )
        if not is_simple:
            compacted.append(rule)
            continue
        key = (groups[0], resources[0])
        seen = simple.get(key)
        if seen is None:
            simple[key] = {
                "apiGroups": list(groups),
                "resources": list(resources),
                "verbs": list(_strings(rule.get("verbs"))),
            }
        else:
            seen["verbs"].extend(_strings(rule.get("verbs")))
    compacted.extend(simple.values())
    return compacted


def go_quote_list(values: Iterable[str]) -> str:
    """A ``[]string`` printed with Go's ``%q``: ``["a" "b"]``."""
    return "[" + " ".join(go_quote(v) for v in values) + "]"


def compact_string(rule: JSON) -> str:
    """A rule as kube's escalation messages print it (``rbacv1helpers.CompactString``):
    ``{APIGroups:[""], Resources:["pods"], Verbs:["get"]}``, empty fields left out."""
    parts = []
    for label, key in (
        ("APIGroups", "apiGroups"),
        ("Resources", "resources"),
        ("NonResourceURLs", "nonResourceURLs"),
        ("ResourceNames", "resourceNames"),
        ("Verbs", "verbs"),
    ):
        values = _strings(rule.get(key))
        if values:
            parts.append(f"{label}:{go_quote_list(values)}")
    return "{" + ", ".join(parts) + "}"


def rule_info(rule: JSON) -> tuple[JSON | None, JSON | None]:
    """The ``authorization.k8s.io/v1`` ResourceRule and NonResourceRule a PolicyRule
    contributes to a SelfSubjectRulesReview (None where it has no resources / URLs)."""
    verbs = list(_strings(rule.get("verbs")))
    resource_rule: JSON | None = None
    non_resource_rule: JSON | None = None
    resources = list(_strings(rule.get("resources")))
    if resources:
        resource_rule = {"verbs": verbs}
        groups = list(_strings(rule.get("apiGroups")))
        if groups:
            resource_rule["apiGroups"] = groups
        resource_rule["resources"] = resources
        names = list(_strings(rule.get("resourceNames")))
        if names:
            resource_rule["resourceNames"] = names
    urls = list(_strings(rule.get("nonResourceURLs")))
    if urls:
        non_resource_rule = {"verbs": verbs, "nonResourceURLs": urls}
    return resource_rule, non_resource_rule
