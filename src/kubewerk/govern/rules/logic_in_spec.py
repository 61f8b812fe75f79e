"""``logic-in-spec``: free-form strings that encode behaviour."""

from __future__ import annotations

import re
from typing import Any

from kubewerk.govern.crd_view import PROP, SchemaNode
from kubewerk.govern.findings import Severity
from kubewerk.govern.rules.base import VALIDATIONS, Nodes, Rule, Section
from kubewerk.govern.rules.example import Example, Where
from kubewerk.govern.rules.names import words

_LOGIC_HEADS = frozenset(
    {"policy", "strategy", "script", "expression", "condition", "rego", "cel", "lua", "jsonnet"}
)
_ENUM_LIKE_HEADS = frozenset({"policy", "strategy", "condition"})
# Fields of Kubernetes' own API types (PodSpec, container, volumes, webhooks, topology
# spread) that CRDs embed verbatim: enums upstream, validated by the API server when the
# controller creates the real object, and not something the CRD author chose.
_UPSTREAM_ENUM_FIELDS = frozenset(
    {
        "imagePullPolicy",
        "restartPolicy",
        "dnsPolicy",
        "terminationMessagePolicy",
        "preemptionPolicy",
        "fsGroupChangePolicy",
        "supplementalGroupsPolicy",
        "seLinuxChangePolicy",
        "nodeAffinityPolicy",
        "nodeTaintsPolicy",
        "matchPolicy",
        "reinvocationPolicy",
        "failurePolicy",
        "sideEffects",
        "whenUnsatisfiable",
        "selectPolicy",
        "podManagementPolicy",
        "persistentVolumeReclaimPolicy",
        "externalTrafficPolicy",
        "internalTrafficPolicy",
        "concurrencyPolicy",
        "resizePolicy",
        "restartPolicyRules",
        "volumeBindingMode",
        "mountPropagation",
        "recursiveReadOnly",
        "pullPolicy",
        "podReplacementPolicy",
    }
)
_NAMES_SOMETHING = re.compile(
    r"\bname of\b|\breference to\b|\brefers? to\b|\bnamespace/name\b", re.I
)


def logic_head(name: str) -> str | None:
    """The behaviour word a field name ends in (``policy``, ``expression``, ...), if any."""
    ws = words(name)
    if ws and ws[-1] in _LOGIC_HEADS:
        return ws[-1]
    return None


def _constrained_string(schema: dict[str, Any]) -> bool:
    return any(k in schema for k in ("enum", "pattern", "format", VALIDATIONS)) or bool(
        schema.get("x-kubernetes-int-or-string")
    )


class LogicInSpec(Rule):
    """A string property outside `status` whose name ends in `policy`, `strategy`,
    `condition`, `script`, `expression`, `rego`, `cel`, `lua` or `jsonnet`, with no
    `enum`, `pattern`, `format` or `x-kubernetes-validations`: any text is accepted and
    only fails in the controller. For policy/strategy/condition the fix is an enum; for
    code the fix is structure, or at least bounds and a validation that compiles it.

    Not flagged: the fields of Kubernetes' own types that CRDs embed verbatim
    (`imagePullPolicy`, `restartPolicy`, `dnsPolicy`, ...: enums upstream, validated when
    the real Pod is made); strings whose description says they are the *name of*, a
    *reference to*, or a `namespace/name` of something (they name a policy, they do not
    encode one); status fields.
    """

    id = "logic-in-spec"
    severity = Severity.WARNING
    summary = (
        "free-form spec strings that encode behaviour (...policy, ...strategy, ...script, "
        "...expression, ...condition) with no enum, pattern or format"
    )
    example = Example(
        Where.SPEC_PROPERTIES,
        bad="retryPolicy: {type: string}\n",
        good="retryPolicy: {type: string, enum: [Always, OnFailure, Never]}\n",
    )
    nodes = Nodes(types=frozenset({"string"}), section=Section.NOT_STATUS)

    def visit(self, node: SchemaNode) -> None:
        if node.step != PROP:
            return
        s = node.schema
        name = node.key
        head = logic_head(name)
        if head is None or _constrained_string(s) or name in _UPSTREAM_ENUM_FIELDS:
            return
        desc = s.get("description")
        if isinstance(desc, str) and _NAMES_SOMETHING.search(desc[:300]):
            return  # the string names a policy/strategy object, it does not encode one
        if head in _ENUM_LIKE_HEADS:
            advice = (
                "List the supported values in an enum (or model the choice as structured fields)"
            )
        else:
            advice = (
                "Model the behaviour as structured fields; if an expression language is the "
                "point, constrain it (maxLength, a pattern or x-kubernetes-validations that "
                "compile it) so bad input is rejected at admission"
            )
        self.report(
            node,
            f"{node.field_path()} is a free-form string that encodes behaviour ({head}) "
            f"with no enum, pattern or format: any text is accepted and only fails in the "
            f"controller. {advice}",
        )
