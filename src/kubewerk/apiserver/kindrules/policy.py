"""policy/v1 PodDisruptionBudget: validation (``pkg/apis/policy/validation``); the kind
has no defaults of its own."""

from __future__ import annotations

from typing import Final

from kubewerk.apiserver.kindrules.common import (
    JSON,
    Errs,
    KindRules,
    check_label_selector,
    check_nonnegative,
    check_not_more_than_100_percent,
    check_positive_int_or_percent,
    obj,
    struct_value,
)
from kubewerk.core.errors import FieldError

EVICTION_POLICIES: Final = ("AlwaysAllow", "IfHealthyBudget")
_SPEC_ORDER: Final = ("minAvailable", "selector", "maxUnavailable", "unhealthyPodEvictionPolicy")


def validate_pdb(new: JSON, old: JSON | None) -> list[FieldError]:
    """``ValidatePodDisruptionBudgetSpec``: minAvailable and maxUnavailable exclusive,
    each an integer or percentage up to 100%, a valid selector, a known policy."""
    errs: Errs = []
    spec = obj(new, "spec")
    min_available, max_unavailable = spec.get("minAvailable"), spec.get("maxUnavailable")
    if min_available is not None and max_unavailable is not None:
        errs.append(
            FieldError.invalid(
                "spec",
                struct_value(spec, _SPEC_ORDER),
                "minAvailable and maxUnavailable cannot be both set",
            )
        )
    for key, value in (("minAvailable", min_available), ("maxUnavailable", max_unavailable)):
        if value is not None:
            check_positive_int_or_percent(errs, value, f"spec.{key}")
            check_not_more_than_100_percent(errs, value, f"spec.{key}")
    if spec.get("selector") is not None:
        check_label_selector(errs, spec["selector"], "spec.selector")
    policy = spec.get("unhealthyPodEvictionPolicy")
    if policy is not None and policy not in EVICTION_POLICIES:
        errs.append(
            FieldError.not_supported("spec.unhealthyPodEvictionPolicy", policy, EVICTION_POLICIES)
        )
    return errs


def validate_pdb_status(new: JSON, old: JSON | None) -> list[FieldError]:
    """``ValidatePodDisruptionBudgetStatusUpdate``: the counters are non-negative."""
    errs: Errs = []
    status = obj(new, "status")
    for key in ("disruptionsAllowed", "currentHealthy", "desiredHealthy", "expectedPods"):
        check_nonnegative(errs, status.get(key), f"status.{key}")
    return errs


RULES: Final[dict[tuple[str, str], KindRules]] = {
    ("policy/v1", "PodDisruptionBudget"): KindRules(None, validate_pdb, validate_pdb_status),
}
