"""Reconcile helpers: owner references, finalizers, merge-patch diffs, create-or-update.

Guarantees:

- :func:`set_controller_reference` makes ``owner`` the controller of ``child``
  (``controller: true``, ``blockOwnerDeletion: true``) and raises
  :class:`AlreadyOwnedError` when another object already controls it; it refuses
  cross-namespace and cluster-scoped-child-of-namespaced-owner references, which the
  garbage collector would treat as dangling;
- :func:`merge_patch_diff` gives the smallest RFC 7386 merge patch turning ``old`` into
  ``new`` (removed keys become ``null``; lists are replaced whole);
- :func:`create_or_update` / :func:`create_or_patch` read the current child, apply the
  caller's ``mutate`` and write only when something changed, reporting
  ``created`` / ``updated`` / ``unchanged``. ``create_or_update`` sends a PUT guarded by
  the read resourceVersion (a concurrent change raises Conflict, never lost);
  ``create_or_patch`` sends only the changed fields as a merge patch;
- :func:`apply_owned` server-side applies a child with ``owner`` as its controller
  (one request, no read): the field manager owns exactly the fields in the intent,
  fields it stops applying are removed, and an unchanged intent writes nothing;
  :func:`apply_status` applies a status to ``/status`` the same way.
"""

from __future__ import annotations

import enum
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from kubewerk.client.client import Client
from kubewerk.client.errors import AlreadyExists, NotFound
from kubewerk.client.resources import resource_type_of, to_dict
from kubewerk.core.gvk import parse_api_version
from kubewerk.core.jsoncopy import copy_json


class AlreadyOwnedError(ValueError):
    """The child already has a different controller."""


def _data(obj: Any) -> dict[str, Any]:
    return obj if isinstance(obj, dict) else to_dict(obj)


def _meta(obj: Any) -> dict[str, Any]:
    data = _data(obj)
    meta = data.get("metadata")
    if meta is None:
        meta = data["metadata"] = {}
    return meta


def owner_reference(
    owner: Any, *, controller: bool = False, block_owner_deletion: bool = True
) -> dict[str, Any]:
    """An ownerReference pointing at ``owner`` (which must carry apiVersion, kind, name and uid)."""
    data = _data(owner)
    meta = data.get("metadata") or {}
    api_version = data.get("apiVersion")
    kind = data.get("kind")
    if not api_version or not kind:
        if not isinstance(owner, dict):
            rt = resource_type_of(type(owner))
            api_version, kind = rt.api_version, rt.kind
        else:
            raise ValueError("owner needs apiVersion and kind")
    if not meta.get("uid") or not meta.get("name"):
        raise ValueError(
            "owner needs metadata.name and metadata.uid (use the object read from the API)"
        )
    ref: dict[str, Any] = {
        "apiVersion": api_version,
        "kind": kind,
        "name": meta["name"],
        "uid": meta["uid"],
    }
    if controller:
        ref["controller"] = True
    if block_owner_deletion:
        ref["blockOwnerDeletion"] = True
    return ref


def _check_scopes(owner: Any, child: Any) -> None:
    owner_ns = (_data(owner).get("metadata") or {}).get("namespace")
    child_ns = (_data(child).get("metadata") or {}).get("namespace")
    if owner_ns and not child_ns:
        raise ValueError("a cluster-scoped object cannot be owned by a namespaced one")
    if owner_ns and child_ns and owner_ns != child_ns:
        raise ValueError(
            f"cross-namespace owner references are not allowed ({owner_ns} owns {child_ns})"
        )


def set_controller_reference(owner: Any, child: Any, *, block_owner_deletion: bool = True) -> None:
    """Make ``owner`` the controller of ``child`` (in place); refuse a second controller."""
    _check_scopes(owner, child)
    ref = owner_reference(owner, controller=True, block_owner_deletion=block_owner_deletion)
    refs = _owner_refs(child)
    for existing in refs:
        if existing.get("controller") and existing.get("uid") != ref["uid"]:
            raise AlreadyOwnedError(
                "object is already owned by another "
                f"{existing.get('kind')} controller {existing.get('name')}"
            )
    _upsert_ref(child, refs, ref)


def set_owner_reference(owner: Any, child: Any) -> None:
    """Add a non-controller owner reference (in place; replaces one to the same owner)."""
    _check_scopes(owner, child)
    ref = owner_reference(owner, controller=False, block_owner_deletion=False)
    _upsert_ref(child, _owner_refs(child), ref)


def _owner_refs(child: Any) -> list[dict[str, Any]]:
    if isinstance(child, dict):
        return list(_meta(child).get("ownerReferences") or [])
    meta = getattr(child, "metadata", None)
    refs = getattr(meta, "owner_references", None) or []
    return [
        r if isinstance(r, dict) else r.model_dump(mode="json", by_alias=True, exclude_none=True)
        for r in refs
    ]


def _same_owner(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """controller-runtime's ``referSameObject``: same group, kind and name; a reference
    whose apiVersion does not parse is the same as none."""
    try:
        group_a = parse_api_version(str(a.get("apiVersion", ""))).group
        group_b = parse_api_version(str(b.get("apiVersion", ""))).group
    except ValueError:
        return False
    return group_a == group_b and a.get("kind") == b.get("kind") and a.get("name") == b.get("name")


def _upsert_ref(child: Any, refs: list[dict[str, Any]], ref: dict[str, Any]) -> None:
    for i, existing in enumerate(refs):
        if _same_owner(existing, ref):
            refs[i] = ref
            break
    else:
        refs.append(ref)
    if isinstance(child, dict):
        _meta(child)["ownerReferences"] = refs
    else:
        from kubewerk.model.meta import OwnerReference

        child.metadata.owner_references = [OwnerReference.model_validate(r) for r in refs]


def controller_of(obj: Mapping[str, Any]) -> dict[str, Any] | None:
    """The controller ownerReference of an object dict, if any."""
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or []:
        if ref.get("controller"):
            return dict(ref)
    return None


def has_finalizer(obj: Any, name: str) -> bool:
    """True when ``metadata.finalizers`` contains ``name``."""
    return name in (_meta(obj).get("finalizers") or [])


def is_deleting(obj: Any) -> bool:
    """True when ``metadata.deletionTimestamp`` is set."""
    return bool(_meta(obj).get("deletionTimestamp"))


def merge_patch_diff(old: Any, new: Any) -> Any:
    """The RFC 7386 merge patch from ``old`` to ``new`` ({} when equal)."""
    if not isinstance(old, dict) or not isinstance(new, dict):
        return new
    patch: dict[str, Any] = {}
    for key in old:
        if key not in new:
            patch[key] = None
    for key, value in new.items():
        if key not in old:
            patch[key] = value
            continue
        before = old[key]
        if isinstance(before, dict) and isinstance(value, dict):
            sub = merge_patch_diff(before, value)
            if sub:
                patch[key] = sub
        elif before != value or type(before) is not type(value):
            patch[key] = value
    return patch


class OperationResult(enum.Enum):
    """What :func:`create_or_update` did."""

    CREATED = "created"
    UPDATED = "updated"
    UNCHANGED = "unchanged"


async def create_or_update(
    client: Client,
    obj: dict[str, Any],
    mutate: Callable[[dict[str, Any]], Awaitable[None] | None],
    *,
    current: dict[str, Any] | None = None,
) -> tuple[dict[str, Any], OperationResult]:
    """Make the object named by ``obj`` match ``mutate``'s intent.

    ``obj`` names the object (apiVersion, kind, metadata.name/namespace). The current
    copy is read (or ``current`` used, e.g. from a cache), ``mutate`` edits it in place,
    and it is created or PUT back (guarded by its resourceVersion) only if it changed.
    """
    return await _create_or_write(client, obj, mutate, current, patch=False)


async def create_or_patch(
    client: Client,
    obj: dict[str, Any],
    mutate: Callable[[dict[str, Any]], Awaitable[None] | None],
    *,
    current: dict[str, Any] | None = None,
) -> tuple[dict[str, Any], OperationResult]:
    """Like :func:`create_or_update` but writes a merge patch of only the changed fields
    (status changes go to the ``/status`` subresource in a second patch)."""
    return await _create_or_write(client, obj, mutate, current, patch=True)


async def _run(
    mutate: Callable[[dict[str, Any]], Awaitable[None] | None], obj: dict[str, Any]
) -> None:
    result = mutate(obj)
    if result is not None:
        await result


async def _create_or_write(
    client: Client,
    obj: dict[str, Any],
    mutate: Callable[[dict[str, Any]], Awaitable[None] | None],
    current: dict[str, Any] | None,
    *,
    patch: bool,
) -> tuple[dict[str, Any], OperationResult]:
    rt = await client.resolve(str(obj.get("apiVersion")), str(obj.get("kind")))
    meta = obj.get("metadata") or {}
    name = str(meta.get("name", ""))
    namespace = meta.get("namespace")
    if current is None:
        try:
            current = await client.get(rt, name, namespace)
        except NotFound:
            current = None
    if current is None:
        desired = copy_json(obj)
        await _run(mutate, desired)
        try:
            created = await client.create(desired)
            return created, OperationResult.CREATED
        except AlreadyExists:
            current = await client.get(rt, name, namespace)  # the cache was behind: update instead
    current.setdefault("apiVersion", rt.api_version)
    current.setdefault("kind", rt.kind)
    before = copy_json(current)
    after = copy_json(current)
    await _run(mutate, after)
    if after == before:
        return current, OperationResult.UNCHANGED
    if not patch:
        updated = await client.replace(after)
        return updated, OperationResult.UPDATED
    body_before = {k: v for k, v in before.items() if k != "status"}
    body_after = {k: v for k, v in after.items() if k != "status"}
    result = current
    diff = merge_patch_diff(body_before, body_after)
    if diff:
        result = await client.patch(rt, name, diff, namespace)
    status_diff = merge_patch_diff(
        {"status": before.get("status")}, {"status": after.get("status")}
    )
    if status_diff:
        result = await client.patch(rt, name, status_diff, namespace, subresource="status")
    return result, OperationResult.UPDATED


def _intent(obj: Any) -> dict[str, Any]:
    """A fresh dict of ``obj`` (dict or model) with apiVersion and kind filled in."""
    data: dict[str, Any] = copy_json(to_dict(obj))
    if "apiVersion" not in data or "kind" not in data:
        rt = resource_type_of(type(obj))
        data.setdefault("apiVersion", rt.api_version)
        data.setdefault("kind", rt.kind)
    return data


async def apply_owned(
    client: Client,
    owner: Any,
    child: Any,
    *,
    field_manager: str,
    force: bool = True,
) -> dict[str, Any]:
    """Server-side apply ``child`` (dict or model: its fields are the whole intent of
    ``field_manager``) with ``owner`` as its controller; returns the server's copy.

    The child's namespace defaults to the owner's; its controller ownerReference to
    ``owner`` is part of the intent (ownerReferences merge by uid, so references others
    added stay). ``AlreadyOwnedError`` when the intent itself names another controller.
    ``force`` (the default, as Kubernetes recommends for controllers) takes over fields
    another manager changed; with ``force=False`` such a field raises Conflict. The
    caller's ``child`` is not modified.
    """
    desired = _intent(child)
    meta = desired.get("metadata")
    if not isinstance(meta, dict):
        meta = desired["metadata"] = {}
    owner_ns = (_data(owner).get("metadata") or {}).get("namespace")
    if not meta.get("namespace") and owner_ns:
        rt = await client.resolve(str(desired["apiVersion"]), str(desired["kind"]))
        if rt.namespaced:
            meta["namespace"] = owner_ns
    set_controller_reference(owner, desired)
    result: dict[str, Any] = await client.apply(desired, field_manager=field_manager, force=force)
    return result


async def apply_status(
    client: Client,
    obj: Any,
    status: Any,
    *,
    field_manager: str,
    force: bool = True,
) -> dict[str, Any]:
    """Server-side apply ``status`` to the ``/status`` of the object ``obj`` names
    (apiVersion, kind, name, namespace are taken from it, nothing else); returns the
    server's copy. ``field_manager`` then owns exactly the status fields given; ones it
    applied before and leaves out now are removed unless another manager owns them. An
    unchanged status writes nothing (the same resourceVersion comes back). ``force`` as
    for :func:`apply_owned`."""
    data = _data(obj)
    meta = data.get("metadata") or {}
    api_version, kind = data.get("apiVersion"), data.get("kind")
    if not api_version or not kind:
        rt = resource_type_of(type(obj))
        api_version, kind = rt.api_version, rt.kind
    ident: dict[str, Any] = {"name": meta.get("name")}
    if meta.get("namespace"):
        ident["namespace"] = meta["namespace"]
    body = {"apiVersion": api_version, "kind": kind, "metadata": ident, "status": status}
    result: dict[str, Any] = await client.apply(
        body, field_manager=field_manager, force=force, subresource="status"
    )
    return result
