"""ValidatingAdmissionPolicy variables whose values are lists or maps, read by later
variables, validations and message expressions (they failed with "Non-CEL value type ...
_CelListItemAccessor" when a list result was handed to another evaluation)."""

from __future__ import annotations

from typing import Any

from kubewerk.schema.admission_policy import Request, admit, compile_policy

V1 = "admissionregistration.k8s.io/v1"


def deployment(*images: str) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default", "labels": {"team": "a"}},
        "spec": {
            "template": {
                "spec": {
                    "containers": [
                        {"name": f"c{i}", "image": image} for i, image in enumerate(images)
                    ]
                }
            }
        },
    }


POLICY = {
    "apiVersion": V1,
    "kind": "ValidatingAdmissionPolicy",
    "metadata": {"name": "p"},
    "spec": {
        "matchConstraints": {
            "resourceRules": [
                {
                    "apiGroups": ["apps"],
                    "apiVersions": ["v1"],
                    "operations": ["CREATE"],
                    "resources": ["deployments"],
                }
            ]
        },
        "variables": [
            {"name": "containers", "expression": "object.spec.template.spec.containers"},
            {"name": "images", "expression": "variables.containers.map(c, c.image)"},
            {"name": "untagged", "expression": "variables.images.filter(i, !i.contains(':'))"},
            {"name": "labels", "expression": "object.metadata.labels"},
            {"name": "nested", "expression": "{'l': variables.labels, 'i': variables.images}"},
        ],
        "validations": [
            {
                "expression": "size(variables.untagged) == 0",
                "messageExpression": "'untagged: ' + variables.untagged.join(', ')",
            },
            {
                "expression": "variables.nested.l.team == 'a' && "
                "variables.nested.i.size() == variables.containers.size()",
                "message": "nested",
            },
        ],
    },
}
BINDING = {
    "apiVersion": V1,
    "kind": "ValidatingAdmissionPolicyBinding",
    "metadata": {"name": "b"},
    "spec": {"policyName": "p", "validationActions": ["Deny"]},
}


def test_list_and_map_variables_are_read_by_later_expressions() -> None:
    pol = compile_policy(POLICY)
    ok = admit([pol], [BINDING], Request.for_object("CREATE", deployment("a:1", "b:2"), None))
    assert ok.allowed, ok.error
    denied = admit(
        [pol], [BINDING], Request.for_object("CREATE", deployment("a:1", "b", "c"), None)
    )
    assert denied.error is not None
    assert denied.error.message == (
        "deployments.apps \"web\" is forbidden: ValidatingAdmissionPolicy 'p' with binding "
        "'b' denied request: untagged: b, c"
    )
