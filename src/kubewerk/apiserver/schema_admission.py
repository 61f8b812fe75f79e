"""Admission with the schema engine: prune → default when a custom resource is decoded
(before mutating admission, as kube-apiserver's decoder does: ``decode_custom``), then
validate → CEL on every custom resource write; defaults on every custom resource read.
Built-in kinds, CRDs included, take ``Admission``'s path (their strategy defaults and
validates: ``kinds.crds``).

Unknown fields of a request's object follow ``fieldValidation``: ``Strict`` rejects the
request with 400 ``strict decoding error: unknown field "spec.x"``, ``Warn`` (the
default) answers with a ``Warning`` header per field, ``Ignore`` drops them silently —
as kube-apiserver's decoder does (``rest.ResourceApi._typed_decode`` reports what
``decode_custom`` pruned). What a mutating webhook adds that the schema does not know is
dropped silently (``prune_custom``), and a webhook's patch is defaulted in the webhook's
version (``default_custom``), as kube's webhook dispatcher defaults it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from kubewerk.apiserver.admission import Admission, AdmissionRequest
from kubewerk.apiserver.registry import ServedResource
from kubewerk.core.errors import ApiError
from kubewerk.core.gofmt import json_same_text
from kubewerk.core.jsoncopy import copy_json
from kubewerk.schema import CompiledSchema, SchemaError, compile_schema

JSON = dict[str, Any]


def _anywhere(schema: Any, found: Callable[[JSON], bool]) -> bool:
    """Whether ``found`` holds for ``schema`` or any object nested in it."""
    if isinstance(schema, dict):
        return found(schema) or any(_anywhere(v, found) for v in schema.values())
    if isinstance(schema, list):
        return any(_anywhere(v, found) for v in schema)
    return False


def _has_defaults(schema: Any) -> bool:
    return _anywhere(schema, lambda node: "default" in node)


_TYPE_META = ("apiVersion", "kind", "metadata")


def _transition_rule(node: JSON) -> bool:
    return any(
        not isinstance(rule, dict)
        or rule.get("optionalOldSelf")
        or "oldSelf" in str(rule.get("rule", ""))
        for rule in node.get("x-kubernetes-validations") or ()
    )


def _reads_old_self(schema: Any) -> bool:
    """Whether any CEL rule in ``schema`` (or below) is a transition rule."""
    return _anywhere(schema, _transition_rule)


def _skippable(schema: JSON) -> frozenset[str]:
    """Top-level properties whose unchanged values an update of a trusted old object may
    leave alone: object-typed, without transition rules, under a root without CEL rules
    (a root rule sees every property)."""
    props = schema.get("properties")
    if schema.get("x-kubernetes-validations") or not isinstance(props, dict):
        return frozenset()
    return frozenset(
        k
        for k, sub in props.items()
        if k not in _TYPE_META
        and isinstance(sub, dict)
        and sub.get("type") == "object"
        and not _reads_old_self(sub)
    )


def _without(schema: JSON, keys: frozenset[str]) -> JSON:
    """``schema`` with the subschemas of ``keys`` replaced by a free-form object (nothing
    to default, prune or validate inside; the root's own checks unchanged)."""
    props = dict(schema["properties"])
    for k in keys:
        props[k] = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    return {**schema, "properties": props}


MAX_PARTIALS: Final = 64
"""Per served version: the most reduced variants (one per set of unchanged top-level
properties) kept at once."""


class VersionSchema:
    """What admission derives from one served version's schema: the compiled schema,
    whether it declares defaults, the properties an update may skip and the reduced
    variants compiled for such updates. Kept on the ``ServedResource`` (see ``derived``)."""

    __slots__ = ("__weakref__", "compiled", "has_defaults", "partials", "schema", "skippable")

    def __init__(self, schema: JSON, compiled: CompiledSchema) -> None:
        self.schema = schema
        self.compiled = compiled
        self.has_defaults = _has_defaults(schema)
        self.skippable: frozenset[str] | None = None
        self.partials: dict[frozenset[str], CompiledSchema] = {}


class SchemaAdmission(Admission):
    """``Admission`` plus the structural-schema and CEL checks of the apiextensions server.

    Each served version's schema compiles once, on first use, and is kept on its
    ``ServedResource`` (``derived``): for as long as that type is served, and no longer.
    A CRD's new generation is served as a new type, so the old generation's compiled
    schemas go with the old type, and a deleted CRD's with it; what is kept is bounded by
    the versions in use of the served kinds, with no eviction of kinds still served.

    An update whose old object is trusted (``AdmissionRequest.trusted_old``) skips the
    top-level properties it leaves unchanged (``spec`` on a status write, say), when
    that cannot change the answer: their values were defaulted, pruned and validated
    under this schema when stored, defaulting and pruning are idempotent, validation
    ratcheting drops every schema or rule failure on an unchanged value, embedded
    resources and CEL evaluation (deterministic) raised nothing then, and neither
    transition rules inside them nor rules at the root (which see all of the object)
    are skipped. List-type checks of the old object still look at all of it.
    """

    def version_schema(self, rtype: ServedResource, version: str) -> VersionSchema | None:
        """The compiled schema of a served CRD version and what goes with it (compiled on
        first use, kept with ``rtype``); None when the version has no schema."""
        schema = rtype.schemas.get(version)
        if schema is None:
            return None
        key = ("schema_admission", version)
        found = rtype.derived.get(key)
        if isinstance(found, VersionSchema) and found.schema is schema:
            return found
        try:
            compiled = compile_schema(schema)
        except SchemaError as exc:  # accepted CRDs compile; keep serving if one does not
            raise ApiError.internal(
                f"the schema of {rtype.qualified}/{version} does not compile: {exc}"
            ) from None
        found = rtype.derived[key] = VersionSchema(schema, compiled)
        return found

    def compiled(self, rtype: ServedResource, version: str) -> tuple[CompiledSchema, bool] | None:
        """The compiled schema of a served CRD version and whether it declares defaults."""
        found = self.version_schema(rtype, version)
        return None if found is None else (found.compiled, found.has_defaults)

    def admit(self, req: AdmissionRequest) -> None:
        rtype = req.rtype
        if rtype.builtin:  # typed kinds: their strategy's defaults and validation
            super().admit(req)
            return
        found = self.version_schema(rtype, req.version)
        if found is None:
            super().admit(req)
            return
        compiled = full = found.compiled
        if req.trusted_old and req.old is not None:
            compiled = _for_update(found, req.obj, req.old)
        if req.decoded:
            if found.has_defaults:
                _default_absent(found.compiled, req.obj)
        else:
            compiled.apply_defaults(req.obj)
            unknown = compiled.prune(req.obj)
            if unknown and req.field_validation != "Ignore":
                messages = [f'unknown field "{path}"' for path in unknown]
                if req.field_validation == "Strict":
                    raise ApiError.bad_request("strict decoding error: " + ", ".join(messages))
                req.warnings.extend(messages)
        errors = self.validate_meta(req)
        errors += compiled.validate(req.obj, req.old, reduced_from=full)
        if errors:
            raise ApiError.invalid(rtype.kind, rtype.group, _name(req.obj), errors)

    def decode_custom(
        self, rtype: ServedResource, version: str, obj: JSON, old: JSON | None = None
    ) -> list[str] | None:
        """kube-apiserver's decoding of a custom resource (apiextensions'
        ``schemaCoercingDecoder``: unknown fields pruned, ObjectMeta coerced; then the
        versioning codec's ``unstructuredDefaulter``: the version's defaults), in place;
        the pruned paths, sorted. ``old`` (trusted): top-level properties equal to it are
        left alone, as in ``admit``."""
        if rtype.builtin:
            return None
        found = self.version_schema(rtype, version)
        if found is None:
            return None
        compiled = found.compiled if old is None else _for_update(found, obj, old)
        unknown = compiled.prune(obj)
        if found.has_defaults:
            compiled.apply_defaults(obj)
        return unknown

    def default_custom(self, rtype: ServedResource, version: str, obj: JSON) -> None:
        if rtype.builtin:
            return
        found = self.version_schema(rtype, version)
        if found is not None and found.has_defaults:
            found.compiled.apply_defaults(obj)

    def prune_custom(self, rtype: ServedResource, version: str, obj: JSON) -> None:
        if rtype.builtin:
            return
        found = self.version_schema(rtype, version)
        if found is not None:
            found.compiled.prune(obj)

    def on_read(self, rtype: ServedResource, version: str, obj: JSON) -> JSON:
        found = self.version_schema(rtype, version)
        if found is None or not found.has_defaults:
            return obj
        served: JSON = copy_json(obj)
        found.compiled.apply_defaults(served)
        return served


def _default_absent(compiled: CompiledSchema, obj: JSON) -> None:
    """``obj``, decoded (defaulted all through), defaulted again when the strategy's
    preparation took away a top-level property that has a default (a create through a
    version with the status subresource drops ``status``): kube stores the object
    without it and defaults it back whenever it reads it from storage, the create's
    answer included. Nothing else can lack a default, so only then is it walked again."""
    root = compiled.structural
    for key, prop in root.defaulted_props:
        value = obj.get(key, obj)
        if value is obj or (value is None and not prop.nullable):
            compiled.apply_defaults(obj)
            return


def _for_update(found: VersionSchema, obj: JSON, old: JSON) -> CompiledSchema:
    """``found.compiled``, or a variant without the properties this update leaves unchanged."""
    candidates = found.skippable
    if candidates is None:
        candidates = found.skippable = _skippable(found.schema)
    if not candidates:
        return found.compiled
    # equal as JSON text, not as Python values (True == 1 == 1.0 in Python, not in JSON)
    same = frozenset(
        k for k in candidates if k in obj and k in old and json_same_text(obj[k], old[k])
    )
    if not same:
        return found.compiled
    partial = found.partials.get(same)
    if partial is None:
        try:
            partial = compile_schema(_without(found.schema, same))
        except SchemaError:  # cannot happen for an accepted schema; never skip then
            return found.compiled
        if len(found.partials) >= MAX_PARTIALS:
            found.partials.clear()
        found.partials[same] = partial
    return partial


def _name(obj: JSON) -> str:
    name = (obj.get("metadata") or {}).get("name")
    return name if isinstance(name, str) else ""
