"""The strategy of the typed built-in kinds served from the vendored OpenAPI definitions.

``TypedKindStrategy`` is what kube-apiserver's per-kind registry strategies share for the
workload kinds (``pkg/registry/<group>/<resource>/strategy.go``):

* create: ``metadata.generation`` is 1 for kinds that track it (else dropped); a kind
  with a status subresource starts from the empty status its Go type encodes to
  (``PrepareForCreate`` resets it), or keeps the body's (Node: the kubelet registers
  with its status);
* update: the spec (everything but metadata and status) changing bumps the generation;
  the REST layer keeps status out of main-endpoint writes and everything but status out
  of ``/status`` writes;
* admission: the defaults and validation of ``kubewerk.apiserver.kindrules`` for the
  served apiVersion and kind (``validator`` on the main endpoint, ``status_validator``
  on ``/status``); none when kindrules has none for the kind;
* Tables: the columns and cells of ``kubewerk.apiserver.printers`` (Age alone when
  that has none); field selectors: ``kubewerk.core.selectors`` under ``apiVersion/Kind``;
* strategic merge: the patch strategies of the vendored schema.

Lookups into kindrules and printers happen on first use and are kept per version.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar, Protocol, Self

from kubewerk.apiserver.strategy import AGE, PrinterColumn, Strategy
from kubewerk.core.errors import FieldError
from kubewerk.core.gofmt import json_equal
from kubewerk.core.jsoncopy import copy_json
from kubewerk.core.meta import age
from kubewerk.core.selectors import kind_key
from kubewerk.core.strategic import PatchSchema

JSON = dict[str, Any]

KEEP_STATUS = "keep"
"""``created_status`` value: a create keeps the status the body carries."""

_DEFAULT_COLUMNS = (AGE,)

CREATE_ON_UPDATE: frozenset[tuple[str, str]] = frozenset(
    {
        ("", "Endpoints"),  # pkg/registry/core/endpoint/strategy.go
        ("", "LimitRange"),  # pkg/registry/core/limitrange/strategy.go
        ("", "Service"),  # pkg/registry/core/service/strategy.go (svcStrategy)
        ("rbac.authorization.k8s.io", "Role"),  # pkg/registry/rbac/role/strategy.go
        ("rbac.authorization.k8s.io", "ClusterRole"),
        ("rbac.authorization.k8s.io", "RoleBinding"),
        ("rbac.authorization.k8s.io", "ClusterRoleBinding"),
    }
)
"""The typed kinds whose kube strategy's ``AllowCreateOnUpdate`` is true (a PUT of a
missing object creates it); every other typed kind's is false (PodDisruptionBudget,
PriorityClass, EndpointSlice, Node, the workload and admission registration kinds)."""


def _default_cells(obj: JSON) -> list[Any]:
    return [age(obj)]


class KindFacts(Protocol):
    """What a strategy is built from (``catalog.KindRow``)."""

    @property
    def group(self) -> str: ...
    @property
    def kind(self) -> str: ...
    @property
    def versions(self) -> tuple[str, ...]: ...
    @property
    def generation(self) -> bool: ...
    @property
    def created_status(self) -> JSON | str | None: ...
    @property
    def spec_fields(self) -> tuple[str, ...] | None: ...


class TypedKindStrategy(Strategy):
    """The strategy of one typed built-in kind (see the module docstring).

    Typed decoding (``typed_decode``, against the vendored definition) replaces the
    admission step's top-level pruning.

    ``versions`` maps each served version to its ``apiVersion``; ``generation`` says
    whether the kind tracks ``metadata.generation``; ``created_status`` is the status a
    create starts with (None: dropped; ``KEEP_STATUS``: the body's); ``spec_fields``
    are the top-level fields whose change bumps the generation (None: everything but
    ``apiVersion``, ``kind``, ``metadata`` and ``status``).
    """

    def __init__(
        self,
        *,
        group: str,
        kind: str,
        versions: Sequence[str],
        generation: bool,
        created_status: JSON | str | None,
        spec_fields: tuple[str, ...] | None = None,
    ) -> None:
        storage_api_version = _api_version(group, versions[0])
        super().__init__(
            field_key=kind_key(storage_api_version, kind),
            allow_create_on_update=(group, kind) in CREATE_ON_UPDATE,
        )
        self.group = group
        self.kind = kind
        self._api_versions = {v: _api_version(group, v) for v in versions}
        self._generation = generation
        self._created_status = created_status
        self._spec_fields = spec_fields
        self._printers: dict[str, tuple[tuple[PrinterColumn, ...], Any]] = {}
        self._decoders: dict[str, tuple[Any, str] | None] = {}
        self._patch_schemas: dict[str, PatchSchema | None] = {}

    @classmethod
    def for_kind(cls, facts: KindFacts) -> Self:
        """The strategy of the kind ``facts`` describes."""
        return cls(
            group=facts.group,
            kind=facts.kind,
            versions=facts.versions,
            generation=facts.generation,
            created_status=facts.created_status,
            spec_fields=facts.spec_fields,
        )

    # -- create and update -------------------------------------------------------

    def prepare_for_create(self, obj: JSON) -> None:
        meta = obj["metadata"]
        if self._generation:
            meta["generation"] = 1
        else:
            meta.pop("generation", None)
        if self._created_status is None:
            obj.pop("status", None)
        elif self._created_status != KEEP_STATUS:
            obj["status"] = copy_json(self._created_status)

    def generation_changed(self, new: JSON, old: JSON) -> bool:
        if self._spec_fields is not None:
            keys: Any = self._spec_fields
        else:
            keys = (new.keys() | old.keys()) - {"apiVersion", "kind", "metadata", "status"}
        return any(not json_equal(new.get(k), old.get(k)) for k in keys)

    # -- admission ---------------------------------------------------------------

    def _api_version_of(self, obj: JSON) -> str:
        value = obj.get("apiVersion")
        if isinstance(value, str) and value in self._api_versions.values():
            return value
        return next(iter(self._api_versions.values()))

    def default(self, obj: JSON) -> None:
        from kubewerk.apiserver import kindrules

        defaulter = kindrules.defaulter(self._api_version_of(obj), self.kind)
        if defaulter is not None:
            defaulter(obj)

    def validate(self, obj: JSON, old: JSON | None) -> list[FieldError]:
        from kubewerk.apiserver import kindrules

        check = kindrules.validator(self._api_version_of(obj), self.kind)
        return check(obj, old) if check is not None else []

    def validate_status(self, obj: JSON, old: JSON) -> list[FieldError]:
        from kubewerk.apiserver import kindrules

        check = kindrules.status_validator(self._api_version_of(obj), self.kind)
        return check(obj, old) if check is not None else []

    prunes_unknown_fields: ClassVar[bool] = False  # typed_decode does it
    # the create hooks read and change only the object: kindrules' tables are filled at
    # import and read only (their quantity memo is an lru_cache), the typed decoder's
    # caches are locked, ``_decoders`` stores the same value whoever fills it
    # (Strategy.offload_safe; a subclass declares it for itself)
    offload_safe: ClassVar[bool] = True

    def typed_decode(self, obj: JSON, version: str) -> list[str] | None:
        if version not in self._decoders:
            from kubewerk.apiserver.kinds import k8s_openapi
            from kubewerk.apiserver.kinds.typed_decode import TypedDecoder

            name = k8s_openapi.definition_name(self.group, version, self.kind)
            self._decoders[version] = (
                (TypedDecoder(k8s_openapi.definitions()), name) if name else None
            )
        hit = self._decoders[version]
        if hit is None:
            return None
        decoder, name = hit
        unknown: list[str] = decoder.decode(obj, name)
        return unknown

    # -- tables ------------------------------------------------------------------

    def _printer(self, version: str) -> tuple[tuple[PrinterColumn, ...], Any]:
        hit = self._printers.get(version)
        if hit is None:
            from kubewerk.apiserver import printers

            api_version = self._api_versions.get(version) or _api_version(self.group, version)
            found = printers.printer(api_version, self.kind)
            hit = (found.columns, found) if found is not None else (_DEFAULT_COLUMNS, None)
            self._printers[version] = hit
        return hit

    def columns(self, version: str) -> Sequence[PrinterColumn]:
        return self._printer(version)[0]

    def cells(self, obj: JSON, version: str, now: float) -> list[Any]:
        found = self._printer(version)[1]
        if found is None:
            return _default_cells(obj)
        cells: list[Any] = found.cells_at(obj, now)
        if len(cells) != len(found.columns):  # a printer built without cells_at
            cells = found.cells(obj)
        return cells

    def name_cell(self, obj: JSON, version: str) -> Any:
        found = self._printer(version)[1]
        if found is None:
            return super().name_cell(obj, version)
        return found.name(obj)

    # -- patches -----------------------------------------------------------------

    def patch_schema(self, version: str) -> PatchSchema | None:
        if version not in self._patch_schemas:
            from kubewerk.apiserver.kinds import k8s_openapi
            from kubewerk.core.strategic import OpenApiPatchSchema

            name = k8s_openapi.definition_name(self.group, version, self.kind)
            self._patch_schemas[version] = (
                OpenApiPatchSchema(k8s_openapi.definitions(), name) if name else None
            )
        return self._patch_schemas[version]


def _api_version(group: str, version: str) -> str:
    return f"{group}/{version}" if group else version
