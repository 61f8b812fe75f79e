"""Field management in the embedded server: ``metadata.managedFields`` on every write and
server-side apply (``PATCH`` with ``application/apply-patch+yaml``), over the pure
algorithms of ``kubewerk.core.fieldpath``.

- ``manager_name``: the ``fieldManager`` query parameter, else the request's
  User-Agent up to its first ``/`` (printable characters, at most 128 bytes), as
  kube-apiserver derives it; checked as kube validates Create/Update/PatchOptions.
- ``track``: the ``Update`` entry of a non-apply write (create, update, merge / JSON /
  strategic patch, ``/status``, ``/scale``). The request's own ``managedFields`` are used
  when they decode and are not empty (``[{}]`` therefore resets ownership), else the
  live object's (a client that drops them keeps them; ``[]`` changes nothing).
- ``apply_config``: the merged object and entries of an apply, or ``ApplyConflict``.

The object's type comes from the kind's schema: the vendored OpenAPI definition of a
built-in kind (its list types, map types and strategic merge keys), a CRD's structural
schema with ``metadata`` typed as ObjectMeta.
"""

from __future__ import annotations

import contextvars
from collections import OrderedDict
from typing import Any

import orjson

from kubewerk.apiserver.fieldmanager.typed import KEY_DEFAULTS, joined_errors, typed_patch_error
from kubewerk.apiserver.querystring import query_flag
from kubewerk.apiserver.registry import ServedResource
from kubewerk.core import meta as metautil
from kubewerk.core.errors import ApiError, FieldError
from kubewerk.core.fieldpath import (
    APPLY,
    UPDATE,
    BadManagedFields,
    FieldSet,
    ListItemError,
    ManagedFields,
    Manager,
    OpenApiTypes,
    TypeNode,
    apply,
    update,
)
from kubewerk.core.fieldpath.path import field
from kubewerk.core.fieldpath.types import scalar
from kubewerk.core.fieldpath.validate import typing_errors

__all__ = [
    "USER_AGENT",
    "apply_config",
    "manager_name",
    "track",
]

JSON = dict[str, Any]

FIELD_MANAGER_MAX_LENGTH = 128

USER_AGENT: contextvars.ContextVar[str] = contextvars.ContextVar("kubewerk_user_agent", default="")
"""The User-Agent of the request being served (set by the HTTP layer); the manager of
writes that give no ``fieldManager``."""

_OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
_types_cache: dict[tuple[Any, ...], TypeNode] = {}
_builtin_types: OpenApiTypes | None = None


def _builtins() -> OpenApiTypes:
    global _builtin_types
    if _builtin_types is None:
        from kubewerk.apiserver.kinds import k8s_openapi

        _builtin_types = OpenApiTypes(k8s_openapi.definitions(), KEY_DEFAULTS)
    return _builtin_types


def object_type(rtype: ServedResource, version: str) -> TypeNode:
    """The type of ``rtype``'s objects in ``version`` (cached per CRD generation)."""
    cache_key = (rtype.group, rtype.resource, version, rtype.crd_uid, rtype.crd_generation)
    found = _types_cache.get(cache_key)
    if found is not None:
        return found
    from kubewerk.apiserver.kinds import k8s_openapi
    from kubewerk.core.fieldpath import DEDUCED

    node: TypeNode | None = None
    if rtype.builtin:
        name = k8s_openapi.definition_name(rtype.group, version, rtype.kind)
        if name is not None:
            node = _builtins().definition(name)
    if node is None:
        schema = rtype.schemas.get(version)
        meta = _builtins().definition(_OBJECT_META)
        base = OpenApiTypes(object_meta=meta).node(schema) if isinstance(schema, dict) else DEDUCED
        overrides = {"apiVersion": scalar(), "kind": scalar()}
        if meta is not None:
            overrides["metadata"] = meta
        if base.kind == "deduced":
            from kubewerk.core.fieldpath.types import struct

            node = struct(overrides)
        else:
            node = base.with_fields(overrides)
    if len(_types_cache) > 1024:
        _types_cache.clear()
    _types_cache[cache_key] = node
    return node


_SPEC_RESET = FieldSet.of((field("spec"),))
_STATUS_RESET = FieldSet.of((field("status"),))
_NOTHING_RESET = FieldSet()


def _ignored(rtype: ServedResource, version: str, subresource: str | None) -> FieldSet:
    """The strategy's reset fields in ``version``: never owned (``GetResetFields``). The
    sets are shared constants: the algorithms only read them (``FieldSet`` operations
    return new sets)."""
    if subresource == "status":
        return _SPEC_RESET
    if rtype.has_status(version):
        return _STATUS_RESET
    return _NOTHING_RESET


def _options_kind(verb: str) -> str:
    return {"create": "CreateOptions", "update": "UpdateOptions"}.get(verb, "PatchOptions")


def _check_manager(name: str, verb: str) -> None:
    errors: list[FieldError] = []
    if len(name.encode()) > FIELD_MANAGER_MAX_LENGTH:
        errors.append(FieldError.too_long("fieldManager", FIELD_MANAGER_MAX_LENGTH))
    elif not name.isprintable():
        errors.append(
            FieldError.invalid("fieldManager", name, "must only contain printable characters")
        )
    if errors:
        raise ApiError.invalid(_options_kind(verb), "meta.k8s.io", "", errors)


def manager_name(query: dict[str, str], verb: str) -> str:
    """The manager of a write (see the module docstring); 422 for a bad ``fieldManager``."""
    name = query.get("fieldManager", "")
    if name:
        _check_manager(name, verb)
        return name
    out: list[str] = []
    size = 0
    for ch in USER_AGENT.get().split("/", 1)[0]:
        if not ch.isprintable():
            continue
        width = len(ch.encode())
        if size + width > FIELD_MANAGER_MAX_LENGTH:
            break
        out.append(ch)
        size += width
    return "".join(out)


def _decode(entries: Any) -> ManagedFields | None:
    try:
        return ManagedFields.decode(entries)
    except BadManagedFields:
        return None


_LIVE_CACHE_SIZE = 4096
_live_cache: OrderedDict[int, tuple[list[Any], ManagedFields]] = OrderedDict()
"""Decoded ownership of the ``managedFields`` lists this module wrote, by the list's
identity (the list is held, so its id is not reused while it is here). Objects handed
to storage are not changed in place, so a stored object's list still holds what was
written; a store that decodes objects afresh (SQLite) simply misses. An ``OrderedDict``:
dropping the oldest entry is O(1) (``next(iter(d))`` on a plain dict that is used as a
queue scans the slots its deletions left behind)."""


def _remember(entries: list[Any], managed: ManagedFields) -> None:
    if len(_live_cache) >= _LIVE_CACHE_SIZE:
        _live_cache.popitem(last=False)  # the oldest (insertion order)
    _live_cache[id(entries)] = (entries, managed)


def _live(entries: Any) -> ManagedFields:
    """The ownership a live (stored) object's ``managedFields`` hold; empty when they do
    not decode. Never changed by callers (``update``/``apply`` copy it)."""
    if not entries:
        return _NO_OWNERS
    if type(entries) is list:
        found = _live_cache.get(id(entries))
        if found is not None and found[0] is entries:
            return found[1]
    try:
        managed = ManagedFields.decode(entries, stored=True)
    except BadManagedFields:
        return _NO_OWNERS
    if type(entries) is list:
        _remember(entries, managed)
    return managed


_NO_OWNERS = ManagedFields()


_SHARED_SIZE = 1024
_shared: dict[bytes, list[Any]] = {}
"""One list per distinct ``managedFields`` value this module wrote lately, by its JSON
text: objects whose entries are equal (every object of one shape a manager writes in
one second: same manager, time and fields) hold the same list, its entries and their
``fieldsV1`` dicts, instead of a copy each. That is safe because nothing changes a
written ``managedFields`` list or anything in it in place (objects handed to storage
are immutable, and every writer of ``managedFields`` assigns a new list): a shared list
is read only. The JSON text is exact: equal text means equal lists, dict key order
included (the entries hold only dicts, lists and strings). Cleared when full."""


def _shared_entries(entries: list[Any], managed: ManagedFields) -> list[Any]:
    """The list to store for ``entries`` (``managed`` encoded): the one already written
    with the same JSON text, else ``entries`` (then kept for the next writes); the list
    returned is remembered with the ownership it holds."""
    try:
        text = orjson.dumps(entries)
    except orjson.JSONEncodeError:
        # entries orjson cannot write (an object nested too deeply for its encoder):
        # not shared; the storage boundary refuses such an object with its own reason
        _remember(entries, managed)
        return entries
    found = _shared.get(text)
    if found is not None:
        seen = _live_cache.get(id(found))
        if seen is None or seen[0] is not found:
            _remember(found, managed)
        return found
    if len(_shared) >= _SHARED_SIZE:
        _shared.clear()
    _shared[text] = entries
    _remember(entries, managed)
    return entries


def _set_entries(obj: JSON, managed: ManagedFields) -> None:
    meta = obj.setdefault("metadata", {})
    entries = managed.encode()
    if entries:
        meta["managedFields"] = _shared_entries(entries, managed)
    else:
        meta.pop("managedFields", None)


_updaters: dict[tuple[str, str, str], Manager] = {}


def _updater(name: str, api_version: str, subresource: str) -> Manager:
    """``Manager(name, UPDATE, api_version, subresource)``: one instance per identity
    (a ``Manager`` is frozen; the same few identities write again and again)."""
    key = (name, api_version, subresource)
    found = _updaters.get(key)
    if found is None:
        if len(_updaters) >= 1024:
            _updaters.clear()
        found = _updaters[key] = Manager(name, UPDATE, api_version, subresource)
    return found


def track(
    rtype: ServedResource,
    version: str,
    subresource: str | None,
    old: JSON | None,
    new: JSON,
    requested: Any,
    query: dict[str, str],
    verb: str,
) -> None:
    """Set ``new``'s ``metadata.managedFields`` after a non-apply write from ``old`` (the
    live object as served; None on create). ``requested`` is the managedFields the
    request carried."""
    manager = manager_name(query, verb)
    live = (old.get("metadata") or {}).get("managedFields") if old else None
    managed: ManagedFields | None = None
    if requested and not subresource and not (requested is live or requested == live):
        # the request's own entries (a client sending back the live ones unchanged,
        # as a read-modify-write does, is the live ownership: decoded once)
        managed = _decode(requested)
        if managed is not None and not managed.owners:
            managed = None
    if managed is None:
        managed = _live(live)
    api_version = rtype.api_version(version)
    node = object_type(rtype, version)
    try:
        out = update(
            old,
            new,
            node,
            managed,
            _updater(manager, api_version, subresource or ""),
            api_version,
            metautil.now_rfc3339(),
            _ignored(rtype, version, subresource),
        )
    except ListItemError:
        # a list the schema keys that the object cannot key (admission refuses it, or
        # the kind tolerates it): ownership stays as it was
        out = managed
    _set_entries(new, out)


def apply_config(
    rtype: ServedResource,
    version: str,
    subresource: str | None,
    live: JSON | None,
    config: JSON,
    query: dict[str, str],
) -> JSON:
    """The object an apply of ``config`` to ``live`` (served form, None if the object
    does not exist) gives, with its managedFields; raises ``ApiError`` (400 for a
    configuration structured-merge-diff refuses, 409 ``ApplyConflict``)."""
    manager = query.get("fieldManager", "")
    force = query_flag(query, "force")
    managed = _live(((live or {}).get("metadata") or {}).get("managedFields"))
    api_version = rtype.api_version(version)
    node = object_type(rtype, version)
    now = metautil.now_rfc3339()
    ident = Manager(manager, APPLY, "", subresource or "")
    base = live if live is not None else {}
    problems = typing_errors(config, node)
    if problems:
        raise typed_patch_error(config, joined_errors(problems), _gvk_text(rtype, version))
    try:
        try:
            new, out = apply(
                base,
                config,
                node,
                managed,
                ident,
                api_version,
                now,
                force,
                _ignored(rtype, version, subresource),
            )
        except ApiError as exc:
            if exc.code != 409 or manager != "kubectl" or force or live is None:
                raise
            if not _conflicts_allowed_by_last_applied(exc, live, node):
                raise
            new, out = apply(
                base,
                config,
                node,
                managed,
                ident,
                api_version,
                now,
                True,
                _ignored(rtype, version, subresource),
            )
    except ListItemError as exc:
        # the configuration typed cleanly: the live object holds a list item that cannot
        # be named; kube answers its plain error as a 500 without a reason
        raise ApiError(
            500,
            "",
            f"failed to create typed live object ({_object_text(base, rtype, version)}): {exc}",
        ) from None
    result = _without_managed(new if new is not None else base)
    if manager == "kubectl":
        _sync_last_applied(result, config)
    _set_entries(result, out)
    return result


def _gvk_text(rtype: ServedResource, version: str) -> str:
    """The kind as Go prints a GroupVersionKind (``/v1, Kind=ConfigMap`` for core)."""
    return f"{rtype.group}/{version}, Kind={rtype.kind}"


def _object_text(obj: JSON, rtype: ServedResource, version: str) -> str:
    """kube's ``objectGVKNN``: ``<namespace>/<name>; <gvk>``."""
    meta = obj.get("metadata")
    meta = meta if isinstance(meta, dict) else {}
    namespace = meta.get("namespace")
    name = meta.get("name")
    return (
        f"{namespace if isinstance(namespace, str) else ''}/"
        f"{name if isinstance(name, str) else ''}; {_gvk_text(rtype, version)}"
    )


def _without_managed(obj: JSON) -> JSON:
    out = dict(obj)
    meta = out.get("metadata")
    if isinstance(meta, dict):
        out["metadata"] = {k: v for k, v in meta.items() if k != "managedFields"}
    return out


LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
_LAST_APPLIED_MAX = 256 * 1024


def _last_applied(obj: JSON) -> str | None:
    annotations = (obj.get("metadata") or {}).get("annotations") or {}
    value = annotations.get(LAST_APPLIED) if isinstance(annotations, dict) else None
    return value if isinstance(value, str) and value else None


def _conflicts_allowed_by_last_applied(exc: ApiError, live: JSON, node: TypeNode) -> bool:
    """kubectl's upgrade from client-side apply (lastAppliedManager): conflicts over
    fields the last-applied-configuration set, with the values it set, are forced."""
    import orjson

    from kubewerk.core.fieldpath import ApplyConflict, compare, to_field_set

    if not isinstance(exc, ApplyConflict):
        return False
    text = _last_applied(live)
    if text is None:
        return False
    try:
        last = orjson.loads(text)
    except orjson.JSONDecodeError:
        return False
    if not isinstance(last, dict):
        return False
    try:
        allowed = to_field_set(last, node).difference(
            compare(last, _without_managed(live), node).modified
        )
    except ListItemError:
        return False
    return all(allowed.has(path) for _, path in exc.conflicts)


def _sync_last_applied(result: JSON, config: JSON) -> None:
    """kubectl's server-side applies keep an existing last-applied-configuration in step
    with what was applied (lastAppliedUpdater)."""
    import orjson

    if _last_applied(result) is None:
        return
    applied = dict(config)
    meta = dict(applied.get("metadata") or {})
    annotations = dict(meta.get("annotations") or {})
    annotations.pop(LAST_APPLIED, None)
    if annotations:
        meta["annotations"] = annotations
    else:
        meta.pop("annotations", None)
    applied["metadata"] = meta
    text = orjson.dumps(applied, option=orjson.OPT_SORT_KEYS).decode()
    if len(text) > _LAST_APPLIED_MAX:
        return
    out_meta = dict(result["metadata"])
    out_meta["annotations"] = {**out_meta["annotations"], LAST_APPLIED: text}
    result["metadata"] = out_meta
