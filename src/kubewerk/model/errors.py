"""Errors of the model layer: bad definitions, bad objects, impossible conversions."""

from __future__ import annotations

from collections.abc import Sequence

from kubewerk.core.errors import FieldError, aggregate_message

__all__ = ["ConversionError", "InvalidObjectError", "ModelDefinitionError"]


class ModelDefinitionError(TypeError):
    """A model class that cannot be expressed as a Kubernetes structural schema.

    Raised while the class is being created (or, for classes with unresolved forward
    references, when their CRD is first generated). The message starts with
    ``<Class>.<field>:`` naming the offending field.
    """


class InvalidObjectError(ValueError):
    """An object that does not parse as the model: carries Kubernetes field errors.

    ``errors`` are :class:`~kubewerk.core.errors.FieldError` with Kubernetes field paths
    (``spec.triggers[0].type``); ``str(exc)`` is the aggregate message the API server
    would print after ``<kind> "<name>" is invalid:``.
    """

    def __init__(self, kind: str, name: str, errors: Sequence[FieldError]) -> None:
        self.kind = kind
        self.name = name
        self.errors: list[FieldError] = list(errors)
        prefix = f'{kind} "{name}" is invalid' if name else f"{kind} is invalid"
        super().__init__(f"{prefix}: {aggregate_message(self.errors)}" if errors else prefix)


class ConversionError(ValueError):
    """No registered conversion path between two versions, or a converter broke a rule."""
