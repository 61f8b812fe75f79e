"""apps/v1 Deployment, ReplicaSet, StatefulSet, DaemonSet, ControllerRevision and v1
ReplicationController: defaults (``pkg/apis/apps/v1/defaults.go``,
``SetDefaults_ReplicationController``) and validation (``pkg/apis/apps/validation``,
``ValidateReplicationController*``), including what the registry strategies add on
update for apps/v1 (the selector is immutable).
"""

from __future__ import annotations

from typing import Any, Final

from kubewerk.apiserver.kindrules.common import (
    JSON,
    Errs,
    KindRules,
    check_enum,
    check_immutable,
    check_label_selector,
    check_nonnegative,
    check_not_more_than_100_percent,
    check_positive_int_or_percent,
    ensure,
    int_of,
    int_or_percent,
    items,
    obj,
    selector_is_empty,
    selector_is_valid,
    selector_matches,
    selector_value,
    set_default,
    str_map,
    struct_value,
)
from kubewerk.apiserver.kindrules.pod import (
    default_pod_template,
    default_pvc_spec,
    validate_pod_template_spec,
)
from kubewerk.core.errors import FieldError
from kubewerk.core.validation import validate_annotations, validate_labels

MISMATCH: Final = "`selector` does not match template `labels`"
GREATER_THAN_REPLICAS: Final = "cannot be greater than status.replicas"
STS_UPDATE_FORBIDDEN: Final = (
    "updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', "
    "'updateStrategy', 'revisionHistoryLimit', 'persistentVolumeClaimRetentionPolicy' and "
    "'minReadySeconds' are forbidden"
)


def _labels(template: JSON) -> dict[str, Any]:
    labels = obj(template, "metadata").get("labels")
    return labels if isinstance(labels, dict) else {}


def _labels_value(template: JSON) -> Any:
    """The template's labels as kube prints them (a nil map prints as null)."""
    return obj(template, "metadata").get("labels")


# -- defaults ------------------------------------------------------------------


def default_deployment(d: JSON) -> None:
    """``SetObjectDefaults_Deployment``."""
    spec = ensure(d, "spec")
    set_default(spec, "replicas", 1)
    strategy = ensure(spec, "strategy")
    if not strategy.get("type"):
        strategy["type"] = "RollingUpdate"
    if strategy["type"] == "RollingUpdate":
        rolling = ensure(strategy, "rollingUpdate")
        set_default(rolling, "maxUnavailable", "25%")
        set_default(rolling, "maxSurge", "25%")
    set_default(spec, "revisionHistoryLimit", 10)
    set_default(spec, "progressDeadlineSeconds", 600)
    default_pod_template(spec.get("template"))


def default_replica_set(rs: JSON) -> None:
    """``SetObjectDefaults_ReplicaSet``."""
    spec = ensure(rs, "spec")
    set_default(spec, "replicas", 1)
    default_pod_template(spec.get("template"))


def default_daemon_set(ds: JSON) -> None:
    """``SetObjectDefaults_DaemonSet``."""
    spec = ensure(ds, "spec")
    strategy = ensure(spec, "updateStrategy")
    if not strategy.get("type"):
        strategy["type"] = "RollingUpdate"
    if strategy["type"] == "RollingUpdate":
        rolling = ensure(strategy, "rollingUpdate")
        set_default(rolling, "maxUnavailable", 1)
        set_default(rolling, "maxSurge", 0)
    set_default(spec, "revisionHistoryLimit", 10)
    default_pod_template(spec.get("template"))


def default_stateful_set(sts: JSON) -> None:
    """``SetObjectDefaults_StatefulSet`` (the claim templates get a PVC's defaults,
    ``status.phase: Pending`` included)."""
    spec = ensure(sts, "spec")
    if not spec.get("podManagementPolicy"):
        spec["podManagementPolicy"] = "OrderedReady"
    strategy = ensure(spec, "updateStrategy")
    if not strategy.get("type"):
        strategy["type"] = "RollingUpdate"
        ensure(strategy, "rollingUpdate")
    rolling = strategy.get("rollingUpdate")
    if strategy["type"] == "RollingUpdate" and isinstance(rolling, dict):
        set_default(rolling, "partition", 0)
    policy = ensure(spec, "persistentVolumeClaimRetentionPolicy")
    if not policy.get("whenDeleted"):
        policy["whenDeleted"] = "Retain"
    if not policy.get("whenScaled"):
        policy["whenScaled"] = "Retain"
    set_default(spec, "replicas", 1)
    set_default(spec, "revisionHistoryLimit", 10)
    default_pod_template(spec.get("template"))
    for claim in items(spec, "volumeClaimTemplates"):
        default_pvc_spec(ensure(claim, "spec"))
        status = ensure(claim, "status")
        if not status.get("phase"):
            status["phase"] = "Pending"


def default_replication_controller(rc: JSON) -> None:
    """``SetObjectDefaults_ReplicationController``: selector and labels from the
    template's labels when unset, replicas 1."""
    spec = ensure(rc, "spec")
    template = spec.get("template")
    labels = obj(template, "metadata").get("labels") if isinstance(template, dict) else None
    if isinstance(labels, dict):
        if not spec.get("selector"):
            spec["selector"] = dict(labels)
        meta = ensure(rc, "metadata")
        if not meta.get("labels"):
            meta["labels"] = dict(labels)
    set_default(spec, "replicas", 1)
    default_pod_template(template)


# -- validation ----------------------------------------------------------------


def _check_selector(errs: Errs, spec: JSON, noun: str) -> bool:
    """A required, valid, non-empty selector (``empty selector is invalid for <noun>``).
    Returns ``selector_is_valid`` of the selector, read off the checks just made."""
    selector = spec.get("selector")
    if selector is None:
        errs.append(FieldError.required("spec.selector"))
        return True
    before = len(errs)
    check_label_selector(errs, selector, "spec.selector")
    valid = len(errs) == before
    if selector_is_empty(selector):
        errs.append(
            FieldError.invalid(
                "spec.selector", selector_value(selector), f"empty selector is invalid for {noun}"
            )
        )
    return valid


def _check_template_for_replica_set(
    errs: Errs, spec: JSON, owner: str, selector_valid: bool | None = None
) -> None:
    """``ValidatePodTemplateSpecForReplicaSet`` (and its RC and DaemonSet twins);
    ``selector_valid``: ``selector_is_valid`` of the spec's selector when the caller
    already knows it."""
    template = spec.get("template")
    if not isinstance(template, dict):
        errs.append(FieldError.required("spec.template"))
        return
    selector = spec.get("selector")
    if selector_valid is None:
        selector_valid = selector_is_valid(selector)
    # a nil selector selects nothing (so nothing matches); an empty one selects everything
    matchable = selector is None or (selector_valid and not selector_is_empty(selector))
    if matchable and not selector_matches(selector, _labels(template)):
        errs.append(
            FieldError.invalid("spec.template.metadata.labels", _labels_value(template), MISMATCH)
        )
    validate_pod_template_spec(errs, template, "spec.template")
    pod_spec = obj(template, "spec")
    restart = pod_spec.get("restartPolicy")
    if restart != "Always":
        errs.append(
            FieldError.not_supported("spec.template.spec.restartPolicy", restart or "", ("Always",))
        )
    if pod_spec.get("activeDeadlineSeconds") is not None:
        errs.append(
            FieldError.forbidden(
                "spec.template.spec.activeDeadlineSeconds",
                f"activeDeadlineSeconds in {owner} is not Supported",
            )
        )


def _check_deployment_strategy(errs: Errs, strategy: JSON) -> None:
    kind = strategy.get("type")
    rolling = strategy.get("rollingUpdate")
    if kind == "Recreate":
        if rolling is not None:
            errs.append(
                FieldError.forbidden(
                    "spec.strategy.rollingUpdate",
                    "may not be specified when strategy `type` is 'Recreate'",
                )
            )
    elif kind == "RollingUpdate":
        if not isinstance(rolling, dict):
            errs.append(
                FieldError.required(
                    "spec.strategy.rollingUpdate", "this should be defaulted and never be nil"
                )
            )
            return
        path = "spec.strategy.rollingUpdate"
        unavailable, surge = rolling.get("maxUnavailable"), rolling.get("maxSurge")
        check_positive_int_or_percent(errs, unavailable, f"{path}.maxUnavailable")
        check_positive_int_or_percent(errs, surge, f"{path}.maxSurge")
        if int_or_percent(unavailable) == 0 and int_or_percent(surge) == 0:
            errs.append(
                FieldError.invalid(
                    f"{path}.maxUnavailable", unavailable, "may not be 0 when `maxSurge` is 0"
                )
            )
        check_not_more_than_100_percent(errs, unavailable, f"{path}.maxUnavailable")
    else:
        errs.append(
            FieldError.not_supported(
                "spec.strategy.type", kind or "", ("Recreate", "RollingUpdate")
            )
        )


def validate_deployment(new: JSON, old: JSON | None) -> list[FieldError]:
    """``ValidateDeployment`` / ``ValidateDeploymentUpdate`` plus the apps/v1
    strategy's immutable selector."""
    errs: Errs = []
    spec = obj(new, "spec")
    check_nonnegative(errs, spec.get("replicas"), "spec.replicas")
    selector_valid = _check_selector(errs, spec, "deployment")
    if not selector_valid:
        errs.append(
            FieldError.invalid(
                "spec.selector", selector_value(spec.get("selector")), "invalid label selector"
            )
        )
    else:
        _check_template_for_replica_set(errs, spec, "ReplicaSet", selector_valid)
    _check_deployment_strategy(errs, obj(spec, "strategy"))
    min_ready = int_of(spec, "minReadySeconds")
    check_nonnegative(errs, min_ready, "spec.minReadySeconds")
    check_nonnegative(errs, spec.get("revisionHistoryLimit"), "spec.revisionHistoryLimit")
    deadline = spec.get("progressDeadlineSeconds")
    if isinstance(deadline, int) and not isinstance(deadline, bool):
        check_nonnegative(errs, deadline, "spec.progressDeadlineSeconds")
        if deadline <= min_ready:
            errs.append(
                FieldError.invalid(
                    "spec.progressDeadlineSeconds", deadline, "must be greater than minReadySeconds"
                )
            )
    if old is not None:
        _immutable_selector(errs, spec, obj(old, "spec"))
    return errs


def _immutable_selector(errs: Errs, spec: JSON, old_spec: JSON) -> None:
    check_immutable(
        errs,
        spec.get("selector"),
        old_spec.get("selector"),
        "spec.selector",
        selector_value(spec.get("selector")),
    )


def validate_replica_set(new: JSON, old: JSON | None) -> list[FieldError]:
    """``ValidateReplicaSet`` / ``ValidateReplicaSetUpdate`` (immutable selector)."""
    errs: Errs = []
    spec = obj(new, "spec")
    check_nonnegative(errs, spec.get("replicas"), "spec.replicas")
    check_nonnegative(errs, spec.get("minReadySeconds"), "spec.minReadySeconds")
    selector_valid = _check_selector(errs, spec, "deployment")
    if not selector_valid:
        errs.append(
            FieldError.invalid(
                "spec.selector", selector_value(spec.get("selector")), "invalid label selector"
            )
        )
    else:
        _check_template_for_replica_set(errs, spec, "ReplicaSet", selector_valid)
    if old is not None:
        _immutable_selector(errs, spec, obj(old, "spec"))
    return errs


def _check_daemon_set_strategy(errs: Errs, strategy: JSON) -> None:
    kind = strategy.get("type")
    if kind == "OnDelete":
        return
    if kind != "RollingUpdate":
        errs.append(
            FieldError.not_supported(
                "spec.updateStrategy.type", kind or "", ("RollingUpdate", "OnDelete")
            )
        )
        return
    rolling = strategy.get("rollingUpdate")
    path = "spec.updateStrategy.rollingUpdate"
    if not isinstance(rolling, dict):
        errs.append(FieldError.required(path))
        return
    unavailable, surge = rolling.get("maxUnavailable"), rolling.get("maxSurge")
    check_positive_int_or_percent(errs, unavailable, f"{path}.maxUnavailable")
    check_positive_int_or_percent(errs, surge, f"{path}.maxSurge")
    check_not_more_than_100_percent(errs, unavailable, f"{path}.maxUnavailable")
    check_not_more_than_100_percent(errs, surge, f"{path}.maxSurge")
    has_unavailable, has_surge = int_or_percent(unavailable) != 0, int_or_percent(surge) != 0
    if has_unavailable and has_surge:
        errs.append(
            FieldError.invalid(
                f"{path}.maxSurge", surge, "may not be set when maxUnavailable is non-zero"
            )
        )
    elif not has_unavailable and not has_surge:
        errs.append(FieldError.required(f"{path}.maxUnavailable", "cannot be 0 when maxSurge is 0"))


def validate_daemon_set(new: JSON, old: JSON | None) -> list[FieldError]:
    """``ValidateDaemonSet`` / ``ValidateDaemonSetUpdate`` (immutable selector)."""
    errs: Errs = []
    spec = obj(new, "spec")
    selector = spec.get("selector")
    template = obj(spec, "template")
    if selector is None:
        errs.append(FieldError.required("spec.selector"))
    else:
        check_label_selector(errs, selector, "spec.selector")
    if selector_is_valid(selector) and not selector_matches(selector, _labels(template)):
        errs.append(
            FieldError.invalid("spec.template.metadata.labels", _labels_value(template), MISMATCH)
        )
    if selector is not None and selector_is_empty(selector):
        errs.append(
            FieldError.invalid(
                "spec.selector", selector_value(selector), "empty selector is invalid for daemonset"
            )
        )
    validate_pod_template_spec(errs, template, "spec.template")
    pod_spec = obj(template, "spec")
    restart = pod_spec.get("restartPolicy")
    if restart != "Always":
        errs.append(
            FieldError.not_supported("spec.template.spec.restartPolicy", restart or "", ("Always",))
        )
    if pod_spec.get("activeDeadlineSeconds") is not None:
        errs.append(
            FieldError.forbidden(
                "spec.template.spec.activeDeadlineSeconds",
                "activeDeadlineSeconds in DaemonSet is not Supported",
            )
        )
    check_nonnegative(errs, spec.get("minReadySeconds"), "spec.minReadySeconds")
    check_nonnegative(errs, spec.get("templateGeneration"), "spec.templateGeneration")
    _check_daemon_set_strategy(errs, obj(spec, "updateStrategy"))
    check_nonnegative(errs, spec.get("revisionHistoryLimit"), "spec.revisionHistoryLimit")
    if old is not None:
        _immutable_selector(errs, spec, obj(old, "spec"))
    return errs


_STS_MUTABLE: Final = (
    "replicas",
    "template",
    "updateStrategy",
    "minReadySeconds",
    "ordinals",
    "revisionHistoryLimit",
    "persistentVolumeClaimRetentionPolicy",
)


def validate_stateful_set(new: JSON, old: JSON | None) -> list[FieldError]:
    """``ValidateStatefulSetSpec`` / ``ValidateStatefulSetUpdate``. As upstream, the pod
    template's spec is not validated for StatefulSets (only its labels and annotations)."""
    errs: Errs = []
    spec = obj(new, "spec")
    policy = spec.get("podManagementPolicy")
    if not policy:
        errs.append(FieldError.required("spec.podManagementPolicy"))
    elif policy not in ("OrderedReady", "Parallel"):
        errs.append(
            FieldError.invalid(
                "spec.podManagementPolicy", policy, "must be 'OrderedReady' or 'Parallel'"
            )
        )
    strategy = obj(spec, "updateStrategy")
    kind = strategy.get("type")
    if not kind:
        errs.append(FieldError.required("spec.updateStrategy"))
    elif kind == "OnDelete":
        if strategy.get("rollingUpdate") is not None:
            errs.append(
                FieldError.invalid(
                    "spec.updateStrategy.rollingUpdate",
                    struct_value(strategy["rollingUpdate"], ("partition", "maxUnavailable")),
                    "only allowed for updateStrategy 'RollingUpdate'",
                )
            )
    elif kind == "RollingUpdate":
        rolling = obj(strategy, "rollingUpdate")
        check_nonnegative(
            errs, rolling.get("partition"), "spec.updateStrategy.rollingUpdate.partition"
        )
        if "maxUnavailable" in rolling:
            path = "spec.updateStrategy.rollingUpdate.maxUnavailable"
            check_positive_int_or_percent(errs, rolling["maxUnavailable"], path)
            if int_or_percent(rolling["maxUnavailable"]) == 0:
                errs.append(FieldError.invalid(path, rolling["maxUnavailable"], "cannot be 0"))
            check_not_more_than_100_percent(errs, rolling["maxUnavailable"], path)
    else:
        errs.append(
            FieldError.invalid(
                "spec.updateStrategy",
                struct_value(strategy, ("type", "rollingUpdate")),
                "must be 'RollingUpdate' or 'OnDelete'",
            )
        )
    retention = spec.get("persistentVolumeClaimRetentionPolicy")
    if isinstance(retention, dict):
        for key in ("whenDeleted", "whenScaled"):
            check_enum(
                errs,
                retention.get(key),
                f"spec.persistentVolumeClaimRetentionPolicy.{key}",
                ("Retain", "Delete"),
                required=False,
            )
    check_nonnegative(errs, spec.get("replicas"), "spec.replicas")
    check_nonnegative(errs, spec.get("minReadySeconds"), "spec.minReadySeconds")
    check_nonnegative(errs, obj(spec, "ordinals").get("start"), "spec.ordinals.start")
    selector = spec.get("selector")
    if selector is None:
        errs.append(FieldError.required("spec.selector"))
    else:
        check_label_selector(errs, selector, "spec.selector")
        if selector_is_empty(selector):
            errs.append(
                FieldError.invalid(
                    "spec.selector",
                    selector_value(selector),
                    "empty selector is not valid for statefulset.",
                )
            )
    template = obj(spec, "template")
    if selector_is_valid(selector):
        selects = selector is None or not selector_is_empty(selector)
        if selects and not selector_matches(selector, _labels(template)):
            errs.append(
                FieldError.invalid(
                    "spec.template.metadata.labels", _labels_value(template), MISMATCH
                )
            )
        meta = obj(template, "metadata")
        if str_map(meta.get("labels")) is not None:
            errs.extend(validate_labels(meta["labels"], "spec.template.labels"))
        if str_map(meta.get("annotations")) is not None:
            errs.extend(validate_annotations(meta["annotations"], "spec.template.annotations"))
    else:
        errs.append(FieldError.invalid("spec.selector", selector_value(selector), ""))
    pod_spec = obj(template, "spec")
    restart = pod_spec.get("restartPolicy")
    if restart != "Always":
        errs.append(
            FieldError.not_supported("spec.template.spec.restartPolicy", restart or "", ("Always",))
        )
    if pod_spec.get("activeDeadlineSeconds") is not None:
        errs.append(
            FieldError.invalid(
                "spec.template.spec.activeDeadlineSeconds",
                pod_spec["activeDeadlineSeconds"],
                "must not be specified",
            )
        )
    if old is not None:
        old_spec = obj(old, "spec")
        rest_new = {k: v for k, v in spec.items() if k not in _STS_MUTABLE}
        rest_old = {k: v for k, v in old_spec.items() if k not in _STS_MUTABLE}
        if rest_new != rest_old:
            errs.append(FieldError.forbidden("spec", STS_UPDATE_FORBIDDEN))
    return errs


def validate_controller_revision(new: JSON, old: JSON | None) -> list[FieldError]:
    """``ValidateControllerRevision`` / ``ValidateControllerRevisionUpdate``."""
    errs: Errs = []
    if new.get("data") is None:
        errs.append(FieldError.required("data", "data is mandatory"))
    check_nonnegative(errs, new.get("revision"), "revision")
    if old is not None:
        check_immutable(errs, new.get("data"), old.get("data"), "data")
    return errs


def validate_replication_controller(new: JSON, old: JSON | None) -> list[FieldError]:
    """``ValidateReplicationControllerSpec`` (the selector may change on update)."""
    errs: Errs = []
    spec = obj(new, "spec")
    check_nonnegative(errs, spec.get("minReadySeconds"), "spec.minReadySeconds")
    selector = spec.get("selector")
    if not selector:
        errs.append(FieldError.required("spec.selector"))
    if (selector := str_map(selector)) is not None:
        errs.extend(validate_labels(selector, "spec.selector"))
    check_nonnegative(errs, spec.get("replicas"), "spec.replicas")
    template = spec.get("template")
    if not isinstance(template, dict):
        errs.append(FieldError.required("spec.template"))
        return errs
    as_selector = {"matchLabels": selector} if isinstance(selector, dict) and selector else None
    checked = {**spec, "selector": as_selector}
    _check_template_for_replica_set(errs, checked, "ReplicationController")
    return errs


# -- status --------------------------------------------------------------------


def _status_counts(errs: Errs, status: JSON, keys: tuple[str, ...]) -> None:
    for key in keys:
        check_nonnegative(errs, status.get(key), f"status.{key}")


def _collision_count(errs: Errs, new: JSON, old: JSON | None) -> None:
    if old is None:
        return
    was = obj(old, "status").get("collisionCount")
    now = obj(new, "status").get("collisionCount")
    if isinstance(was, int) and (now is None or (isinstance(now, int) and now < was)):
        errs.append(FieldError.invalid("status.collisionCount", now or 0, "cannot be decremented"))


def _replica_bounds(errs: Errs, status: JSON, keys: tuple[str, ...]) -> None:
    replicas = int_of(status, "replicas")
    for key in keys:
        if int_of(status, key) > replicas:
            errs.append(
                FieldError.invalid(f"status.{key}", int_of(status, key), GREATER_THAN_REPLICAS)
            )


def _available_vs_ready(errs: Errs, status: JSON) -> None:
    if int_of(status, "availableReplicas") > int_of(status, "readyReplicas"):
        errs.append(
            FieldError.invalid(
                "status.availableReplicas",
                int_of(status, "availableReplicas"),
                "cannot be greater than readyReplicas",
            )
        )


def validate_deployment_status(new: JSON, old: JSON | None) -> list[FieldError]:
    """``ValidateDeploymentStatus`` (+ collisionCount may not decrease)."""
    errs: Errs = []
    status = obj(new, "status")
    _status_counts(
        errs,
        status,
        (
            "observedGeneration",
            "replicas",
            "updatedReplicas",
            "availableReplicas",
            "unavailableReplicas",
            "readyReplicas",
            "terminatingReplicas",
            "collisionCount",
        ),
    )
    _replica_bounds(errs, status, ("updatedReplicas", "availableReplicas"))
    _available_vs_ready(errs, status)
    _collision_count(errs, new, old)
    return errs


def validate_replica_set_status(new: JSON, old: JSON | None) -> list[FieldError]:
    """``ValidateReplicaSetStatus`` (ReplicationControllers share it)."""
    errs: Errs = []
    status = obj(new, "status")
    _status_counts(
        errs,
        status,
        (
            "replicas",
            "fullyLabeledReplicas",
            "readyReplicas",
            "availableReplicas",
            "terminatingReplicas",
            "observedGeneration",
        ),
    )
    _replica_bounds(errs, status, ("fullyLabeledReplicas", "readyReplicas", "availableReplicas"))
    _available_vs_ready(errs, status)
    return errs


def validate_stateful_set_status(new: JSON, old: JSON | None) -> list[FieldError]:
    """``ValidateStatefulSetStatus`` / ``ValidateStatefulSetStatusUpdate``."""
    errs: Errs = []
    status = obj(new, "status")
    _status_counts(
        errs,
        status,
        (
            "replicas",
            "readyReplicas",
            "currentReplicas",
            "updatedReplicas",
            "availableReplicas",
            "observedGeneration",
            "collisionCount",
        ),
    )
    _replica_bounds(errs, status, ("readyReplicas", "currentReplicas", "updatedReplicas"))
    _available_vs_ready(errs, status)
    _collision_count(errs, new, old)
    return errs


def validate_daemon_set_status(new: JSON, old: JSON | None) -> list[FieldError]:
    """``ValidateDaemonSetStatusUpdate``."""
    errs: Errs = []
    status = obj(new, "status")
    _status_counts(
        errs,
        status,
        (
            "currentNumberScheduled",
            "numberMisscheduled",
            "desiredNumberScheduled",
            "numberReady",
            "observedGeneration",
            "updatedNumberScheduled",
            "numberAvailable",
            "numberUnavailable",
            "collisionCount",
        ),
    )
    _collision_count(errs, new, old)
    return errs


RULES: Final[dict[tuple[str, str], KindRules]] = {
    ("apps/v1", "Deployment"): KindRules(
        default_deployment, validate_deployment, validate_deployment_status
    ),
    ("apps/v1", "ReplicaSet"): KindRules(
        default_replica_set, validate_replica_set, validate_replica_set_status
    ),
    ("apps/v1", "StatefulSet"): KindRules(
        default_stateful_set, validate_stateful_set, validate_stateful_set_status
    ),
    ("apps/v1", "DaemonSet"): KindRules(
        default_daemon_set, validate_daemon_set, validate_daemon_set_status
    ),
    ("apps/v1", "ControllerRevision"): KindRules(None, validate_controller_revision),
    ("v1", "ReplicationController"): KindRules(
        default_replication_controller,
        validate_replication_controller,
        validate_replica_set_status,
    ),
}
