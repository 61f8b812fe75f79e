"""Writing one object to a cluster: :func:`apply_object` and :func:`delete_object`.

``apply_object(client, obj, policy)`` makes the cluster's object equal to ``obj`` (its
server-managed fields ignored) and records ``obj`` as the last-synced state in the
:data:`~kubewerk.sync.normalize.LAST_SYNCED_ANNOTATION` annotation:

1. server-side apply (``PATCH`` ``application/apply-patch+yaml``) with the field manager
   (default ``kubewerk-sync``); with ``force`` under the ``git-wins`` policy, so fields
   another manager took are taken back; a server that does not support apply (415) gets
   a create or a guarded replace instead;
2. when the applied result still differs from ``obj`` (fields another manager added
   that ``obj`` does not have) and the policy is ``git-wins``, a replace guarded by the
   result's ``resourceVersion`` removes them.

Nothing is written with ``dry_run`` (the server's ``dryRun=All``): the result is what the
cluster would hold. ``ApplyResult.action`` says ``created``, ``updated`` or ``unchanged``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

import orjson

from kubewerk.client import Client, ResourceType
from kubewerk.client.errors import ApiError, Conflict, Forbidden, NotFound
from kubewerk.core.gvk import split_api_version
from kubewerk.core.jsoncopy import copy_tree
from kubewerk.sync.diff import same_value
from kubewerk.sync.keys import GroupKind
from kubewerk.sync.normalize import LAST_SYNCED_ANNOTATION, strip_server_fields
from kubewerk.sync.schemas import KindSchemas
from kubewerk.sync.shapes import ANY

__all__ = [
    "FIELD_MANAGER",
    "POLICIES",
    "ApplyResult",
    "Policy",
    "apply_object",
    "delete_object",
    "desired_state",
    "last_synced",
    "same_in_cluster",
    "server_defaulted",
]

FIELD_MANAGER: Final = "kubewerk-sync"
Policy = Literal["git-wins", "cluster-wins", "merge"]
POLICIES: Final[tuple[str, ...]] = ("git-wins", "cluster-wins", "merge")


@dataclass(slots=True)
class ApplyResult:
    """What :func:`apply_object` did and the cluster's object afterwards (or, on a dry
    run, what it would be)."""

    action: Literal["created", "updated", "unchanged"]
    object: dict[str, Any]


def desired_state(obj: Mapping[str, Any]) -> dict[str, Any]:
    """``obj`` without server-managed fields and status: the state a sync records."""
    out: dict[str, Any] = copy_tree(strip_server_fields(obj))
    return out


def last_synced(obj: Mapping[str, Any]) -> dict[str, Any] | None:
    """The last-synced state recorded on a cluster object, or None (never synced, or an
    annotation that does not hold a JSON object)."""
    ann = ((obj.get("metadata") or {}).get("annotations") or {}).get(LAST_SYNCED_ANNOTATION)
    if not isinstance(ann, str):
        return None
    try:
        found = orjson.loads(ann)
    except orjson.JSONDecodeError:
        return None
    return found if isinstance(found, dict) else None


def _with_record(desired: dict[str, Any], record: Mapping[str, Any] | None) -> dict[str, Any]:
    body: dict[str, Any] = copy_tree(desired)
    if record is not None:
        meta = body.setdefault("metadata", {})
        ann = dict(meta.get("annotations") or {})
        ann[LAST_SYNCED_ANNOTATION] = orjson.dumps(
            dict(record), option=orjson.OPT_SORT_KEYS
        ).decode()
        meta["annotations"] = ann
    return body


def _ns(client: Client, obj: Mapping[str, Any], rt: ResourceType) -> str | None:
    """The namespace ``obj`` is written to: its own, else the client's (its kubeconfig
    context's, ``default`` for a URL) as kubectl places it; None for a cluster-scoped kind."""
    if not rt.namespaced:
        return None
    return str((obj.get("metadata") or {}).get("namespace") or client.namespace or "default")


async def apply_object(
    client: Client,
    obj: Mapping[str, Any],
    policy: Policy | str = "git-wins",
    *,
    live: Mapping[str, Any] | None = None,
    record: Mapping[str, Any] | None = None,
    schemas: KindSchemas | None = None,
    field_manager: str = FIELD_MANAGER,
    dry_run: bool = False,
) -> ApplyResult:
    """Make the cluster's object equal to ``obj`` (see the module docstring).

    ``live`` is the cluster's current copy when the caller has read it (saves a read when
    deciding created/updated); ``record`` is the state to record as last synced (default:
    ``obj`` stripped); ``schemas`` gives list types and defaults for the equality check.
    An ``obj`` of a namespaced kind without a namespace is written to the client's
    namespace (its kubeconfig context's); one of a cluster-scoped kind is sent without
    the namespace it names. Raises the client's errors (:class:`~kubewerk.client.errors.ApiError`,
    ``ServerUnreachable``) unchanged."""
    desired = desired_state(obj)
    body = _with_record(desired, record if record is not None else desired)
    rt = await client.resolve(str(body.get("apiVersion", "")), str(body.get("kind", "")))
    name = str(body["metadata"]["name"])
    ns = _ns(client, body, rt)
    if rt.namespaced:
        body["metadata"]["namespace"] = ns
    else:
        body["metadata"].pop("namespace", None)  # kube-apiserver clears it too
    force = policy == "git-wins"
    existed = live is not None
    if live is not None and await same_in_cluster(client, live, body, schemas):
        return ApplyResult("unchanged", dict(live))
    try:
        result: dict[str, Any] = await client.patch(
            rt,
            name,
            body,
            ns,
            type="apply",
            force=force,
            field_manager=field_manager,
            dry_run=dry_run,
        )
    except ApiError as exc:
        if exc.code != 415:
            raise
        result = await _put(client, rt, body, ns, field_manager, dry_run)
    if live is None:
        existed = _was_existing(result)
    if force and not dry_run and not await same_in_cluster(client, result, body, schemas):
        # another manager's fields survive an apply: the source wins, replace them
        # (guarded; a controller's status write in between is read and retried)
        meta = body["metadata"]
        for attempt in range(3):
            meta["resourceVersion"] = (result.get("metadata") or {}).get("resourceVersion")
            try:
                result = await client.replace(body, field_manager=field_manager)
                break
            except Conflict:
                if attempt == 2:
                    raise
                result = await client.get(rt, name, ns)
    result.setdefault("apiVersion", body["apiVersion"])
    result.setdefault("kind", body["kind"])
    return ApplyResult("updated" if existed else "created", result)


def _was_existing(result: Mapping[str, Any]) -> bool:
    # an object created by this apply has exactly one managedFields entry: ours
    managed = (result.get("metadata") or {}).get("managedFields") or []
    return len(managed) > 1 or any(m.get("operation") != "Apply" for m in managed)


async def _put(
    client: Client,
    rt: ResourceType,
    body: dict[str, Any],
    ns: str | None,
    field_manager: str,
    dry_run: bool,
) -> dict[str, Any]:
    try:
        live: dict[str, Any] = await client.get(rt, body["metadata"]["name"], ns)
    except NotFound:
        created: dict[str, Any] = await client.create(
            body, dry_run=dry_run, field_manager=field_manager
        )
        return created
    put = copy_tree(body)
    put["metadata"]["resourceVersion"] = live["metadata"]["resourceVersion"]
    replaced: dict[str, Any] = await client.replace(
        put, dry_run=dry_run, field_manager=field_manager
    )
    return replaced


async def server_defaulted(
    client: Client,
    manifest: Mapping[str, Any],
    live: Mapping[str, Any] | None,
    *,
    warn: Callable[[str], None] | None = None,
) -> dict[str, Any] | None:
    """``manifest`` as the cluster would store it (a dry run: nothing is written): a
    replace guarded by ``live``'s resourceVersion when the object exists (``live``
    given; custom resources accept no unconditional update), else a create. A write in
    between (409) is met by reading the object again, up to three tries. None when the
    server refuses it (the refusal is the caller's difference); when the refusal is a
    403 (a user without the right to write the object, even in a dry run), ``warn`` is
    told that such objects' defaults are unknown."""
    body = copy_tree(dict(manifest))
    meta = body.setdefault("metadata", {})
    for name in ("resourceVersion", "uid", "managedFields", "creationTimestamp", "generation"):
        meta.pop(name, None)
    version = ((live or {}).get("metadata") or {}).get("resourceVersion")
    try:
        if live is None:
            created: dict[str, Any] = await client.create(body, dry_run=True)
            return created
        for attempt in range(3):
            if version:
                meta["resourceVersion"] = version
            try:
                result: dict[str, Any] = await client.replace(body, dry_run=True)
                return result
            except Conflict:
                if attempt == 2 or not version:
                    return None
                rt = await client.resolve(str(body.get("apiVersion", "")), str(body.get("kind")))
                fresh = await client.get(rt, str(meta.get("name", "")), _ns(client, body, rt))
                version = (fresh.get("metadata") or {}).get("resourceVersion")
    except Forbidden:
        if warn is not None:
            warn(
                f"may not write {manifest.get('kind')} objects, even in a dry run (403 "
                "Forbidden): the defaults the server gives them are unknown and show as "
                "differences"
            )
        return None
    except ApiError:
        return None
    return None


async def same_in_cluster(
    client: Client,
    live: Mapping[str, Any],
    desired: Mapping[str, Any],
    schemas: KindSchemas | None,
    *,
    check_record: bool = True,
) -> bool:
    """Whether the cluster's ``live`` object already holds ``desired`` (server-managed
    fields ignored, defaults applied: a CRD's through the schema engine, a built-in
    kind's by the server in a dry run), including the recorded last-synced state unless
    ``check_record`` is False."""
    if check_record and not _same_record(live, desired):
        return False
    a = strip_server_fields(live)
    b = strip_server_fields(desired)
    if same_value(a, b, ANY):
        return True
    av, kind = str(b.get("apiVersion", "")), str(b.get("kind", ""))
    if schemas is None:
        return False
    compiled = schemas.defaulter(av, kind)
    if compiled is not None:
        a, b = copy_tree(a), copy_tree(b)
        compiled.apply_defaults(a)
        compiled.apply_defaults(b)
    elif not schemas.is_custom(GroupKind(split_api_version(av).group, kind)):
        served = await server_defaulted(client, desired, live)
        if served is None:
            return False
        b = strip_server_fields(served)
    return same_value(a, b, schemas.shape(av, kind))


def _same_record(live: Mapping[str, Any], desired: Mapping[str, Any]) -> bool:
    """Whether ``live`` carries the last-synced state ``desired`` records. A record
    without ``metadata.namespace`` (written before manifests were placed in their
    namespace, or by a caller that did not place its object) on an object in namespace
    N records the same state as one naming N."""
    have, want = last_synced(live), last_synced(desired)
    if have == want:
        return True
    if have is None or want is None:
        return False
    live_ns = (live.get("metadata") or {}).get("namespace")
    if not isinstance(live_ns, str) or not live_ns:
        return False
    return _in_namespace(have, live_ns) == _in_namespace(want, live_ns)


def _in_namespace(record: dict[str, Any], namespace: str) -> dict[str, Any]:
    meta = record.get("metadata")
    if not isinstance(meta, dict) or meta.get("namespace"):
        return record
    return {**record, "metadata": {**meta, "namespace": namespace}}


async def delete_object(client: Client, obj: Mapping[str, Any], *, dry_run: bool = False) -> bool:
    """Delete the cluster's copy of ``obj`` (background propagation); False when it was
    already gone."""
    rt = await client.resolve(str(obj.get("apiVersion", "")), str(obj.get("kind", "")))
    meta = obj.get("metadata") or {}
    try:
        await client.delete(
            rt,
            str(meta.get("name")),
            _ns(client, obj, rt),
            propagation_policy="Background",
            dry_run=dry_run,
        )
    except NotFound:
        return False
    return True
