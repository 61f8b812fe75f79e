"""v1 Node, LimitRange, ResourceQuota and scheduling.k8s.io/v1 PriorityClass: defaults
(``SetDefaults_NodeStatus``, ``SetDefaults_LimitRangeItem``, ``SetDefaults_PriorityClass``)
and validation (``ValidateNode*``, ``ValidateLimitRange``, ``ValidateResourceQuota*``,
``pkg/apis/scheduling/validation``)."""

from __future__ import annotations

import ipaddress
from typing import Any, Final

from kubewerk.apiserver.kindrules import quantity
from kubewerk.apiserver.kindrules.common import (
    JSON,
    Errs,
    KindRules,
    check_enum,
    check_immutable,
    check_qualified_name,
    ensure,
    int_of,
    items,
    obj,
    str_of,
)
from kubewerk.core.errors import FieldError

TAINT_EFFECTS: Final = ("NoSchedule", "PreferNoSchedule", "NoExecute")
PREEMPTION_POLICIES: Final = ("Never", "PreemptLowerPriority")
HIGHEST_USER_PRIORITY: Final = 1_000_000_000
SYSTEM_PRIORITY_CLASSES: Final = {
    "system-node-critical": 2_000_001_000,
    "system-cluster-critical": 2_000_000_000,
}
NODE_CIDR_FORBIDDEN: Final = 'node updates may not change podCIDR except from "" to valid'
NODE_PROVIDER_FORBIDDEN: Final = 'node updates may not change providerID except from "" to valid'


# -- Node ----------------------------------------------------------------------


def default_node(node: JSON) -> None:
    """``SetObjectDefaults_Node``: allocatable copied from capacity when unset."""
    status = node.get("status")
    if not isinstance(status, dict):
        return
    quantity.canonicalize_list(status.get("capacity"))
    quantity.canonicalize_list(status.get("allocatable"))
    if status.get("allocatable") is None and isinstance(status.get("capacity"), dict):
        status["allocatable"] = dict(status["capacity"])


def _check_cidr(errs: Errs, value: Any, path: str) -> None:
    if not isinstance(value, str):
        return
    try:
        ipaddress.ip_network(value, strict=False)
    except ValueError:
        errs.append(
            FieldError.invalid(
                path, value, "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)"
            )
        )


def validate_node(new: JSON, old: JSON | None) -> list[FieldError]:
    """``ValidateNode`` / ``ValidateNodeUpdate``: taints, pod CIDRs, and on update
    podCIDRs and providerID only set once."""
    errs: Errs = []
    spec = obj(new, "spec")
    for i, taint in enumerate(items(spec, "taints")):
        path = f"spec.taints[{i}]"
        key = str_of(taint, "key")
        if not key:
            errs.append(FieldError.required(f"{path}.key"))
        else:
            check_qualified_name(errs, key, f"{path}.key")
        check_enum(errs, taint.get("effect"), f"{path}.effect", TAINT_EFFECTS)
    for i, cidr in enumerate(spec.get("podCIDRs") or []):
        _check_cidr(errs, cidr, f"spec.podCIDRs[{i}]")
    quantity.check_nonnegative_list(errs, obj(new, "status").get("capacity"), "status.capacity")
    quantity.check_nonnegative_list(
        errs, obj(new, "status").get("allocatable"), "status.allocatable"
    )
    if old is not None:
        old_spec = obj(old, "spec")
        old_cidrs = old_spec.get("podCIDRs") or []
        if old_cidrs and old_cidrs != (spec.get("podCIDRs") or []):
            errs.append(FieldError.forbidden("spec.podCIDRs", NODE_CIDR_FORBIDDEN))
        old_provider = str_of(old_spec, "providerID")
        if old_provider and old_provider != str_of(spec, "providerID"):
            errs.append(FieldError.forbidden("spec.providerID", NODE_PROVIDER_FORBIDDEN))
    return errs


def validate_node_status(new: JSON, old: JSON | None) -> list[FieldError]:
    """``ValidateNodeResources`` on a status write."""
    errs: Errs = []
    status = obj(new, "status")
    quantity.check_nonnegative_list(errs, status.get("capacity"), "status.capacity")
    quantity.check_nonnegative_list(errs, status.get("allocatable"), "status.allocatable")
    return errs


# -- LimitRange ----------------------------------------------------------------


def default_limit_range(lr: JSON) -> None:
    """``SetDefaults_LimitRangeItem``: for Container items, default from max,
    defaultRequest from default, then from min."""
    for item in items(obj(lr, "spec") or None, "limits"):
        for key in ("max", "min", "default", "defaultRequest", "maxLimitRequestRatio"):
            quantity.canonicalize_list(item.get(key))
        if item.get("type") != "Container":
            continue
        default = ensure(item, "default")
        request = ensure(item, "defaultRequest")
        for name, value in obj(item, "max").items():
            default.setdefault(name, value)
        for name, value in default.items():
            request.setdefault(name, value)
        for name, value in obj(item, "min").items():
            request.setdefault(name, value)


def _amount(resources: JSON, name: str) -> Any:
    return quantity.value_of(resources.get(name))


_LIMIT_ORDER: Final = (
    ("min", "max", "min", "min value {low} is greater than max value {high}"),
    (
        "min",
        "defaultRequest",
        "defaultRequest",
        "min value {low} is greater than default request value {high}",
    ),
    (
        "defaultRequest",
        "max",
        "defaultRequest",
        "default request value {low} is greater than max value {high}",
    ),
    (
        "defaultRequest",
        "default",
        "defaultRequest",
        "default request value {low} is greater than default limit value {high}",
    ),
    ("default", "max", "default", "default value {low} is greater than max value {high}"),
)
"""(smaller, larger, field reported, message) for each order a LimitRange item keeps."""


def validate_limit_range(new: JSON, old: JSON | None) -> list[FieldError]:
    """``ValidateLimitRange``: quantities non-negative and min <= defaultRequest <=
    default <= max."""
    errs: Errs = []
    for i, item in enumerate(items(obj(new, "spec") or None, "limits")):
        path = f"spec.limits[{i}]"
        if not item.get("type"):
            errs.append(FieldError.required(f"{path}.type"))
        for key in ("max", "min", "default", "defaultRequest"):
            quantity.check_nonnegative_list(errs, item.get(key), f"{path}.{key}")
        lists = {key: obj(item, key) for key in ("min", "max", "default", "defaultRequest")}
        names = sorted({name for values in lists.values() for name in values})
        for name in names:
            for small, large, at, words in _LIMIT_ORDER:
                lo, hi = _amount(lists[small], name), _amount(lists[large], name)
                if lo is None or hi is None or lo <= hi:
                    continue
                bad = quantity.canonical(lists[at][name])
                low_text = quantity.canonical(lists[small][name])
                high_text = quantity.canonical(lists[large][name])
                errs.append(
                    FieldError.invalid(
                        f"{path}.{at}[{name}]", bad, words.format(low=low_text, high=high_text)
                    )
                )
    return errs


# -- ResourceQuota -------------------------------------------------------------


def default_resource_quota(rq: JSON) -> None:
    """The quota's quantities in canonical form (``SetDefaults_ResourceList``)."""
    quantity.canonicalize_list(obj(rq, "spec").get("hard"))
    status = rq.get("status")
    if isinstance(status, dict):
        quantity.canonicalize_list(status.get("hard"))
        quantity.canonicalize_list(status.get("used"))


def validate_resource_quota(new: JSON, old: JSON | None) -> list[FieldError]:
    """``ValidateResourceQuotaSpec``: hard limits non-negative, scopes known."""
    errs: Errs = []
    spec = obj(new, "spec")
    quantity.check_nonnegative_list(errs, spec.get("hard"), "spec.hard")
    scopes = (
        "BestEffort",
        "CrossNamespacePodAffinity",
        "NotBestEffort",
        "NotTerminating",
        "PriorityClass",
        "Terminating",
        "VolumeAttributesClass",
    )
    for i, scope in enumerate(spec.get("scopes") or []):
        if scope not in scopes:
            errs.append(FieldError.not_supported(f"spec.scopes[{i}]", scope, scopes))
    return errs


def validate_resource_quota_status(new: JSON, old: JSON | None) -> list[FieldError]:
    """``ValidateResourceQuotaStatusUpdate``: hard and used non-negative."""
    errs: Errs = []
    status = obj(new, "status")
    quantity.check_nonnegative_list(errs, status.get("hard"), "status.hard")
    quantity.check_nonnegative_list(errs, status.get("used"), "status.used")
    return errs


# -- PriorityClass -------------------------------------------------------------


def default_priority_class(pc: JSON) -> None:
    """``SetDefaults_PriorityClass``: preemptionPolicy PreemptLowerPriority."""
    if pc.get("preemptionPolicy") is None:
        pc["preemptionPolicy"] = "PreemptLowerPriority"


def validate_priority_class(new: JSON, old: JSON | None) -> list[FieldError]:
    """``ValidatePriorityClass`` / ``ValidatePriorityClassUpdate``."""
    errs: Errs = []
    name = str_of(obj(new, "metadata"), "name")
    value = int_of(new, "value")
    if name.startswith("system-"):
        problem = _system_class_problem(name, value, new.get("globalDefault") is True)
        if problem:
            errs.append(
                FieldError.forbidden(
                    "metadata.name",
                    "priority class names with 'system-' prefix are reserved for system use "
                    "only. error: " + problem,
                )
            )
    elif value > HIGHEST_USER_PRIORITY:
        errs.append(
            FieldError.forbidden(
                "value",
                f"maximum allowed value of a user defined priority is {HIGHEST_USER_PRIORITY}",
            )
        )
    if new.get("preemptionPolicy") is not None:
        check_enum(errs, new["preemptionPolicy"], "preemptionPolicy", PREEMPTION_POLICIES)
    if old is not None:
        if value != int_of(old, "value"):
            errs.append(FieldError.forbidden("value", "may not be changed in an update."))
        check_immutable(
            errs, new.get("preemptionPolicy"), old.get("preemptionPolicy"), "preemptionPolicy"
        )
    return errs


def _system_class_problem(name: str, value: int, global_default: bool) -> str:
    """``scheduling.IsKnownSystemPriorityClass``'s error, "" when known."""
    if name not in SYSTEM_PRIORITY_CLASSES:
        return f"{name} is not a known system priority class"
    if SYSTEM_PRIORITY_CLASSES[name] != value:
        return f"value of {name} PriorityClass must be {SYSTEM_PRIORITY_CLASSES[name]}"
    if global_default:
        return f"globalDefault of {name} PriorityClass must be false"
    return ""


RULES: Final[dict[tuple[str, str], KindRules]] = {
    ("v1", "Node"): KindRules(default_node, validate_node, validate_node_status),
    ("v1", "LimitRange"): KindRules(default_limit_range, validate_limit_range),
    ("v1", "ResourceQuota"): KindRules(
        default_resource_quota, validate_resource_quota, validate_resource_quota_status
    ),
    ("scheduling.k8s.io/v1", "PriorityClass"): KindRules(
        default_priority_class, validate_priority_class
    ),
}
