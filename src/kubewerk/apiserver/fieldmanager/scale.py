"""Server-side apply of the ``/scale`` subresource: ownership moves between the scaled
object and its ``autoscaling/v1`` Scale as kube-apiserver's ``ScaleHandler`` moves it.

An apply to ``/scale`` is an apply of a Scale. The Scale's ownership is made from the
object's: every entry whose fields hold the object's replicas path becomes an entry
owning the Scale's ``spec.replicas`` in ``autoscaling/v1`` (``to_subresource``). The
configuration is applied to the Scale with the Scale's schema (conflicts, force and
removal as for any apply); the result's ownership goes back to the object
(``to_parent``): an entry of the object that owns the replicas path loses it when the
same identity no longer owns the Scale's replicas, and every other Scale owner of
``spec.replicas`` gets an entry owning the object's replicas path in the request's
apiVersion. Entries in an apiVersion the object is not served in are dropped, as kube
drops entries its path mappings do not know.

Manager identities follow kube's: an ``Update`` entry's identity holds its apiVersion,
so an updater of the object (``apps/v1``) and the same updater seen through the Scale
(``autoscaling/v1``) are different identities; ``Apply`` identities hold none. An entry
a Scale owner gets on the object keeps the time the object's entry of that identity had,
and none when it had none (``ToParent`` reads times from the object's entries only).
When no entry of the object owns the replicas, the Scale is first given the
``before-first-apply`` owner kube's field manager gives an object without managedFields.
"""

from __future__ import annotations

from typing import Any, Final

from kubewerk.apiserver.fieldmanager import _builtins, _live, _set_entries, manager_name
from kubewerk.apiserver.fieldmanager.typed import joined_errors, typed_errors, typed_patch_error
from kubewerk.apiserver.querystring import query_flag
from kubewerk.apiserver.registry import ServedResource
from kubewerk.core import meta as metautil
from kubewerk.core.fieldpath import (
    APPLY,
    UPDATE,
    FieldSet,
    ListItemError,
    ManagedFields,
    Manager,
    Owned,
    TypeNode,
    apply,
    update,
)
from kubewerk.core.fieldpath.path import Path, field

__all__ = [
    "SCALE_API_VERSION",
    "apply_scale",
    "config_errors",
    "replicas_path",
    "to_parent",
    "to_subresource",
]

JSON = dict[str, Any]

SCALE_API_VERSION: Final = "autoscaling/v1"
SCALE_KIND: Final = "Scale"
_SCALE_DEFINITION: Final = "io.k8s.api.autoscaling.v1.Scale"
_REPLICAS_IN_SCALE: Final[Path] = (field("spec"), field("replicas"))


def replicas_path(rtype: ServedResource, version: str) -> Path | None:
    """The object's replicas field in ``version`` (that version's scale
    ``specReplicasPath``) as a field path; None when ``version`` has no scale."""
    scale = rtype.scale_of(version)
    if scale is None:
        return None
    return tuple(field(p) for p in scale.spec_replicas_path.split(".") if p)


def _mappings(rtype: ServedResource) -> dict[str, Path | None]:
    """apiVersion → replicas path (kube's ``ResourcePathMappings``): every served version
    of a built-in kind; every version a CRD declares, None for one without the scale
    subresource (its entries are kept as they are)."""
    per_version = rtype.version_subresources
    versions = rtype.versions if per_version is None else list(per_version)
    return {rtype.api_version(v): replicas_path(rtype, v) for v in versions}


def _identity(manager: Manager, api_version: str) -> Manager:
    """``manager``'s identity when its entry is recorded in ``api_version`` (an
    ``Update`` identity holds the apiVersion; an ``Apply`` one holds none)."""
    return Manager(
        manager.name,
        manager.operation,
        api_version if manager.operation == UPDATE else "",
        manager.subresource,
    )


def to_subresource(rtype: ServedResource, parent: ManagedFields) -> ManagedFields:
    """The Scale's ownership made from the object's (see the module docstring)."""
    mappings = _mappings(rtype)
    out = ManagedFields()
    for manager, owned in parent.owners.items():
        path = mappings.get(owned.api_version)
        if path is None or not owned.fields.has(path):
            continue
        out.owners[_identity(manager, SCALE_API_VERSION)] = Owned(
            FieldSet.of(_REPLICAS_IN_SCALE), SCALE_API_VERSION, owned.applied, owned.time
        )
    return out


def to_parent(
    rtype: ServedResource, api_version: str, parent: ManagedFields, scale: ManagedFields
) -> ManagedFields:
    """The object's ownership after a write of its Scale whose ownership is ``scale``;
    ``api_version`` is the request's (see the module docstring)."""
    mappings = _mappings(rtype)
    # the Scale's ownership as its entries hold it: a manager owning nothing has none
    remaining = {m: o for m, o in scale.owners.items() if not o.empty()}
    out = ManagedFields()
    for manager, owned in parent.owners.items():
        if owned.api_version not in mappings:
            continue  # an apiVersion the object is not served in: dropped
        path = mappings[owned.api_version]
        if path is None or not owned.fields.has(path):
            out.owners[manager] = owned
        elif manager in remaining:
            out.owners[manager] = owned
            del remaining[manager]
        else:
            rest = owned.fields.difference(FieldSet.of(path))
            if not rest.empty():
                out.owners[manager] = Owned(rest, owned.api_version, owned.applied, owned.time)
    target_path = mappings.get(api_version)
    assert target_path is not None, "a Scale is written only in a version with /scale"
    for manager, owned in remaining.items():
        if not owned.fields.has(_REPLICAS_IN_SCALE):
            continue
        before = parent.owners.get(manager)
        out.owners[manager] = Owned(
            FieldSet.of(target_path),
            api_version,
            owned.applied,
            before.time if before is not None else None,
        )
    return out


def _scale_type() -> TypeNode:
    node = _builtins().definition(_SCALE_DEFINITION)
    assert node is not None, "the vendored OpenAPI has autoscaling/v1 Scale"
    return node


def config_errors(config: JSON) -> str | None:
    """Why kube-apiserver's field manager cannot make a typed patch object of ``config``
    (an applied ``autoscaling/v1`` Scale), as structured-merge-diff words it — one error
    alone, several as ``errors:`` followed by one indented line each — or None when
    nothing this module checks is wrong. Kube refuses such a configuration whatever
    ``fieldValidation`` says: an apply never drops or warns about unknown fields."""
    out = typed_errors(config, _SCALE_DEFINITION)
    if not out:
        return None
    return joined_errors(out)


BEFORE_FIRST_APPLY: Final = "before-first-apply"


def _before_first_apply(scale: JSON, now: str) -> ManagedFields:
    """The Scale's ownership when none of the object's entries owns its replicas: kube's
    field manager treats such an object as written before server-side apply and, before
    the first apply, records an ``Update`` by ``before-first-apply`` (in
    ``autoscaling/v1``, subresource ``scale``) of every field that differs from an empty
    Scale (Go's zero Scale: no ``spec.replicas``, ``status.replicas`` 0) — so an apply
    that changes those fields conflicts with it unless forced."""
    empty: JSON = {
        "apiVersion": SCALE_API_VERSION,
        "kind": SCALE_KIND,
        "metadata": {},
        "spec": {},
        "status": {"replicas": 0},
    }
    typed = dict(scale)
    spec = typed.get("spec")
    if isinstance(spec, dict) and spec.get("replicas") == 0:
        # Go's typed Scale omits a zero spec.replicas (omitempty): not a difference
        typed["spec"] = {k: v for k, v in spec.items() if k != "replicas"}
    return update(
        empty,
        typed,
        _scale_type(),
        ManagedFields(),
        Manager(BEFORE_FIRST_APPLY, UPDATE, SCALE_API_VERSION, "scale"),
        SCALE_API_VERSION,
        now,
    )


def apply_scale(
    rtype: ServedResource,
    version: str,
    parent: JSON,
    scale: JSON,
    config: JSON,
    query: dict[str, str],
) -> tuple[JSON, JSON]:
    """An apply of ``config`` (an ``autoscaling/v1`` Scale) to ``scale``, the Scale of
    ``parent`` (the object as served in ``version``). Returns the Scale after the apply
    (no managedFields) and ``parent``'s new ``metadata`` with its ``managedFields`` (the
    caller takes ``spec.replicas`` from the Scale). Raises ``ApiError`` (409
    ``ApplyConflict``, 400 for a configuration the Scale's schema cannot hold:
    ``config_errors``, whatever the request's ``fieldValidation``)."""
    problem = config_errors(config)
    if problem is not None:
        raise typed_patch_error(config, problem)
    manager = manager_name(query, "patch")
    force = query_flag(query, "force")
    live = _live((parent.get("metadata") or {}).get("managedFields"))
    owners = to_subresource(rtype, live)
    now = metautil.now_rfc3339()
    if not owners.owners:
        owners = _before_first_apply(scale, now)
    ident = Manager(manager, APPLY, "", "scale")
    try:
        new, out = apply(
            scale,
            config,
            _scale_type(),
            owners,
            ident,
            SCALE_API_VERSION,
            now,
            force,
        )
    except ListItemError as exc:
        raise typed_patch_error(config, str(exc)) from None
    result = new if new is not None else scale
    holder: JSON = {"metadata": dict(parent.get("metadata") or {})}
    _set_entries(holder, to_parent(rtype, rtype.api_version(version), live, out))
    return result, holder["metadata"]
