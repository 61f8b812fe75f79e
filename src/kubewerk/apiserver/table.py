"""Server-side printing: ``meta.k8s.io/v1`` Table responses (what ``kubectl get`` shows).

Custom resources get a Name column, then their ``additionalPrinterColumns`` (or Age when
they declare none); built-in kinds get the columns kube-apiserver prints for them.
"""

from __future__ import annotations

import time
from typing import Any

from kubewerk.apiserver.registry import PrinterColumn, ResourceType
from kubewerk.core.jsonpath import evaluate
from kubewerk.core.meta import human_duration, parse_time

JSON = dict[str, Any]

_NAME_COLUMN = {
    "name": "Name",
    "type": "string",
    "format": "name",
    "description": "Name must be unique within a namespace. Is required when creating resources, although some "
    "resources may allow a client to request the generation of an appropriate name automatically. Name is primarily "
    "intended for creation idempotence and configuration definition. Cannot be updated. More info: "
    "https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names",
    "priority": 0,
}
_AGE_COLUMN = PrinterColumn("Age", "date", ".metadata.creationTimestamp")


def _columns(rtype: ResourceType, version: str) -> list[PrinterColumn]:
    cols = rtype.printer_columns.get(version, [])
    if not rtype.builtin and not cols:
        return [_AGE_COLUMN]
    return cols


def _has_name_column(rtype: ResourceType) -> bool:
    return rtype.resource != "events"


def column_definitions(rtype: ResourceType, version: str) -> list[JSON]:
    defs: list[JSON] = [dict(_NAME_COLUMN)] if _has_name_column(rtype) else []
    for col in _columns(rtype, version):
        description = col.description or (
            f"Custom resource definition column (in JSONPath format): {col.json_path}" if not rtype.builtin else ""
        )
        defs.append({"name": col.name, "type": "string" if col.type == "date" else col.type,
                     "format": col.format, "description": description, "priority": col.priority})
    return defs


def _cell(col: PrinterColumn, obj: JSON, now: float) -> Any:
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
    import orjson

    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    return orjson.dumps(value).decode()


def row(rtype: ResourceType, version: str, obj: JSON, include_object: str, now: float) -> JSON:
    meta = obj.get("metadata") or {}
    cells: list[Any] = [meta.get("name", "")] if _has_name_column(rtype) else []
    if rtype.builtin and rtype.row_cells is not None:
        cells.extend(rtype.row_cells(obj))
    else:
        cells.extend(_cell(c, obj, now) for c in _columns(rtype, version))
    out: JSON = {"cells": cells}
    mode = include_object or "Metadata"
    if mode == "Object":
        out["object"] = obj
    elif mode == "Metadata":
        out["object"] = {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": meta}
    return out


def to_table(rtype: ResourceType, version: str, items: list[JSON], list_meta: JSON,
             include_object: str = "", headers: bool = True) -> JSON:
    """A Table of ``items`` (already in the served version)."""
    now = time.time()
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": list_meta,
        "columnDefinitions": column_definitions(rtype, version) if headers else [],
        "rows": [row(rtype, version, o, include_object, now) for o in items],
    }
