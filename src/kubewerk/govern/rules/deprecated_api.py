"""``deprecated-api``: CRDs written against ``apiextensions.k8s.io/v1beta1``."""

from __future__ import annotations

from kubewerk.govern.crd_view import CRDView
from kubewerk.govern.findings import Severity
from kubewerk.govern.rules.base import Emit, Rule
from kubewerk.govern.rules.example import Example, Where


class DeprecatedApi(Rule):
    """`apiextensions.k8s.io/v1beta1` CRDs are not served since Kubernetes 1.22. (Such a
    CRD is linted as the API server read it: the top-level `validation`, `subresources`
    and `version` apply to every version that does not set its own, and
    `preserveUnknownFields` defaults to true.)
    """

    id = "deprecated-api"
    severity = Severity.ERROR
    summary = "apiextensions.k8s.io/v1beta1 CRDs"
    example = Example(
        Where.CRD,
        bad="apiVersion: apiextensions.k8s.io/v1beta1\n",
        good="apiVersion: apiextensions.k8s.io/v1\n",
        note="With a schema per version, and `preserveUnknownFields: false` (the `v1` default).",
    )

    @classmethod
    def check_crd(cls, crd: CRDView, emit: Emit) -> None:
        if crd.is_v1beta1:
            emit(
                cls.finding(
                    "apiextensions.k8s.io/v1beta1 CustomResourceDefinition is no longer served "
                    "since Kubernetes 1.22: use apiextensions.k8s.io/v1 (a structural schema per "
                    "version under spec.versions[*].schema, spec.preserveUnknownFields: false)",
                    ("apiVersion",),
                )
            )
