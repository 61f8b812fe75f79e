"""``batch/v1`` Job: the selector and labels a create generates (``pkg/registry/batch/job``
strategy's ``PrepareForCreate``, ``generateSelectorIfNeeded``).

Unless ``spec.manualSelector`` is true, the pod template gets the labels
``batch.kubernetes.io/controller-uid`` and ``controller-uid`` (the Job's uid),
``batch.kubernetes.io/job-name`` and ``job-name`` (its name), each only where absent,
and ``spec.selector.matchLabels`` gets ``batch.kubernetes.io/controller-uid``.
"""

from __future__ import annotations

from typing import Any

from kubewerk.apiserver.kinds.typed import TypedKindStrategy

JSON = dict[str, Any]

CONTROLLER_UID = "batch.kubernetes.io/controller-uid"
LEGACY_CONTROLLER_UID = "controller-uid"
JOB_NAME = "batch.kubernetes.io/job-name"
LEGACY_JOB_NAME = "job-name"


def generate_selector(job: JSON) -> None:
    """Add the generated selector and template labels to ``job`` (in place)."""
    spec = job.get("spec")
    if not isinstance(spec, dict) or spec.get("manualSelector") is True:
        return
    meta = job.get("metadata") or {}
    uid, name = str(meta.get("uid", "")), str(meta.get("name", ""))
    template = spec.get("template")
    if not isinstance(template, dict):
        template = spec["template"] = {}
    tmeta = template.get("metadata")
    if not isinstance(tmeta, dict):
        tmeta = template["metadata"] = {}
    labels = tmeta.get("labels")
    if not isinstance(labels, dict):
        labels = tmeta["labels"] = {}
    for key, value in (
        (LEGACY_CONTROLLER_UID, uid),
        (CONTROLLER_UID, uid),
        (LEGACY_JOB_NAME, name),
        (JOB_NAME, name),
    ):
        labels.setdefault(key, value)
    selector = spec.get("selector")
    if not isinstance(selector, dict):
        selector = spec["selector"] = {}
    match = selector.get("matchLabels")
    if not isinstance(match, dict):
        match = selector["matchLabels"] = {}
    match.setdefault(CONTROLLER_UID, uid)


class JobStrategy(TypedKindStrategy):
    """Jobs: generation 1, an empty status and the generated selector on create."""

    def prepare_for_create(self, obj: JSON) -> None:
        super().prepare_for_create(obj)
        generate_selector(obj)
