"""Server-side printing: ``meta.k8s.io/v1`` Table responses (what ``kubectl get`` shows).

A Table has a Name column (unless the kind's strategy says otherwise), then the columns
its strategy gives for the served version: a CRD's ``additionalPrinterColumns`` (or
Age when it declares none), the columns kube-apiserver prints for a built-in kind.
"""

from __future__ import annotations

import time
from typing import Any

from kubewerk.apiserver import printers
from kubewerk.apiserver.registry import ServedResource
from kubewerk.apiserver.strategy import PrinterColumn

JSON = dict[str, Any]

_NAME_COLUMN = {
    "name": "Name",
    "type": "string",
    "format": "name",
    "description": "Name must be unique within a namespace. Is required when creating resources, "
    "although some resources may allow a client to request the generation of an appropriate name "
    "automatically. Name is primarily intended for creation idempotence and configuration "
    "definition. Cannot be updated. More info: "
    "https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names",
    "priority": 0,
}


def _definition(col: PrinterColumn) -> JSON:
    return {
        "name": col.name,
        "type": "string" if col.type == "date" else col.type,
        "format": col.format,
        "description": col.description,
        "priority": col.priority,
    }


def column_definitions(rtype: ServedResource, version: str) -> list[JSON]:
    strategy = rtype.strategy
    defs: list[JSON] = [dict(_NAME_COLUMN)] if strategy.name_column else []
    defs.extend(_definition(col) for col in strategy.columns(version))
    return defs


def row(rtype: ServedResource, version: str, obj: JSON, include_object: str, now: float) -> JSON:
    strategy = rtype.strategy
    cells: list[Any] = [strategy.name_cell(obj, version)] if strategy.name_column else []
    cells.extend(strategy.cells(obj, version, now))
    return _row(cells, obj, include_object)


def _row(cells: list[Any], obj: JSON, include_object: str) -> JSON:
    """A row of ``cells`` carrying ``obj`` as ``includeObject`` asks (``Metadata`` when
    unset: the object's metadata as a PartialObjectMetadata)."""
    meta = obj.get("metadata") or {}
    out: JSON = {"cells": cells}
    mode = include_object or "Metadata"
    if mode == "Object":
        out["object"] = obj
    elif mode == "Metadata":
        out["object"] = {
            "kind": "PartialObjectMetadata",
            "apiVersion": "meta.k8s.io/v1",
            "metadata": meta,
        }
    return out


def to_table(
    rtype: ServedResource,
    version: str,
    items: list[JSON],
    list_meta: JSON,
    include_object: str = "",
    headers: bool = True,
) -> JSON:
    """A Table of ``items`` (already in the served version)."""
    now = time.time()
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": list_meta,
        "columnDefinitions": column_definitions(rtype, version) if headers else [],
        "rows": [row(rtype, version, o, include_object, now) for o in items],
    }


def scale_table(scale: JSON, include_object: str = "") -> JSON:
    """The Table of a built-in kind's ``/scale`` (its REST storage prints the Scale, with
    kube's ``printScale``: Name, Desired, Available, Age; the Name column has no
    ``format``, as kube declares it)."""
    printer = printers.printer("autoscaling/v1", "Scale")
    assert printer is not None
    name = {k: v for k, v in _NAME_COLUMN.items() if k != "format"}
    meta = scale.get("metadata") or {}
    cells = [meta.get("name", ""), *printer.cells_at(scale, time.time())]
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": {"resourceVersion": meta.get("resourceVersion", "")},
        "columnDefinitions": [name, *(_definition(col) for col in printer.columns)],
        "rows": [_row(cells, scale, include_object)],
    }
