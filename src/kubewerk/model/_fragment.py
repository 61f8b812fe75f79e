"""The unit of schema generation: a :class:`Fragment`, and the small helpers that the type
walk (:mod:`kubewerk.model._schemagen`) and the marker units
(:mod:`kubewerk.model._markerschema`) share.

A fragment is a schema plus the facts found below it that can only be placed once the
object's root is known (printer columns, selectable fields, positions of transition
rules), each as a JSON path relative to the fragment.
"""

from __future__ import annotations

import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from kubewerk.model.errors import ModelDefinitionError
from kubewerk.model.markers import Immutable, PrinterColumn

__all__ = [
    "SCALAR_TYPES",
    "Category",
    "Fragment",
    "fail",
    "is_resource",
    "scalar_type",
    "type_name",
]

SCALAR_TYPES = ("string", "integer", "number", "boolean")
"""The schema types Kubernetes counts as scalars (list-set items, list-map keys)."""

Category = Literal[
    "enum",
    "boolean",
    "integer",
    "number",
    "string",
    "array",
    "map",
    "model",
    "object",
    "int-or-string",
]
"""What a Python type became in the schema. ``map`` (a dict), ``model`` (a KubeModel) and
``object`` (ObjectMeta, left to the API server) are all ``type: object`` and
``int-or-string`` has no ``type`` at all, which is why markers look at this too."""


@dataclass
class Fragment:
    """A schema plus the root-relative facts found below it."""

    schema: dict[str, Any]
    columns: list[tuple[str, PrinterColumn, str]] = field(default_factory=list)
    """(relative JSON path, column, schema type) of each field-declared printer column."""
    selectable: list[tuple[str, str]] = field(default_factory=list)
    """(relative JSON path, schema type) of each ``Selectable`` field."""
    transitions: list[str] = field(default_factory=list)
    """Relative JSON paths of the schemas that carry transition rules."""
    immutable: Immutable | None = None
    """The ``Immutable`` marker found on this very value (not below it)."""

    def prefixed(self, prefix: str) -> Fragment:
        """The same schema with every path prefixed (``immutable`` stays behind)."""
        return Fragment(
            self.schema,
            [(prefix + p, c, t) for p, c, t in self.columns],
            [(prefix + p, t) for p, t in self.selectable],
            [prefix + p for p in self.transitions],
        )

    def copy_top(self) -> Fragment:
        """A fragment whose top-level schema dict and lists may be changed without
        touching this one (nested schemas stay shared)."""
        return Fragment(
            dict(self.schema), list(self.columns), list(self.selectable), list(self.transitions)
        )


def fail(where: str, message: str) -> typing.NoReturn:
    """Refuse a definition: :class:`ModelDefinitionError` reading ``<where>: <message>``."""
    raise ModelDefinitionError(f"{where}: {message}")


def type_name(tp: Any) -> str:
    """A Python type as a message names it."""
    return getattr(tp, "__name__", None) or repr(tp)


def is_resource(tp: Any) -> bool:
    """Whether ``tp`` is a :class:`~kubewerk.model.Resource` class (abstract or concrete).

    Answered by a class flag rather than ``issubclass`` so that schema generation does
    not import the resource module (which sits above it).
    """
    return isinstance(tp, type) and bool(getattr(tp, "__kube_is_resource__", False))


def scalar_type(schema: Mapping[str, Any]) -> str | None:
    """The schema's ``type`` when it is a scalar one, else None."""
    kind = schema.get("type")
    return kind if kind in SCALAR_TYPES else None
