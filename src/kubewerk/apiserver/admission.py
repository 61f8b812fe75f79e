"""The admission step of the data path: mutate (defaults, pruning) then validate.

Every write of every resource passes through ``Admission.admit`` after the REST layer has
prepared the object and before storage; reads of custom resources pass through
``on_read`` (defaulting from storage, as the apiserver does). This is the one place where
schema defaulting, pruning, structural and CEL validation, and (later) admission webhooks
plug in.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from kubewerk.apiserver.registry import ServedResource
from kubewerk.core import validation
from kubewerk.core.errors import ApiError, FieldError
from kubewerk.core.gofmt import json_equal, unmarshal_kind
from kubewerk.core.meta import OBJECT_META_FIELDS

JSON = dict[str, Any]

Operation = Literal["CREATE", "UPDATE"]
FieldValidation = Literal["Strict", "Warn", "Ignore"]


@dataclass(slots=True)
class AdmissionRequest:
    """One write on its way to storage."""

    operation: Operation
    rtype: ServedResource
    version: str
    obj: JSON
    old: JSON | None
    field_validation: FieldValidation
    subresource: str | None = None
    warnings: list[str] = field(default_factory=list)
    dry_run: bool = False
    """The write is a dry run (``dryRun=All``): nothing is stored or reserved."""
    trusted_old: bool = False
    """``old`` is exactly what this server stored after admitting it under the same
    schema (same CRD generation, same version): its values are defaulted, pruned and
    passed validation, so a part of ``obj`` equal to it needs none of that again."""
    decoded: bool = False
    """``obj`` was decoded as kube-apiserver's codec decodes it, before mutating
    admission: typed and defaulted (``Strategy.typed_decode``, ``Strategy.default``), a
    custom resource pruned and defaulted by its schema (:meth:`Admission.decode_custom`);
    and whatever mutating admission changed since was decoded, defaulted and pruned where
    it was changed: admission does not prune it again, and defaults only what the
    strategy's preparation took away (kube's storage read defaults it back)."""


class Admission:
    """Mutates and validates objects in place; raises ``ApiError`` to reject a write.

    A write is defaulted (``Strategy.default``), pruned by typed decoding when the kind's
    strategy prunes unknown fields, given what its kind allocates (``Strategy.allocate``)
    and validated: ObjectMeta, then ``Strategy.validate``.
    """

    def admit(self, req: AdmissionRequest) -> None:
        strategy = req.rtype.strategy
        # (again, when decoding defaulted it: kube defaults what it reads back from
        # storage, the create's answer included, so what the strategy's preparation
        # changed is defaulted there: a Job's labels from the pod template labels
        # PrepareForCreate generated)
        strategy.default(req.obj)
        if strategy.prunes_unknown_fields:
            self.prune_builtin(req)
        strategy.allocate(req.obj, req.old, req.dry_run, req.subresource)
        errors = self.validate_meta(req)
        if req.subresource == "status" and req.old is not None:
            errors += strategy.validate_status(req.obj, req.old)
        else:
            errors += strategy.validate(req.obj, req.old)
        if errors:
            raise ApiError.invalid(req.rtype.kind, req.rtype.group, _name(req.obj), errors)

    def prune_builtin(self, req: AdmissionRequest) -> None:
        """Typed decoding of a built-in kind: unknown top-level fields are dropped (or
        rejected/warned per ``fieldValidation``), and the top-level fields its schema
        declares as string maps (a ConfigMap's ``data``, a Secret's ``stringData``) must
        hold strings — a field of another type under the same name in another kind (a
        ControllerRevision's ``data`` is a RawExtension) is not checked as one."""
        unknown = drop_unknown_fields(req.rtype, req.version, req.obj)
        if unknown and req.field_validation != "Ignore":
            messages = [f'unknown field "{k}"' for k in unknown]
            if req.field_validation == "Strict":
                raise ApiError.bad_request("strict decoding error: " + ", ".join(messages))
            req.warnings.extend(messages)
        problem = string_map_error(req.rtype, req.version, req.obj)
        if problem is not None:
            raise ApiError.bad_request(problem)

    def validate_meta(self, req: AdmissionRequest) -> list[FieldError]:
        """ObjectMeta rules (``rest.BeforeCreate``/``BeforeUpdate``) with the kind's name
        rule; adds the strategy's warnings."""
        meta = req.obj.get("metadata") or {}
        old_meta = (req.old or {}).get("metadata") or {}
        strategy = req.rtype.strategy
        req.warnings.extend(strategy.warnings(req.obj, req.old))
        if req.old is None:
            return validation.validate_object_meta_for_create(
                meta, namespaced=req.rtype.namespaced, name_rule=strategy.name_rule
            )
        if meta.get("resourceVersion") and _same_except_resource_version(meta, old_meta):
            # metadata the stored object already passed with: nothing new to check
            return []
        return validation.validate_object_meta_update(meta, old_meta)

    def on_read(self, rtype: ServedResource, version: str, obj: JSON) -> JSON:
        """The object as served in ``version`` (defaults applied); never mutates ``obj``."""
        return obj

    def decode_custom(
        self, rtype: ServedResource, version: str, obj: JSON, old: JSON | None = None
    ) -> list[str] | None:
        """What kube-apiserver's decoder does to a custom resource of ``rtype`` in
        ``version`` (its structural schema's pruning, then its defaults), in place; the
        pruned paths, sorted. None: nothing here decodes ``rtype`` (a built-in kind, a
        version without a schema, or admission without a schema engine). ``old``: a
        trusted old object (``AdmissionRequest.trusted_old``) whose equal parts need none
        of it."""
        return None

    def default_custom(self, rtype: ServedResource, version: str, obj: JSON) -> None:
        """The schema defaults of ``version`` applied to a custom resource in place (the
        webhook dispatcher's ``Default`` of a patched object); nothing by default."""

    def prune_custom(self, rtype: ServedResource, version: str, obj: JSON) -> None:
        """The fields ``version``'s schema does not know dropped from a custom resource,
        silently (what kube's storage drops of what a mutating webhook added); nothing
        by default."""


def drop_unknown_fields(rtype: ServedResource, version: str, obj: JSON) -> list[str]:
    """Drop the top-level and ``metadata`` fields the kind's schema in ``version`` does
    not declare (as decoding into the Go type does) and name them, sorted; nothing is
    dropped from a kind whose schema lists no properties."""
    schema = rtype.schemas.get(version) or {}
    known = set(schema.get("properties") or {})
    if not known:
        return []
    unknown = sorted(k for k in obj if k not in known)
    for key in unknown:
        del obj[key]
    meta = obj.get("metadata")
    if isinstance(meta, dict):
        unknown_meta = sorted(k for k in meta if k not in OBJECT_META_FIELDS)
        for key in unknown_meta:
            del meta[key]
        unknown += [f"metadata.{k}" for k in unknown_meta]
    return unknown


def string_map_error(rtype: ServedResource, version: str, obj: JSON) -> str | None:
    """The Go decoder's message for the first top-level string-map field (a ConfigMap's
    ``data``) of ``obj`` that is not a map of strings, or None."""
    props = (rtype.schemas.get(version) or {}).get("properties") or {}
    for field_name, value in obj.items():
        if value is None or not _is_string_map(props.get(field_name)):
            continue
        if not isinstance(value, dict) or any(not isinstance(v, str) for v in value.values()):
            bad = (
                value
                if not isinstance(value, dict)
                else next(v for v in value.values() if not isinstance(v, str))
            )
            return (
                f"json: cannot unmarshal {unmarshal_kind(bad)} into Go "
                f"struct field {rtype.kind}.{field_name} of type "
                + ("string" if isinstance(value, dict) else "map[string]string")
            )
    return None


def decode_patched(rtype: ServedResource, version: str, obj: JSON) -> None:
    """Decode a mutating webhook's patched object back into its kind's type, in place,
    as kube-apiserver's webhook dispatcher does (a non-strict decode: fields the type
    lacks are dropped without a word, whatever ``fieldValidation`` says); raise
    ``ValueError`` with the decoder's message for a value of the wrong type. A custom
    resource (unstructured there) is taken as it is."""
    strategy = rtype.strategy
    if strategy.typed_decode(obj, version) is not None:
        return
    if strategy.prunes_unknown_fields:
        drop_unknown_fields(rtype, version, obj)
        problem = string_map_error(rtype, version, obj)
        if problem is not None:
            raise ValueError(problem)


def _is_string_map(schema: Any) -> bool:
    """Whether a property schema is ``map[string]string`` (or ``map[string][]byte``, which
    JSON carries as base64 strings)."""
    if not isinstance(schema, dict) or schema.get("type") != "object":
        return False
    values = schema.get("additionalProperties")
    return isinstance(values, dict) and values.get("type") == "string"


def _same_except_resource_version(meta: JSON, old_meta: JSON) -> bool:
    if meta.get("resourceVersion") == old_meta.get("resourceVersion"):
        return json_equal(meta, old_meta)  # the usual case: the same resourceVersion too
    keys = (meta.keys() | old_meta.keys()) - {"resourceVersion"}
    return all(json_equal(meta.get(k), old_meta.get(k)) for k in keys)


def _name(obj: JSON) -> str:
    name = (obj.get("metadata") or {}).get("name")
    return name if isinstance(name, str) else ""
