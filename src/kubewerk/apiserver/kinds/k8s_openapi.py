"""The vendored Kubernetes OpenAPI definitions (``openapi_data/``), loaded on first use.

``openapi_data/definitions.json.gz`` holds the published OpenAPI v2 ``definitions`` of the
built-in kinds the server serves and of everything they reference (see its
``SOURCE.md``; ``scripts/vendor_k8s_openapi.py`` regenerates it). Nothing is read at
import or start-up: the file is decompressed and parsed the first time a schema is asked
for (OpenAPI documents, typed decoding, strategic merge), once per process.

Definitions are returned as published (v2: ``$ref: #/definitions/NAME``);
``to_v3`` gives the OpenAPI v3 form kube-apiserver serves under ``/openapi/v3``
(``#/components/schemas/NAME``, a ``$ref`` with sibling keywords wrapped in ``allOf``).
Callers must not mutate what these functions return.
"""

from __future__ import annotations

import gzip
import threading
from collections.abc import Iterable
from functools import cache
from importlib import resources
from typing import Any

import orjson

JSON = dict[str, Any]

V2_REF = "#/definitions/"
V3_REF = "#/components/schemas/"

_lock = threading.Lock()


@cache
def definitions() -> dict[str, JSON]:
    """Every vendored definition by name (``io.k8s.api.apps.v1.Deployment``)."""
    with _lock:
        data = (
            resources.files("kubewerk.apiserver.kinds")
            .joinpath("openapi_data/definitions.json.gz")
            .read_bytes()
        )
        loaded: dict[str, JSON] = orjson.loads(gzip.decompress(data))
        return loaded


@cache
def _by_gvk() -> dict[tuple[str, str, str], str]:
    out: dict[tuple[str, str, str], str] = {}
    for name, schema in definitions().items():
        for gvk in schema.get("x-kubernetes-group-version-kind") or []:
            out.setdefault((gvk["group"], gvk["version"], gvk["kind"]), name)
    return out


def definition_name(group: str, version: str, kind: str) -> str | None:
    """The name of the vendored definition of ``group/version kind`` (None if absent)."""
    return _by_gvk().get((group, version, kind))


def definition(name: str) -> JSON | None:
    """The vendored definition ``name`` (v2 form), or None."""
    return definitions().get(name)


def ref_name(schema: JSON) -> str | None:
    """The definition a ``$ref`` schema (v2 or v3 form) points at, or None."""
    ref = schema.get("$ref")
    if not isinstance(ref, str):
        return None
    for prefix in (V2_REF, V3_REF):
        if ref.startswith(prefix):
            return ref[len(prefix) :]
    return None


def resolve(schema: JSON) -> JSON:
    """``schema`` with one level of ``$ref`` (or a single-element ``allOf`` of one)
    followed; anything else unchanged."""
    name = ref_name(schema)
    if name is None:
        all_of = schema.get("allOf")
        if isinstance(all_of, list) and len(all_of) == 1 and isinstance(all_of[0], dict):
            name = ref_name(all_of[0])
    if name is None:
        return schema
    return definitions().get(name) or {}


def closure(names: Iterable[str]) -> list[str]:
    """``names`` and every definition they reach through ``$ref``, sorted."""
    defs = definitions()
    seen: set[str] = set()
    todo = [n for n in names if n in defs]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        todo.extend(n for n in _refs_of(name) if n not in seen and n in defs)
    return sorted(seen)


@cache
def _refs_of(name: str) -> frozenset[str]:
    found: set[str] = set()
    _collect_refs(definitions().get(name), found)
    return frozenset(found)


def _collect_refs(value: Any, out: set[str]) -> None:
    if isinstance(value, dict):
        ref = value.get("$ref")
        if isinstance(ref, str) and ref.startswith(V2_REF):
            out.add(ref[len(V2_REF) :])
        for v in value.values():
            _collect_refs(v, out)
    elif isinstance(value, list):
        for v in value:
            _collect_refs(v, out)


def to_v3(value: Any) -> Any:
    """A v2 schema as OpenAPI v3 (a new tree): ``$ref`` points at
    ``#/components/schemas/``, and a ``$ref`` beside other keywords (a description, a
    patch strategy) becomes ``allOf: [{$ref}]`` with them, as kube-apiserver's v3
    builder writes it."""
    if isinstance(value, list):
        return [to_v3(v) for v in value]
    if not isinstance(value, dict):
        return value
    out = {k: to_v3(v) for k, v in value.items() if k != "$ref"}
    ref = value.get("$ref")
    if isinstance(ref, str):
        target = V3_REF + ref[len(V2_REF) :] if ref.startswith(V2_REF) else ref
        if out:
            out["allOf"] = [{"$ref": target}]
        else:
            out["$ref"] = target
    return out


@cache
def v3_definition(name: str) -> JSON | None:
    """The definition ``name`` in OpenAPI v3 form (cached; do not mutate)."""
    schema = definitions().get(name)
    if schema is None:
        return None
    converted: JSON = to_v3(schema)
    return converted


def top_level_fields(group: str, version: str, kind: str) -> frozenset[str]:
    """The JSON fields of the kind's Go type (empty if the kind is not vendored)."""
    name = definition_name(group, version, kind)
    schema = definitions().get(name) if name is not None else None
    return frozenset((schema or {}).get("properties") or {})
