"""``kubewerk compat``: what changed between two revisions of a CRD, and what it breaks.

Every change has a check id and a severity: ``error`` breaks existing clients or stored
objects, ``warning`` may break them, ``info`` is a safe addition. Versions defined in both
revisions are compared schema against schema (properties, items, additionalProperties,
recursively); the version list, scope, names and subresources are compared as well.
Locations point into the NEW document (for a removal: the nearest node that still
exists there).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from kubewerk.govern.crd_view import (
    CRDView,
    Location,
    VersionView,
    as_dict,
    is_crd,
    strip_descriptions,
)
from kubewerk.govern.findings import Finding, Severity
from kubewerk.govern.loader import Document

ERROR, WARNING, INFO = Severity.ERROR, Severity.WARNING, Severity.INFO


@dataclass(frozen=True, slots=True)
class Check:
    """A compatibility check: stable id, the severity it usually has, what it finds."""

    id: str
    severity: Severity
    summary: str


CHECKS: dict[str, Check] = {
    c.id: c
    for c in (
        Check("crd-removed", ERROR, "a CRD in OLD is missing from NEW"),
        Check("crd-added", INFO, "a CRD only in NEW"),
        Check("scope-changed", ERROR, "spec.scope changed (Namespaced <-> Cluster)"),
        Check(
            "names-changed",
            ERROR,
            "group, kind, plural or listKind changed; short names removed (warning)",
        ),
        Check("version-removed", ERROR, "a served or stored version removed or no longer served"),
        Check("version-added", INFO, "a new version"),
        Check(
            "storage-version-changed",
            ERROR,
            "storage version changed without conversion between differing schemas (error); "
            "with conversion or identical schemas (info)",
        ),
        Check(
            "field-removed",
            ERROR,
            "a property removed (warning where unknown fields are preserved)",
        ),
        Check("field-added", INFO, "a new optional property"),
        Check("type-changed", ERROR, "a property's type changed (integer to number: warning)"),
        Check("required-added", ERROR, "a field became required (warning when it has a default)"),
        Check(
            "enum-changed",
            ERROR,
            "enum constraint added or a value removed (error); value added (info)",
        ),
        Check(
            "bounds-changed",
            ERROR,
            "maximum/maxLength/maxItems/maxProperties added or lowered, minimum/... added or "
            "raised (error); bounds loosened (info)",
        ),
        Check(
            "pattern-changed", ERROR, "pattern added (error) or changed (warning); removed (info)"
        ),
        Check("format-changed", WARNING, "format added or changed"),
        Check("default-changed", WARNING, "default added, changed or removed"),
        Check("nullable-removed", ERROR, "nullable: true removed"),
        Check(
            "list-type-changed", ERROR, "x-kubernetes-list-type, list-map-keys or map-type changed"
        ),
        Check(
            "preserve-unknown-fields-removed",
            ERROR,
            "x-kubernetes-preserve-unknown-fields removed: unknown fields are pruned from then on",
        ),
        Check(
            "cel-rule-changed",
            WARNING,
            "CEL rule added or changed (a potential break, shown with the rule)",
        ),
        Check("cel-rule-removed", INFO, "CEL rule removed"),
        Check("subresource-changed", ERROR, "status or scale subresource removed or changed"),
    )
}

_UPPER_BOUNDS = ("maximum", "maxLength", "maxItems", "maxProperties")
_LOWER_BOUNDS = ("minimum", "minLength", "minItems", "minProperties")


@dataclass(frozen=True, slots=True)
class Change:
    check: str
    severity: Severity
    message: str
    location: Location
    field: str = ""
    versions: tuple[str, ...] = ()
    extra: tuple[tuple[str, str], ...] = ()


Emit = Callable[[Change], None]


def _join(field: str, name: str) -> str:
    return f"{field}.{name}" if field else name


def _type_of(s: dict[str, Any]) -> str:
    if s.get("x-kubernetes-int-or-string"):
        return "int-or-string"
    t = s.get("type")
    return t if isinstance(t, str) else ""


def _rules(s: dict[str, Any]) -> list[str]:
    rules = s.get("x-kubernetes-validations")
    out: list[str] = []
    if isinstance(rules, list):
        for r in rules:
            if isinstance(r, dict) and isinstance(r.get("rule"), str):
                out.append(r["rule"].strip())
    return out


class _SchemaDiff:
    def __init__(self, emit: Emit, versions: tuple[str, ...]) -> None:
        self.emit_raw = emit
        self.versions = versions

    def emit(
        self,
        check: str,
        severity: Severity,
        message: str,
        location: Location,
        field: str,
        extra: tuple[tuple[str, str], ...] = (),
    ) -> None:
        self.emit_raw(Change(check, severity, message, location, field, self.versions, extra))

    def diff(self, old: dict[str, Any], new: dict[str, Any], loc: Location, field: str) -> None:
        if old is new or old == new:
            return
        where = field or "the root"
        self._type(old, new, loc, field, where)
        self._enum(old, new, loc, field, where)
        self._bounds(old, new, loc, field, where)
        self._pattern_format(old, new, loc, field, where)
        self._default_nullable(old, new, loc, field, where)
        self._lists(old, new, loc, field, where)
        self._cel(old, new, loc, field, where)
        self._properties(old, new, loc, field)
        oi, ni = old.get("items"), new.get("items")
        if isinstance(oi, dict) and isinstance(ni, dict):
            self.diff(oi, ni, (*loc, "items"), field + "[*]")
        oa, na = old.get("additionalProperties"), new.get("additionalProperties")
        if isinstance(oa, dict) and isinstance(na, dict):
            self.diff(oa, na, (*loc, "additionalProperties"), field + "[*]")
        elif (
            isinstance(oa, dict)
            and na is None
            and not new.get("x-kubernetes-preserve-unknown-fields")
        ):
            self.emit(
                "field-removed",
                ERROR,
                f"{where} no longer allows arbitrary keys (additionalProperties removed): "
                "existing entries are pruned",
                loc,
                field,
            )

    def _type(
        self, old: dict[str, Any], new: dict[str, Any], loc: Location, field: str, where: str
    ) -> None:
        ot, nt = _type_of(old), _type_of(new)
        if ot == nt:
            return
        if not ot:
            sev, why = WARNING, f"{where} now requires type {nt} (it accepted any type)"
        elif ot == "integer" and nt in ("number", "int-or-string"):
            sev, why = (
                WARNING,
                f"{where} widened from {ot} to {nt}: typed clients decoding an integer break",
            )
        elif ot in ("integer", "string") and nt == "int-or-string":
            sev, why = (
                WARNING,
                f"{where} widened from {ot} to {nt}: typed clients decoding a {ot} break",
            )
        else:
            sev, why = (
                ERROR,
                f"{where} changed type from {ot or 'any'} to {nt or 'any'}: "
                "stored objects and clients using the old type break",
            )
        self.emit("type-changed", sev, why, (*loc, "type"), field)

    def _enum(
        self, old: dict[str, Any], new: dict[str, Any], loc: Location, field: str, where: str
    ) -> None:
        oe, ne = old.get("enum"), new.get("enum")
        if oe == ne or not isinstance(ne, list):
            return
        if not isinstance(oe, list):
            values = ", ".join(map(repr, ne))
            self.emit(
                "enum-changed",
                ERROR,
                f"{where} is now restricted to an enum ({values}): "
                "existing values outside it are rejected on the next update",
                (*loc, "enum"),
                field,
            )
            return
        removed = [v for v in oe if v not in ne]
        added = [v for v in ne if v not in oe]
        if removed:
            self.emit(
                "enum-changed",
                ERROR,
                f"{where} no longer accepts {', '.join(map(repr, removed))}: "
                "objects using them fail validation on update",
                (*loc, "enum"),
                field,
            )
        if added:
            self.emit(
                "enum-changed",
                INFO,
                f"{where} accepts new value(s) {', '.join(map(repr, added))} "
                "(clients switching over the enum may need updating)",
                (*loc, "enum"),
                field,
            )

    def _bounds(
        self, old: dict[str, Any], new: dict[str, Any], loc: Location, field: str, where: str
    ) -> None:
        for key in (*_UPPER_BOUNDS, *_LOWER_BOUNDS):
            ov, nv = old.get(key), new.get(key)
            if ov == nv:
                continue
            upper = key in _UPPER_BOUNDS
            if nv is None:
                self.emit(
                    "bounds-changed", INFO, f"{where}: {key} {ov} removed (loosened)", loc, field
                )
                continue
            if not isinstance(nv, int | float) or (
                ov is not None and not isinstance(ov, int | float)
            ):
                continue
            if ov is None:
                self.emit(
                    "bounds-changed",
                    ERROR,
                    f"{where}: {key}: {nv} added: existing "
                    "values beyond it fail validation on update",
                    (*loc, key),
                    field,
                )
            elif (nv < ov) if upper else (nv > ov):
                self.emit(
                    "bounds-changed",
                    ERROR,
                    f"{where}: {key} tightened from {ov} to {nv}: "
                    "existing values beyond it fail validation on update",
                    (*loc, key),
                    field,
                )
            else:
                self.emit(
                    "bounds-changed",
                    INFO,
                    f"{where}: {key} loosened from {ov} to {nv}",
                    (*loc, key),
                    field,
                )
        for key, bound in (("exclusiveMaximum", "maximum"), ("exclusiveMinimum", "minimum")):
            if new.get(key) is True and old.get(key) is not True and bound in new:
                self.emit(
                    "bounds-changed",
                    ERROR,
                    f"{where}: {key} turned on: the value {new[bound]} itself is no longer valid",
                    (*loc, key),
                    field,
                )

    def _pattern_format(
        self, old: dict[str, Any], new: dict[str, Any], loc: Location, field: str, where: str
    ) -> None:
        op, np_ = old.get("pattern"), new.get("pattern")
        if op != np_:
            if op is None:
                self.emit(
                    "pattern-changed",
                    ERROR,
                    f"{where}: pattern {np_!r} added: existing values "
                    "that do not match fail validation on update",
                    (*loc, "pattern"),
                    field,
                )
            elif np_ is None:
                self.emit("pattern-changed", INFO, f"{where}: pattern {op!r} removed", loc, field)
            else:
                self.emit(
                    "pattern-changed",
                    WARNING,
                    f"{where}: pattern changed from {op!r} to "
                    f"{np_!r}: values valid before may be rejected",
                    (*loc, "pattern"),
                    field,
                )
        of, nf = old.get("format"), new.get("format")
        if of != nf and nf is not None:
            what = f"added ({nf!r})" if of is None else f"changed from {of!r} to {nf!r}"
            self.emit(
                "format-changed",
                WARNING,
                f"{where}: format {what}: values valid before may be rejected",
                (*loc, "format"),
                field,
            )

    def _default_nullable(
        self, old: dict[str, Any], new: dict[str, Any], loc: Location, field: str, where: str
    ) -> None:
        has_o, has_n = "default" in old, "default" in new
        if has_o or has_n:
            od, nd = old.get("default"), new.get("default")
            if not has_o:
                self.emit(
                    "default-changed",
                    WARNING,
                    f"{where}: default {nd!r} added: stored objects that "
                    "omit it read back with it (defaults apply on read)",
                    (*loc, "default"),
                    field,
                )
            elif not has_n:
                self.emit(
                    "default-changed",
                    WARNING,
                    f"{where}: default {od!r} removed: clients relying on it get no value",
                    loc,
                    field,
                )
            elif od != nd:
                self.emit(
                    "default-changed",
                    WARNING,
                    f"{where}: default changed from {od!r} to {nd!r}: "
                    "stored objects that omit it change meaning",
                    (*loc, "default"),
                    field,
                )
        if old.get("nullable") is True and new.get("nullable") is not True:
            self.emit(
                "nullable-removed",
                ERROR,
                f"{where} is no longer nullable: objects holding "
                "null fail validation (or lose the field)",
                loc,
                field,
            )

    def _lists(
        self, old: dict[str, Any], new: dict[str, Any], loc: Location, field: str, where: str
    ) -> None:
        olt = old.get("x-kubernetes-list-type") or (
            "atomic" if old.get("type") == "array" else None
        )
        nlt = new.get("x-kubernetes-list-type") or (
            "atomic" if new.get("type") == "array" else None
        )
        if olt != nlt and olt is not None and nlt is not None:
            self.emit(
                "list-type-changed",
                ERROR,
                f"{where}: x-kubernetes-list-type changed from {olt} to {nlt}: server-side "
                "apply merges it differently (and may reject existing duplicates)",
                (*loc, "x-kubernetes-list-type"),
                field,
            )
        ok, nk = old.get("x-kubernetes-list-map-keys"), new.get("x-kubernetes-list-map-keys")
        if ok != nk and olt == nlt == "map":
            self.emit(
                "list-type-changed",
                ERROR,
                f"{where}: x-kubernetes-list-map-keys changed from "
                f"{ok} to {nk}: entries are matched by different keys",
                (*loc, "x-kubernetes-list-map-keys"),
                field,
            )
        om, nm = old.get("x-kubernetes-map-type"), new.get("x-kubernetes-map-type")
        if (om or "granular") != (nm or "granular") and old.get("type") == "object":
            self.emit(
                "list-type-changed",
                WARNING,
                f"{where}: x-kubernetes-map-type changed from "
                f"{om or 'granular'} to {nm or 'granular'}",
                (*loc, "x-kubernetes-map-type"),
                field,
            )
        if (
            old.get("x-kubernetes-preserve-unknown-fields") is True
            and new.get("x-kubernetes-preserve-unknown-fields") is not True
        ):
            self.emit(
                "preserve-unknown-fields-removed",
                ERROR,
                f"{where}: x-kubernetes-preserve-unknown-fields removed: "
                "undeclared fields stored so far are pruned on the next write",
                loc,
                field,
            )
        if bool(old.get("x-kubernetes-embedded-resource")) != bool(
            new.get("x-kubernetes-embedded-resource")
        ):
            self.emit(
                "type-changed",
                ERROR,
                f"{where}: x-kubernetes-embedded-resource changed: "
                "apiVersion/kind/metadata handling of the value changes",
                loc,
                field,
            )

    def _cel(
        self, old: dict[str, Any], new: dict[str, Any], loc: Location, field: str, where: str
    ) -> None:
        orules, nrules = _rules(old), _rules(new)
        if orules == nrules:
            return
        raw = new.get("x-kubernetes-validations")
        for i, rule in enumerate(nrules):
            if rule not in orules:
                transition = "oldSelf" in rule
                self.emit(
                    "cel-rule-changed",
                    WARNING,
                    f"{where}: CEL rule added or changed: {rule!r}"
                    + (" (a transition rule: runs on updates)" if transition else "")
                    + ": existing objects that violate it cannot be updated",
                    (*loc, "x-kubernetes-validations", i) if isinstance(raw, list) else loc,
                    field,
                    (("rule", rule),),
                )
        for rule in orules:
            if rule not in nrules:
                self.emit(
                    "cel-rule-removed",
                    INFO,
                    f"{where}: CEL rule removed: {rule!r}",
                    loc,
                    field,
                    (("rule", rule),),
                )

    def _properties(
        self, old: dict[str, Any], new: dict[str, Any], loc: Location, field: str
    ) -> None:
        op = as_dict(old.get("properties"))
        np_ = as_dict(new.get("properties"))
        oreq = set(old.get("required") or []) if isinstance(old.get("required"), list) else set()
        nreq = set(new.get("required") or []) if isinstance(new.get("required"), list) else set()
        preserving = new.get("x-kubernetes-preserve-unknown-fields") is True
        for name in op:
            if name in np_:
                continue
            path = _join(field, name)
            if preserving:
                self.emit(
                    "field-removed",
                    WARNING,
                    f"{path} removed from the schema; its parent preserves unknown "
                    "fields, so stored values are kept but no longer validated",
                    (*loc, "properties"),
                    path,
                )
            else:
                self.emit(
                    "field-removed",
                    ERROR,
                    f"{path} removed: stored values are pruned "
                    "and clients that set or read it break",
                    (*loc, "properties"),
                    path,
                )
        for name, sub in np_.items():
            path = _join(field, name)
            if name not in op:
                if name in nreq and name not in oreq:
                    continue  # reported as required-added below
                self.emit(
                    "field-added",
                    INFO,
                    f"{path} added (optional)",
                    (*loc, "properties", name),
                    path,
                )
            elif isinstance(op[name], dict) and isinstance(sub, dict):
                self.diff(op[name], sub, (*loc, "properties", name), path)
        for name in sorted(nreq - oreq):
            path = _join(field, name)
            sub = np_.get(name)
            if isinstance(sub, dict) and "default" in sub:
                self.emit(
                    "required-added",
                    WARNING,
                    f"{path} is now required; it has a default, so objects "
                    f"and clients that omit it get {sub['default']!r}",
                    (*loc, "required"),
                    path,
                )
            else:
                self.emit(
                    "required-added",
                    ERROR,
                    f"{path} is now required: existing objects without it fail "
                    "validation on update and clients that omit it are rejected",
                    (*loc, "required"),
                    path,
                )


def compare_crd(old: CRDView, new: CRDView, emit: Emit) -> None:
    """Every change between two revisions of one CRD."""
    crd_level(old, new, emit)
    for nv in new.versions:
        ov = old.version(nv.name)
        if ov is None:
            emit(
                Change(
                    "version-added", INFO, f"version {nv.name} added", nv.location, "", (nv.name,)
                )
            )
            continue
        compare_version(ov, nv, emit)


def crd_level(old: CRDView, new: CRDView, emit: Emit) -> None:
    """The changes of the CRD as a whole: scope and names, versions removed or no longer
    served, the storage version."""
    _scope_and_names(old, new, emit)
    _versions_removed(old, new, emit)
    _storage_version(old, new, emit)


def _scope_and_names(old: CRDView, new: CRDView, emit: Emit) -> None:
    if old.scope != new.scope and old.scope and new.scope:
        emit(
            Change(
                "scope-changed",
                ERROR,
                f"scope changed from {old.scope} to {new.scope}: "
                "every existing object and client URL breaks",
                ("spec", "scope"),
            )
        )
    for label, ov, nv, loc in (
        ("group", old.group, new.group, ("spec", "group")),
        ("kind", old.kind, new.kind, ("spec", "names", "kind")),
        ("plural", old.plural, new.plural, ("spec", "names", "plural")),
        (
            "listKind",
            old.names.get("listKind"),
            new.names.get("listKind"),
            ("spec", "names", "listKind"),
        ),
    ):
        if ov != nv and ov and nv:
            emit(
                Change(
                    "names-changed",
                    ERROR,
                    f"{label} changed from {ov} to {nv}: this "
                    "is a different resource to every client",
                    loc,
                )
            )
    old_short = old.names.get("shortNames") or []
    new_short = new.names.get("shortNames") or []
    if isinstance(old_short, list) and isinstance(new_short, list):
        gone = [s for s in old_short if s not in new_short]
        if gone:
            emit(
                Change(
                    "names-changed",
                    WARNING,
                    f"short name(s) {', '.join(map(str, gone))} removed: "
                    "kubectl commands and scripts using them break",
                    ("spec", "names"),
                )
            )


def _versions_removed(old: CRDView, new: CRDView, emit: Emit) -> None:
    stored = set(old.stored_versions)
    if old.storage_version is not None:
        stored.add(old.storage_version.name)
    for ov in old.versions:
        nv = new.version(ov.name)
        is_stored = ov.name in stored
        if nv is None:
            why = " and objects may still be stored in it" if is_stored else ""
            if ov.served or is_stored:
                emit(
                    Change(
                        "version-removed",
                        ERROR,
                        f"version {ov.name} removed: clients using it break{why}"
                        + (
                            " (the API server refuses to drop a version "
                            "still listed in status.storedVersions)"
                            if is_stored
                            else ""
                        ),
                        ("spec", "versions"),
                        "",
                        (ov.name,),
                    )
                )
            else:
                emit(
                    Change(
                        "version-removed",
                        INFO,
                        f"unserved version {ov.name} removed",
                        ("spec", "versions"),
                        "",
                        (ov.name,),
                    )
                )
        elif ov.served and not nv.served:
            emit(
                Change(
                    "version-removed",
                    ERROR,
                    f"version {ov.name} is no longer served: clients using it break",
                    (*nv.location, "served"),
                    "",
                    (ov.name,),
                )
            )


def _storage_version(old: CRDView, new: CRDView, emit: Emit) -> None:
    old_storage = old.storage_version
    new_storage = new.storage_version
    if old_storage is not None and new_storage is not None and old_storage.name != new_storage.name:
        same = strip_descriptions(old_storage.schema) == strip_descriptions(new_storage.schema)
        if new.conversion_strategy == "None" and not same:
            emit(
                Change(
                    "storage-version-changed",
                    ERROR,
                    f"storage version changed from {old_storage.name} to {new_storage.name} "
                    "with conversion None and different schemas: objects stored as "
                    f"{old_storage.name} are served as {new_storage.name} unchanged",
                    (*new_storage.location, "storage"),
                    "",
                    (new_storage.name,),
                )
            )
        else:
            emit(
                Change(
                    "storage-version-changed",
                    INFO,
                    f"storage version changed from {old_storage.name} to "
                    f"{new_storage.name}: migrate stored objects before "
                    f"removing {old_storage.name} from status.storedVersions",
                    (*new_storage.location, "storage"),
                    "",
                    (new_storage.name,),
                )
            )


def compare_version(ov: VersionView, nv: VersionView, emit: Emit) -> None:
    versions = (nv.name,)
    osub = ov.subresources or {}
    nsub = nv.subresources or {}
    if "status" in osub and "status" not in nsub:
        emit(
            Change(
                "subresource-changed",
                ERROR,
                f"version {nv.name}: status subresource removed: clients writing "
                "/status break and status becomes writable with the main resource",
                nv.subresources_location,
                "",
                versions,
            )
        )
    elif "status" in nsub and "status" not in osub:
        emit(
            Change(
                "subresource-changed",
                WARNING,
                f"version {nv.name}: status subresource added: status changes sent with "
                "the main resource are ignored from now on; clients must write /status",
                (*nv.subresources_location, "status"),
                "",
                versions,
            )
        )
    if "scale" in osub and osub.get("scale") != nsub.get("scale"):
        what = "removed" if "scale" not in nsub else "changed"
        emit(
            Change(
                "subresource-changed",
                ERROR,
                f"version {nv.name}: scale subresource {what}: "
                "autoscalers and kubectl scale using it break",
                nv.subresources_location,
                "",
                versions,
            )
        )
    if isinstance(ov.schema, dict) and isinstance(nv.schema, dict):
        _SchemaDiff(emit, versions).diff(ov.schema, nv.schema, nv.schema_location, "")


@dataclass(slots=True)
class CompatResult:
    findings: list[Finding]
    documents: int
    crds: int


def _crds(docs: Sequence[Document]) -> dict[str, Document]:
    out: dict[str, Document] = {}
    for d in docs:
        if is_crd(d.data):
            out.setdefault(CRDView(d.data).name, d)
    return out


def compare_documents(old_docs: Sequence[Document], new_docs: Sequence[Document]) -> CompatResult:
    """Compare the CRDs of two inputs, matched by name (a single CRD on each side is
    compared even if renamed)."""
    old, new = _crds(old_docs), _crds(new_docs)
    pairs: list[tuple[str, Document | None, Document | None]] = []
    if len(old) == 1 and len(new) == 1:
        only_old, (new_name, only_new) = next(iter(old.values())), next(iter(new.items()))
        pairs.append((new_name, only_old, only_new))
    else:
        for name in sorted(set(old) | set(new)):
            pairs.append((name, old.get(name), new.get(name)))
    findings: list[Finding] = []
    for name, od, nd in pairs:
        changes: list[Change] = []
        if od is None and nd is not None:
            changes.append(Change("crd-added", INFO, f"CRD {name} added", ("metadata", "name")))
            findings.extend(_bind(nd, name, changes))
        elif nd is None and od is not None:
            changes.append(
                Change(
                    "crd-removed",
                    ERROR,
                    f"CRD {name} removed: every object of it is deleted with it",
                    ("metadata", "name"),
                )
            )
            findings.extend(_bind(od, name, changes))
        elif od is not None and nd is not None:
            ov, nv = CRDView(od.data), CRDView(nd.data)
            if od.data != nd.data:
                compare_crd(ov, nv, changes.append)
            findings.extend(_bind(nd, name, changes))
    return CompatResult(findings, len(old_docs) + len(new_docs), len(pairs))


def _bind(doc: Document, crd: str, changes: Sequence[Change]) -> list[Finding]:
    return [
        doc.finding(
            c.check,
            c.severity,
            c.message,
            c.location,
            crd=crd,
            versions=c.versions,
            field=c.field,
            extra=c.extra,
        )
        for c in changes
    ]
