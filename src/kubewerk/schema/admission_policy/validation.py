"""Defaulting and validation of ValidatingAdmissionPolicy and its binding, as on create.

Follows ``pkg/apis/admissionregistration/v1/defaults.go`` (failurePolicy ``Fail``,
matchPolicy ``Equivalent``, empty namespace and object selectors, rule scope ``*``,
paramRef ``parameterNotFoundAction: Deny``) and ``validation/validation.go``: the
same field paths and messages, including the binding's misspelt
``spec.matchResouces`` path kube-apiserver reports. Expressions are compiled in the
environment each one gets there (see :mod:`.cel_env`); a compilation failure is
``spec.validations[0].expression: Invalid value: "<expr>": compilation failed: ERROR:
<input>:1:…``.

No static cost limit applies: kube-apiserver compiles a policy's expressions without
estimating their cost (``plugin/cel/compile.go``; the ``exceeds budget by factor of``
refusal exists only for a CRD's ``x-kubernetes-validations``). Its limits on policies
are runtime ones, per evaluation (see docs/policy.md).
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from typing import Any, Final

from kubewerk.core.errors import FieldError
from kubewerk.core.gvk import parse_api_version
from kubewerk.core.selectors import is_label_value
from kubewerk.core.validation import (
    is_dns1035_label,
    is_dns1123_subdomain,
    is_path_segment_name,
    is_qualified_name,
    validate_labels,
    validate_object_meta,
)

from ..cel.rules import RESERVED_WORDS
from .cel_env import compile_expression

_FAILURE_POLICIES: Final = ("Fail", "Ignore")
_MATCH_POLICIES: Final = ("Equivalent", "Exact")
_SCOPES: Final = ("*", "Cluster", "Namespaced")
_OPERATIONS: Final = ("*", "CONNECT", "CREATE", "DELETE", "UPDATE")
_REASONS: Final = ("Forbidden", "Invalid", "RequestEntityTooLarge")
_ACTIONS: Final = ("Audit", "Deny", "Warn")
_CEL_IDENT: Final = re.compile(r"^[_a-zA-Z][_a-zA-Z0-9]*\Z")
MAX_AUDIT_ANNOTATIONS: Final = 20
MAX_AUDIT_VALUE_EXPRESSION: Final = 5 * 1024
MAX_MATCH_CONDITIONS: Final = 64


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


# ------------------------------------------------------------------ defaults
def _default_rules(rules: Any) -> None:
    for rule in _list(rules):
        if isinstance(rule, dict) and rule.get("scope") is None:
            rule["scope"] = "*"


def _default_match_resources(mr: Any) -> None:
    if not isinstance(mr, dict):
        return
    mr.setdefault("matchPolicy", "Equivalent")
    if mr.get("namespaceSelector") is None:
        mr["namespaceSelector"] = {}
    if mr.get("objectSelector") is None:
        mr["objectSelector"] = {}
    _default_rules(mr.get("resourceRules"))
    _default_rules(mr.get("excludeResourceRules"))


def default_policy(policy: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of ``policy`` with the defaults kube-apiserver sets before validating."""
    out = copy.deepcopy(dict(policy))
    spec = out.get("spec")
    if isinstance(spec, dict):
        if spec.get("failurePolicy") is None:
            spec["failurePolicy"] = "Fail"
        _default_match_resources(spec.get("matchConstraints"))
    return out


def default_binding(binding: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of ``binding`` with the defaults kube-apiserver sets before validating."""
    out = copy.deepcopy(dict(binding))
    spec = out.get("spec")
    if isinstance(spec, dict):
        _default_match_resources(spec.get("matchResources"))
        ref = spec.get("paramRef")
        if isinstance(ref, dict) and not ref.get("parameterNotFoundAction"):
            ref["parameterNotFoundAction"] = "Deny"
    return out


# ------------------------------------------------------------ small checks
def _has_wildcard(values: list[Any]) -> bool:
    return "*" in values


def validate_label_selector(selector: Any, path: str) -> list[FieldError]:
    """``metav1validation.ValidateLabelSelector`` (strict label values)."""
    errs: list[FieldError] = []
    if not isinstance(selector, dict):
        return errs
    for i, req in enumerate(_list(selector.get("matchExpressions"))):
        rp = f"{path}.matchExpressions[{i}]"
        req = _dict(req)
        op = req.get("operator")
        values = _list(req.get("values"))
        if op in ("In", "NotIn"):
            if not values:
                errs.append(
                    FieldError.required(
                        f"{rp}.values", "must be specified when `operator` is 'In' or 'NotIn'"
                    )
                )
        elif op in ("Exists", "DoesNotExist"):
            if values:
                errs.append(
                    FieldError.forbidden(
                        f"{rp}.values",
                        "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                    )
                )
        else:
            errs.append(FieldError.invalid(f"{rp}.operator", op, "not a valid selector operator"))
        key = _str(req.get("key"))
        errs.extend(FieldError.invalid(f"{rp}.key", key, m) for m in is_qualified_name(key))
        for j, v in enumerate(values):
            errs.extend(
                FieldError.invalid(f"{rp}.values[{j}]", v, m) for m in is_label_value(_str(v))
            )
    labels = selector.get("matchLabels")
    if isinstance(labels, dict):
        errs.extend(
            validate_labels({str(k): _str(v) for k, v in labels.items()}, f"{path}.matchLabels")
        )
    return errs


def _validate_resources(resources: list[Any], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    if not resources:
        errs.append(FieldError.required(path))
    with_wild_sub: set[str] = set()
    wild_res_sub: set[str] = set()
    double = single = plain = False
    for i, rs in enumerate(resources):
        rs = _str(rs)
        if rs == "":
            errs.append(FieldError.required(f"{path}[{i}]"))
            continue
        if rs == "*/*":
            double = True
        if rs == "*":
            single = True
        if "/" not in rs:
            plain = rs != "*"
            continue
        res, sub = rs.split("/", 1)
        if res in with_wild_sub:
            errs.append(
                FieldError.invalid(
                    f"{path}[{i}]", rs, f"if '{res}/*' is present, must not specify {rs}"
                )
            )
        if sub in wild_res_sub:
            errs.append(
                FieldError.invalid(
                    f"{path}[{i}]", rs, f"if '*/{sub}' is present, must not specify {rs}"
                )
            )
        if sub == "*":
            with_wild_sub.add(res)
        if res == "*":
            wild_res_sub.add(sub)
    if len(resources) > 1 and double:
        errs.append(
            FieldError.invalid(
                path, resources, "if '*/*' is present, must not specify other resources"
            )
        )
    if single and plain:
        errs.append(
            FieldError.invalid(
                path,
                resources,
                "if '*' is present, must not specify other resources without subresources",
            )
        )
    return errs


def _validate_rule_with_operations(rule: dict[str, Any], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    ops = _list(rule.get("operations"))
    if not ops:
        errs.append(FieldError.required(f"{path}.operations"))
    if len(ops) > 1 and _has_wildcard(ops):
        errs.append(
            FieldError.invalid(
                f"{path}.operations", ops, "if '*' is present, must not specify other operations"
            )
        )
    for i, op in enumerate(ops):
        if op not in _OPERATIONS:
            errs.append(FieldError.not_supported(f"{path}.operations[{i}]", op, _OPERATIONS))
    groups = _list(rule.get("apiGroups"))
    if not groups:
        errs.append(FieldError.required(f"{path}.apiGroups"))
    if len(groups) > 1 and _has_wildcard(groups):
        errs.append(
            FieldError.invalid(
                f"{path}.apiGroups", groups, "if '*' is present, must not specify other API groups"
            )
        )
    versions = _list(rule.get("apiVersions"))
    if not versions:
        errs.append(FieldError.required(f"{path}.apiVersions"))
    if len(versions) > 1 and _has_wildcard(versions):
        errs.append(
            FieldError.invalid(
                f"{path}.apiVersions",
                versions,
                "if '*' is present, must not specify other API versions",
            )
        )
    for i, v in enumerate(versions):
        if v == "":
            errs.append(FieldError.required(f"{path}.apiVersions[{i}]"))
    errs.extend(_validate_resources(_list(rule.get("resources")), f"{path}.resources"))
    scope = rule.get("scope")
    if scope is not None and scope not in _SCOPES:
        errs.append(FieldError.not_supported(f"{path}.scope", scope, _SCOPES))
    return errs


def _validate_named_rule(rule: Any, path: str) -> list[FieldError]:
    rule = _dict(rule)
    errs: list[FieldError] = []
    seen: set[str] = set()
    for i, name in enumerate(_list(rule.get("resourceNames"))):
        name = _str(name)
        errs.extend(
            FieldError.invalid(f"{path}.resourceNames[{i}]", name, m)
            for m in is_path_segment_name(name)
        )
        if name in seen:
            errs.append(FieldError.duplicate(f"{path}.resourceNames[{i}]", name))
        seen.add(name)
    errs.extend(_validate_rule_with_operations(rule, path))
    return errs


def validate_match_resources(mr: Any, path: str) -> list[FieldError]:
    """``validateMatchResources`` (of a defaulted object)."""
    errs: list[FieldError] = []
    if not isinstance(mr, dict):
        return errs
    policy = mr.get("matchPolicy")
    if policy is None:
        errs.append(FieldError.required(f"{path}.matchPolicy"))
    elif policy not in _MATCH_POLICIES:
        errs.append(FieldError.not_supported(f"{path}.matchPolicy", policy, _MATCH_POLICIES))
    for key in ("namespaceSelector", "objectSelector"):
        if mr.get(key) is None:
            errs.append(FieldError.required(f"{path}.{key}"))
        else:
            errs.extend(validate_label_selector(mr[key], f"{path}.{key}"))
    for key in ("resourceRules", "excludeResourceRules"):
        for i, rule in enumerate(_list(mr.get(key))):
            errs.extend(_validate_named_rule(rule, f"{path}.{key}[{i}]"))
    return errs


def _is_cel_identifier(name: str) -> bool:
    return bool(_CEL_IDENT.match(name)) and name not in RESERVED_WORDS


def _validate_param_kind(pk: dict[str, Any], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    api_version = _str(pk.get("apiVersion"))
    if not api_version:
        errs.append(FieldError.required(f"{path}.apiVersion"))
    else:
        try:
            group, version = parse_api_version(api_version)
        except ValueError as exc:
            errs.append(FieldError.invalid(f"{path}.apiVersion", api_version, str(exc)))
        else:
            if group:
                msgs = is_dns1123_subdomain(group)
                if msgs:
                    errs.append(FieldError.invalid(f"{path}.apiVersion", group, ",".join(msgs)))
            if not version:
                errs.append(
                    FieldError.invalid(
                        f"{path}.apiVersion", api_version, "version must be specified"
                    )
                )
            else:
                msgs = is_dns1035_label(version)
                if msgs:
                    errs.append(FieldError.invalid(f"{path}.apiVersion", version, ",".join(msgs)))
    kind = _str(pk.get("kind"))
    if not kind:
        errs.append(FieldError.required(f"{path}.kind"))
    else:
        msgs = is_dns1035_label(kind.lower())
        if msgs:
            errs.append(
                FieldError.invalid(
                    f"{path}.kind",
                    kind,
                    "may have mixed case, but should otherwise match: " + ",".join(msgs),
                )
            )
    return errs


def _compile_error(path: str, expression: str, detail: str) -> FieldError:
    return FieldError.invalid(path, expression, detail)


def _has_newlines(text: str) -> bool:
    return "\n" in text or "\r" in text


def validate_policy(
    policy: Mapping[str, Any], old: Mapping[str, Any] | None = None
) -> list[FieldError]:
    """kube-apiserver's validation of a ValidatingAdmissionPolicy on create (or update
    from ``old``: then unchanged matchConditions and paramKind are not recompiled).

    ``policy`` is validated after :func:`default_policy`.
    """
    obj = default_policy(policy)
    errs = validate_object_meta(_dict(obj.get("metadata")), namespaced=False)
    spec = _dict(obj.get("spec"))
    path = "spec"
    failure = spec.get("failurePolicy")
    if failure is None:
        errs.append(FieldError.required(f"{path}.failurePolicy"))
    elif failure not in _FAILURE_POLICIES:
        errs.append(FieldError.not_supported(f"{path}.failurePolicy", failure, _FAILURE_POLICIES))
    param_kind = spec.get("paramKind")
    has_params = isinstance(param_kind, dict)
    if isinstance(param_kind, dict):
        errs.extend(_validate_param_kind(param_kind, f"{path}.paramKind"))
    mc = spec.get("matchConstraints")
    if not isinstance(mc, dict):
        errs.append(FieldError.required(f"{path}.matchConstraints"))
    else:
        errs.extend(validate_match_resources(mc, f"{path}.matchConstraints"))
        if not _list(mc.get("resourceRules")):
            errs.append(FieldError.required(f"{path}.matchConstraints.resourceRules"))
    skip_conditions = False
    if old is not None:
        old_spec = _dict(default_policy(old).get("spec"))
        skip_conditions = old_spec.get("paramKind") == spec.get("paramKind") and old_spec.get(
            "matchConditions"
        ) == spec.get("matchConditions")
    if not skip_conditions:
        errs.extend(
            validate_match_conditions(
                spec.get("matchConditions"), has_params, f"{path}.matchConditions"
            )
        )
    variables = _list(spec.get("variables"))
    declared: frozenset[str] | None = None
    if variables:
        names: list[str] = []
        for i, var in enumerate(variables):
            var = _dict(var)
            vp = f"{path}.variables[{i}]"
            name = _str(var.get("name"))
            if not name.strip():
                errs.append(FieldError.required(f"{vp}.name", "name is not specified"))
            elif not _is_cel_identifier(name):
                errs.append(
                    FieldError.invalid(f"{vp}.name", name, "name is not a valid CEL identifier")
                )
            expr = _str(var.get("expression"))
            if not expr.strip():
                errs.append(FieldError.required(f"{vp}.expression", "expression is not specified"))
            else:
                c = compile_expression(
                    expr,
                    returns=None,
                    params=has_params,
                    authorizer=True,
                    declared_variables=frozenset(names),
                )
                if not c.ok:
                    errs.append(_compile_error(f"{vp}.expression", expr, c.detail))
            if name:
                names.append(name)
        declared = frozenset(names)
    validations = _list(spec.get("validations"))
    audits = _list(spec.get("auditAnnotations"))
    if not validations and not audits:
        msg = "validations or auditAnnotations must contain at least one item"
        errs.append(FieldError.required(f"{path}.validations", msg))
        errs.append(FieldError.required(f"{path}.auditAnnotations", msg))
        return errs
    for i, v in enumerate(validations):
        errs.extend(
            _validate_validation(_dict(v), has_params, declared, f"{path}.validations[{i}]")
        )
    if spec.get("auditAnnotations") is not None:
        if len(audits) > MAX_AUDIT_ANNOTATIONS:
            errs.append(
                FieldError.invalid(
                    f"{path}.auditAnnotations",
                    audits,
                    f"must not have more than {MAX_AUDIT_ANNOTATIONS} auditAnnotations",
                )
            )
        keys: set[str] = set()
        policy_name = _str(_dict(obj.get("metadata")).get("name"))
        for i, a in enumerate(audits):
            a = _dict(a)
            ap = f"{path}.auditAnnotations[{i}]"
            key = _str(a.get("key"))
            errs.extend(_validate_audit_annotation(a, policy_name, has_params, declared, ap))
            if key in keys:
                errs.append(FieldError.duplicate(f"{ap}.key", key))
            keys.add(key)
    return errs


def validate_match_conditions(conditions: Any, has_params: bool, path: str) -> list[FieldError]:
    """``validateMatchConditions``: at most 64, named (qualified names, unique), bool CEL."""
    errs: list[FieldError] = []
    items = _list(conditions)
    if len(items) > MAX_MATCH_CONDITIONS:
        errs.append(FieldError.too_many(path, len(items), MAX_MATCH_CONDITIONS))
    names: set[str] = set()
    for i, mc in enumerate(items):
        mc = _dict(mc)
        mp = f"{path}[{i}]"
        expr = _str(mc.get("expression")).strip()
        if not expr:
            errs.append(FieldError.required(f"{mp}.expression"))
        else:
            c = compile_expression(
                expr, returns=("bool",), params=has_params, authorizer=True, declared_variables=None
            )
            if not c.ok:
                errs.append(_compile_error(f"{mp}.expression", expr, c.detail))
        name = _str(mc.get("name"))
        if not name:
            errs.append(FieldError.required(f"{mp}.name"))
        else:
            errs.extend(FieldError.invalid(f"{mp}.name", name, m) for m in is_qualified_name(name))
        if name:
            if name in names:
                errs.append(FieldError.duplicate(f"{mp}.name", name))
            names.add(name)
    return errs


def _validate_validation(
    v: dict[str, Any], has_params: bool, declared: frozenset[str] | None, path: str
) -> list[FieldError]:
    errs: list[FieldError] = []
    expr = _str(v.get("expression"))
    message = _str(v.get("message"))
    mexpr = _str(v.get("messageExpression"))
    if not expr.strip():
        errs.append(FieldError.required(f"{path}.expression", "expression is not specified"))
    else:
        c = compile_expression(
            expr, returns=("bool",), params=has_params, authorizer=True, declared_variables=declared
        )
        if not c.ok:
            errs.append(_compile_error(f"{path}.expression", expr, c.detail))
    if mexpr and not mexpr.strip():
        errs.append(
            FieldError.invalid(f"{path}.messageExpression", mexpr, "must be non-empty if specified")
        )
    elif mexpr.strip():
        c = compile_expression(
            mexpr,
            returns=("string",),
            params=has_params,
            authorizer=False,
            declared_variables=declared,
        )
        if not c.ok:
            errs.append(_compile_error(f"{path}.messageExpression", mexpr, c.detail))
    if message and not message.strip():
        errs.append(
            FieldError.invalid(f"{path}.message", message, "message must be non-empty if specified")
        )
    elif _has_newlines(message.strip()):
        errs.append(
            FieldError.invalid(f"{path}.message", message, "message must not contain line breaks")
        )
    reason = v.get("reason")
    if reason is not None and reason not in _REASONS:
        errs.append(FieldError.not_supported(f"{path}.reason", reason, _REASONS))
    return errs


def _validate_audit_annotation(
    a: dict[str, Any],
    policy_name: str,
    has_params: bool,
    declared: frozenset[str] | None,
    path: str,
) -> list[FieldError]:
    errs: list[FieldError] = []
    key = _str(a.get("key"))
    if policy_name:
        full = f"{policy_name}/{key}"
        errs.extend(FieldError.invalid(f"{path}.key", full, m) for m in is_qualified_name(full))
    else:
        errs.append(FieldError.invalid(f"{path}.key", key, "requires metadata.name be non-empty"))
    value_expr = _str(a.get("valueExpression"))
    trimmed = value_expr.strip()
    if not trimmed:
        errs.append(
            FieldError.required(f"{path}.valueExpression", "valueExpression is not specified")
        )
    elif len(trimmed.encode()) > MAX_AUDIT_VALUE_EXPRESSION:
        errs.append(
            FieldError.required(
                f"{path}.valueExpression",
                f"must not exceed {MAX_AUDIT_VALUE_EXPRESSION} bytes in length",
            )
        )
    else:
        c = compile_expression(
            trimmed,
            returns=("string", "null_type"),
            params=has_params,
            authorizer=True,
            declared_variables=declared,
        )
        if not c.ok:
            errs.append(_compile_error(f"{path}.valueExpression", value_expr, c.detail))
    return errs


def _validate_param_ref(ref: Any, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    if ref is None:
        return errs
    ref = _dict(ref)
    name = _str(ref.get("name"))
    selector = ref.get("selector")
    if name:
        errs.extend(FieldError.invalid(f"{path}.name", name, m) for m in is_path_segment_name(name))
        if selector is not None:
            errs.append(
                FieldError.forbidden(f"{path}.name", "name and selector are mutually exclusive")
            )
    if selector is not None:
        errs.extend(validate_label_selector(selector, f"{path}.selector"))
        if name:
            errs.append(
                FieldError.forbidden(f"{path}.selector", "name and selector are mutually exclusive")
            )
    if not name and selector is None:
        errs.append(FieldError.required(path, "one of name or selector must be specified"))
    action = ref.get("parameterNotFoundAction")
    if not action:
        errs.append(FieldError.required(f"{path}.parameterNotFoundAction"))
    elif action not in ("Deny", "Allow"):
        errs.append(
            FieldError.not_supported(f"{path}.parameterNotFoundAction", action, ("Deny", "Allow"))
        )
    return errs


def _validate_actions(actions: list[Any], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    seen: set[Any] = set()
    for i, action in enumerate(actions):
        if action not in _ACTIONS:
            errs.append(FieldError.not_supported(f"{path}[{i}]", action, _ACTIONS))
        if action in seen:
            errs.append(FieldError.duplicate(f"{path}[{i}]", action))
        seen.add(action)
    if "Deny" in seen and "Warn" in seen:
        errs.append(
            FieldError.invalid(
                path,
                actions,
                "must not contain both Deny and Warn (repeating the same validation failure "
                "information in the API response and headers serves no purpose)",
            )
        )
    if not seen:
        errs.append(FieldError.required(path, "at least one validation action is required"))
    return errs


def validate_binding(binding: Mapping[str, Any]) -> list[FieldError]:
    """kube-apiserver's validation of a ValidatingAdmissionPolicyBinding (create and
    update alike), after :func:`default_binding`."""
    obj = default_binding(binding)
    errs = validate_object_meta(_dict(obj.get("metadata")), namespaced=False)
    spec = _dict(obj.get("spec"))
    policy_name = _str(spec.get("policyName"))
    if not policy_name:
        errs.append(FieldError.required("spec.policyName"))
    else:
        errs.extend(
            FieldError.invalid("spec.policyName", policy_name, m)
            for m in is_dns1123_subdomain(policy_name)
        )
    errs.extend(_validate_param_ref(spec.get("paramRef"), "spec.paramRef"))
    # kube-apiserver reports this path misspelt ("matchResouces"); kept for fidelity
    errs.extend(validate_match_resources(spec.get("matchResources"), "spec.matchResouces"))
    errs.extend(_validate_actions(_list(spec.get("validationActions")), "spec.validationActions"))
    return errs
