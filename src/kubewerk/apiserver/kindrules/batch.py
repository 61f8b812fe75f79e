"""batch/v1 Job and CronJob: defaults (``pkg/apis/batch/v1/defaults.go``) and
validation (``pkg/apis/batch/validation``), with the pure part of the Job strategy's
selector generation (:func:`generate_job_selector`) for the REST layer to call."""

from __future__ import annotations

import copy
from typing import Any, Final
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from kubewerk.apiserver.kindrules.common import (
    JSON,
    Errs,
    KindRules,
    check_enum,
    check_immutable,
    check_label_selector,
    check_nonnegative,
    ensure,
    int_of,
    items,
    obj,
    selector_is_valid,
    selector_matches,
    selector_value,
    set_default,
    str_of,
    struct_value,
)
from kubewerk.apiserver.kindrules.cron import CronError, parse_standard
from kubewerk.apiserver.kindrules.pod import default_pod_template, validate_pod_template_spec
from kubewerk.core.errors import FieldError

CONTROLLER_UID_LABEL: Final = "batch.kubernetes.io/controller-uid"
JOB_NAME_LABEL: Final = "batch.kubernetes.io/job-name"
LEGACY_CONTROLLER_UID_LABEL: Final = "controller-uid"
LEGACY_JOB_NAME_LABEL: Final = "job-name"
MAX_INT32: Final = 2**31 - 1
MAX_PARALLELISM_INDEXED: Final = 100_000
COMPLETION_MODES: Final = ("NonIndexed", "Indexed")
POD_TEMPLATE_ORDER: Final = ("metadata", "spec")


# -- defaults ------------------------------------------------------------------


def _default_job_spec_policies(spec: JSON) -> None:
    for rule in items(obj(spec, "podFailurePolicy"), "rules"):
        for pattern in items(rule, "onPodConditions"):
            if not pattern.get("status"):
                pattern["status"] = "True"


def default_job(job: JSON) -> None:
    """``SetObjectDefaults_Job``: completions and parallelism 1 when both are unset,
    backoffLimit 6 (2147483647 with backoffLimitPerIndex), labels from the template
    when the Job has none, completionMode NonIndexed, suspend false,
    podReplacementPolicy (Failed with a podFailurePolicy, else TerminatingOrFailed)."""
    spec = ensure(job, "spec")
    if spec.get("completions") is None and spec.get("parallelism") is None:
        spec["completions"] = 1
        spec["parallelism"] = 1
    set_default(spec, "parallelism", 1)
    if spec.get("backoffLimit") is None:
        spec["backoffLimit"] = MAX_INT32 if spec.get("backoffLimitPerIndex") is not None else 6
    template_labels = obj(obj(spec, "template"), "metadata").get("labels")
    meta = ensure(job, "metadata")
    if isinstance(template_labels, dict) and not meta.get("labels"):
        meta["labels"] = dict(template_labels)
    set_default(spec, "completionMode", "NonIndexed")
    set_default(spec, "suspend", False)
    if spec.get("podReplacementPolicy") is None:
        failure_policy = spec.get("podFailurePolicy") is not None
        spec["podReplacementPolicy"] = "Failed" if failure_policy else "TerminatingOrFailed"
    _default_job_spec_policies(spec)
    default_pod_template(spec.get("template"))


def default_cron_job(cj: JSON) -> None:
    """``SetObjectDefaults_CronJob``: concurrencyPolicy Allow, suspend false, history
    limits 3 and 1; the job template's pod template gets a PodSpec's defaults (the job
    template's own spec is defaulted when the Job is created from it)."""
    spec = ensure(cj, "spec")
    if not spec.get("concurrencyPolicy"):
        spec["concurrencyPolicy"] = "Allow"
    set_default(spec, "suspend", False)
    set_default(spec, "successfulJobsHistoryLimit", 3)
    set_default(spec, "failedJobsHistoryLimit", 1)
    job_spec = obj(obj(spec, "jobTemplate"), "spec")
    if job_spec:
        _default_job_spec_policies(job_spec)
        default_pod_template(job_spec.get("template"))


def generate_job_selector(job: JSON) -> None:
    """What the Job strategy's ``PrepareForCreate`` does unless ``spec.manualSelector``
    is true: the selector ``{batch.kubernetes.io/controller-uid: <uid>}`` and the
    controller-uid and job-name labels (both spellings) on the pod template. Needs
    ``metadata.uid`` set. Then, as the object read back from storage is defaulted
    again, a Job without labels takes the template's."""
    spec = ensure(job, "spec")
    if spec.get("manualSelector") is True:
        return
    meta = ensure(job, "metadata")
    uid, name = str_of(meta, "uid"), str_of(meta, "name")
    template = ensure(spec, "template")
    labels = ensure(ensure(template, "metadata"), "labels")
    labels[CONTROLLER_UID_LABEL] = uid
    labels[JOB_NAME_LABEL] = name
    labels[LEGACY_CONTROLLER_UID_LABEL] = uid
    labels[LEGACY_JOB_NAME_LABEL] = name
    spec["selector"] = {"matchLabels": {CONTROLLER_UID_LABEL: uid}}
    if not meta.get("labels"):
        meta["labels"] = dict(labels)


# -- validation ----------------------------------------------------------------


def _validate_job_spec(errs: Errs, spec: JSON, path: str) -> None:
    """``validateJobSpec``: what a Job and a CronJob's job template share."""
    for key in (
        "parallelism",
        "completions",
        "activeDeadlineSeconds",
        "backoffLimit",
        "ttlSecondsAfterFinished",
    ):
        check_nonnegative(errs, spec.get(key), f"{path}.{key}")
    mode = spec.get("completionMode")
    if mode is not None and mode not in COMPLETION_MODES:
        errs.append(FieldError.not_supported(f"{path}.completionMode", mode, COMPLETION_MODES))
    per_index = spec.get("backoffLimitPerIndex")
    if per_index is not None and mode != "Indexed":
        errs.append(
            FieldError.invalid(
                f"{path}.backoffLimitPerIndex", per_index, "requires indexed completion mode"
            )
        )
    if mode == "Indexed":
        if spec.get("completions") is None:
            errs.append(
                FieldError.required(f"{path}.completions", "when completion mode is Indexed")
            )
        parallelism = int_of(spec, "parallelism")
        if parallelism > MAX_PARALLELISM_INDEXED:
            errs.append(
                FieldError.invalid(
                    f"{path}.parallelism",
                    parallelism,
                    "must be less than or equal to 100000 when completion mode is Indexed",
                )
            )
    validate_pod_template_spec(errs, obj(spec, "template"), f"{path}.template")
    restart = obj(obj(spec, "template"), "spec").get("restartPolicy")
    if restart in (None, "", "Always"):
        errs.append(
            FieldError.required(
                f"{path}.template.spec.restartPolicy", 'valid values: "OnFailure", "Never"'
            )
        )
    elif restart not in ("OnFailure", "Never"):
        errs.append(
            FieldError.not_supported(
                f"{path}.template.spec.restartPolicy", restart, ("OnFailure", "Never")
            )
        )


def _template_labels(spec: JSON) -> Any:
    return obj(obj(spec, "template"), "metadata").get("labels")


def _validate_job_selector(errs: Errs, spec: JSON) -> None:
    """``ValidateJobSpec``'s selector part: required, valid, matching the template."""
    selector = spec.get("selector")
    if selector is None:
        errs.append(FieldError.required("spec.selector"))
    else:
        check_label_selector(errs, selector, "spec.selector")
    if selector_is_valid(selector):  # nil selects nothing: no template matches it
        labels = _template_labels(spec)
        if not selector_matches(selector, labels if isinstance(labels, dict) else {}):
            errs.append(
                FieldError.invalid(
                    "spec.template.metadata.labels",
                    labels,
                    "`selector` does not match template `labels`",
                )
            )


_SCHEDULING_FIELDS: Final = ("nodeSelector", "tolerations", "schedulingGates")


def _template_update(errs: Errs, new: JSON, old: JSON) -> None:
    """The template is immutable, except the scheduling directives, labels and
    annotations of a suspended Job that never started."""
    spec, old_spec = obj(new, "spec"), obj(old, "spec")
    template, old_template = spec.get("template"), old_spec.get("template")
    started = obj(old, "status").get("startTime") is not None
    if old_spec.get("suspend") is True and not started:
        merged = copy.deepcopy(old_template) if isinstance(old_template, dict) else {}
        new_t = template if isinstance(template, dict) else {}
        new_meta, merged_meta = obj(new_t, "metadata"), ensure(merged, "metadata")
        for key in ("labels", "annotations"):
            if key in new_meta:
                merged_meta[key] = new_meta[key]
            else:
                merged_meta.pop(key, None)
        new_pod, merged_pod = obj(new_t, "spec"), ensure(merged, "spec")
        affinity = obj(new_pod, "affinity")
        if "nodeAffinity" in affinity:
            ensure(merged_pod, "affinity")["nodeAffinity"] = affinity["nodeAffinity"]
        else:
            obj(merged_pod, "affinity").pop("nodeAffinity", None)
        for key in _SCHEDULING_FIELDS:
            if key in new_pod:
                merged_pod[key] = new_pod[key]
            else:
                merged_pod.pop(key, None)
        if merged == new_t:
            return
    if template != old_template:
        errs.append(
            FieldError.invalid(
                "spec.template", struct_value(template, POD_TEMPLATE_ORDER), "field is immutable"
            )
        )


def validate_job(new: JSON, old: JSON | None) -> list[FieldError]:
    """``ValidateJob`` / ``ValidateJobUpdate``: the spec, then on update the immutable
    completions (elastic for Indexed Jobs, in tandem with parallelism), selector,
    template, completionMode, podFailurePolicy, backoffLimitPerIndex, managedBy and
    successPolicy. The generated selector itself is not checked here (the strategy
    makes it: :func:`generate_job_selector`)."""
    errs: Errs = []
    spec = obj(new, "spec")
    _validate_job_spec(errs, spec, "spec")
    _validate_job_selector(errs, spec)
    if old is None:
        return errs
    old_spec = obj(old, "spec")
    completions, old_completions = spec.get("completions"), old_spec.get("completions")
    if spec.get("completionMode") != "Indexed":
        check_immutable(errs, completions, old_completions, "spec.completions")
    elif completions not in (old_completions, None, spec.get("parallelism")):
        errs.append(
            FieldError.invalid(
                "spec.completions",
                completions,
                "can only be modified in tandem with spec.parallelism",
            )
        )
    check_immutable(
        errs,
        spec.get("selector"),
        old_spec.get("selector"),
        "spec.selector",
        selector_value(spec.get("selector")),
    )
    _template_update(errs, new, old)
    for key in (
        "completionMode",
        "podFailurePolicy",
        "backoffLimitPerIndex",
        "managedBy",
        "successPolicy",
    ):
        check_immutable(errs, spec.get(key), old_spec.get(key), f"spec.{key}")
    return errs


def validate_job_status(new: JSON, old: JSON | None) -> list[FieldError]:
    """``ValidateJobStatus``: the counters are non-negative."""
    errs: Errs = []
    status = obj(new, "status")
    for key in ("active", "succeeded", "failed", "ready", "terminating"):
        check_nonnegative(errs, status.get(key), f"status.{key}")
    return errs


def validate_cron_job(new: JSON, old: JSON | None) -> list[FieldError]:
    """``ValidateCronJobCreate`` / ``ValidateCronJobUpdate``."""
    errs: Errs = []
    name = str_of(obj(new, "metadata"), "name")
    if old is None and len(name) > 52:
        errs.append(FieldError.invalid("metadata.name", name, "must be no more than 52 characters"))
    spec = obj(new, "spec")
    schedule = str_of(spec, "schedule")
    if not schedule:
        errs.append(FieldError.required("spec.schedule"))
    else:
        try:
            parse_standard(schedule)
        except CronError as err:
            errs.append(FieldError.invalid("spec.schedule", schedule, str(err)))
        if spec.get("timeZone") is not None and "TZ" in schedule:
            errs.append(
                FieldError.invalid(
                    "spec.schedule",
                    schedule,
                    "cannot use both timeZone field and TZ or CRON_TZ in schedule",
                )
            )
    zone = spec.get("timeZone")
    if isinstance(zone, str):
        try:
            if not zone or zone.lower() == "local":
                raise ZoneInfoNotFoundError(zone)
            ZoneInfo(zone)
        except (ZoneInfoNotFoundError, ValueError):
            errs.append(FieldError.invalid("spec.timeZone", zone, "unknown time zone " + zone))
    check_enum(
        errs,
        spec.get("concurrencyPolicy"),
        "spec.concurrencyPolicy",
        ("Allow", "Forbid", "Replace"),
    )
    for key in ("startingDeadlineSeconds", "successfulJobsHistoryLimit", "failedJobsHistoryLimit"):
        check_nonnegative(errs, spec.get(key), f"spec.{key}")
    job_spec = obj(obj(spec, "jobTemplate"), "spec")
    _validate_job_spec(errs, job_spec, "spec.jobTemplate.spec")
    if job_spec.get("selector") is not None:
        errs.append(
            FieldError.invalid(
                "spec.jobTemplate.spec.selector",
                selector_value(job_spec["selector"]),
                "`selector` will be auto-generated",
            )
        )
    if job_spec.get("manualSelector") is True:
        errs.append(
            FieldError.not_supported("spec.jobTemplate.spec.manualSelector", True, ("nil", "false"))
        )
    return errs


RULES: Final[dict[tuple[str, str], KindRules]] = {
    ("batch/v1", "Job"): KindRules(default_job, validate_job, validate_job_status),
    ("batch/v1", "CronJob"): KindRules(default_cron_job, validate_cron_job),
}
