"""What one member gets: :func:`render` of a FederatedObject for a member.

The rendered object is the template with, in this order:

1. ``metadata.namespace`` set to the FederatedObject's namespace when the kind is
   namespaced (a template naming another namespace is refused: a FederatedObject places
   objects only into its own namespace, as the host's RBAC scopes it);
2. the overrides that apply to the member (``clusterName`` equal to its name, or a
   ``clusterSelector`` matching its labels), each an RFC 6902 patch, in order;
3. the annotation :data:`OWNER_ANNOTATION` = ``<namespace>/<name>`` of the
   FederatedObject (what marks a member's object as this one's copy, for removal and
   for conflicts) and the label :data:`MANAGED_LABEL` = ``"true"``.

An override may not change apiVersion, kind, metadata.name or metadata.namespace, nor
remove the object's metadata; :class:`RenderError` says which, with the override's
index, and is reported for that member alone.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from kubewerk.core.jsoncopy import copy_tree
from kubewerk.core.patch import PatchError, json_patch
from kubewerk.core.selectors import LabelSelectorError, label_selector_from_dict

__all__ = [
    "MANAGED_LABEL",
    "OWNER_ANNOTATION",
    "RenderError",
    "check_template",
    "owner_of",
    "render",
]

OWNER_ANNOTATION: Final = "federation.kubewerk.dev/federated-object"
MANAGED_LABEL: Final = "federation.kubewerk.dev/managed"


class RenderError(ValueError):
    """A template or override that cannot produce the member's object."""


def check_template(template: Mapping[str, Any]) -> None:
    """Raise :class:`RenderError` unless the template has apiVersion, kind and
    metadata.name (the API server's embedded-resource check leaves name optional)."""
    if not isinstance(template.get("apiVersion"), str) or not template.get("apiVersion"):
        raise RenderError("spec.template.apiVersion is required")
    if not isinstance(template.get("kind"), str) or not template.get("kind"):
        raise RenderError("spec.template.kind is required")
    meta = template.get("metadata")
    if not isinstance(meta, Mapping) or not isinstance(meta.get("name"), str) or not meta["name"]:
        raise RenderError("spec.template.metadata.name is required")


def owner_of(obj: Mapping[str, Any]) -> str | None:
    """The ``namespace/name`` of the FederatedObject whose copy ``obj`` is, or None."""
    ann = (obj.get("metadata") or {}).get("annotations") or {}
    value = ann.get(OWNER_ANNOTATION)
    return value if isinstance(value, str) else None


def _selects(override: Mapping[str, Any], member: str, labels: Mapping[str, str]) -> bool:
    if override.get("clusterName") is not None:
        return bool(override.get("clusterName") == member)
    selector = override.get("clusterSelector")
    if selector is None:
        return False
    try:
        return label_selector_from_dict(selector).matches(labels)
    except LabelSelectorError:
        return False


def _identity(obj: Mapping[str, Any]) -> tuple[Any, ...]:
    meta = obj.get("metadata")
    if not isinstance(meta, Mapping):
        return (obj.get("apiVersion"), obj.get("kind"), None, None)
    return (obj.get("apiVersion"), obj.get("kind"), meta.get("name"), meta.get("namespace"))


def render(
    template: Mapping[str, Any],
    *,
    owner_namespace: str,
    owner_name: str,
    namespaced: bool,
    member: str,
    labels: Mapping[str, str],
    overrides: Sequence[Mapping[str, Any]] = (),
) -> dict[str, Any]:
    """The object member ``member`` (with ``labels``) gets (see the module docstring)."""
    check_template(template)
    obj: dict[str, Any] = copy_tree(dict(template))
    obj.pop("status", None)
    meta = obj["metadata"]
    if namespaced:
        ns = meta.get("namespace")
        if ns and ns != owner_namespace:
            raise RenderError(
                f'spec.template.metadata.namespace: "{ns}" is not the FederatedObject\'s '
                f'namespace "{owner_namespace}"'
            )
        meta["namespace"] = owner_namespace
    else:
        meta.pop("namespace", None)
    before = _identity(obj)
    for i, override in enumerate(overrides):
        if not _selects(override, member, labels):
            continue
        try:
            patched = json_patch(obj, override.get("patch") or [])
        except PatchError as exc:
            raise RenderError(f"spec.overrides[{i}]: {exc.detail}") from None
        if not isinstance(patched, dict) or _identity(patched) != before:
            raise RenderError(
                f"spec.overrides[{i}]: may not change apiVersion, kind, metadata.name "
                "or metadata.namespace"
            )
        obj = patched
    meta = obj["metadata"]
    ann = dict(meta.get("annotations") or {})
    ann[OWNER_ANNOTATION] = f"{owner_namespace}/{owner_name}"
    meta["annotations"] = ann
    lab = dict(meta.get("labels") or {})
    lab[MANAGED_LABEL] = "true"
    meta["labels"] = lab
    return obj
