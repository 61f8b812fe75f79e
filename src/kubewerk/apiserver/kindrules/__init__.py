"""Defaults and validation of the built-in Kubernetes kinds, as pure functions per kind.

What kube-apiserver does to a typed object between decoding and storage, without I/O:

* :func:`defaulter` gives the function that applies the kind's defaults (the
  ``SetObjectDefaults_*`` of ``pkg/apis/<group>/<version>/zz_generated.defaults.go``, the
  ``SetDefaults_*`` they call and the ``+default`` markers). It mutates a whole object, in
  its own apiVersion, in place; applying it twice changes nothing more than applying it once.
* :func:`validator` gives the function the main endpoint runs on create (``old`` is None)
  and on update (``old`` is the stored object; immutable fields included).
* :func:`status_validator` gives the function a write through ``/status`` runs.

Every validator returns ``list[FieldError]`` with kube-apiserver's exact messages and field
paths from the object root (``spec.template.spec.containers[0].image``); an empty list
means valid. ObjectMeta itself (name rules, labels, annotations) is the strategy's and is
not checked here. Kinds without an entry give ``None``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from kubewerk.apiserver.kindrules import (
    autoscaling,
    batch,
    cluster,
    networking,
    pod,
    policy,
    service,
    storage,
    workloads,
)
from kubewerk.apiserver.kindrules.common import KindRules
from kubewerk.core.errors import FieldError

__all__ = [
    "DEFAULTERS",
    "JSON",
    "STATUS_VALIDATORS",
    "VALIDATORS",
    "Defaulter",
    "Validator",
    "defaulter",
    "status_validator",
    "validator",
]

JSON = dict[str, Any]
Defaulter = Callable[[JSON], None]
Validator = Callable[[JSON, JSON | None], list[FieldError]]

_MODULES: Final[tuple[dict[tuple[str, str], KindRules], ...]] = (
    pod.RULES,
    workloads.RULES,
    batch.RULES,
    service.RULES,
    storage.RULES,
    cluster.RULES,
    networking.RULES,
    policy.RULES,
    autoscaling.RULES,
)

DEFAULTERS: Final[dict[tuple[str, str], Defaulter]] = {}
"""``(apiVersion, kind)`` -> the kind's defaulter."""
VALIDATORS: Final[dict[tuple[str, str], Validator]] = {}
"""``(apiVersion, kind)`` -> the main endpoint's validator (create and update)."""
STATUS_VALIDATORS: Final[dict[tuple[str, str], Validator]] = {}
"""``(apiVersion, kind)`` -> the ``/status`` endpoint's validator."""


def defaulter(api_version: str, kind: str) -> Defaulter | None:
    """The defaulter of ``kind`` in ``api_version``, or None when kubewerk has none."""
    return DEFAULTERS.get((api_version, kind))


def validator(api_version: str, kind: str) -> Validator | None:
    """The create/update validator of ``kind`` in ``api_version``, or None."""
    return VALIDATORS.get((api_version, kind))


def status_validator(api_version: str, kind: str) -> Validator | None:
    """The ``/status`` validator of ``kind`` in ``api_version``, or None."""
    return STATUS_VALIDATORS.get((api_version, kind))


def _fill() -> None:
    for table in _MODULES:
        for key, rules in table.items():
            if rules.defaulter is not None:
                DEFAULTERS[key] = rules.defaulter
            if rules.validator is not None:
                VALIDATORS[key] = rules.validator
            if rules.status_validator is not None:
                STATUS_VALIDATORS[key] = rules.status_validator


_fill()
