"""Which requests a policy's ``matchConstraints`` (or a binding's ``matchResources``) select.

As kube-apiserver's ``generic.PolicyMatcher`` over ``matching.Matcher``: the namespace
selector (cluster-scoped requests other than for Namespaces always pass it), the
object selector (the new or the old object's labels), ``excludeResourceRules`` (any
hit excludes), then ``resourceRules`` (an empty list matches everything: only a
binding may leave it empty) with their ``resourceNames``; ``matchPolicy:
Equivalent`` also tries the request's equivalent resources (given by the caller, since
only the server knows which group versions serve the same objects).

:func:`compile_criteria` parses the selectors of a ``matchConstraints`` /
``matchResources`` once into a :class:`Criteria`, which :func:`matches` accepts in place
of the dict (a dict is compiled on each call): a policy or binding compiled once per
generation does not parse its label selectors again on every request.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kubewerk.core.selectors import LabelSelector, LabelSelectorError, label_selector_from_dict

from .request import Request


@dataclass(slots=True)
class Match:
    """A match: the resource and kind the policy sees the request as."""

    resource: tuple[str, str, str]
    kind: tuple[str, str, str]


def _labels(obj: Any) -> Mapping[str, str]:
    if not isinstance(obj, Mapping):
        return {}
    meta = obj.get("metadata")
    labels = meta.get("labels") if isinstance(meta, Mapping) else None
    return labels if isinstance(labels, Mapping) else {}


def selector_matches(selector: Any, labels: Mapping[str, str]) -> bool:
    """Whether a ``metav1.LabelSelector`` dict selects ``labels`` (an unparsable one: no)."""
    if selector is None:
        return True
    try:
        return label_selector_from_dict(selector).matches(labels)
    except LabelSelectorError:
        return False


def _selector_empty(selector: Any) -> bool:
    return not isinstance(selector, Mapping) or (
        not selector.get("matchLabels") and not selector.get("matchExpressions")
    )


Selector = LabelSelector | bool
"""A compiled selector: True selects everything (empty), False nothing (unparsable)."""


def compile_selector(selector: Any) -> Selector:
    """A ``metav1.LabelSelector`` dict parsed once: ``selects`` then answers as
    ``selector_matches`` would, without parsing it again."""
    if _selector_empty(selector):
        return True
    try:
        return label_selector_from_dict(selector)
    except LabelSelectorError:
        return False


def selects(selector: Selector, labels: Mapping[str, str]) -> bool:
    """Whether a selector from ``compile_selector`` selects ``labels``."""
    if isinstance(selector, bool):
        return selector
    return selector.matches(labels)


@dataclass(frozen=True, slots=True)
class _Rule:
    """A rule whose lists are all lists of strings, read once: sets (None for one holding
    ``*``), the ``resources`` patterns split into (resource, subresource)."""

    operations: frozenset[str] | None
    groups: frozenset[str] | None
    versions: frozenset[str] | None
    resources: tuple[tuple[str, str], ...]
    scope: str
    names: frozenset[str]


_RULE_LISTS = ("operations", "apiGroups", "apiVersions", "resources", "resourceNames")


def _compile_rule(rule: Mapping[str, Any]) -> _Rule | Mapping[str, Any]:
    """``rule`` as a :class:`_Rule` when its lists are lists of strings and its scope a
    string (what validation admits), else the mapping itself, matched as it is."""
    lists: list[list[str]] = []
    for key in _RULE_LISTS:
        value = rule.get(key) or []
        if not isinstance(value, list) or not all(type(x) is str for x in value):
            return rule
        lists.append(value)
    scope = rule.get("scope") or "*"
    if not isinstance(scope, str):
        return rule
    ops, groups, versions, resources, names = lists

    def wild(values: list[str]) -> frozenset[str] | None:
        return None if "*" in values else frozenset(values)

    patterns = []
    for pattern in resources:
        pr, _, ps = pattern.partition("/")
        patterns.append((pr, ps))
    return _Rule(wild(ops), wild(groups), wild(versions), tuple(patterns), scope, frozenset(names))


def _compiled_rule_matches(rule: _Rule, req: Request, resource: tuple[str, str, str]) -> bool:
    """:func:`rule_matches` and the ``resourceNames`` check of one compiled rule."""
    if rule.operations is not None and req.operation not in rule.operations:
        return False
    group, version, res = resource
    if (rule.groups is not None and group not in rule.groups) or (
        rule.versions is not None and version not in rule.versions
    ):
        return False
    sub = req.sub_resource
    for pr, ps in rule.resources:
        if (pr == "*" or pr == res) and (ps == "*" or ps == sub):
            break
    else:
        return False
    scope = rule.scope
    if scope == "Namespaced" or scope == "Cluster":
        is_namespace = group == "" and res == "namespaces"
        if scope == "Namespaced":
            if is_namespace or req.namespace == "":
                return False
        elif not (is_namespace or req.namespace == ""):
            return False
    return not rule.names or req.name in rule.names


@dataclass(frozen=True)
class Criteria:
    """A defaulted ``matchConstraints``/``matchResources`` with its selectors parsed
    once; :func:`matches` decides with it exactly as with the dict it came from."""

    namespace_selector: Selector
    object_selector: Selector
    match_policy: str
    exclude_rules: tuple[Any, ...]
    resource_rules: tuple[Any, ...]


def _compile_rules(rules: Any) -> tuple[Any, ...]:
    # entries that are not mappings never match: left out
    return tuple(_compile_rule(r) for r in rules or () if isinstance(r, Mapping))


def compile_criteria(criteria: Mapping[str, Any] | None) -> Criteria | None:
    """``criteria`` (None stays None) compiled for :func:`matches`."""
    if criteria is None:
        return None
    return Criteria(
        compile_selector(criteria.get("namespaceSelector")),
        compile_selector(criteria.get("objectSelector")),
        criteria.get("matchPolicy") or "Equivalent",
        _compile_rules(criteria.get("excludeResourceRules")),
        _compile_rules(criteria.get("resourceRules")),
    )


def _in(values: Sequence[Any], value: str) -> bool:
    return "*" in values or value in values


def rule_matches(rule: Mapping[str, Any], req: Request, resource: tuple[str, str, str]) -> bool:
    """``rules.Matcher.Matches``: operation, group, version, resource/subresource, scope."""
    ops = rule.get("operations") or []
    if not _in(ops, req.operation):
        return False
    group, version, res = resource
    if not _in(rule.get("apiGroups") or [], group) or not _in(
        rule.get("apiVersions") or [], version
    ):
        return False
    sub = req.sub_resource
    ok = False
    for pattern in rule.get("resources") or []:
        if not isinstance(pattern, str):
            continue
        pr, _, ps = pattern.partition("/")
        if (pr == "*" or pr == res) and (ps == "*" or ps == sub):
            ok = True
            break
    if not ok:
        return False
    scope = rule.get("scope") or "*"
    is_namespace = group == "" and res == "namespaces"
    if scope == "Namespaced":
        return not is_namespace and req.namespace != ""
    if scope == "Cluster":
        return is_namespace or req.namespace == ""
    return True


def _rules_match(rules: Sequence[Any], req: Request, resource: tuple[str, str, str]) -> bool:
    for rule in rules:
        if type(rule) is _Rule:
            if _compiled_rule_matches(rule, req, resource):
                return True
            continue
        if not isinstance(rule, Mapping) or not rule_matches(rule, req, resource):
            continue
        names = rule.get("resourceNames") or []
        if not names or req.name in names:
            return True
    return False


def _resource_rules(rules: Sequence[Any], match_policy: str, req: Request) -> Match | None:
    if _rules_match(rules, req, req.resource):
        return Match(req.resource, req.kind)
    if match_policy == "Equivalent":
        for resource, kind in req.equivalents:
            if _rules_match(rules, req, resource):
                return Match(resource, kind)
    return None


def matches(
    criteria: Mapping[str, Any] | Criteria | None, req: Request, *, binding: bool = False
) -> Match | None:
    """The match of ``criteria`` (a defaulted ``matchConstraints``/``matchResources``,
    or the :class:`Criteria` compiled from one).

    None when it does not select the request. A binding without ``matchResources``
    (``criteria`` None and ``binding``) selects every request its policy selects.
    """
    if criteria is None:
        return Match(req.resource, req.kind) if binding else None
    if not isinstance(criteria, Criteria):
        compiled = compile_criteria(criteria)
        assert compiled is not None
        criteria = compiled
    ns_selector = criteria.namespace_selector
    if ns_selector is not True:
        cluster_scoped = req.namespace == "" and req.resource[2] != "namespaces"
        if not cluster_scoped and not selects(ns_selector, req.namespace_labels()):
            return None
    obj_selector = criteria.object_selector
    if obj_selector is not True and not (
        (req.object is not None and selects(obj_selector, _labels(req.object)))
        or (req.old_object is not None and selects(obj_selector, _labels(req.old_object)))
    ):
        return None
    policy = criteria.match_policy
    exclude = criteria.exclude_rules
    if exclude and _resource_rules(exclude, policy, req) is not None:
        return None
    rules = criteria.resource_rules
    if not rules:
        return Match(req.resource, req.kind)
    return _resource_rules(rules, policy, req)
