"""Typing an applied configuration as kube-apiserver's field manager does before an apply.

kube-apiserver makes a typed object of every server-side apply configuration
(structured-merge-diff, with the kind's OpenAPI schema) and refuses the apply when it
cannot, whatever ``fieldValidation`` says: a field the schema does not declare
(``.sops: field not declared in schema``; the rest of that object is not looked at) or a
non-number where a number belongs. :func:`typed_errors` reproduces those two checks over
the vendored Kubernetes definitions (``kinds.k8s_openapi``), with kube's paths (keyed list
items by their keys, set items by their value); :func:`typed_patch_error` words the answer
as kube does (kube answers it as a 500, kubernetes/kubernetes#122480; kubewerk as 400).
"""

from __future__ import annotations

from typing import Any, Final

from kubewerk.apiserver.kinds import k8s_openapi
from kubewerk.core.errors import ApiError
from kubewerk.core.fieldpath import ListItemError, OpenApiTypes
from kubewerk.core.fieldpath.path import element_string
from kubewerk.core.fieldpath.typed import item_element
from kubewerk.core.fieldpath.types import ATOMIC, LIST

KEY_DEFAULTS: Final = {"protocol": "TCP"}
"""Defaults of list-map keys the published definitions leave undeclared (kube's built-in
apply schema defaults every ``protocol`` key to "TCP")."""

JSON = dict[str, Any]

_GO_TYPES: Final = {
    str: "string",
    bool: "bool",
    dict: "map[string]interface {}",
    list: "[]interface {}",
}
"""Go's name (``%T``) of the type a decoded JSON value has in an unstructured object."""


_list_types: OpenApiTypes | None = None


def _element_path(schema: JSON, item: Any, index: int) -> str:
    """The path element of list item ``index`` as structured-merge-diff prints it: the
    keys of a keyed list (``[containerPort=80,protocol="TCP"]``: sorted, a key the item
    omits taken from its default), the value of a set (``[="a"]``), else (an atomic
    list, or an item the list cannot name) the index."""
    global _list_types
    if _list_types is None:
        _list_types = OpenApiTypes(k8s_openapi.definitions(), KEY_DEFAULTS)
    node = _list_types.node(schema)
    if node.kind != LIST or node.relation == ATOMIC:
        return f"[{index}]"
    try:
        return element_string(item_element(node, item, index, ()))
    except ListItemError:
        return f"[{index}]"


def _walk(value: Any, schema: JSON, path: str, out: list[str]) -> None:
    """Add to ``out`` what structured-merge-diff's validation of ``value`` against the
    OpenAPI ``schema`` reports that this module reproduces: a field an object does not
    declare (``<path>: field not declared in schema``; the rest of that object is then
    not looked at, as kube stops there) and a non-number where a number belongs
    (``<path>: expected numeric (int or float), got <Go type>``). ``null`` is accepted
    anywhere, as kube accepts it."""
    if value is None:
        return
    schema = k8s_openapi.resolve(schema)
    kind = schema.get("type")
    props = schema.get("properties")
    if isinstance(props, dict) or kind == "object":
        if not isinstance(value, dict):
            return
        extra = schema.get("additionalProperties")
        for key, item in value.items():
            sub = props.get(key) if isinstance(props, dict) else None
            if sub is None and isinstance(extra, dict):
                sub = extra
            if sub is None:
                if isinstance(props, dict):
                    out.append(f"{path}.{key}: field not declared in schema")
                    return
                continue  # an object of anything (no properties, no value schema)
            _walk(item, sub, f"{path}.{key}", out)
    elif kind == "array":
        items = schema.get("items")
        if isinstance(value, list) and isinstance(items, dict):
            for index, item in enumerate(value):
                _walk(item, items, path + _element_path(schema, item, index), out)
    elif kind in ("integer", "number") and (
        isinstance(value, bool) or not isinstance(value, (int, float))
    ):
        got = _GO_TYPES.get(type(value), type(value).__name__)
        out.append(f"{path}: expected numeric (int or float), got {got}")


def typed_errors(config: JSON, definition: str) -> list[str]:
    """What structured-merge-diff reports (of what ``_walk`` reproduces) when it makes a
    typed object of ``config`` with the vendored Kubernetes definition ``definition``
    (``io.k8s.api.core.v1.Secret``): ``.sops: field not declared in schema``, one per
    object, and non-numbers where a number belongs; empty when it is typed cleanly."""
    out: list[str] = []
    _walk(config, {"$ref": f"#/definitions/{definition}"}, "", out)
    return out


def typed_patch_error(config: JSON, text: str, gvk: str = "autoscaling/v1, Kind=Scale") -> ApiError:
    """The 400 for an applied configuration that cannot be a typed object of its kind,
    worded as kube's ``failed to create typed patch object (<namespace>/<name>; <gvk>):
    ...`` with the namespace and name the configuration itself carries (``gvk`` as Go
    prints a GroupVersionKind: ``group/version, Kind=Kind``). Kube answers the same text
    as a 500 (kubernetes/kubernetes#122480)."""
    meta = config.get("metadata")
    meta = meta if isinstance(meta, dict) else {}
    namespace = meta.get("namespace")
    name = meta.get("name")
    return ApiError.bad_request(
        "failed to create typed patch object ("
        f"{namespace if isinstance(namespace, str) else ''}/"
        f"{name if isinstance(name, str) else ''}; {gvk}): {text}"
    )


def joined_errors(out: list[str]) -> str:
    """structured-merge-diff's wording of a list of errors: one alone, several as
    ``errors:`` followed by one indented line each."""
    if len(out) == 1:
        return out[0]
    return "errors:\n  " + "\n  ".join(out)
