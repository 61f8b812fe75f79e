"""Hub-and-spoke conversion between the versions of one kind.

The storage version is the hub. For every other version register two plain functions,
spoke → hub and hub → spoke, typed with the classes they convert between::

    @converter
    def widget_up(src: WidgetV1alpha1) -> WidgetV1: ...

    @converter
    def widget_down(src: WidgetV1) -> WidgetV1alpha1: ...

:func:`convert` then goes from any version to any other through the hub (or directly,
when a direct function is registered). A converter builds the target's spec and
status; metadata is carried over by :func:`convert` as a conversion webhook must:
only labels and annotations may change (set through ``metadata=`` when building the
target, or assigned to ``out.metadata.labels`` / ``out.metadata.annotations`` later),
and a converter that touches name, namespace, uid or anything else raises
:class:`ConversionError`. Annotations are the
customary place to keep fields an older version cannot hold, so that
``v1 → v1alpha1 → v1`` is lossless.
"""

from __future__ import annotations

import inspect
import threading
import typing
from collections.abc import Callable
from typing import Any, TypeVar

from kubewerk.core.gvk import parse_api_version
from kubewerk.model.crdgen import storage_version
from kubewerk.model.errors import ConversionError
from kubewerk.model.resource import AnyResource, Resource, resource_class, versions_of

__all__ = ["convert", "convert_dict", "converter", "converters"]

R = TypeVar("R", bound=AnyResource)
Converter = Callable[[Any], Any]

_lock = threading.Lock()
_CONVERTERS: dict[tuple[type[AnyResource], type[AnyResource]], Converter] = {}


def converter(func: Callable[[Any], R]) -> Callable[[Any], R]:
    """Register ``func(src: A) -> B`` as the conversion from version A to version B.

    A and B are read from the annotations and must be versions of the same kind.
    Registering a second function for the same pair replaces the first.
    """
    try:
        hints = typing.get_type_hints(func)
    except NameError:
        # classes defined in a function body: resolve the names where @converter is used
        frame = inspect.currentframe()
        caller = frame.f_back if frame is not None else None
        if caller is None:  # an interpreter without frame introspection
            raise
        hints = typing.get_type_hints(func, localns=dict(caller.f_locals))
    params = [p for p in hints if p != "return"]
    if len(params) != 1 or "return" not in hints:
        raise TypeError(f"{func.__name__}: a converter is typed (src: A) -> B")
    src, dst = hints[params[0]], hints["return"]
    for tp in (src, dst):
        if not (isinstance(tp, type) and issubclass(tp, Resource) and tp.__kube__ is not None):
            raise TypeError(f"{func.__name__}: {tp!r} is not a concrete resource class")
    source, target = src.kind_info(), dst.kind_info()
    if (source.group, source.kind) != (target.group, target.kind):
        raise TypeError(
            f"{func.__name__}: converts {source.kind}.{source.group} "
            f"to {target.kind}.{target.group}"
        )
    if source.version == target.version:
        raise TypeError(f"{func.__name__}: source and target are both {source.version}")
    with _lock:
        _CONVERTERS[(src, dst)] = func
    return func


def converters() -> dict[tuple[type[AnyResource], type[AnyResource]], Converter]:
    """The registered conversion functions, by (source class, target class)."""
    with _lock:
        return dict(_CONVERTERS)


def _target_class(obj: AnyResource, to: str | type[AnyResource]) -> type[AnyResource]:
    info = obj.kind_info()
    if isinstance(to, type):
        return to
    try:
        group, version = parse_api_version(to)
    except ValueError as exc:
        raise ConversionError(f"cannot convert {info.kind}.{info.group} to {to!r}: {exc}") from None
    group = group or info.group
    if group != info.group:
        raise ConversionError(f"cannot convert {info.kind}.{info.group} to group {group}")
    target = versions_of(info.group, info.kind).get(version)
    if target is None:
        raise ConversionError(f"{info.kind}.{info.group} has no version {version!r}")
    return target


def _hub(cls: type[AnyResource]) -> type[AnyResource]:
    info = cls.kind_info()
    return storage_version(versions_of(info.group, info.kind).values())


def _step(obj: AnyResource, target: type[AnyResource]) -> AnyResource:
    func = _CONVERTERS.get((type(obj), target))
    if func is None:
        raise ConversionError(
            f"no converter registered from {type(obj).__name__} ({obj.kind_info().version}) "
            f"to {target.__name__} ({target.kind_info().version})"
        )
    out = func(obj)
    if not isinstance(out, target):
        raise ConversionError(
            f"{getattr(func, '__name__', func)!r} returned "
            f"{type(out).__name__}, not {target.__name__}"
        )
    return _carry_metadata(obj, out)


_MUTABLE_META = frozenset({"labels", "annotations"})


def _carry_metadata(src: AnyResource, out: AnyResource) -> AnyResource:
    """``out`` with ``src``'s metadata, keeping the labels and annotations the converter
    set on ``out`` — whether it passed ``metadata=`` when building ``out`` or assigned
    ``out.metadata.labels`` / ``.annotations`` afterwards (on the default metadata)."""
    meta = src.metadata.model_copy(deep=True)
    changed = out.metadata
    if "metadata" in out.model_fields_set or changed.model_fields_set:
        for name in changed.model_fields_set:
            if name in _MUTABLE_META:
                continue
            if getattr(changed, name) != getattr(meta, name):
                raise ConversionError(
                    f"conversion to {out.kind_info().version} changed metadata.{name}; "
                    "only labels and annotations may change"
                )
        for name in _MUTABLE_META:
            if name in changed.model_fields_set:
                setattr(meta, name, getattr(changed, name))
                meta.model_fields_set.add(name)
    out.metadata = meta
    out.model_fields_set.add("metadata")
    return out


def convert(obj: AnyResource, to: str | type[R]) -> Any:
    """``obj`` as another version of its kind: ``to`` is a class, a version or an apiVersion.

    Converting to the object's own version returns a deep copy. Otherwise a direct
    converter is used when registered, else spoke → hub → spoke.
    """
    target = _target_class(obj, to)
    source = type(obj)
    if target is source:
        return obj.model_copy(deep=True)
    if (source, target) in _CONVERTERS:
        return _step(obj, target)
    hub = _hub(source)
    mid = obj if source is hub else _step(obj, hub)
    return mid if target is hub else _step(mid, target)


def convert_dict(obj: dict[str, Any], api_version: str) -> dict[str, Any]:
    """Convert a JSON object (as a conversion webhook receives it) to ``api_version``."""
    cls = resource_class(str(obj.get("apiVersion", "")), str(obj.get("kind", "")))
    if cls is None:
        raise ConversionError(f"no registered class for {obj.get('apiVersion')}/{obj.get('kind')}")
    result: AnyResource = convert(cls.from_dict(obj), api_version)
    return result.to_dict()
