"""Building blocks of the built-in kinds' hand-written OpenAPI schemas.

Each built-in kind serves one schema per version (``ServedResource.schemas``): OpenAPI
v3 documents name it, and typed decoding keeps only its top-level properties.
"""

from __future__ import annotations

from typing import Any

JSON = dict[str, Any]

_OBJECT_META_REF = {"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}

STRING_MAP: JSON = {"type": "object", "additionalProperties": {"type": "string", "default": ""}}
"""``map[string]string``."""

BYTES_MAP: JSON = {"type": "object", "additionalProperties": {"type": "string", "format": "byte"}}
"""``map[string][]byte`` (base64 strings)."""

OBJECT_REFERENCE: JSON = {
    "type": "object",
    "description": "A reference to an object.",
    "properties": {
        k: {"type": "string"}
        for k in ("apiVersion", "kind", "name", "namespace", "uid", "resourceVersion", "fieldPath")
    },
}
"""``corev1.ObjectReference``."""


def object_schema(
    description: str, props: dict[str, JSON], required: list[str] | None = None
) -> JSON:
    """A top-level kind's schema: ``apiVersion``, ``kind``, ``metadata`` and ``props``."""
    schema: JSON = {
        "description": description,
        "type": "object",
        "properties": {
            "apiVersion": {
                "type": "string",
                "description": "APIVersion defines the versioned "
                "schema of this representation of an object.",
            },
            "kind": {
                "type": "string",
                "description": "Kind is a string value representing "
                "the REST resource this object represents.",
            },
            "metadata": {
                "allOf": [_OBJECT_META_REF],
                "default": {},
                "description": "Standard object's metadata.",
            },
            **props,
        },
    }
    if required:
        schema["required"] = required
    return schema
