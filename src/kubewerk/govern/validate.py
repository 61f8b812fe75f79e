"""``kubewerk validate``: offline validation of custom resources against their CRDs.

Each object goes through what the API server does on create (or, with an old object of
the same kind, namespace and name, on update): unknown fields are pruned (reported as
``unknown-field`` warnings, as ``kubectl`` shows the server's warnings), defaults are
applied, and the schema, its formats and CEL rules (transition rules too, on update)
are checked by :mod:`kubewerk.schema`. The given CRDs' CEL rules are held to the API
server's cost limits (``cel-cost`` findings); :func:`explain_costs` lists each
expression's estimated cost. An invalid object gives one ``invalid`` finding
whose message is the API server's own, e.g. ``Widget.example.com "w" is invalid: ...``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kubewerk.core.errors import ApiError, FieldError
from kubewerk.core.gvk import GroupVersionKind, split_api_version
from kubewerk.core.jsoncopy import copy_tree
from kubewerk.govern.crd_view import CRDView, as_dict, is_crd
from kubewerk.govern.findings import Finding, Severity, field_to_location
from kubewerk.govern.loader import Document

if TYPE_CHECKING:  # the schema engine is imported when a CRD is first compiled
    from kubewerk.schema import CompiledSchema

VALIDATE_RULES: dict[str, tuple[Severity, str]] = {
    "invalid": (Severity.ERROR, "the API server would reject the object (schema, formats, CEL)"),
    "unknown-field": (
        Severity.WARNING,
        "a field the schema does not declare (pruned by the API server)",
    ),
    "cel-cost": (
        Severity.ERROR,
        "a given CRD's CEL rules exceed the API server's cost limits (it would refuse the CRD)",
    ),
    "no-match": (
        Severity.ERROR,
        "no served version of a given CRD matches the object's apiVersion and kind "
        "(info when no CRD of its group was given)",
    ),
}


@dataclass(slots=True)
class ValidateResult:
    findings: list[Finding]
    documents: int
    objects: int


class CRDIndex:
    """The given CRDs by (group, version, kind), compiled on first use."""

    def __init__(self, crds: Iterable[Document]) -> None:
        self.by_gvk: dict[GroupVersionKind, tuple[CRDView, dict[str, Any]]] = {}
        self.groups: set[str] = set()
        self._compiled: dict[GroupVersionKind, CompiledSchema] = {}
        for doc in crds:
            if not is_crd(doc.data):
                continue
            view = CRDView(doc.data)
            self.groups.add(view.group)
            for v in view.versions:
                if v.served:
                    self.by_gvk.setdefault(
                        GroupVersionKind(view.group, v.name, view.kind), (view, doc.data)
                    )

    def compiled(self, key: GroupVersionKind) -> CompiledSchema:
        if key not in self._compiled:
            from kubewerk.schema import compile_crd_version

            _view, data = self.by_gvk[key]
            self._compiled[key] = compile_crd_version(data, key.version)
        return self._compiled[key]


def _object_key(obj: dict[str, Any]) -> tuple[str, str, str, str]:
    meta = as_dict(obj.get("metadata"))
    return (
        split_api_version(str(obj.get("apiVersion", ""))).group,
        str(obj.get("kind", "")),
        str(meta.get("namespace") or ""),
        str(meta.get("name") or ""),
    )


def _prepare(schema: CompiledSchema, obj: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """A copy of ``obj`` pruned and defaulted as the API server stores it, and the paths
    pruned (the loader refuses a document that contains itself, so a plain copy does)."""
    obj = copy_tree(obj)
    pruned = schema.prune(obj)
    schema.apply_defaults(obj)
    return obj, pruned


def validate_documents(
    crds: Iterable[Document],
    manifests: Sequence[Document],
    old: Sequence[Document] = (),
) -> ValidateResult:
    """Validate every custom resource among ``manifests`` (CRDs and objects without
    ``apiVersion``/``kind`` are skipped)."""
    index = CRDIndex(crds)
    olds: dict[tuple[str, str, str, str], dict[str, Any]] = {}
    for doc in old:
        if isinstance(doc.data, dict):
            olds.setdefault(_object_key(doc.data), doc.data)
    findings: list[Finding] = []
    for crd_doc in crds:
        findings.extend(_cost_findings(crd_doc))
    objects = 0
    for doc in manifests:
        obj = doc.data
        if not isinstance(obj, dict) or is_crd(obj):
            continue
        api_version, kind = obj.get("apiVersion"), obj.get("kind")
        if not isinstance(api_version, str) or not isinstance(kind, str):
            continue
        objects += 1
        findings.extend(_validate_one(doc, obj, api_version, kind, index, olds))
    return ValidateResult(findings, len(manifests), objects)


@dataclass(slots=True)
class ExpressionCost:
    """One CEL expression of a CRD with the API server's cost figures."""

    crd: str
    versions: tuple[str, ...]
    field: str
    expression: str
    per_call: int
    cardinality: int
    cost: int
    share: float
    over_limit: bool


def _crd_schemas(data: dict[str, Any]) -> list[tuple[tuple[str, ...], str, dict[str, Any]]]:
    """(versions, ``….openAPIV3Schema`` path as the API server names it, schema)."""
    from kubewerk.schema._crd_internal import CrdSpec, apply_v1_defaults
    from kubewerk.schema.crd_acceptance import _schema_paths

    spec = CrdSpec(apply_v1_defaults(data, None)["spec"])
    names = tuple(str(v.get("name", "")) for v in spec.versions)
    out = []
    for version, sp, schema in _schema_paths(spec):
        out.append((names if sp.startswith("spec.validation") else (version,), sp, schema))
    return out


def explain_costs(crds: Iterable[Document]) -> list[ExpressionCost]:
    """Every CEL rule and message expression of the given CRDs with its estimated cost
    (per evaluation, times how often it can run), its share of the per-CRD budget and
    whether it exceeds the per-expression limit."""
    from kubewerk.schema._structural import Structural
    from kubewerk.schema.cel.cost_limits import STATIC_ESTIMATED_COST_LIMIT, schema_costs

    out: list[ExpressionCost] = []
    for doc in crds:
        if not is_crd(doc.data) or doc.data.get("apiVersion") != "apiextensions.k8s.io/v1":
            continue
        name = str(as_dict(doc.data.get("metadata")).get("name") or "")
        for versions, sp, schema in _crd_schemas(doc.data):
            for r in schema_costs(Structural(schema), sp).rules:
                out.append(
                    ExpressionCost(
                        name,
                        versions,
                        r.field,
                        r.expression,
                        r.per_call,
                        r.cardinality,
                        r.cost,
                        r.share,
                        r.cost > STATIC_ESTIMATED_COST_LIMIT,
                    )
                )
    return out


def _cost_findings(doc: Document) -> list[Finding]:
    """The API server's CEL cost refusals of one CRD, as ``cel-cost`` findings."""
    if not is_crd(doc.data) or doc.data.get("apiVersion") != "apiextensions.k8s.io/v1":
        return []
    from kubewerk.schema._structural import Structural
    from kubewerk.schema.cel.cost_limits import schema_costs

    name = str(as_dict(doc.data.get("metadata")).get("name") or "")
    out = []
    for versions, sp, schema in _crd_schemas(doc.data):
        for err in schema_costs(Structural(schema), sp).errors(sp):
            out.append(
                doc.finding(
                    "cel-cost",
                    Severity.ERROR,
                    f"the API server rejects this CRD: {err.message()}",
                    field_to_location(err.field),
                    crd=name,
                    versions=versions,
                    field=err.field,
                )
            )
    return out


def _finding(
    doc: Document,
    rule: str,
    severity: Severity,
    message: str,
    name: str,
    field: str,
    extra: tuple[tuple[str, str], ...] = (),
) -> Finding:
    return doc.finding(
        rule, severity, message, field_to_location(field), crd=name, field=field, extra=extra
    )


def _validate_one(
    doc: Document,
    obj: dict[str, Any],
    api_version: str,
    kind: str,
    index: CRDIndex,
    olds: dict[tuple[str, str, str, str], dict[str, Any]],
) -> list[Finding]:
    group, version = split_api_version(api_version)
    key = GroupVersionKind(group, version, kind)
    meta = as_dict(obj.get("metadata"))
    name = str(meta.get("name") or meta.get("generateName") or "")
    label = f"{kind}/{name}" if name else kind
    if key not in index.by_gvk:
        known = group in index.groups
        return [
            _finding(
                doc,
                "no-match",
                Severity.ERROR if known else Severity.INFO,
                f'no matches for kind "{kind}" in version "{api_version}"'
                + ("" if known else " (no --crd defines this group; not validated)"),
                label,
                "apiVersion",
            )
        ]
    view, _data = index.by_gvk[key]
    schema = index.compiled(key)
    out: list[Finding] = []
    prepared, pruned = _prepare(schema, obj)
    for path in pruned:
        out.append(
            _finding(doc, "unknown-field", Severity.WARNING, f'unknown field "{path}"', label, path)
        )
    old_obj = olds.get(_object_key(obj))
    old_prepared = _prepare(schema, old_obj)[0] if old_obj is not None else None
    errors: list[FieldError] = []
    if not meta.get("name") and not meta.get("generateName"):
        errors.append(FieldError.required("metadata.name", "name or generateName is required"))
    errors.extend(schema.validate(prepared, old=old_prepared))
    if errors:
        message = ApiError.invalid(kind, view.group, str(meta.get("name") or ""), errors).message
        causes = tuple((f"cause{i}", e.message()) for i, e in enumerate(errors))
        out.append(
            _finding(doc, "invalid", Severity.ERROR, message, label, errors[0].field, causes)
        )
    return out
