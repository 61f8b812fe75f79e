"""Event filters for controllers, composable with ``&``, ``|`` and ``~``.

A :class:`Predicate` answers, for each informer event, whether it should enqueue a
reconcile: ``create(obj)``, ``update(old, new)``, ``delete(obj)``, ``generic(obj)``;
objects are the raw dicts from the cache. The built-ins match controller-runtime's
``predicate`` package: :data:`GENERATION_CHANGED` passes updates only when
``metadata.generation`` changed (status-only writes are filtered; creates and deletes
pass), :data:`LABELS_CHANGED`, :data:`ANNOTATIONS_CHANGED`,
:data:`RESOURCE_VERSION_CHANGED` (drops resync no-ops), :func:`has_labels` /
:func:`label_selector` (matches the object), and :func:`predicate` wraps any function.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from kubewerk.core.selectors import parse_label_selector

Obj = Mapping[str, Any]


def _meta(obj: Obj) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    if type(meta) is dict:  # the informer's objects: skip the ABC check
        return meta
    return meta if isinstance(meta, Mapping) else {}


class Predicate:
    """Passes everything unless a subclass says otherwise."""

    def create(self, obj: Obj) -> bool:
        """Should a newly seen object be reconciled?"""
        return True

    def update(self, old: Obj, new: Obj) -> bool:
        """Should this change be reconciled?"""
        return True

    def delete(self, obj: Obj) -> bool:
        """Should this deletion be reconciled?"""
        return True

    def generic(self, obj: Obj) -> bool:
        """Should a generic event (from a source other than an informer) be reconciled?
        kubewerk's informers send none: a resync is an update."""
        return True

    def __and__(self, other: Predicate) -> Predicate:
        return And(self, other)

    def __or__(self, other: Predicate) -> Predicate:
        return Or(self, other)

    def __invert__(self) -> Predicate:
        return Not(self)


class And(Predicate):
    """Passes when every predicate passes."""

    def __init__(self, *preds: Predicate) -> None:
        self.preds = preds

    def create(self, obj: Obj) -> bool:
        return all(p.create(obj) for p in self.preds)

    def update(self, old: Obj, new: Obj) -> bool:
        return all(p.update(old, new) for p in self.preds)

    def delete(self, obj: Obj) -> bool:
        return all(p.delete(obj) for p in self.preds)

    def generic(self, obj: Obj) -> bool:
        return all(p.generic(obj) for p in self.preds)


class Or(Predicate):
    """Passes when any predicate passes."""

    def __init__(self, *preds: Predicate) -> None:
        self.preds = preds

    def create(self, obj: Obj) -> bool:
        return any(p.create(obj) for p in self.preds)

    def update(self, old: Obj, new: Obj) -> bool:
        return any(p.update(old, new) for p in self.preds)

    def delete(self, obj: Obj) -> bool:
        return any(p.delete(obj) for p in self.preds)

    def generic(self, obj: Obj) -> bool:
        return any(p.generic(obj) for p in self.preds)


class Not(Predicate):
    """Inverts a predicate."""

    def __init__(self, pred: Predicate) -> None:
        self.pred = pred

    def create(self, obj: Obj) -> bool:
        return not self.pred.create(obj)

    def update(self, old: Obj, new: Obj) -> bool:
        return not self.pred.update(old, new)

    def delete(self, obj: Obj) -> bool:
        return not self.pred.delete(obj)

    def generic(self, obj: Obj) -> bool:
        return not self.pred.generic(obj)


class _MetadataChanged(Predicate):
    """Updates pass only when ``metadata.<field>`` differs between old and new."""

    def __init__(self, field: str) -> None:
        self.field = field

    def update(self, old: Obj, new: Obj) -> bool:
        field = self.field
        return _meta(old).get(field) != _meta(new).get(field)


GENERATION_CHANGED: Predicate = _MetadataChanged("generation")
"""Updates pass only when ``metadata.generation`` changed (spec edits, deletion start)."""

LABELS_CHANGED: Predicate = _MetadataChanged("labels")
"""Updates pass only when labels changed."""

ANNOTATIONS_CHANGED: Predicate = _MetadataChanged("annotations")
"""Updates pass only when annotations changed."""

RESOURCE_VERSION_CHANGED: Predicate = _MetadataChanged("resourceVersion")
"""Updates pass only when the resourceVersion changed (drops resync no-ops)."""


class _Func(Predicate):
    def __init__(self, fn: Callable[[Obj], bool]) -> None:
        self.fn = fn

    def create(self, obj: Obj) -> bool:
        return self.fn(obj)

    def update(self, old: Obj, new: Obj) -> bool:
        return self.fn(new)

    def delete(self, obj: Obj) -> bool:
        return self.fn(obj)

    def generic(self, obj: Obj) -> bool:
        return self.fn(obj)


def predicate(fn: Callable[[Obj], bool]) -> Predicate:
    """A predicate from a function of the object (the new object for updates)."""
    return _Func(fn)


def has_labels(labels: Mapping[str, str]) -> Predicate:
    """Passes objects carrying every given label with the given value."""
    want = dict(labels)

    def match(obj: Obj) -> bool:
        have = _meta(obj).get("labels") or {}
        return all(have.get(k) == v for k, v in want.items())

    return _Func(match)


def label_selector(selector: str) -> Predicate:
    """Passes objects matching a label selector (``a=b,c!=d,e in (f,g),!h,i``)."""
    parsed = parse_label_selector(selector)
    return _Func(lambda obj: parsed.matches(_meta(obj).get("labels") or {}))
