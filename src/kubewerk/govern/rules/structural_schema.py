"""``structural-schema``: what the API server would refuse when the CRD is created."""

from __future__ import annotations

from typing import Any

from kubewerk.govern.crd_view import CRDView
from kubewerk.govern.findings import Severity, field_to_location
from kubewerk.govern.rules.base import Emit, RawFinding, Rule
from kubewerk.govern.rules.example import Example, Where


def structural_findings(crd: dict[str, Any]) -> list[RawFinding]:
    """What the API server would reject when this CRD is created (schema engine).

    An internal error in the engine becomes one finding saying so, so that it cannot
    hide the other rules' findings."""
    from kubewerk.schema import validate_crd

    try:
        errors = validate_crd(crd)
    except Exception as exc:  # an engine bug must not hide every other finding
        return [
            RawFinding(
                StructuralSchema.id,
                f"kubewerk could not check this CRD (internal error in the schema engine: "
                f"{type(exc).__name__}: {exc}); please report it",
                (),
            )
        ]
    return [
        RawFinding(
            StructuralSchema.id,
            f"the API server rejects this CRD: {err.message()}",
            field_to_location(err.field),
            err.field,
        )
        for err in errors
    ]


class StructuralSchema(Rule):
    """What the API server's CRD validation would reject, as `kubewerk.schema.validate_crd`
    checks it, with the API server's own message: `metadata.name` and `spec.names`, the
    API-approval annotation of `*.k8s.io` groups, scope, versions and
    `status.storedVersions`, subresources, printer columns and selectable fields,
    conversion settings, the structural schema rules and `x-kubernetes-*` extensions,
    defaults (pruned and validated against their schema), and CEL rules (they must
    compile; `oldSelf` only where it can be correlated; their estimated cost within the
    API server's limits: 10,000,000 per rule or message expression, 100,000,000 for a
    whole schema). A `v1beta1` CRD is reported here
    too, since the API server no longer accepts it. An internal error of the schema
    engine is reported as a finding of this rule instead of stopping the run.

    The cost is estimated as the API server does (cel-go's estimator with Kubernetes'
    size estimates); `unbounded-cel-input` shows each rule's figure and points at the
    unbounded inputs that usually make it large.
    """

    id = "structural-schema"
    severity = Severity.ERROR
    summary = "what the API server would reject when the CRD is created"
    example = Example(
        Where.SCHEMA_PROPERTIES,
        bad="spec: {properties: {size: {type: string}}}\n",
        good="spec: {type: object, properties: {size: {type: string}}}\n",
    )

    @classmethod
    def check_crd(cls, crd: CRDView, emit: Emit) -> None:
        for finding in structural_findings(crd.data):
            emit(finding)
