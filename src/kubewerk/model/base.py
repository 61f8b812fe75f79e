"""``KubeModel``: the pydantic base class of every typed object and sub-object.

What it guarantees:

* snake_case Python names ↔ camelCase JSON names (``Field(alias=...)`` overrides); both
  are accepted when parsing, JSON names are written when dumping;
* scalars are checked the way the API server checks JSON types: ``"5"`` is not an
  integer, ``1`` is not a string, ``"true"`` is not a boolean (timestamps, enums and
  nested objects still parse from their JSON forms);
* unknown keys are dropped (the API server prunes them) unless the class is declared
  with ``preserve_unknown_fields=True``, in which case they survive parse and dump;
* :meth:`KubeModel.to_dict` leaves out every field that was never set, and a ``None``
  in a field that is not marked :data:`~kubewerk.model.markers.Nullable`;
* the class can be expressed as a structural schema: markers are checked against the
  field types when the class is created, and a mistake raises
  :class:`~kubewerk.model.errors.ModelDefinitionError` naming the field.
"""

from __future__ import annotations

import copy
import functools
import operator
import types
import typing
from collections.abc import Sequence
from typing import Any, ClassVar, Literal, Self

from pydantic import BaseModel, ConfigDict, GetCoreSchemaHandler, ValidationError
from pydantic_core import core_schema

from kubewerk.core.errors import FieldError
from kubewerk.model._naming import json_name
from kubewerk.model.errors import InvalidObjectError, ModelDefinitionError
from kubewerk.model.markers import AtMostOneOf, ExactlyOneOf, MapType, Nullable, Rule

__all__ = ["KubeModel", "ObjectRule"]

ObjectRule = Rule | ExactlyOneOf | AtMostOneOf
"""What the ``rules=`` class keyword accepts."""

_STRICT_SCALARS = frozenset({"int", "bool", "str", "float"})


def _strictify(schema: Any) -> None:
    """Make JSON scalar validators strict, leaving timestamps, enums and models lax."""
    if isinstance(schema, dict):
        kind = schema.get("type")
        if isinstance(kind, str) and kind in _STRICT_SCALARS:
            schema["strict"] = True
        for value in schema.values():
            if isinstance(value, dict | list):
                _strictify(value)
    elif isinstance(schema, list):
        for value in schema:
            if isinstance(value, dict | list):
                _strictify(value)


_is_none: typing.Callable[[Any], bool] = functools.partial(operator.is_, None)
"""``_is_none(v)`` is ``None is v``: the ``exclude_if`` of fields that leave out None.

A C-level callable (``operator.is_`` with None bound), not a Python function: pydantic
calls it for every set field that admits None, on every dump, and a Python frame per
call is a measurable share of a dump (``tests/model/test_model_dump.py`` holds it to
``v is None``)."""


_MODEL_DUMP = BaseModel.model_dump
_MODEL_VALIDATE = BaseModel.model_validate.__func__  # type: ignore[attr-defined]


def _admits_none(annotation: Any) -> bool:
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _admits_none(typing.get_args(annotation)[0])
    if origin is typing.Union or origin is types.UnionType:
        return any(a is type(None) or _admits_none(a) for a in typing.get_args(annotation))
    return annotation is type(None) or annotation is Any


def _has_nullable(metadata: Sequence[Any]) -> bool:
    return any(m is Nullable for m in metadata)


class KubeModel(BaseModel):
    """Base class for the typed parts of a Kubernetes object.

    Class keywords (besides pydantic's own configuration keywords):

    ``rules``
        object-level CEL rules: :class:`~kubewerk.model.markers.Rule`,
        :class:`~kubewerk.model.markers.ExactlyOneOf`,
        :class:`~kubewerk.model.markers.AtMostOneOf`.
    ``preserve_unknown_fields``
        keep unknown keys (``x-kubernetes-preserve-unknown-fields: true``).
    ``map_type``
        ``x-kubernetes-map-type`` of the object (``MapType.ATOMIC`` makes it replaced as
        a whole by server-side apply).
    ``min_properties``, ``max_properties``
        bounds on how many fields may be set (``minProperties``/``maxProperties``), e.g.
        ``max_properties=1`` for a union of alternatives. Checked by the API server, not
        by pydantic.

    The class docstring becomes the schema's description; a field's description comes
    from ``Field(description=...)`` or from a docstring written below the field.
    """

    model_config = ConfigDict(
        alias_generator=json_name,
        validate_by_name=True,
        validate_by_alias=True,
        serialize_by_alias=True,
        extra="ignore",
        use_attribute_docstrings=True,
        protected_namespaces=(),
        ser_json_bytes="base64",
        val_json_bytes="base64",
    )

    __kube_rules__: ClassVar[tuple[ObjectRule, ...]] = ()
    __kube_preserve_unknown__: ClassVar[bool] = False
    __kube_map_type__: ClassVar[MapType | None] = None
    __kube_properties__: ClassVar[tuple[int | None, int | None]] = (None, None)

    def __init_subclass__(
        cls,
        *,
        rules: Sequence[ObjectRule] | None = None,
        preserve_unknown_fields: bool | None = None,
        map_type: MapType | None = None,
        min_properties: int | None = None,
        max_properties: int | None = None,
        **kwargs: Any,
    ) -> None:
        if rules is not None:
            bad = [r for r in rules if not isinstance(r, Rule | ExactlyOneOf | AtMostOneOf)]
            if bad:
                raise ModelDefinitionError(
                    f"{cls.__name__}: rules= takes Rule, "
                    f"ExactlyOneOf or AtMostOneOf, got {bad[0]!r}"
                )
            cls.__kube_rules__ = tuple(rules)
        if preserve_unknown_fields is not None:
            cls.__kube_preserve_unknown__ = preserve_unknown_fields
        if map_type is not None:
            cls.__kube_map_type__ = MapType(map_type)
        if min_properties is not None or max_properties is not None:
            for bound in (min_properties, max_properties):
                if bound is not None and (not isinstance(bound, int) or bound < 0):
                    raise ModelDefinitionError(
                        f"{cls.__name__}: min_properties/max_properties must be integers >= 0"
                    )
            cls.__kube_properties__ = (min_properties, max_properties)
        super().__init_subclass__(**kwargs)

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        cls._kube_finish_class()

    @classmethod
    def _kube_finish_class(cls) -> None:
        """Adjust fields (None handling, unknown keys), rebuild once, check the schema."""
        changed = cls._kube_adjust_fields()
        wanted_extra: Literal["allow", "ignore"] = (
            "allow" if cls.__kube_preserve_unknown__ else "ignore"
        )
        if cls.model_config.get("extra") != wanted_extra:
            cls.model_config["extra"] = wanted_extra
            changed = True
        if changed:
            cls.model_rebuild(force=True)
        if cls.__pydantic_complete__:
            from kubewerk.model._schemagen import check_class

            check_class(cls)

    @classmethod
    def _kube_adjust_fields(cls) -> bool:
        """Hook for subclasses: rewrite field infos before the one rebuild; True if changed."""
        changed = False
        fields = cls.__pydantic_fields__
        for name, info in list(fields.items()):
            if info.exclude_if is not None or not _admits_none(info.annotation):
                continue
            if _has_nullable(info.metadata):
                continue
            new = copy.copy(info)
            new.exclude_if = _is_none
            fields[name] = new
            changed = True
        return changed

    @classmethod
    def __get_pydantic_core_schema__(
        cls, source: Any, handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        schema = handler(source)
        _strictify(schema)
        return schema

    # -- parse and dump -------------------------------------------------------------

    @classmethod
    def from_dict(cls, obj: Any) -> Self:
        """Parse a JSON-shaped dict; errors become :class:`InvalidObjectError`.

        Exactly ``model_validate(obj)``; unless a subclass overrides ``model_validate``,
        the class's validator is asked directly (what pydantic's ``model_validate`` does
        with no options, one Python call fewer on every parse)."""
        try:
            if getattr(cls.model_validate, "__func__", None) is not _MODEL_VALIDATE:
                return cls.model_validate(obj)
            out: Self = cls.__pydantic_validator__.validate_python(obj)
            return out
        except ValidationError as exc:
            raise cls._invalid(exc, obj) from None

    @classmethod
    def from_json(cls, data: bytes | str) -> Self:
        """Parse JSON text; errors become :class:`InvalidObjectError`."""
        try:
            return cls.model_validate_json(data)
        except ValidationError as exc:
            raise cls._invalid(exc, None) from None

    def to_dict(self) -> dict[str, Any]:
        """The object as the API server would store it: JSON names, unset fields left out.

        Exactly ``model_dump(mode="json", exclude_unset=True)``; unless a subclass
        overrides ``model_dump``, the class's serializer is asked directly (what pydantic's
        ``model_dump`` does, one Python call fewer on every dump)."""
        if type(self).model_dump is not _MODEL_DUMP:
            return self.model_dump(mode="json", exclude_unset=True)
        out: dict[str, Any] = self.__pydantic_serializer__.to_python(
            self, mode="json", exclude_unset=True
        )
        return out

    def to_json(self) -> bytes:
        """:meth:`to_dict` as compact JSON bytes."""
        return self.__pydantic_serializer__.to_json(self, exclude_unset=True, by_alias=True)

    @classmethod
    def _invalid(cls, exc: ValidationError, obj: Any) -> InvalidObjectError:
        from kubewerk.model._errors import pydantic_field_errors

        name = ""
        if isinstance(obj, dict):
            meta = obj.get("metadata")
            if isinstance(meta, dict) and isinstance(meta.get("name"), str):
                name = meta["name"]
        return InvalidObjectError(cls._kube_kind_name(), name, pydantic_field_errors(cls, exc))

    @classmethod
    def _kube_kind_name(cls) -> str:
        return cls.__name__

    @classmethod
    def field_errors(cls, exc: ValidationError) -> list[FieldError]:
        """Translate a pydantic ``ValidationError`` of this class into field errors."""
        from kubewerk.model._errors import pydantic_field_errors

        return pydantic_field_errors(cls, exc)

    def __repr_args__(self) -> Any:
        # show only what is set: models of big CRDs are otherwise unreadable
        for name in self.__pydantic_fields__:
            if name in self.__pydantic_fields_set__:
                yield name, getattr(self, name)
        if self.__pydantic_extra__:
            yield from self.__pydantic_extra__.items()
