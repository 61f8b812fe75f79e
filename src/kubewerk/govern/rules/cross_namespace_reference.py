"""``cross-namespace-reference``: references that can point into another namespace."""

from __future__ import annotations

from typing import Any

from kubewerk.govern.crd_view import PROP, CRDView, SchemaNode
from kubewerk.govern.findings import Severity
from kubewerk.govern.rules.base import Nodes, Rule, Section
from kubewerk.govern.rules.example import Example, Where
from kubewerk.govern.rules.names import words

_REF_WORDS = frozenset({"ref", "refs", "reference", "references"})
_REFERENT_WORDS = frozenset({"secret", "configmap", "service", "account", "serviceaccount"})


def _looks_like_reference(name: str, props: dict[str, Any]) -> bool:
    """Whether an object with a ``namespace`` property is a reference to another object:
    named ``...Ref``/``...Reference(s)``; shaped like a Secret key selector (name, key,
    namespace); or naming a Secret/ConfigMap/ServiceAccount and carrying a ``name``.
    Matchers and selectors (kustomize targets, Argo CD ignoreDifferences) are not."""
    ws = words(name) if name else ()
    if ws and ws[-1] in _REF_WORDS:
        return True
    if "name" in props and "key" in props:
        return True
    return "name" in props and any(w in _REFERENT_WORDS for w in ws)


class CrossNamespaceReference(Rule):
    """In a namespaced CRD, an object under `spec` (or any top-level property but
    `status`) that carries a string `namespace` and is a reference: named
    `...Ref`/`...Refs`/`...Reference(s)`, shaped like a key selector
    (`{name, key, namespace}`), or with a `name` and named with one of the words `secret`,
    `service`, `account`, `serviceaccount` or `configmap` (`configMap` is the two words
    config and map, and does not count). Whoever can create the object in one namespace
    can point the controller at another (a confused deputy). Matchers and selectors
    (`target: {kind, name, namespace}`) and embedded `metadata`/`objectMeta` are not
    references. Cluster-scoped CRDs need namespaces in references and are not checked.
    The finding points at the `namespace` property.
    """

    id = "cross-namespace-reference"
    severity = Severity.WARNING
    summary = "references carrying a namespace in a namespaced CRD"
    example = Example(
        Where.SPEC_PROPERTIES,
        bad="""\
sourceRef:
  type: object
  properties:
    name: {type: string}
    namespace: {type: string}
""",
        good="""\
sourceRef:
  type: object
  properties:
    name: {type: string}
""",
        note="""\
References then resolve in the object's own namespace. Where crossing namespaces is the
point, require an explicit grant in the target namespace, as Gateway API's ReferenceGrant
does.""",
    )
    nodes = Nodes(section=Section.NOT_STATUS, min_depth=2, keyword="properties")

    @classmethod
    def applies(cls, crd: CRDView) -> bool:
        return crd.namespaced

    def visit(self, node: SchemaNode) -> None:
        props = node.child_properties()
        ns = props.get("namespace")
        if not isinstance(ns, dict) or ns.get("type") != "string":
            return
        name = node.name
        if node.step == PROP and name in ("metadata", "objectMeta"):
            return
        if not _looks_like_reference(name, props):
            return
        ns_node = SchemaNode(ns, node, PROP, "namespace", node.top, node.depth + 1)
        self.report(
            ns_node,
            f"{node.field_path()} can point into another namespace ({ns_node.field_path()}) "
            f"although {self.scope.crd.kind or 'the resource'} is namespaced: anyone who may "
            "create it in one namespace can make the controller act on objects in another. "
            "Resolve references in the object's own namespace, or require an explicit grant "
            "from the target namespace (as Gateway API's ReferenceGrant does)",
        )
