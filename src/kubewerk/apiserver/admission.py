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

from kubewerk.apiserver.registry import ResourceType
from kubewerk.core.errors import ApiError, FieldError

JSON = dict[str, Any]
Operation = Literal["CREATE", "UPDATE"]
FieldValidation = Literal["Strict", "Warn", "Ignore"]


@dataclass(slots=True)
class AdmissionRequest:
    """One write on its way to storage."""

    operation: Operation
    rtype: ResourceType
    version: str
    obj: JSON
    old: JSON | None
    field_validation: FieldValidation
    subresource: str | None = None
    warnings: list[str] = field(default_factory=list)


class Admission:
    """Mutates and validates objects in place; raises ``ApiError`` to reject a write."""

    def admit(self, req: AdmissionRequest) -> None:
        errors = self.validate_meta(req)
        if errors:
            raise ApiError.invalid(req.rtype.kind, req.rtype.group, _name(req.obj), errors)

    def validate_meta(self, req: AdmissionRequest) -> list[FieldError]:
        try:
            from kubewerk.core import validation
        except ImportError:  # TEMP until core.validation lands
            return []

        meta = req.obj.get("metadata") or {}
        name_rule = "label" if req.rtype.resource == "namespaces" and not req.rtype.group else "subdomain"
        if not req.rtype.builtin:
            name_rule = "path-segment"
        errors = validation.validate_object_meta(
            meta, namespaced=req.rtype.namespaced, name_rule=name_rule
        )
        if req.old is not None:
            errors += validation.validate_object_meta_update(meta, req.old.get("metadata") or {})
        return errors

    def on_read(self, rtype: ResourceType, version: str, obj: JSON) -> JSON:
        """The object as served in ``version`` (defaults applied); never mutates ``obj``."""
        return obj


def _name(obj: JSON) -> str:
    name = (obj.get("metadata") or {}).get("name")
    return name if isinstance(name, str) else ""
