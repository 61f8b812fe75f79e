"""References between resources: ``Ref[Kind]``, and what a field says about one.

A field typed ``Ref[Database]`` names another object by name; the lifecycle kernel
(``kubewerk.lifecycle``) reads such fields to know what an object depends on::

    class ApplicationSpec(KubeModel):
        database_ref: Ref[Database]                                   # same namespace
        cache_refs: list[Ref[Cache]] = []                             # several
        tenant_ref: Annotated[Ref[Tenant], OnDelete.CASCADE]          # deleted with it
        credentials_ref: Annotated[Ref[Secret], CrossNamespace()] | None = None

What a ref guarantees:

* **Its schema follows Kubernetes' object references** (``LocalObjectReference``, the
  API conventions' ``FooReference``): an object with a required ``name`` (1 to 253
  characters) and ``x-kubernetes-map-type: atomic`` (it is replaced as a whole by
  server-side apply). Only a field marked :class:`CrossNamespace` has ``namespace`` in
  its schema (1 to 63 characters, optional: empty means the referring object's own
  namespace); elsewhere the API server prunes a ``namespace`` a client sends, and the
  kernel ignores it. Both names are the Python attributes ``ref.name`` and
  ``ref.namespace``.
* **The target kind is the type parameter**: a :class:`~kubewerk.model.Resource` class
  (``Ref[Database]``), a forward reference written as a string (``Ref["Project"]``,
  resolved when the references are first read: a name in the module that declares the
  field, else a registered kind named ``Kind`` or ``Kind.group``), or a kind the model
  does not define, declared as an :class:`ExternalKind` — the common built-in ones ship
  here: :class:`Secret`, :class:`ConfigMap`, :class:`ServiceAccount`, :class:`Service`,
  :class:`PersistentVolumeClaim` and :class:`Namespace` (``Ref[Secret]``).
* **A per-ref deletion policy** (:class:`OnDelete`, default ``block``) says what
  deleting the target does while this object still references it: ``block`` waits
  until this object is gone, ``cascade`` deletes this object first, ``orphan`` lets the
  target go.

Markers written where they do not apply (``CrossNamespace`` on a string) make class
creation fail with :class:`~kubewerk.model.errors.ModelDefinitionError`, like every
marker. :func:`kubewerk.model.ref_fields.references_of` lists a model's refs, and the
CRD generator writes them into the ``kubewerk.dev/references`` annotation.
"""

from __future__ import annotations

import enum
import re
import threading
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar, Final, Generic, TypeVar

from pydantic import Field

from kubewerk.model import _schemagen
from kubewerk.model._markerschema import MarkerTarget, marker_unit
from kubewerk.model._naming import guess_plural
from kubewerk.model.base import KubeModel
from kubewerk.model.errors import ModelDefinitionError
from kubewerk.model.markers import MapType

__all__ = [
    "ConfigMap",
    "CrossNamespace",
    "ExternalKind",
    "Namespace",
    "OnDelete",
    "PersistentVolumeClaim",
    "Ref",
    "Secret",
    "Service",
    "ServiceAccount",
    "external_kinds",
    "is_ref_class",
]

T = TypeVar("T")

_KIND: Final = re.compile(r"[A-Z][A-Za-z0-9]*")


class OnDelete(enum.StrEnum):
    """What deleting the referenced object does while this object references it; a
    marker on a ref field (``Annotated[Ref[Tenant], OnDelete.CASCADE]``)."""

    BLOCK = "block"
    """Default: the target's deletion waits (its finalizer stays) until this object is gone."""
    CASCADE = "cascade"
    """The kernel deletes this object first, then lets the target go."""
    ORPHAN = "orphan"
    """The target goes at once; this object then waits for a target that is missing."""


@dataclass(frozen=True, slots=True)
class CrossNamespace:
    """Marker: the ref may name an object in another namespace (its schema gets an
    optional ``namespace``; empty means the referring object's namespace)."""


class ExternalKind:
    """A kind the model does not define (a built-in kind, another operator's CRD), as the
    parameter of :class:`Ref`::

        class Deployment(ExternalKind, group="apps"):
            \"\"\"apps/v1 Deployment.\"\"\"

        image_ref: Ref[Deployment]

    Class keywords: ``group`` (``""`` for the core group), ``version`` (default ``v1``:
    the version the kernel reads the kind in), ``kind`` (default: the class name),
    ``plural`` (default: English plural of the lower-cased kind) and ``namespaced``
    (default True). An object of such a kind counts as ready once it exists (and is
    not being deleted): the kernel knows no lifecycle for it.
    """

    group: ClassVar[str] = ""
    version: ClassVar[str] = "v1"
    kind: ClassVar[str] = ""
    plural: ClassVar[str] = ""
    namespaced: ClassVar[bool] = True

    def __init_subclass__(
        cls,
        *,
        group: str,
        version: str = "v1",
        kind: str | None = None,
        plural: str | None = None,
        namespaced: bool = True,
        **kwargs: Any,
    ) -> None:
        super().__init_subclass__(**kwargs)
        name = kind or cls.__name__
        if not _KIND.fullmatch(name):
            raise ModelDefinitionError(f"{cls.__name__}: kind {name!r} must be a CamelCase name")
        cls.group = group
        cls.version = version
        cls.kind = name
        cls.plural = plural or guess_plural(name)
        cls.namespaced = namespaced
        with _lock:
            _EXTERNAL.setdefault(name, []).append(cls)

    @classmethod
    def label(cls) -> str:
        """``Kind.group`` (``Kind`` for the core group)."""
        return f"{cls.kind}.{cls.group}" if cls.group else cls.kind


_lock = threading.Lock()
_EXTERNAL: dict[str, list[type[ExternalKind]]] = {}


def external_kinds(name: str) -> list[type[ExternalKind]]:
    """The :class:`ExternalKind` classes declared for kind ``name`` (oldest first)."""
    with _lock:
        return list(_EXTERNAL.get(name, ()))


class Secret(ExternalKind, group=""):
    """core/v1 Secret."""


class ConfigMap(ExternalKind, group=""):
    """core/v1 ConfigMap."""


class ServiceAccount(ExternalKind, group=""):
    """core/v1 ServiceAccount."""


class Service(ExternalKind, group=""):
    """core/v1 Service."""


class PersistentVolumeClaim(ExternalKind, group=""):
    """core/v1 PersistentVolumeClaim."""


class Namespace(ExternalKind, group="", namespaced=False):
    """core/v1 Namespace (cluster-scoped)."""


_NAMESPACE_SCHEMA: dict[str, Any] = {}


def _without_namespace(cls: type[KubeModel]) -> None:
    """Make the schema generator's fragment of ``cls`` the one without ``namespace``.

    The generator builds and caches one fragment per model class from its fields; a
    ref's ``namespace`` belongs in the schema only where the field is
    :class:`CrossNamespace`, whose unit adds it back. The fragment is replaced in the
    generator's per-class cache (``_schemagen`` takes no per-class field filter), before
    any field that uses the class is generated.
    """
    full = _schemagen.model_fragment(cls)
    _NAMESPACE_SCHEMA.update(full.schema["properties"]["namespace"])
    _schemagen._CACHE[cls] = _schemagen._object_fragment(cls, skip=frozenset({"namespace"}))


class Ref(KubeModel, Generic[T], map_type=MapType.ATOMIC):
    """A reference to another object by its name."""

    name: Annotated[str, Field(min_length=1, max_length=253)]
    """Name of the referenced object."""
    namespace: Annotated[str, Field(min_length=1, max_length=63)] | None = None
    """Namespace of the referenced object (default: the namespace of this object)."""

    @classmethod
    def _kube_finish_class(cls) -> None:
        super()._kube_finish_class()
        if cls.__pydantic_complete__:
            _without_namespace(cls)


def is_ref_class(tp: Any) -> bool:
    """Whether ``tp`` is :class:`Ref` or one of its parametrizations (``Ref[Database]``)."""
    return isinstance(tp, type) and issubclass(tp, Ref)


def _require_ref(marker: object, target: MarkerTarget) -> None:
    if not is_ref_class(target.python_type):
        what = "OnDelete" if isinstance(marker, OnDelete) else type(marker).__name__
        target.fail(f"{what} applies to Ref[...] fields")


@marker_unit(CrossNamespace)
def _cross_namespace(marker: CrossNamespace, target: MarkerTarget) -> None:
    _require_ref(marker, target)
    schema = target.schema
    # the properties and names are the cached fragment's: replace, never edit them
    schema["properties"] = {**schema["properties"], "namespace": dict(_NAMESPACE_SCHEMA)}
    schema["x-python-names"] = {**schema.get("x-python-names", {}), "namespace": "namespace"}


@marker_unit(OnDelete)
def _on_delete(marker: OnDelete, target: MarkerTarget) -> None:
    _require_ref(marker, target)
