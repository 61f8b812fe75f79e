"""A policy as data: what it matches, its check, its params; compiled to VAP + binding.

:class:`Policy` compiles to an ``admissionregistration.k8s.io/v1``
ValidatingAdmissionPolicy and its ValidatingAdmissionPolicyBinding (GA in Kubernetes
1.30; only v1 fields are used). Rules kept in a ConfigMap are the policy's params:
``params=ConfigMapParams("limits", namespace="policy-system")`` sets ``paramKind: v1
ConfigMap`` and the binding's ``paramRef``; expressions read ``params.data.<key>``
(strings: a list is written comma-separated and read with ``.split(',')``). Without a
namespace the ConfigMap is looked up in the namespace of the object being admitted
(one ConfigMap per namespace). kube-apiserver reads params from its informer, so a
changed ConfigMap decides the next request; the embedded server does the same.

The YAML form (:func:`policy_from_data`)::

    name: replica-limit
    match:
      - {apiGroups: [apps], apiVersions: [v1], resources: [deployments],
         operations: [CREATE, UPDATE]}
    params: {configMap: replica-limits, namespace: policy-system}
    validationActions: [Deny]
    check:
      chain:
        - {expression: "has(object.spec.replicas)", message: "spec.replicas is required"}
        - expression: "object.spec.replicas <= int(params.data.max)"
          messageExpression: "'at most ' + params.data.max + ' replicas'"
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from .compose import Node, PolicyDefinitionError, from_data

API_VERSION: Final = "admissionregistration.k8s.io/v1"


def rule(
    group: str,
    version: str,
    resource: str,
    operations: Sequence[str] = ("CREATE", "UPDATE"),
    *,
    scope: str = "*",
) -> dict[str, Any]:
    """One ``resourceRules`` entry (``rule("apps", "v1", "deployments")``)."""
    return {
        "apiGroups": [group],
        "apiVersions": [version],
        "resources": [resource],
        "operations": list(operations),
        "scope": scope,
    }


@dataclass(frozen=True)
class ConfigMapParams:
    """Params from a ConfigMap: by name (in ``namespace``, else the object's namespace)."""

    name: str
    namespace: str | None = None
    not_found: str = "Deny"

    def param_ref(self) -> dict[str, Any]:
        ref: dict[str, Any] = {"name": self.name, "parameterNotFoundAction": self.not_found}
        if self.namespace:
            ref["namespace"] = self.namespace
        return ref


@dataclass(frozen=True)
class Policy:
    """A ValidatingAdmissionPolicy written as data."""

    name: str
    match: Sequence[Mapping[str, Any]]
    check: Node
    params: ConfigMapParams | None = None
    failure_policy: str = "Fail"
    validation_actions: Sequence[str] = ("Deny",)
    variables: Mapping[str, str] = field(default_factory=dict)
    match_conditions: Mapping[str, str] = field(default_factory=dict)
    namespace_selector: Mapping[str, Any] | None = None
    object_selector: Mapping[str, Any] | None = None
    labels: Mapping[str, str] = field(default_factory=dict)

    @property
    def binding_name(self) -> str:
        return f"{self.name}-binding"

    def to_policy(self) -> dict[str, Any]:
        """The ValidatingAdmissionPolicy object."""
        constraints: dict[str, Any] = {
            "resourceRules": [dict(r) for r in self.match],
            "matchPolicy": "Equivalent",
            "namespaceSelector": dict(self.namespace_selector or {}),
            "objectSelector": dict(self.object_selector or {}),
        }
        spec: dict[str, Any] = {
            "failurePolicy": self.failure_policy,
            "matchConstraints": constraints,
        }
        if self.params is not None:
            spec["paramKind"] = {"apiVersion": "v1", "kind": "ConfigMap"}
        if self.match_conditions:
            spec["matchConditions"] = [
                {"name": n, "expression": e} for n, e in self.match_conditions.items()
            ]
        if self.variables:
            spec["variables"] = [{"name": n, "expression": e} for n, e in self.variables.items()]
        spec["validations"] = self.check.validations()
        meta: dict[str, Any] = {"name": self.name}
        if self.labels:
            meta["labels"] = dict(self.labels)
        return {
            "apiVersion": API_VERSION,
            "kind": "ValidatingAdmissionPolicy",
            "metadata": meta,
            "spec": spec,
        }

    def to_binding(self) -> dict[str, Any]:
        """The ValidatingAdmissionPolicyBinding object."""
        spec: dict[str, Any] = {
            "policyName": self.name,
            "validationActions": list(self.validation_actions),
        }
        if self.params is not None:
            spec["paramRef"] = self.params.param_ref()
        meta: dict[str, Any] = {"name": self.binding_name}
        if self.labels:
            meta["labels"] = dict(self.labels)
        return {
            "apiVersion": API_VERSION,
            "kind": "ValidatingAdmissionPolicyBinding",
            "metadata": meta,
            "spec": spec,
        }

    def to_objects(self) -> list[dict[str, Any]]:
        """The policy and its binding."""
        return [self.to_policy(), self.to_binding()]


def _str_map(value: Any, where: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise PolicyDefinitionError(f"{where}: expected a mapping of names to CEL strings")
    return dict(value)


def policy_from_data(data: Any, where: str = "policy") -> Policy:
    """A :class:`Policy` from its YAML form (see the module docstring)."""
    if not isinstance(data, Mapping):
        raise PolicyDefinitionError(f"{where}: expected a mapping")
    name = data.get("name")
    if not isinstance(name, str) or not name:
        raise PolicyDefinitionError(f"{where}.name: required")
    where = f"policy {name!r}"
    match = data.get("match")
    if not isinstance(match, list) or not match or not all(isinstance(r, Mapping) for r in match):
        raise PolicyDefinitionError(f"{where}.match: expected a list of resource rules")
    rules = []
    for r in match:
        r = dict(r)
        r.setdefault("scope", "*")
        r.setdefault("operations", ["CREATE", "UPDATE"])
        rules.append(r)
    if "check" not in data:
        raise PolicyDefinitionError(f"{where}.check: required")
    params = None
    p = data.get("params")
    if p is not None:
        if not isinstance(p, Mapping) or not isinstance(p.get("configMap"), str):
            raise PolicyDefinitionError(
                f"{where}.params: expected {{configMap: NAME, namespace: NS}}"
            )
        params = ConfigMapParams(p["configMap"], p.get("namespace"), p.get("notFound", "Deny"))
    actions = data.get("validationActions", ["Deny"])
    if not isinstance(actions, list):
        raise PolicyDefinitionError(f"{where}.validationActions: expected a list")
    return Policy(
        name=name,
        match=rules,
        check=from_data(data["check"], f"{where}.check"),
        params=params,
        failure_policy=str(data.get("failurePolicy", "Fail")),
        validation_actions=tuple(actions),
        variables=_str_map(data.get("variables"), f"{where}.variables"),
        match_conditions=_str_map(data.get("matchConditions"), f"{where}.matchConditions"),
        namespace_selector=data.get("namespaceSelector"),
        object_selector=data.get("objectSelector"),
    )
