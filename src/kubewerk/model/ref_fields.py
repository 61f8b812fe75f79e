"""Where a kind's refs are: in its Python model, in its CRD, in its objects.

:func:`references_of` walks a resource class and lists its :class:`RefField` entries —
one per field typed :class:`~kubewerk.model.refs.Ref` (or a list or map of them), with
the field's JSON path, the target kind, and what the field's markers say. The CRD
generator writes them into the CRD's :data:`REFERENCES_ANNOTATION` annotation, which
:func:`parse_references` reads back, so that tools which never import the Python models
(``kubewerk graph``) know the refs of every kind they find in a cluster or in
manifests. :meth:`RefField.names` reads the names a field holds in one object.

Only the object's desired state counts: refs under ``status`` are observations, not
dependencies, and refs inside an embedded resource template belong to the templated
object; both are left out.
"""

from __future__ import annotations

import json
import re
import sys
import types
import typing
import weakref
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from pydantic import BaseModel
from pydantic.fields import FieldInfo

from kubewerk.model._fragment import is_resource
from kubewerk.model.errors import ModelDefinitionError
from kubewerk.model.refs import CrossNamespace, ExternalKind, OnDelete, external_kinds, is_ref_class

__all__ = [
    "REFERENCES_ANNOTATION",
    "RefField",
    "parse_references",
    "references_annotation",
    "references_of",
]

REFERENCES_ANNOTATION: Final = "kubewerk.dev/references"
"""The CRD annotation that lists a kind's refs (JSON, see :func:`references_annotation`)."""

_SEGMENT: Final = re.compile(r"\.([^.\[\]]+)|\[\*\]")
_SKIPPED_ROOT: Final = frozenset({"apiVersion", "kind", "metadata", "status"})


@dataclass(frozen=True, slots=True)
class RefField:
    """One ref field of a kind: where it is and what it names.

    ``path`` is the field's JSON path from the object's root, with ``[*]`` for every
    item of a list or value of a map on the way (``.spec.databaseRef``,
    ``.spec.cacheRefs[*]``). ``required`` is True when every object must hold the ref
    (the field and every field above it required, no list or map on the way): the kind
    cannot exist without its target.
    """

    path: str
    group: str
    kind: str
    namespaced: bool = True
    """Whether the target kind is namespaced."""
    cross_namespace: bool = False
    on_delete: OnDelete = OnDelete.BLOCK
    required: bool = False
    version: str | None = None
    """Set only when the served versions of the referring kind declare different refs:
    the version whose objects have this field."""
    target: type | None = field(default=None, compare=False, repr=False)
    """The target's Python class (a Resource or an ExternalKind); None when read from
    an annotation."""

    @property
    def many(self) -> bool:
        """Whether the path goes through a list or map (the field holds any number of refs)."""
        return "[*]" in self.path

    @property
    def target_label(self) -> str:
        """The target kind as ``Kind.group`` (``Kind`` for the core group)."""
        return f"{self.kind}.{self.group}" if self.group else self.kind

    @property
    def field_path(self) -> str:
        """The path without its leading dot (``spec.databaseRef``), for messages."""
        return self.path[1:]

    def names(self, obj: Mapping[str, Any]) -> list[tuple[str, str | None]]:
        """The ``(name, namespace)`` pairs this field holds in ``obj`` (a JSON object), in
        document order; ``namespace`` is None unless the field is cross-namespace and
        sets one. Values that are not refs (no string ``name``) are skipped."""
        found: list[tuple[str, str | None]] = []
        for value in _values(obj, _segments(self.path)):
            if not isinstance(value, Mapping):
                continue
            name = value.get("name")
            if not isinstance(name, str) or not name:
                continue
            namespace = value.get("namespace") if self.cross_namespace else None
            found.append((name, namespace if isinstance(namespace, str) and namespace else None))
        return found

    def to_json(self) -> dict[str, Any]:
        """The annotation entry: ``path``, ``group``, ``kind``, ``list``, ``crossNamespace``,
        ``onDelete``, ``namespaced``, ``required`` (and ``version`` when set)."""
        entry: dict[str, Any] = {
            "path": self.path,
            "group": self.group,
            "kind": self.kind,
            "list": self.many,
            "crossNamespace": self.cross_namespace,
            "onDelete": self.on_delete.value,
            "namespaced": self.namespaced,
            "required": self.required,
        }
        if self.version is not None:
            entry["version"] = self.version
        return entry

    @classmethod
    def from_json(cls, entry: Any) -> RefField:
        """An annotation entry back (``ValueError`` naming what is wrong)."""
        if not isinstance(entry, Mapping):
            raise ValueError(f"an entry must be an object, not {entry!r}")
        path = entry.get("path")
        if not isinstance(path, str) or not _valid_path(path):
            raise ValueError(f"path {path!r} is not a field path such as .spec.databaseRef")
        kind = entry.get("kind")
        group = entry.get("group", "")
        if not isinstance(kind, str) or not kind or not isinstance(group, str):
            raise ValueError(f"{path}: kind must be a non-empty string and group a string")
        try:
            on_delete = OnDelete(entry.get("onDelete", "block"))
        except ValueError:
            raise ValueError(
                f"{path}: onDelete must be one of block, cascade, orphan, "
                f"not {entry.get('onDelete')!r}"
            ) from None
        flags = {}
        for key, default in (("crossNamespace", False), ("namespaced", True), ("required", False)):
            value = entry.get(key, default)
            if not isinstance(value, bool):
                raise ValueError(f"{path}: {key} must be true or false, not {value!r}")
            flags[key] = value
        version = entry.get("version")
        if version is not None and not isinstance(version, str):
            raise ValueError(f"{path}: version must be a string")
        return cls(
            path=path,
            group=group,
            kind=kind,
            namespaced=flags["namespaced"],
            cross_namespace=flags["crossNamespace"],
            on_delete=on_delete,
            required=flags["required"],
            version=version,
        )


def _valid_path(path: str) -> bool:
    return bool(path) and _SEGMENT.sub("", path) == "" and path.startswith(".")


def _segments(path: str) -> list[str | None]:
    """``.spec.refs[*].x`` → ``["spec", "refs", None, "x"]`` (None: every item)."""
    return [m.group(1) for m in _SEGMENT.finditer(path)]


def _values(value: Any, segments: Sequence[str | None]) -> Iterator[Any]:
    if not segments:
        yield value
        return
    head, rest = segments[0], segments[1:]
    if head is None:
        if isinstance(value, list):
            items: Any = value
        elif isinstance(value, Mapping):
            items = value.values()
        else:
            return
        for item in items:
            yield from _values(item, rest)
    elif isinstance(value, Mapping) and head in value:
        yield from _values(value[head], rest)


# -- reading a model -------------------------------------------------------------------

_CACHE: weakref.WeakKeyDictionary[type, tuple[RefField, ...]] = weakref.WeakKeyDictionary()


def references_of(model: type[BaseModel]) -> tuple[RefField, ...]:
    """The refs of a resource class (or of any model: paths then start at the model),
    in field order; cached per class. Forward references (``Ref["Project"]``) are
    resolved now: a name that cannot be resolved raises
    :class:`~kubewerk.model.errors.ModelDefinitionError` naming the field."""
    cached = _CACHE.get(model)
    if cached is not None:
        return cached
    found: list[RefField] = []
    root = is_resource(model)
    for name, info in model.__pydantic_fields__.items():
        json_field = _json_field(name, info)
        if root and json_field in _SKIPPED_ROOT:
            continue
        _walk_field(model, name, info, f".{json_field}", True, found)
    kind_info = getattr(model, "__kube__", None) if root else None
    if kind_info is not None and kind_info.scope == "Cluster":
        for ref in found:
            if ref.namespaced and not ref.cross_namespace:
                raise ModelDefinitionError(
                    f"{model.__name__}: {ref.field_path} refers to the namespaced kind "
                    f"{ref.kind} from a cluster-scoped kind; mark it CrossNamespace() (its "
                    "namespace is then required)"
                )
    result = tuple(found)
    _CACHE[model] = result
    return result


def _json_field(name: str, info: FieldInfo) -> str:
    return info.serialization_alias or info.alias or name


def _walk_field(
    owner: type, name: str, info: FieldInfo, path: str, required: bool, out: list[RefField]
) -> None:
    where = f"{owner.__name__}.{name}"
    required = required and info.is_required()
    _walk(owner, where, info.annotation, list(info.metadata), path, required, out)


def _flatten(meta: Sequence[Any]) -> list[Any]:
    out: list[Any] = []
    for item in meta:
        if isinstance(item, FieldInfo):
            out.extend(_flatten(item.metadata))
        else:
            out.append(item)
    return out


def _walk(
    owner: type,
    where: str,
    tp: Any,
    meta: list[Any],
    path: str,
    required: bool,
    out: list[RefField],
) -> None:
    while typing.get_origin(tp) is typing.Annotated:
        args = typing.get_args(tp)
        tp, meta = args[0], [*_flatten(args[1:]), *meta]
    origin = typing.get_origin(tp)
    if origin is typing.Union or origin is types.UnionType:
        members = [a for a in typing.get_args(tp) if a is not type(None)]
        if len(members) != len(typing.get_args(tp)):
            required = False
        if len(members) != 1:
            return  # int | str and friends hold no refs
        _walk(owner, where, members[0], meta, path, required, out)
        return
    if origin in (list, tuple) or origin is typing.Sequence or _is_abc(origin, "Sequence"):
        args = typing.get_args(tp)
        if args:
            _walk(owner, where, args[0], [], f"{path}[*]", False, out)
        return
    if origin is dict or _is_abc(origin, "Mapping"):
        args = typing.get_args(tp)
        if len(args) == 2:
            _walk(owner, where, args[1], [], f"{path}[*]", False, out)
        return
    if is_ref_class(tp):
        out.append(_ref_field(owner, where, tp, _flatten(meta), path, required))
        return
    if is_resource(tp):
        return  # an embedded template: its refs are the templated object's
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        for name, info in tp.__pydantic_fields__.items():
            _walk_field(tp, name, info, f"{path}.{_json_field(name, info)}", required, out)


def _is_abc(origin: Any, name: str) -> bool:
    return (
        origin is not None
        and getattr(origin, "__module__", "") == "collections.abc"
        and (getattr(origin, "__name__", "") == name)
    )


def _ref_field(
    owner: type, where: str, ref: type, meta: list[Any], path: str, required: bool
) -> RefField:
    if not _valid_path(path):
        raise ModelDefinitionError(
            f"{where}: the fields on the way to a ref may not have '.', '[' or ']' in their "
            f"JSON names ({path})"
        )
    on_delete = OnDelete.BLOCK
    cross = False
    for marker in meta:
        if isinstance(marker, OnDelete):
            on_delete = marker
        elif isinstance(marker, CrossNamespace):
            cross = True
    target = _resolve(owner, where, ref)
    if isinstance(target, type) and issubclass(target, ExternalKind):
        group, kind, namespaced = target.group, target.kind, target.namespaced
    else:
        info = target.kind_info()  # type: ignore[attr-defined]
        group, kind, namespaced = info.group, info.kind, info.scope == "Namespaced"
    return RefField(
        path=path,
        group=group,
        kind=kind,
        namespaced=namespaced,
        cross_namespace=cross,
        on_delete=on_delete,
        required=required,
        target=target,
    )


def _resolve(owner: type, where: str, ref: type) -> type:
    """The target class of ``Ref[X]``: X itself, or what a forward reference names."""
    args: tuple[Any, ...] = getattr(ref, "__pydantic_generic_metadata__", {}).get("args") or ()
    if len(args) != 1:
        raise ModelDefinitionError(f"{where}: a ref needs its target kind, e.g. Ref[Database]")
    arg: Any = args[0]
    if isinstance(arg, typing.ForwardRef):
        arg = arg.__forward_arg__
    if isinstance(arg, str):
        arg = _by_name(owner, where, arg)
    if isinstance(arg, type) and issubclass(arg, ExternalKind) and arg is not ExternalKind:
        return arg
    if is_resource(arg) and getattr(arg, "__kube__", None) is not None:
        resource: type = arg
        return resource
    raise ModelDefinitionError(
        f"{where}: Ref[{getattr(arg, '__name__', arg)!s}] must name a resource class or an "
        "ExternalKind (e.g. kubewerk.model.refs.Secret)"
    )


def _by_name(owner: type, where: str, name: str) -> Any:
    """A forward reference: a name in the owner's module, else a registered kind named
    ``Kind`` or ``Kind.group``, else an ExternalKind of that kind."""
    module = sys.modules.get(owner.__module__)
    found = getattr(module, name, None) if module is not None and name.isidentifier() else None
    if found is not None:
        return found
    from kubewerk.model.resource import kinds, versions_of

    matches = [(group, kind) for group, kind in kinds() if name in (kind, f"{kind}.{group}")]
    if len(matches) > 1:
        shown = ", ".join(f"{k}.{g}" for g, k in matches)
        raise ModelDefinitionError(
            f"{where}: Ref[{name!r}] is ambiguous ({shown}); write Kind.group"
        )
    if matches:
        group, kind = matches[0]
        return next(iter(versions_of(group, kind).values()))
    external = external_kinds(name.split(".", 1)[0])
    external = [e for e in external if name in (e.kind, e.label())]
    if external:
        return external[-1]
    raise ModelDefinitionError(
        f"{where}: Ref[{name!r}] names no resource class or kind (define it, or write Kind.group)"
    )


# -- the CRD annotation ----------------------------------------------------------------


def references_annotation(models: Sequence[type[BaseModel]]) -> str | None:
    """The :data:`REFERENCES_ANNOTATION` value for a kind's versions (``models``, served
    or not): a JSON list of :meth:`RefField.to_json` entries, or None when no version
    has refs. When the versions declare the same refs the entries carry no version;
    otherwise every entry names the version (``kind_info().version``) it belongs to."""
    per_version = [(m.kind_info().version, references_of(m)) for m in models]  # type: ignore[attr-defined]
    if not any(refs for _version, refs in per_version):
        return None
    first = per_version[0][1]
    if all(refs == first for _version, refs in per_version):
        entries = [r.to_json() for r in first]
    else:
        entries = [
            {**r.to_json(), "version": version} for version, refs in per_version for r in refs
        ]
    return json.dumps(entries, separators=(",", ":"))


def parse_references(text: str, version: str | None = None) -> tuple[RefField, ...]:
    """The refs an annotation value lists (those of ``version`` when entries name
    versions and a version is given). ``ValueError`` with a message for text that is
    not such a list."""
    try:
        entries = json.loads(text)
    except ValueError as exc:
        raise ValueError(f"{REFERENCES_ANNOTATION}: not JSON ({exc})") from None
    if not isinstance(entries, list):
        raise ValueError(f"{REFERENCES_ANNOTATION}: expected a JSON list of references")
    fields: list[RefField] = []
    for entry in entries:
        try:
            ref = RefField.from_json(entry)
        except ValueError as exc:
            raise ValueError(f"{REFERENCES_ANNOTATION}: {exc}") from None
        if version is None or ref.version in (None, version):
            fields.append(ref)
    return tuple(fields)
