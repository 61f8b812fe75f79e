"""A served kind's strategy: the interface the REST layer calls, and its default.

kube-apiserver gives every resource a strategy (``k8s.io/apiserver/pkg/registry/rest``:
``RESTCreateStrategy``, ``RESTUpdateStrategy``, ``RESTDeleteStrategy``), the field set
its selectors match (``GetAttrs`` and the field label conversion) and a table
converter. kubewerk does the same: every ``ServedResource`` carries a ``Strategy``, and
the REST layer (``rest``, ``admission``, ``table``, ``discovery``) calls its hooks at
fixed points and never names a kind. A strategy instance holds the data its hooks need
(its columns, its field-selector table), so a hook never looks anything up.

``Strategy`` is the interface and the default: a built-in kind without generation,
status rules or finalizers of its own, with the Table columns and cells it is given. A
kind with more behaviour subclasses it (``kinds.namespaces``, ``kinds.crds``, ...);
custom resources have theirs in ``kinds.custom``.

The hooks, in the order a request meets them:

- create: ``prepare_for_create`` (after the system fields are set, before admission);
- update: ``prepare_for_update`` (main endpoint only, after the status of a kind with a
  status subresource is reset to the stored one), then ``generation_changed``;
- admission: ``default``, typed pruning if ``prunes_unknown_fields``, ``allocate``, the
  ObjectMeta rules with ``name_rule``, ``validate`` (``validate_status`` for a write
  through ``/status``), ``warnings``;
- delete: ``finalizers_on_delete``, ``delete_grace_period``, ``holds_deletion`` (also
  asked when an update leaves a deleting object without finalizers),
  ``prepare_for_delete``;
- storage: ``to_storage`` on every write, ``from_storage`` on every read;
- list and watch: ``field_selector``; Tables: ``name_column``, ``columns``, ``cells``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, NamedTuple

import orjson

from kubewerk.core.errors import FieldError
from kubewerk.core.gofmt import json_equal
from kubewerk.core.jsonpath import evaluate
from kubewerk.core.meta import human_duration, parse_time
from kubewerk.core.selectors import builtin_field_set, convert_builtin_field_label
from kubewerk.core.validation import NameRule

if TYPE_CHECKING:
    from kubewerk.core.strategic import PatchSchema

JSON = dict[str, Any]


@dataclass(frozen=True, slots=True)
class PrinterColumn:
    """A column of the Table view (``additionalPrinterColumns`` shape)."""

    name: str
    type: str
    json_path: str
    description: str = ""
    format: str = ""
    priority: int = 0


AGE = PrinterColumn("Age", "string", ".metadata.creationTimestamp")
"""The Age column built-in kinds end with (their cells print the age)."""


class FieldSelection(NamedTuple):
    """How a field selector applies to one kind in one version."""

    convert: Callable[[str], str]
    """A selector's field label → the label in ``fields``; raises ``ValueError`` with
    Kubernetes' message for a label the kind does not support."""
    fields: Callable[[JSON], dict[str, str]]
    """The field set of a stored object (``GetAttrs``)."""


class Strategy:
    """The default strategy (see the module docstring for when each hook runs).

    ``columns`` and ``cells`` are the Table columns after Name and a function giving
    their cells for an object (default: each column's JSON path evaluated). ``field_key``
    names the kind's field-selector table in ``kubewerk.core.selectors`` (``v1/Secret``);
    empty: ``metadata.name`` and ``metadata.namespace`` only. ``stored_field_key`` is
    the table of the stored form, when another kind's storage holds the objects.
    """

    name_rule: ClassVar[NameRule] = "subdomain"
    """The ``metadata.name`` rule of this kind's ObjectMeta validation."""
    prunes_unknown_fields: ClassVar[bool] = True
    """Typed decoding: unknown top-level and metadata fields are dropped (reported per
    ``fieldValidation``)."""
    allow_unconditional_update: ClassVar[bool] = True
    """A PUT without ``metadata.resourceVersion`` overwrites (else 422)."""
    allow_create_on_update: bool = False
    """A PUT of an object that does not exist creates it (kube's
    ``RESTUpdateStrategy.AllowCreateOnUpdate``; else 404). Per kind: a class or an
    instance sets it (``Strategy(allow_create_on_update=True)``)."""
    subresources: ClassVar[Mapping[str, tuple[str, ...]]] = {}
    """Subresources beside ``status`` and ``scale``, with their discovery verbs."""
    subresource_kinds: ClassVar[Mapping[str, tuple[str, str, str]]] = {}
    """The (group, version, kind) discovery gives a subresource of ``subresources`` that
    takes another kind than the resource's own (``pods/eviction``: policy/v1 Eviction)."""
    name_column: ClassVar[bool] = True
    """Tables start with the Name column."""
    offload_safe: ClassVar[bool] = True
    """The create hooks admission calls (``default``, ``allocate``, ``validate``,
    ``warnings``, ``typed_decode``) and ``to_storage`` read and change only the object
    they are given and this strategy's own data, never storage, a shared pool or other
    mutable state: so the REST layer may run them in a worker thread for a big body
    (``ResourceApi.create_async``). True of this class's own hooks; a subclass does not
    inherit it: each kind that overrides a hook declares it for itself (``offloadable``)."""

    def __init__(
        self,
        *,
        columns: Sequence[PrinterColumn] = (),
        cells: Callable[[JSON], list[Any]] | None = None,
        field_key: str = "",
        stored_field_key: str | None = None,
        allow_create_on_update: bool | None = None,
    ) -> None:
        if allow_create_on_update is not None:
            self.allow_create_on_update = allow_create_on_update
        self._columns = tuple(columns)
        self._cells = cells
        self._field_key = field_key
        self._stored_field_key = field_key if stored_field_key is None else stored_field_key

    @classmethod
    def offloadable(cls) -> bool:
        """Whether this very class declares ``offload_safe`` (a subclass that overrides a
        hook has not vouched for it just by inheriting the flag)."""
        return bool(cls.__dict__.get("offload_safe", False))

    # -- create and update -------------------------------------------------------

    def prepare_for_create(self, obj: JSON) -> None:
        """Set what a create decides, whatever the body said (kinds without
        ``metadata.generation`` drop it)."""
        obj["metadata"].pop("generation", None)

    def prepare_for_update(self, new: JSON, old: JSON) -> None:
        """Reset what an update of the main endpoint may not change (``old`` is the
        stored object as served); ``new`` is this request's own copy."""

    def generation_changed(self, new: JSON, old: JSON) -> bool:
        """Whether an update bumps ``metadata.generation`` (asked for kinds that have one):
        the spec changed."""
        return not json_equal(new.get("spec"), old.get("spec"))

    # -- admission ---------------------------------------------------------------

    def default(self, obj: JSON) -> None:
        """Defaults a typed decode applies (``SetDefaults_*``), before validation."""

    def allocate(self, obj: JSON, old: JSON | None, dry_run: bool, subresource: str | None) -> None:
        """Assign what the kind's storage allocates from a shared pool (a Service's
        cluster IPs and node ports), after defaulting and before validation, as
        kube-apiserver's ``BeginCreate``/``BeginUpdate`` hooks do; raise ``ApiError`` to
        refuse the write. Nothing may be reserved here that the write's failure would
        leave behind: pools are what stored objects hold. A dry run reserves nothing."""

    def validate(self, obj: JSON, old: JSON | None) -> list[FieldError]:
        """The kind's own validation beyond ObjectMeta (``old`` None on create)."""
        return []

    def validate_status(self, obj: JSON, old: JSON) -> list[FieldError]:
        """The validation of a write through ``/status`` (kube's status strategy's
        ``ValidateUpdate``); default: the same as the main endpoint's."""
        return self.validate(obj, old)

    def warnings(self, obj: JSON, old: JSON | None) -> Sequence[str]:
        """Warnings for the response (``WarningsOnCreate`` / ``WarningsOnUpdate``)."""
        return ()

    # -- delete ------------------------------------------------------------------

    def finalizers_on_delete(self, finalizers: list[str]) -> list[str]:
        """The finalizers a delete request leaves on the object (after propagation's)."""
        return finalizers

    def delete_grace_period(self, obj: JSON, requested: int | None) -> int | None:
        """Graceful deletion (``RESTGracefulDeleteStrategy.CheckGracefulDelete``): the grace
        period a delete of ``obj`` gets, ``requested`` being the request's
        ``gracePeriodSeconds`` (negative ones already made 1); None: the kind has no
        graceful deletion (every kind but Pods), and a delete removes it at once unless
        finalizers keep it."""
        return None

    def holds_deletion(self, obj: JSON) -> bool:
        """Whether something beside ``metadata.finalizers`` keeps a deleted object."""
        return False

    def prepare_for_delete(self, obj: JSON) -> None:
        """Change a copy of the object that a delete marks with ``deletionTimestamp``."""

    # -- storage -----------------------------------------------------------------

    def to_storage(self, obj: JSON) -> JSON:
        """The object as stored (may change and return ``obj``, or return another)."""
        return obj

    def from_storage(self, obj: JSON, api_version: str) -> JSON:
        """The stored object as served in ``api_version``; never changes ``obj``."""
        return obj

    # -- selectors and tables ----------------------------------------------------

    def field_selector(self, version: str) -> FieldSelection:
        """Field label conversion and field set for selectors on ``version``."""
        key, stored = self._field_key, self._stored_field_key
        return FieldSelection(
            lambda label: convert_builtin_field_label(key, label),
            lambda obj: builtin_field_set(stored, obj),
        )

    def columns(self, version: str) -> Sequence[PrinterColumn]:
        """The Table columns after Name."""
        return self._columns

    def cells(self, obj: JSON, version: str, now: float) -> list[Any]:
        """The Table cells of ``obj`` for ``columns(version)``."""
        if self._cells is not None:
            return self._cells(obj)
        return [column_cell(col, obj, now) for col in self.columns(version)]

    def name_cell(self, obj: JSON, version: str) -> Any:
        """The Name cell of ``obj`` (``metadata.name``; a few kinds decorate it)."""
        return (obj.get("metadata") or {}).get("name", "")

    def typed_decode(self, obj: JSON, version: str) -> list[str] | None:
        """Decode ``obj`` into the kind's type in ``version`` (in place): drop unknown
        fields and return their paths, or raise ``ValueError`` with the decoder's message
        for a value of the wrong type. None: the kind has no typed decoder here (then
        ``prunes_unknown_fields`` applies in admission)."""
        return None

    # -- patches and scale -------------------------------------------------------

    def patch_schema(self, version: str) -> PatchSchema | None:
        """The strategic-merge patch strategies of the kind in ``version`` (None: the
        table of ``kubewerk.core.strategic`` under ``ServedResource.strategic_kind``)."""
        return None

    def scale_selector(self, obj: JSON) -> str | None:
        """The ``status.selector`` of the kind's ``autoscaling/v1`` Scale (None: the
        ``ScaleSpec.label_selector_path`` of the resource, if any)."""
        return None


def column_cell(col: PrinterColumn, obj: JSON, now: float) -> Any:
    """A cell as kube-apiserver's table converter prints a JSON-path column: the first
    value typed per the column (a date as an age), several values joined by commas,
    None when absent or of the wrong type."""
    try:
        values = evaluate(col.json_path, obj)
    except ValueError:
        return None
    if not values:
        return None
    value = values[0] if len(values) == 1 else ",".join(_plain(v) for v in values)
    if col.type == "date":
        ts = parse_time(value) if isinstance(value, str) else None
        return human_duration(now - ts) if ts is not None else "<invalid>"
    if col.type == "integer":
        return value if isinstance(value, int) and not isinstance(value, bool) else None
    if col.type == "number":
        return value if isinstance(value, int | float) and not isinstance(value, bool) else None
    if col.type == "boolean":
        return value if isinstance(value, bool) else None
    return value if isinstance(value, str) else _plain(value)


def _plain(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    return orjson.dumps(value).decode()
