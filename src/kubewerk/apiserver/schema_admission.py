"""Admission with the schema engine: default → prune → validate → CEL on every custom
resource write, defaults on every custom resource read. Built-in kinds, CRDs included,
take ``Admission``'s path (their strategy defaults and validates: ``kinds.crds``).

Unknown fields follow ``fieldValidation``: ``Strict`` rejects the request with 400
``strict decoding error: unknown field "spec.x"``, ``Warn`` (the default) answers with a
``Warning`` header per field, ``Ignore`` drops them silently — as kube-apiserver does.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

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


class SchemaAdmission(Admission):
    """``Admission`` plus the structural-schema and CEL checks of the apiextensions server.

    An update whose old object is trusted (``AdmissionRequest.trusted_old``) skips the
    top-level properties it leaves unchanged (``spec`` on a status write, say), when
    that cannot change the answer: their values were defaulted, pruned and validated
    under this schema when stored, defaulting and pruning are idempotent, validation
    ratcheting drops every schema or rule failure on an unchanged value, embedded
    resources and CEL evaluation (deterministic) raised nothing then, and neither
    transition rules inside them nor rules at the root (which see all of the object)
    are skipped. List-type checks of the old object still look at all of it.
    """

    def __init__(self) -> None:
        self._cache: dict[tuple[str | None, int, str, int], tuple[CompiledSchema, bool]] = {}
        self._skippable: dict[tuple[str | None, int, str, int], frozenset[str]] = {}
        self._partial: dict[tuple[str | None, int, str, int, frozenset[str]], CompiledSchema] = {}

    def compiled(self, rtype: ServedResource, version: str) -> tuple[CompiledSchema, bool] | None:
        """The compiled schema of a served CRD version and whether it declares defaults."""
        schema = rtype.schemas.get(version)
        if schema is None:
            return None
        key = (rtype.crd_uid, rtype.crd_generation, version, id(schema))
        hit = self._cache.get(key)
        if hit is None:
            try:
                compiled = compile_schema(schema)
            except SchemaError as exc:  # accepted CRDs compile; keep serving if one does not
                raise ApiError.internal(
                    f"the schema of {rtype.qualified}/{version} does not compile: {exc}"
                ) from None
            hit = (compiled, _has_defaults(schema))
            if len(self._cache) > 4096:
                self._cache.clear()
            self._cache[key] = hit
        return hit

    def admit(self, req: AdmissionRequest) -> None:
        rtype = req.rtype
        if rtype.builtin:  # typed kinds: their strategy's defaults and validation
            super().admit(req)
            return
        hit = self.compiled(rtype, req.version)
        if hit is None:
            super().admit(req)
            return
        compiled, _ = hit
        full = compiled
        if req.trusted_old and req.old is not None:
            compiled = self._for_update(rtype, req.version, compiled, req.obj, req.old)
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

    def _for_update(
        self, rtype: ServedResource, version: str, compiled: CompiledSchema, obj: JSON, old: JSON
    ) -> CompiledSchema:
        """``compiled``, or a variant without the properties this update leaves unchanged."""
        schema = rtype.schemas[version]
        schema_key = (rtype.crd_uid, rtype.crd_generation, version, id(schema))
        candidates = self._skippable.get(schema_key)
        if candidates is None:
            if len(self._skippable) > 4096:
                self._skippable.clear()
            candidates = self._skippable[schema_key] = _skippable(schema)
        if not candidates:
            return compiled
        # equal as JSON text, not as Python values (True == 1 == 1.0 in Python, not in JSON)
        same = frozenset(
            k for k in candidates if k in obj and k in old and json_same_text(obj[k], old[k])
        )
        if not same:
            return compiled
        key = (*schema_key, same)
        partial = self._partial.get(key)
        if partial is None:
            try:
                partial = compile_schema(_without(schema, same))
            except SchemaError:  # cannot happen for an accepted schema; never skip then
                return compiled
            if len(self._partial) > 4096:
                self._partial.clear()
            self._partial[key] = partial
        return partial

    def on_read(self, rtype: ServedResource, version: str, obj: JSON) -> JSON:
        hit = self.compiled(rtype, version)
        if hit is None or not hit[1]:
            return obj
        served: JSON = copy_json(obj)
        hit[0].apply_defaults(served)
        return served


def _name(obj: JSON) -> str:
    name = (obj.get("metadata") or {}).get("name")
    return name if isinstance(name, str) else ""
