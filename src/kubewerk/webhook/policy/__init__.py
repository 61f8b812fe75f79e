"""Policies as data: CEL checks composed in Python or YAML, compiled to VAP + binding.

::

    from kubewerk.webhook.policy import Policy, ConfigMapParams, chain, check, rule

    replica_limit = Policy(
        name="replica-limit",
        match=[rule("apps", "v1", "deployments")],
        params=ConfigMapParams("replica-limits", namespace="policy-system"),
        check=chain(
            check("has(object.spec.replicas)", "spec.replicas is required"),
            check("object.spec.replicas <= int(params.data.max)", "too many replicas"),
        ),
    )

``kubewerk gen policy MODULE -o DIR`` writes every :class:`Policy` of a module (or of a
YAML file, :func:`policy_from_data`) as ``<name>.yaml`` (the policy and its binding,
``admissionregistration.k8s.io/v1``, for clusters ≥ 1.30); ``kubewerk policy test``
evaluates them offline with :mod:`kubewerk.schema.admission_policy`, the engine the
embedded server uses. Composition semantics: :mod:`.compose`; the shipped Secret
reference allow-list: :mod:`.secret_refs`. See docs/policy.md.
"""

from .compose import (
    AllOf,
    AnyOf,
    Chain,
    Check,
    Node,
    Not,
    PolicyDefinitionError,
    all_of,
    any_of,
    chain,
    check,
    from_data,
    not_,
)
from .policy import ConfigMapParams, Policy, policy_from_data, rule
from .secret_refs import allowlist_configmap, secret_ref_denials, secret_ref_policy

__all__ = [
    "AllOf",
    "AnyOf",
    "Chain",
    "Check",
    "ConfigMapParams",
    "Node",
    "Not",
    "Policy",
    "PolicyDefinitionError",
    "all_of",
    "allowlist_configmap",
    "any_of",
    "chain",
    "check",
    "from_data",
    "not_",
    "policy_from_data",
    "rule",
    "secret_ref_denials",
    "secret_ref_policy",
]
