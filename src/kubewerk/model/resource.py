"""``Resource[Spec, Status]``: one class is the typed object, the reconciler's argument
and (through :func:`kubewerk.model.crd_for`) the complete CRD version.

::

    class Widget(Resource[WidgetSpec, WidgetStatus], group="example.com", version="v1"):
        \"\"\"A widget.\"\"\"

derives kind ``Widget``, plural ``widgets``, singular ``widget``, list kind
``WidgetList``, scope ``Namespaced``, the status subresource (because there is a status
type) and registers the class as version v1 of ``widgets.example.com``.
"""

from __future__ import annotations

import copy
import inspect
import re
import threading
import typing
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from kubewerk.core.errors import FieldError
from kubewerk.core.gvk import format_api_version, split_api_version
from kubewerk.core.jsoncopy import copy_tree
from kubewerk.core.validation import is_dns1035_label, is_dns1123_subdomain
from kubewerk.model._docstrings import attribute_docstrings
from kubewerk.model._naming import guess_plural, kind_from_class_name
from kubewerk.model.base import KubeModel, _is_none
from kubewerk.model.errors import ModelDefinitionError
from kubewerk.model.markers import PrinterColumn, Scale
from kubewerk.model.meta import ObjectMeta
from kubewerk.model.status_phase import PhaseDeclaration

if TYPE_CHECKING:
    from kubewerk.schema import CompiledSchema

__all__ = [
    "AnyResource",
    "KindInfo",
    "Resource",
    "ResourceScope",
    "SchemaCompiler",
    "SpecT",
    "StatusT",
    "kinds",
    "provide_schema_compiler",
    "resource_class",
    "versions_of",
]

SpecT = TypeVar("SpecT")
StatusT = TypeVar("StatusT")

ResourceScope = Literal["Namespaced", "Cluster"]
"""``spec.scope`` of a CRD (Kubernetes' ``ResourceScope``)."""

_KIND = re.compile(r"[A-Za-z][A-Za-z0-9]*")


@dataclass(frozen=True)
class KindInfo:
    """Names and per-version settings of a concrete resource class."""

    group: str
    version: str
    kind: str
    plural: str
    singular: str
    list_kind: str
    scope: ResourceScope
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    served: bool = True
    storage: bool | None = None
    deprecated: bool = False
    deprecation_warning: str | None = None
    printer_columns: tuple[PrinterColumn, ...] = ()
    scale: Scale | None = None
    status_subresource: bool = False
    selectable_fields: tuple[str, ...] = ()
    lifecycle: PhaseDeclaration | None = None
    """The ``lifecycle=`` declaration (see :mod:`kubewerk.model.status_phase`)."""
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def api_version(self) -> str:
        return format_api_version(self.group, self.version)

    @property
    def crd_name(self) -> str:
        return f"{self.plural}.{self.group}"


_lock = threading.Lock()
_REGISTRY: dict[tuple[str, str], dict[str, type[Resource[Any, Any]]]] = {}


def _register(cls: type[Resource[Any, Any]], info: KindInfo) -> None:
    with _lock:
        _REGISTRY.setdefault((info.group, info.kind), {})[info.version] = cls


def versions_of(group: str, kind: str) -> dict[str, type[Resource[Any, Any]]]:
    """The registered classes of one kind, by version (the most recent definition wins)."""
    with _lock:
        return dict(_REGISTRY.get((group, kind), {}))


def resource_class(api_version: str, kind: str) -> type[Resource[Any, Any]] | None:
    """The registered class for an ``apiVersion``/``kind`` pair, or None."""
    group, version = split_api_version(api_version)
    return versions_of(group, kind).get(version)


def kinds() -> list[tuple[str, str]]:
    """All registered ``(group, kind)`` pairs, sorted."""
    with _lock:
        return sorted(_REGISTRY)


SchemaCompiler = Callable[[type["Resource[Any, Any]"]], "CompiledSchema"]
"""Compiles the schema of one concrete resource class (see :func:`provide_schema_compiler`)."""

_schema_compiler: SchemaCompiler | None = None


def provide_schema_compiler(compiler: SchemaCompiler) -> None:
    """Install how :meth:`Resource.compiled_schema` compiles a class.

    The CRD generator (:mod:`kubewerk.model.crdgen`) sits above this module, because it
    reads resource classes; it installs its compiler when it is imported, which
    importing :mod:`kubewerk.model` always does. This module never imports it back.
    """
    global _schema_compiler
    _schema_compiler = compiler


def _is_none_type(tp: Any) -> bool:
    return tp is None or tp is type(None)


def _all_optional(tp: Any) -> bool:
    return (
        isinstance(tp, type)
        and issubclass(tp, BaseModel)
        and all(not f.is_required() for f in tp.__pydantic_fields__.values())
    )


def _attribute_docs(cls: type[BaseModel]) -> bool:
    """Descriptions from docstrings below the fields a concrete kind declares itself."""
    own = inspect.get_annotations(cls)
    if not own:
        return False
    changed = False
    for name, text in attribute_docstrings(cls).items():
        info = cls.__pydantic_fields__.get(name)
        if name in own and info is not None and info.description is None:
            new = copy.copy(info)
            new.description = text
            cls.__pydantic_fields__[name] = new
            changed = True
    return changed


class Resource(KubeModel, Generic[SpecT, StatusT]):
    """A Kubernetes object: ``apiVersion``, ``kind``, typed ``metadata``, ``spec``, ``status``.

    Parametrise with the spec and status models; use ``None`` for a kind without a
    status (no status subresource) or without a spec (declare the kind's top-level
    fields on the class instead). A spec whose fields are all optional may be left
    out when constructing or parsing an object.

    Class keywords of a concrete kind (only ``group`` is required):

    ``group``, ``version`` (default ``v1``), ``kind`` (default: the class name, without
    a trailing version suffix such as ``V1beta1``), ``plural`` (English plural of the
    lower-cased kind), ``singular`` (lower-cased kind), ``list_kind`` (kind + ``List``),
    ``scope`` (``"Namespaced"`` or ``"Cluster"``), ``short_names``, ``categories``;
    per version: ``served``, ``storage``, ``deprecated``, ``deprecation_warning``,
    ``printer_columns``, ``scale``, ``status_subresource`` (default: on when there is a
    status type), ``selectable_fields`` (JSON paths); for the kind: ``lifecycle`` (any
    :class:`~kubewerk.model.status_phase.PhaseDeclaration`, e.g. a
    ``kubewerk.lifecycle.Lifecycle``: ``status.phase`` becomes an enum guarded by the
    declaration's transition rule); plus :class:`KubeModel`'s ``rules``,
    ``preserve_unknown_fields`` and ``map_type``.
    """

    # pydantic (< Python 3.13) reads attribute docstrings by parsing the source around
    # the calling frame, which breaks for ``Resource[A, B]`` written inside a multi-line
    # class statement; concrete kinds read theirs in _kube_adjust_fields instead
    # (kubewerk.model._docstrings)
    model_config = ConfigDict(use_attribute_docstrings=False)

    api_version: str = Field(default="", alias="apiVersion")
    """APIVersion of this object's schema: <group>/<version>."""
    kind: str = ""
    """The kind of this object, in CamelCase."""
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    """Standard object metadata."""
    spec: SpecT
    status: StatusT | None = None

    __kube__: ClassVar[KindInfo | None] = None
    __kube_is_resource__: ClassVar[bool] = True
    __kube_pending__: ClassVar[dict[str, Any] | None] = None

    def __init_subclass__(
        cls,
        *,
        group: str | None = None,
        version: str | None = None,
        kind: str | None = None,
        plural: str | None = None,
        singular: str | None = None,
        list_kind: str | None = None,
        scope: ResourceScope | None = None,
        short_names: Sequence[str] | None = None,
        categories: Sequence[str] | None = None,
        served: bool | None = None,
        storage: bool | None = None,
        deprecated: bool | None = None,
        deprecation_warning: str | None = None,
        printer_columns: Sequence[PrinterColumn] | None = None,
        scale: Scale | None = None,
        status_subresource: bool | None = None,
        selectable_fields: Sequence[str] | None = None,
        lifecycle: PhaseDeclaration | None = None,
        **kwargs: Any,
    ) -> None:
        given = {
            k: v
            for k, v in {
                "group": group,
                "version": version,
                "kind": kind,
                "plural": plural,
                "singular": singular,
                "list_kind": list_kind,
                "scope": scope,
                "short_names": short_names,
                "categories": categories,
                "served": served,
                "storage": storage,
                "deprecated": deprecated,
                "deprecation_warning": deprecation_warning,
                "printer_columns": printer_columns,
                "scale": scale,
                "status_subresource": status_subresource,
                "selectable_fields": selectable_fields,
                "lifecycle": lifecycle,
            }.items()
            if v is not None
        }
        if given and "group" not in given and cls.__kube__ is None:
            raise ModelDefinitionError(
                f'{cls.__name__}: a resource needs group= (e.g. group="example.com")'
            )
        cls.__kube_pending__ = given or None
        super().__init_subclass__(**kwargs)

    @classmethod
    def _kube_adjust_fields(cls) -> bool:
        changed = super()._kube_adjust_fields()
        pending = cls.__dict__.get("__kube_pending__")
        if pending:
            cls.__kube__ = cls._kube_make_info(pending)
        fields = cls.__pydantic_fields__
        if pending:
            changed = _attribute_docs(cls) or changed
        spec = fields.get("spec")
        if spec is not None and spec.is_required():
            if _is_none_type(spec.annotation):
                new = copy.copy(spec)
                new.default = None
                new.exclude_if = _is_none
                fields["spec"] = new
                changed = True
            elif _all_optional(spec.annotation):
                new = copy.copy(spec)
                factory: type[BaseModel] = spec.annotation  # type: ignore[assignment]
                new.default_factory = factory
                fields["spec"] = new
                changed = True
        info = cls.__dict__.get("__kube__")
        if isinstance(info, KindInfo):
            for name, value in (("api_version", info.api_version), ("kind", info.kind)):
                old = fields[name]
                new = copy.copy(old)
                new.annotation = Literal[value]  # type: ignore[assignment]
                new.default = value
                fields[name] = new
            changed = True
        return changed

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        info = cls.__dict__.get("__kube__")
        if isinstance(info, KindInfo):
            _register(cls, info)

    @classmethod
    def _kube_make_info(cls, given: dict[str, Any]) -> KindInfo:
        inherited = cls.__kube__
        base: dict[str, Any] = {}
        if inherited is not None:
            # a subclass of a concrete kind keeps its names unless it overrides them
            base = {
                "group": inherited.group,
                "version": inherited.version,
                "kind": inherited.kind,
                "plural": inherited.plural,
                "singular": inherited.singular,
                "list_kind": inherited.list_kind,
                "scope": inherited.scope,
                "short_names": inherited.short_names,
                "categories": inherited.categories,
                "lifecycle": inherited.lifecycle,
            }
        base.update(given)
        where = cls.__name__
        group = str(base["group"])
        version = str(base.get("version", "v1"))
        kind = str(base.get("kind") or kind_from_class_name(cls.__name__, version))
        plural = str(base.get("plural") or guess_plural(kind))
        singular = str(base.get("singular") or kind.lower())
        list_kind = str(base.get("list_kind") or f"{kind}List")
        scope = base.get("scope", "Namespaced")
        if is_dns1123_subdomain(group) or "." not in group:
            raise ModelDefinitionError(
                f"{where}: group {group!r} must be a DNS subdomain with at least one dot"
            )
        if is_dns1035_label(version):
            raise ModelDefinitionError(
                f"{where}: version {version!r} must be a DNS-1035 label, e.g. v1 or v1beta1"
            )
        if not _KIND.fullmatch(kind):
            raise ModelDefinitionError(
                f"{where}: kind {kind!r} must be an alphanumeric CamelCase name"
            )
        for label, value in (("plural", plural), ("singular", singular)):
            if is_dns1035_label(value):
                raise ModelDefinitionError(
                    f"{where}: {label} {value!r} must be a lower-case DNS-1035 label"
                )
        if len(plural) + 1 + len(group) > 253:
            raise ModelDefinitionError(f"{where}: CRD name {plural}.{group} is longer than 253")
        short_names = tuple(base.get("short_names", ()))
        for short in short_names:
            if is_dns1035_label(short):
                raise ModelDefinitionError(
                    f"{where}: short name {short!r} must be a lower-case DNS-1035 label"
                )
        categories = tuple(base.get("categories", ()))
        if scope not in ("Namespaced", "Cluster"):
            raise ModelDefinitionError(
                f"{where}: scope must be 'Namespaced' or 'Cluster', not {scope!r}"
            )
        status_ann = cls.__pydantic_fields__["status"].annotation
        has_status = not all(
            _is_none_type(a) for a in (typing.get_args(status_ann) or (status_ann,))
        )
        status_sub = base.get("status_subresource")
        if status_sub is None:
            status_sub = has_status
        elif status_sub and not has_status:
            raise ModelDefinitionError(f"{where}: status_subresource=True needs a status type")
        columns = tuple(base.get("printer_columns", ()))
        for col in columns:
            if not isinstance(col, PrinterColumn) or not col.json_path:
                raise ModelDefinitionError(
                    f"{where}: printer_columns= entries must be PrinterColumn(..., json_path=...)"
                )
        scale = base.get("scale")
        if scale is not None and not isinstance(scale, Scale):
            raise ModelDefinitionError(f"{where}: scale= must be a Scale(...)")
        lifecycle = base.get("lifecycle")
        if lifecycle is not None and not callable(getattr(lifecycle, "phase_schema", None)):
            raise ModelDefinitionError(
                f"{where}: lifecycle= takes a lifecycle declaration (an object with "
                f"phase_schema(), e.g. kubewerk.lifecycle.Lifecycle), not {lifecycle!r}"
            )
        if lifecycle is not None and not has_status:
            raise ModelDefinitionError(
                f"{where}: lifecycle= needs a status type with a phase field "
                "(e.g. a subclass of kubewerk.lifecycle.LifecycleStatus)"
            )
        deprecated = bool(base.get("deprecated", False))
        warning = base.get("deprecation_warning")
        if warning is not None and not deprecated:
            deprecated = True
        return KindInfo(
            group=group,
            version=version,
            kind=kind,
            plural=plural,
            singular=singular,
            list_kind=list_kind,
            scope=scope,
            short_names=short_names,
            categories=categories,
            served=bool(base.get("served", True)),
            storage=base.get("storage"),
            deprecated=deprecated,
            deprecation_warning=warning,
            printer_columns=columns,
            scale=scale,
            status_subresource=bool(status_sub),
            selectable_fields=tuple(base.get("selectable_fields", ())),
            lifecycle=lifecycle,
        )

    def model_post_init(self, context: Any, /) -> None:
        # apiVersion and kind are part of every object the class writes, even when the
        # caller did not spell them out
        if self.__kube__ is not None:  # the class attribute (no field is named so)
            self.__pydantic_fields_set__.update(("api_version", "kind"))

    @classmethod
    def _kube_kind_name(cls) -> str:
        info = cls.__kube__
        return f"{info.kind}.{info.group}" if info else cls.__name__

    @classmethod
    def kind_info(cls) -> KindInfo:
        """The names and settings of this concrete kind (TypeError on an abstract class)."""
        info = cls.__kube__
        if info is None:
            raise TypeError(f"{cls.__name__} is not a concrete resource (no group= given)")
        return info

    @classmethod
    def compiled_schema(cls) -> CompiledSchema:
        """This version's schema, as the CRD generator writes it, compiled by
        :mod:`kubewerk.schema` (cached per class). Raises
        :class:`~kubewerk.model.errors.ModelDefinitionError` when the kind's CRD cannot be
        generated (e.g. its versions disagree on names or on the storage version)."""
        if _schema_compiler is None:
            raise RuntimeError(
                "no schema compiler installed: import kubewerk.model (not only its resource module)"
            )
        return _schema_compiler(cls)

    def api_errors(
        self, old: Resource[Any, Any] | dict[str, Any] | None = None
    ) -> list[FieldError]:
        """The schema and CEL-rule errors the API server would answer for this object.

        The object is dumped, defaulted and validated against the generated CRD schema
        as a create (``old=None``) or as an update from ``old`` (transition rules,
        ``Immutable``). Metadata is the API server's own business and not checked here.
        """
        compiled = self.compiled_schema()
        obj = self.to_dict()
        compiled.apply_defaults(obj)
        previous: dict[str, Any] | None = None
        if old is not None:
            previous = old.to_dict() if isinstance(old, Resource) else copy_tree(old)
            compiled.apply_defaults(previous)
        return compiled.validate(obj, previous)

    @property
    def name(self) -> str | None:
        """``metadata.name``."""
        return self.metadata.name

    @property
    def namespace(self) -> str | None:
        """``metadata.namespace``."""
        return self.metadata.namespace


AnyResource = Resource[Any, Any]
"""A resource of any kind; ``type[AnyResource]`` is any resource class."""
