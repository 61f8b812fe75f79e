"""The REST verbs on stored objects, with Kubernetes' semantics.

``ResourceApi`` turns a resolved request (resource type, version, namespace, name,
subresource, query, decoded body) into storage operations and answers with the object,
list or ``Status`` a kube-apiserver would. It knows nothing of HTTP: ``app`` decodes and
encodes. Everything runs on the event loop thread; storage calls are synchronous, so a
read-modify-write here is atomic with respect to other requests.

The verbs are the same for every kind; what differs between kinds is asked of the
kind's strategy (``ServedResource.strategy``, see ``apiserver.strategy``) at fixed points.
"""

from __future__ import annotations

import asyncio
import builtins
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import orjson

from kubewerk.apiserver import decode, fieldmanager
from kubewerk.apiserver.admission import Admission, AdmissionRequest
from kubewerk.apiserver.fieldmanager import scale as scale_fields
from kubewerk.apiserver.fieldmanager import typed
from kubewerk.apiserver.kinds import k8s_openapi
from kubewerk.apiserver.listing import list_objects
from kubewerk.apiserver.registry import Registry, ServedResource
from kubewerk.apiserver.request import (
    RestResponse,
    Target,
    dry_run,
    field_validation,
    parse_resource_version,
    too_large_resource_version,
)
from kubewerk.apiserver.storage.base import (
    Event,
    KeyExists,
    KeyNotFound,
    RevisionConflict,
    Store,
)
from kubewerk.core import meta as metautil
from kubewerk.core.errors import ApiError, FieldError
from kubewerk.core.gofmt import GoText, go_quote, json_equal, json_same_text, unmarshal_kind
from kubewerk.core.jsoncopy import copy_json

JSON = dict[str, Any]

FOREGROUND = "foregroundDeletion"
ORPHAN = "orphan"


def _rfc3339(seconds: float) -> str:
    """``metav1.Time`` text (second precision, ``Z``) for seconds since the epoch."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(int(seconds)))


@dataclass(frozen=True, slots=True)
class ScaleApply:
    """A server-side apply to ``/scale`` read and merged, not yet written
    (``ResourceApi.prepare_scale_apply``)."""

    key: str
    current: JSON
    """The stored object the apply was made against."""
    served: JSON
    """``current`` as served in the request's version."""
    old: JSON
    """Its Scale before the apply."""
    scale: JSON
    """The Scale after the apply (the caller's own copy)."""
    meta: JSON
    """The object's ``metadata`` with the managedFields the apply leaves."""
    rv_text: Any
    """The configuration's ``metadata.resourceVersion`` (a precondition when set)."""


@dataclass(slots=True)
class _CreateDraft:
    """A create between its stages (``ResourceApi._create_prepare``, ``_create_admit``,
    ``_finish_create``); owned by its request."""

    target: Target
    obj: JSON
    query: dict[str, str]
    applied: bool
    decoded: list[str]
    """The warnings of the body's typed decoding (``ResourceApi.decode_create``)."""
    versioned: bool
    """The object named a resourceVersion (storage refuses it)."""
    requested_fields: Any
    """The managedFields the request carried."""
    generated: bool
    """The name was generated from generateName."""
    warnings: list[str] = field(default_factory=list)
    key: str = ""


@dataclass(frozen=True, slots=True)
class ReadPatch:
    """A (non-apply) PATCH's body as ``ResourceApi.read_patch`` read it."""

    media: str
    """The patch's media type (JSON, merge or strategic merge patch)."""
    doc: Any
    """The decoded patch, never changed by applying it."""
    errors: decode.Duplicates | None
    """Its strict decoding errors, reported before the patched object's (None under
    ``fieldValidation=Ignore``)."""


class ResourceApi:
    """Kubernetes REST semantics over a ``Store``."""

    def __init__(self, store: Store, registry: Registry, admission: Admission) -> None:
        self.store = store
        self.registry = registry
        self.admission = admission
        # storage key -> (resourceVersion, version, CRD generation) of custom resources
        # this server wrote with that version's defaults applied: reads in the same version
        # under the same schema need no defaulting pass (it would change nothing)
        self._defaulted: dict[str, tuple[str, str, int]] = {}
        store.subscribe(self._forget_deleted)
        self.authorize_create_on_update: Callable[[Target], None] | None = None
        """Raises the 403 of a PUT that would create its object when the request's user
        may not ``create`` it (set by the server when it authorizes requests; kube's
        ``withAuthorization``); checked after the create's own validation and before
        validating admission and storage, as kube's store runs ``createValidation``."""

    # -- helpers -----------------------------------------------------------------

    def serve(self, target: Target, obj: JSON) -> JSON:
        """The stored object as served in the requested version."""
        rtype = target.rtype
        obj = rtype.strategy.from_storage(obj, target.api_version)
        if rtype.builtin:
            return obj
        meta = obj["metadata"]
        key = rtype.key(meta.get("namespace", "") if rtype.namespaced else "", meta.get("name", ""))
        if self._admitted_here(target, key, meta.get("resourceVersion")):
            return obj
        return self.admission.on_read(rtype, target.version, obj)

    def _serve_admitted(self, target: Target, obj: JSON) -> JSON:
        """An object this request has just admitted in ``target``'s version and schema (a
        pending write the admission chain reviews, or a dry run's answer), as served: only
        converted — reading defaults into it would find nothing to add, as for a stored
        object ``_admitted_here`` vouches for."""
        return target.rtype.strategy.from_storage(obj, target.api_version)

    def _admitted_here(self, target: Target, key: str, resource_version: Any) -> bool:
        """Whether the custom resource stored at ``key`` with this resourceVersion was
        written by this server after admission in ``target``'s version and schema (so it
        is defaulted, pruned and valid there)."""
        return self._defaulted.get(key) == (
            resource_version,
            target.version,
            target.rtype.crd_generation,
        )

    def _trusted(self, target: Target, key: str, current: JSON, served: JSON) -> JSON | None:
        """``served`` (``current`` as served in ``target``'s version) when ``current`` is a
        custom resource ``_admitted_here``, else None: the old object whose equal parts a
        decoding may leave alone (``_typed_decode``)."""
        if target.rtype.builtin or not self._admitted_here(
            target, key, current["metadata"]["resourceVersion"]
        ):
            return None
        return served

    def trusted_stored(self, target: Target) -> JSON | None:
        """The stored object ``target`` names, as served, when a decoding may trust it
        (``_trusted``); None otherwise (a built-in kind, no such object, not admitted
        here). Reads storage without checking anything of the request."""
        if target.rtype.builtin or target.name is None:
            return None
        key = target.rtype.key(target.namespace or "", target.name)
        current = self.store.get(key)
        if current is None:
            return None
        return self._trusted(target, key, current, self.serve(target, current))

    def _note_defaulted(self, target: Target, key: str, stored: JSON) -> None:
        if not target.rtype.builtin:
            rv = stored["metadata"]["resourceVersion"]
            self._defaulted[key] = (rv, target.version, target.rtype.crd_generation)

    def _forget_deleted(self, ev: Event) -> None:
        if ev.type == "DELETED":
            self._defaulted.pop(ev.key, None)

    def _not_found(self, target: Target, name: str | None = None) -> ApiError:
        return ApiError.not_found(
            target.rtype.resource, target.rtype.group, name or target.name or ""
        )

    def target_for_key(self, key: str) -> Target | None:
        """The object stored at ``key``, addressed in its type's storage version (None if
        no served type keeps its objects there)."""
        _, group, resource, namespace, name = key.split("/", 4)
        rtype = self.registry.get("" if group == "core" else group, resource)
        if rtype is None:
            return None
        return Target(rtype, rtype.storage_version, namespace or None, name)

    def _get_stored(self, target: Target) -> tuple[str, JSON]:
        assert target.name is not None
        key = target.rtype.key(target.namespace or "", target.name)
        obj = self.store.get(key)
        if obj is None:
            raise self._not_found(target)
        return key, obj

    def _check_namespace(self, target: Target, creating: bool) -> None:
        if not target.rtype.namespaced:
            return
        ns = self.store.get(f"/core/namespaces//{target.namespace}")
        if ns is None:
            raise ApiError.not_found("namespaces", "", target.namespace or "")
        if creating and (ns.get("metadata") or {}).get("deletionTimestamp"):
            raise ApiError(
                403,
                "Forbidden",
                f'{target.rtype.qualified} "{target.name or ""}" is forbidden: unable to create '
                f"new content in namespace {target.namespace} because it is being terminated",
                {
                    "name": target.name or "",
                    **({"group": target.rtype.group} if target.rtype.group else {}),
                    "kind": target.rtype.resource,
                    "causes": [
                        {
                            "reason": "NamespaceTerminating",
                            "message": f"namespace {target.namespace} is being terminated",
                            "field": "metadata.namespace",
                        }
                    ],
                },
            )

    def _check_body_identity(self, target: Target, body: JSON) -> None:
        rtype = target.rtype
        api_version = body.get("apiVersion")
        kind = body.get("kind")
        if rtype.builtin:
            # typed kinds decode with the request's group/version/kind as defaults
            # (json serializer gvkWithDefaults): a body without them is accepted
            if not kind:
                body["kind"] = kind = rtype.kind
            if not api_version:
                body["apiVersion"] = api_version = target.api_version
        if not kind:
            raise ApiError.bad_request(
                f"Object 'Kind' is missing in '{orjson.dumps(body).decode()[:1024]}'"
            )
        if not api_version:
            raise ApiError.bad_request(
                f"Object 'apiVersion' is missing in '{orjson.dumps(body).decode()[:1024]}'"
            )
        if api_version != target.api_version:
            raise ApiError.bad_request(
                f"the API version in the data ({api_version}) does not "
                f"match the expected API version ({target.api_version})"
            )
        if kind != rtype.kind:
            if not rtype.builtin:
                # customResourceValidator.ValidateTypeMeta: 422 on kind
                raw_meta = body.get("metadata")
                name = raw_meta.get("name") if isinstance(raw_meta, dict) else None
                raise ApiError.invalid(
                    rtype.kind,
                    rtype.group,
                    name if isinstance(name, str) else "",
                    [FieldError.invalid("kind", kind, f"must be {rtype.kind}")],
                )
            raise ApiError.bad_request(
                f"the kind in the data ({kind}) does not match the expected kind ({rtype.kind})"
            )
        meta = body.get("metadata")
        if meta is not None and not isinstance(meta, dict):
            raise ApiError.bad_request("metadata must be an object")
        type_error = _meta_type_error(meta) if meta else None
        if type_error:
            # the body's apiVersion is the target's here (checked above)
            raise ApiError.bad_request(
                f'{kind} in version "{target.version}" cannot '
                f"be handled as a {rtype.kind}: {type_error}"
            )

    def _admit(
        self,
        op: str,
        target: Target,
        obj: JSON,
        old: JSON | None,
        query: dict[str, str],
        trusted_old: bool = False,
        duplicates: decode.Duplicates | None = None,
        decoded: list[str] | None = None,
    ) -> list[str]:
        """Admission of ``obj`` (``Admission.admit``): defaults, pruning, validation.
        ``decoded``: ``obj`` was decoded already (``decode_for_admission``) with these
        warnings; else it is decoded here first, ``duplicates`` reported with it."""
        decode_warnings = (
            list(decoded)
            if decoded is not None
            else self._typed_decode(target, obj, query, duplicates)
        )
        req = AdmissionRequest(
            operation="CREATE" if op == "CREATE" else "UPDATE",
            rtype=target.rtype,
            version=target.version,
            obj=obj,
            old=old,
            field_validation=field_validation(query),
            subresource=target.subresource,
            dry_run=dry_run(query),
            trusted_old=trusted_old,
        )
        req.warnings[:0] = decode_warnings
        req.decoded = True  # by ``_typed_decode``, before mutating admission
        self.admission.admit(req)
        return req.warnings

    def _typed_decode(
        self,
        target: Target,
        obj: JSON,
        query: dict[str, str],
        duplicates: decode.Duplicates | None = None,
        old: JSON | None = None,
    ) -> list[str]:
        """Typed decoding of a body (``Strategy.typed_decode``), or a custom resource's
        decoding by its version's schema (``Admission.decode_custom``: unknown fields
        pruned, then the schema's defaults applied, as apiextensions-apiserver's codec
        decodes it before mutating admission), then the kind's defaults
        (:meth:`default_decoded`, as kube's codec defaults what it decodes: so the
        managedFields of an ``Update`` are worked out on the decoded, defaulted object,
        as kube's handlers hand it to the field manager): a value of the wrong type is
        400 as kube-apiserver's decoder answers; unknown fields are dropped and, per
        ``fieldValidation``, refused (Strict) or warned about (Warn).

        ``duplicates``: the body's duplicate fields (or a patch body's strict errors),
        reported with the unknown fields as kube-apiserver's strict decoder reports
        them: one ``strict decoding error`` listing both (Strict) or a warning each
        (Warn), in kube's order (``Duplicates.with_unknown``). ``old``: for a custom
        resource, the stored object when it is trusted (``AdmissionRequest.trusted_old``):
        the top-level properties equal to it are neither pruned nor defaulted again."""
        rtype = target.rtype
        pruned: list[str] | None = None
        try:
            unknown = rtype.strategy.typed_decode(obj, target.version)
        except ValueError as exc:
            raise ApiError.bad_request(
                f'{rtype.kind} in version "{target.version}" cannot be handled as a '
                f"{rtype.kind}: {exc}"
            ) from None
        if unknown is None and not rtype.builtin:
            # a custom resource's defaults are its schema's (its strategy has none)
            pruned = self.admission.decode_custom(rtype, target.version, obj, old)
        else:
            rtype.strategy.default(obj)  # default_decoded; a Strict error below drops obj
        if not unknown and not duplicates and not pruned:
            return []
        mode = field_validation(query)
        if mode == "Ignore":
            return []
        strict = mode == "Strict"
        if duplicates is not None and unknown is not None:
            messages = duplicates.report(unknown, typed=True, strict=strict)
        elif duplicates or pruned:
            # apiextensions' decoder: the JSON decoder's errors, then the pruned paths as
            # pruning found them (unquoted: ``unknown field "%s"``)
            messages = duplicates.report([], typed=False, strict=strict) if duplicates else []
            messages += [f'unknown field "{path}"' for path in pruned or ()]
        else:
            messages = [f"unknown field {go_quote(path)}" for path in unknown or ()]
        if mode == "Strict":
            raise ApiError.bad_request("strict decoding error: " + ", ".join(messages))
        return messages

    def decode_for_admission(
        self,
        target: Target,
        obj: JSON,
        query: dict[str, str],
        duplicates: decode.Duplicates | None = None,
        old: JSON | None = None,
    ) -> list[str]:
        """What kube-apiserver's handlers do to a write's object before mutating
        admission (k8s.io/apiserver pkg/endpoints/handlers/{create,update,patch}.go): it
        is decoded into the kind's type (``_typed_decode``: 400 for a value of the wrong
        type or, under ``fieldValidation=Strict``, an unknown or duplicate field; the
        others dropped; a custom resource pruned and defaulted by its schema) and
        defaulted (:meth:`default_decoded`). Returns the decoding's warnings, for
        ``create``/``update``/``finish_patch`` (``decoded``), which then do not decode
        again. ``old``: a trusted stored object, as for ``_typed_decode``."""
        return self._typed_decode(target, obj, query, duplicates, old)

    @staticmethod
    def default_decoded(target: Target, obj: JSON) -> None:
        """The defaults and conversion a typed decode applies (``Strategy.default``: the
        kind's ``SetDefaults_*``, a Secret's ``stringData`` merged into ``data``), as
        kube applies them to a request body, a patched object and a mutating webhook's
        patched object before admission sees them."""
        target.rtype.strategy.default(obj)

    # -- read --------------------------------------------------------------------

    def get(self, target: Target, query: dict[str, str]) -> RestResponse:
        rv_text = query.get("resourceVersion", "")
        if rv_text:
            # "0": any version; N: not older than N (a newer one cannot be waited for here)
            rv = parse_resource_version(rv_text)
            if rv > self.store.revision:
                raise too_large_resource_version(rv, self.store.revision)
        _, obj = self._get_stored(target)
        return RestResponse(200, self.serve(target, obj))

    def list(self, target: Target, query: dict[str, str]) -> tuple[list[JSON], JSON]:
        """Items (served form) and list metadata; the caller wraps them in a List or Table."""
        items, list_meta = list_objects(self.store, target, query)
        return [self.serve(target, o) for o in items], list_meta

    # -- create ------------------------------------------------------------------

    def create(
        self,
        target: Target,
        body: JSON,
        query: dict[str, str],
        *,
        defer: bool = False,
        applied: bool = False,
        duplicates: decode.Duplicates | None = None,
        decoded: builtins.list[str] | None = None,
    ) -> RestResponse:
        """Create from ``body``, which the caller hands over (it is changed in place).

        ``defer``: stop before storage and answer with ``commit`` set (see
        ``RestResponse.commit``), for the admission chain's asynchronous path.
        ``applied``: ``body`` is a server-side apply's result, its managedFields final.
        ``duplicates``: the repeated keys of the request body ``body`` was decoded from,
        when ``body`` is no longer that very object; else they are found by
        ``decode.body_duplicates``. ``decoded``: ``body`` was decoded already
        (:meth:`decode_create`, then mutating admission), with these warnings.

        The order is kube's create handler's: the body decoded into its type (400
        before anything else), then the system fields and ``prepare_for_create``, then
        admission (defaults, validation), then storage."""
        if decoded is None:
            decoded = self.decode_create(target, body, query, duplicates)
        draft = self._create_prepare(target, body, query, applied, decoded)
        self._create_admit(draft)
        return self._answer_create(draft, defer)

    def _answer_create(self, draft: _CreateDraft, defer: bool) -> RestResponse:
        """An admitted create stored (``_finish_create``), or with ``defer`` its answer
        with ``commit`` set to store it."""
        target, key, obj, warnings = draft.target, draft.key, draft.obj, draft.warnings
        query, versioned = draft.query, draft.versioned
        if not defer:
            return self._finish_create(target, key, obj, query, warnings, versioned)
        return RestResponse(
            201,
            self._serve_admitted(target, obj),
            warnings,
            lambda: self._finish_create(target, key, obj, query, warnings, versioned),
        )

    def decode_create(
        self,
        target: Target,
        body: JSON,
        query: dict[str, str],
        duplicates: decode.Duplicates | None = None,
    ) -> builtins.list[str]:
        """The first stage of a create, which reads nothing of storage: the target takes
        creates, the body is the target's kind and version, and it decodes into the
        kind's type (``_typed_decode``, in place); returns the decoding's warnings.
        ``duplicates`` as for ``create``."""
        rtype = target.rtype
        if target.subresource:
            raise ApiError.method_not_supported(
                rtype.resource + "/" + target.subresource, rtype.group, "create"
            )
        self._check_body_identity(target, body)
        if duplicates is None:
            duplicates = decode.body_duplicates(body)
        if body.get("metadata") is None:  # absent, or JSON null: an empty ObjectMeta
            body["metadata"] = {}
        return self._typed_decode(target, body, query, duplicates)

    def _create_prepare(
        self,
        target: Target,
        body: JSON,
        query: dict[str, str],
        applied: bool,
        decoded: builtins.list[str],
    ) -> _CreateDraft:
        """The part of a create that reads storage, on the loop, after ``decode_create``:
        the body's namespace, a generated name, the namespace's existence, the system
        fields and the strategy's ``prepare_for_create``."""
        rtype = target.rtype
        obj = body  # freshly decoded for this request: ours to change
        meta = obj["metadata"]
        if target.namespace is not None and rtype.namespaced:
            body_ns = meta.get("namespace")
            if body_ns and body_ns != target.namespace:
                raise ApiError.bad_request(
                    "the namespace of the provided object does "
                    "not match the namespace sent on the request"
                )
            meta["namespace"] = target.namespace
        elif rtype.namespaced:
            raise ApiError.method_not_supported(rtype.resource, rtype.group, "create")
        else:
            meta.pop("namespace", None)
        generated = False
        if not meta.get("name") and meta.get("generateName"):
            # RetryGenerateName (on by default since 1.31): a generated name that is taken
            # is generated again, up to 8 attempts, instead of failing with AlreadyExists
            # (nothing commits between this check and the write unless the create is
            # admitted off the loop, which checks again: ``_regenerate_if_taken``)
            generated = True
            self._generate_name(rtype, meta)
        target = Target(rtype, target.version, target.namespace, meta.get("name") or None)
        self._check_namespace(target, creating=True)
        # system fields (rest.FillObjectMetaSystemFields / BeforeCreate)
        meta["uid"] = metautil.new_uid()
        meta["creationTimestamp"] = metautil.now_rfc3339()
        # storage refuses an object that names a resourceVersion (its own or a mutating
        # webhook's), after validation and only when it really writes: remembered here
        versioned = not applied and _sets_resource_version(meta.get("resourceVersion"))
        requested_fields = meta.get("managedFields")
        dropped = _CLEARED_ON_APPLY if applied else _CLEARED_ON_CREATE
        if not dropped.isdisjoint(meta):
            for key in dropped.intersection(meta):
                del meta[key]
        _omit_empty_meta(meta)
        rtype.strategy.prepare_for_create(obj)
        return _CreateDraft(
            target, obj, query, applied, decoded, versioned, requested_fields, generated
        )

    def _create_admit(self, draft: _CreateDraft) -> None:
        """The per-body work of a create, between the store reads of ``_create_prepare``
        and the write of ``_finish_create``: managedFields, admission, the name rule, the
        storage form. Reads nothing of storage; for a kind whose
        strategy is ``offload_safe`` it may run in a worker thread (``create_async``)."""
        target, obj, query = draft.target, draft.obj, draft.query
        rtype = target.rtype
        if not draft.applied:
            fieldmanager.track(
                rtype, target.version, None, None, obj, draft.requested_fields, query, "create"
            )
        draft.warnings = self._admit("CREATE", target, obj, None, query, decoded=draft.decoded)
        if not obj["metadata"].get("name"):
            raise ApiError.invalid(
                rtype.kind,
                rtype.group,
                "",
                [FieldError.required("metadata.name", "name or generateName is required")],
            )
        obj = draft.obj = rtype.strategy.to_storage(obj)
        meta = obj["metadata"]
        draft.key = rtype.key(meta.get("namespace", "") if rtype.namespaced else "", meta["name"])

    def _generate_name(self, rtype: ServedResource, meta: JSON) -> None:
        """Set ``meta``'s name from its generateName: one not taken, in up to 8 tries."""
        gen_ns = str(meta.get("namespace") or "") if rtype.namespaced else ""
        for _ in range(8):
            meta["name"] = metautil.generate_name(str(meta["generateName"]))
            if self.store.get(rtype.key(gen_ns, meta["name"])) is None:
                break

    def _regenerate_if_taken(self, draft: _CreateDraft) -> None:
        """A generated name another write took while the create was admitted off the loop
        is generated again (RetryGenerateName retries at the storage write, without
        admitting again: the new name has the same prefix and length)."""
        rtype = draft.target.rtype
        if not draft.generated or self.store.get(draft.key) is None:
            return
        meta = draft.obj["metadata"]
        self._generate_name(rtype, meta)
        draft.key = rtype.key(meta.get("namespace", "") if rtype.namespaced else "", meta["name"])

    async def create_async(
        self,
        target: Target,
        body: JSON,
        query: dict[str, str],
        body_bytes: int,
        *,
        defer: bool = False,
        decoded: builtins.list[str] | None = None,
    ) -> RestResponse:
        """``create``, with the per-body CPU work of a big body off the event loop: for a
        request body longer than ``decode.OFFLOAD_BYTES`` of a kind that allows it
        (:meth:`offloadable`), ``decode_create`` (unless ``decoded`` says it ran) and
        ``_create_admit`` run in a worker thread, before and after the store reads and
        system fields of ``_create_prepare`` and before the write of ``_finish_create``,
        both on the loop; the answer is the same. Anything else is ``create`` as it is.
        ``defer`` and ``decoded`` as for ``create``."""
        if body_bytes <= decode.OFFLOAD_BYTES or not self.offloadable(target):
            return self.create(target, body, query, defer=defer, decoded=decoded)
        if decoded is None:
            decoded = await asyncio.to_thread(self.decode_create, target, body, query)
        draft = self._create_prepare(target, body, query, False, decoded)
        await asyncio.to_thread(self._create_admit, draft)
        self._regenerate_if_taken(draft)
        return self._answer_create(draft, defer)

    def offloadable(self, target: Target) -> bool:
        """Whether a create of ``target`` may be decoded and admitted in a worker thread:
        not of a subresource; its strategy vouches for its hooks
        (``Strategy.offloadable``); admission is this module's own
        (``Admission``, or ``SchemaAdmission``, whose compiled schema is made here, on the
        loop, first); and a custom resource's schema has no CEL rules (whose runtime is
        not known to be safe on two threads at once). What the worker then shares with
        the loop are read-only definitions and memo caches whose every write stores the
        same value (built types, compiled checks)."""
        from kubewerk.apiserver.schema_admission import SchemaAdmission

        rtype = target.rtype
        if target.subresource or not rtype.strategy.offloadable():
            return False
        admission = self.admission
        if type(admission) is Admission:
            return True
        if type(admission) is not SchemaAdmission:
            return False
        fieldmanager.object_type(rtype, target.version)  # built here, on the loop
        if rtype.builtin:
            return True
        found = admission.version_schema(rtype, target.version)
        if found is None:
            return True
        key = ("rest_offload_cel", target.version)
        known = rtype.derived.get(key)
        if not (isinstance(known, tuple) and known[0] is found.schema):
            known = rtype.derived[key] = (found.schema, _has_cel(found.schema))
        return not known[1]

    def _finish_create(
        self,
        target: Target,
        key: str,
        obj: JSON,
        query: dict[str, str],
        warnings: builtins.list[str],
        versioned: bool = False,
    ) -> RestResponse:
        """Store an admitted object. ``versioned``: it named a resourceVersion, which
        storage's ``Create`` refuses with a plain error (kube's etcd3 store: a 500
        without a reason); a dry run, which stores nothing, is not refused."""
        rtype = target.rtype
        name = obj["metadata"]["name"]
        if dry_run(query):
            if self.store.get(key) is not None:
                raise ApiError.already_exists(rtype.resource, rtype.group, name)
            return RestResponse(201, self._serve_admitted(target, obj), warnings)
        if versioned:
            raise ApiError(500, "", "resourceVersion should not be set on objects to be created")
        try:
            stored = self.store.create(key, obj)
        except KeyExists:
            raise ApiError.already_exists(rtype.resource, rtype.group, name) from None
        self._note_defaulted(target, key, stored)
        # admitted here in this version and schema (just noted): ``serve`` would only convert
        return RestResponse(201, self._serve_admitted(target, stored), warnings)

    # -- update ------------------------------------------------------------------

    def update(
        self,
        target: Target,
        body: JSON,
        query: dict[str, str],
        *,
        defer: bool = False,
        duplicates: decode.Duplicates | None = None,
        name_checked: bool = False,
        decoded: builtins.list[str] | None = None,
    ) -> RestResponse:
        """Replace the object with ``body``; ``defer`` and ``duplicates`` as for ``create``
        (not for the scale and finalize subresources). ``name_checked``: the request
        body was checked already (:meth:`check_update_request`) and
        ``body`` is what mutating admission made of it: a name it changed is left to
        ``ValidateObjectMetaUpdate`` (422 ``field is immutable``), as in kube.
        ``decoded``: ``body`` was decoded already (``decode_for_admission``, then mutating
        admission), with these warnings; else it is decoded here, once its identity,
        namespace and name are checked and before storage is read (a body that does not
        decode is 400 even for a missing object, as kube's update handler answers)."""
        rtype = target.rtype
        if target.subresource == "scale":
            self.check_update_target(target, body)  # the Scale meets the URL as any body
            return self._update_scale(target, body, query)
        if target.subresource == "finalize":
            return self._finalize(target, body)
        if name_checked:
            self._check_body_identity(target, body)
            self._check_update_namespace(target, body)
        else:
            self.check_update_request(target, body)
        if decoded is None:
            if duplicates is None:
                duplicates = decode.body_duplicates(body)
            decoded = self._typed_decode(
                target, body, query, duplicates, self.trusted_stored(target)
            )
        meta = body.get("metadata") or {}
        rv_text = meta.get("resourceVersion")
        key = rtype.key(target.namespace or "", target.name or "")
        current = self.store.get(key)
        if current is None:
            return self.create_on_update(target, body, query, defer=defer, decoded=decoded)
        if not rv_text and not rtype.strategy.allow_unconditional_update:
            # the generic store's Update, once it has found the object: its Invalid error
            # names the resource where the kind goes (k8s.io/apiserver
            # pkg/registry/generic/registry/store.go)
            raise ApiError.invalid(
                rtype.resource,
                rtype.group,
                target.name or "",
                [
                    FieldError.invalid(
                        "metadata.resourceVersion", GoText("0x0"), "must be specified for an update"
                    )
                ],
            )
        return self._apply_update(
            target,
            key,
            current,
            copy_json(body),
            query,
            rv_text,
            defer=defer,
            decoded=decoded,
        )

    def create_on_update(
        self,
        target: Target,
        body: JSON,
        query: dict[str, str],
        *,
        defer: bool = False,
        decoded: builtins.list[str] | None = None,
    ) -> RestResponse:
        """A PUT of an object that does not exist (``body`` checked by
        :meth:`check_update_request`), as kube's generic store's ``Update`` answers it
        (k8s.io/apiserver pkg/registry/generic/registry/store.go): 404 unless the kind's
        strategy allows create on update (:meth:`check_create_on_update`); then the
        create path (``BeforeCreate``: system fields, ``prepare_for_create``, create
        validation), answered 201. ``defer`` and ``decoded`` as for ``create``."""
        self.check_create_on_update(target, body)
        meta = body.get("metadata")
        if isinstance(meta, dict):
            # storage's GuaranteedUpdate clears it (PrepareObjectForStorage): no precondition
            meta.pop("resourceVersion", None)
        collection = Target(target.rtype, target.version, target.namespace, None)
        if decoded is None:
            decoded = self.decode_create(collection, body, query)
        draft = self._create_prepare(collection, body, query, False, decoded)
        self._create_admit(draft)
        self.check_create_authorized(target)
        return self._answer_create(draft, defer)

    def check_create_authorized(self, target: Target) -> None:
        """A PUT of the missing object ``target`` may create it only if its user may
        ``create`` it (:attr:`authorize_create_on_update`); 403 otherwise."""
        if self.authorize_create_on_update is not None:
            self.authorize_create_on_update(target)

    def check_create_on_update(self, target: Target, body: JSON) -> None:
        """What a PUT of a missing object meets before it may create it: 404 for a kind
        whose strategy does not allow create on update (``Strategy.allow_create_on_update``,
        kube's ``AllowCreateOnUpdate``: the generic store's ``Update``); for one that does,
        a body naming a ``metadata.uid`` is the UID precondition the update's object info
        carries (``rest.DefaultUpdatedObjectInfo.Preconditions``), which storage checks
        against the empty object it found: 409 ``Precondition failed: UID in precondition:
        U, UID in object meta: ``."""
        rtype = target.rtype
        if not rtype.strategy.allow_create_on_update:
            raise self._not_found(target)
        meta = body.get("metadata")
        uid = meta.get("uid") if isinstance(meta, dict) else None
        if uid:
            raise ApiError.conflict(
                rtype.resource,
                rtype.group,
                target.name or "",
                f"Precondition failed: UID in precondition: {uid}, UID in object meta: ",
            )

    def check_update_request(self, target: Target, body: JSON) -> None:
        """What kube-apiserver's update handler checks of a PUT's body before it reads
        storage, in its order (k8s.io/apiserver pkg/endpoints/handlers/update.go): the
        body decodes as the target's kind and version (400), its namespace is the
        request's (400, ``EnsureObjectNamespaceMatchesRequestNamespace``), its name is
        the URL's (400, :meth:`check_update_name`). So a PUT naming an object that does
        not exist is refused for its body before it is 404."""
        self._check_body_identity(target, body)
        self.check_update_target(target, body)

    def check_update_target(self, target: Target, body: JSON) -> None:
        """The body's namespace and name meet the request's (``check_update_request``
        without the decoding checks: also a ``/scale`` PUT's Scale, which kube's update
        handler checks the same way)."""
        self._check_update_namespace(target, body)
        self.check_update_name(target, body)

    @staticmethod
    def _check_update_namespace(target: Target, body: JSON) -> None:
        meta = body.get("metadata")
        namespace = meta.get("namespace") if isinstance(meta, dict) else None
        if target.rtype.namespaced and namespace and namespace != target.namespace:
            raise ApiError.bad_request(
                "the namespace of the provided object does "
                "not match the namespace sent on the request"
            )

    @staticmethod
    def check_update_name(target: Target, body: JSON) -> None:
        """The update handler's ``checkName`` (handlers/rest.go, namer.go): the request
        body names the URL's object. An empty or missing name is 400 ``the name of the
        object (N based on URL) was undeterminable: name must be provided``, another name
        400 ``the name of the object (X) does not match the name on the URL (N)``."""
        meta = body.get("metadata")
        name = meta.get("name") if isinstance(meta, dict) else None
        if not name:
            raise _undeterminable_name(target)
        if name != target.name:
            raise ApiError.bad_request(
                f"the name of the object ({name}) does "
                f"not match the name on the URL ({target.name})"
            )

    def _apply_update(
        self,
        target: Target,
        key: str,
        current: JSON,
        new: JSON,
        query: dict[str, str],
        rv_text: Any,
        served: JSON | None = None,
        *,
        defer: bool = False,
        applied: bool = False,
        verb: str = "update",
        duplicates: decode.Duplicates | None = None,
        decoded: builtins.list[str] | None = None,
    ) -> RestResponse:
        """The shared tail of PUT and PATCH: system fields, status rules, admission, write.
        ``duplicates`` and ``decoded`` as for ``_admit``.

        ``served`` is ``current`` as served in the target version, when the caller has it;
        ``defer`` as for ``create``. The write's ``Update`` ownership is recorded in
        ``managedFields``, unless ``applied`` (a server-side apply's result, whose
        managedFields are final).
        """
        rtype = target.rtype
        if rv_text:
            try:
                expected = int(str(rv_text))
            except ValueError:
                raise ApiError.bad_request(f'invalid resource version "{rv_text}"') from None
            if str(expected) != current["metadata"]["resourceVersion"]:
                raise ApiError.stale(rtype.resource, rtype.group, target.name or "")
        old_served = served if served is not None else self.serve(target, current)
        meta = new.setdefault("metadata", {})
        requested_fields = meta.get("managedFields")
        old_meta = current.get("metadata") or {}
        if meta.get("uid") and meta["uid"] != old_meta.get("uid"):
            raise ApiError.conflict(
                rtype.resource,
                rtype.group,
                target.name or "",
                "Precondition failed: UID in precondition: "
                f"{meta['uid']}, UID in object meta: {old_meta.get('uid')}",
            )
        for k in (
            "uid",
            "creationTimestamp",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "generation",
        ):
            if k in old_meta:
                meta[k] = old_meta[k]
            else:
                meta.pop(k, None)
        if not meta.get("name"):
            meta["name"] = old_meta["name"]
        # else the URL's, or a mutating webhook's other name: ValidateObjectMetaUpdate's
        if rtype.namespaced:
            meta["namespace"] = old_meta.get("namespace")
        else:  # kube's BeforeUpdate clears a cluster-scoped object's namespace
            meta.pop("namespace", None)
        meta.pop("resourceVersion", None)
        meta.pop("selfLink", None)
        _omit_empty_meta(meta)
        new["apiVersion"] = target.api_version
        if target.subresource == "status":
            # /status writes only status (and nothing else, metadata included): the old
            # object with the new status. ``new`` is this request's own copy, so the parts
            # it holds equal to the old ones are kept rather than copied again.
            new = _with_status_of(new, old_served)
        else:
            if rtype.has_status(target.version):
                if "status" in old_served:
                    new["status"] = copy_json(old_served["status"])
                else:
                    new.pop("status", None)
            rtype.strategy.prepare_for_update(new, old_served)
            if "generation" in old_meta and rtype.strategy.generation_changed(new, old_served):
                meta["generation"] = int(old_meta["generation"]) + 1
        if applied:
            if requested_fields:
                new["metadata"]["managedFields"] = requested_fields
            else:
                new["metadata"].pop("managedFields", None)
        else:
            fieldmanager.track(
                rtype,
                target.version,
                target.subresource,
                old_served,
                new,
                requested_fields,
                query,
                verb,
            )
        # validation sees the resourceVersion being updated (ValidateObjectMetaUpdate requires one)
        new["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
        # the stored object was admitted by this server under this very schema: the
        # parts of the update equal to it need no defaulting, pruning or validation
        trusted = not rtype.builtin and self._admitted_here(
            target, key, current["metadata"]["resourceVersion"]
        )
        warnings = self._admit(
            "UPDATE", target, new, old_served, query, trusted, duplicates, decoded
        )
        new["metadata"].pop("resourceVersion", None)
        new = rtype.strategy.to_storage(new)
        if not defer:
            return self._finish_update(target, key, current, new, query, warnings)
        admitted = copy_json(new)
        admitted["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
        return RestResponse(
            200,
            self._serve_admitted(target, admitted),
            warnings,
            lambda: self._finish_update(target, key, current, new, query, warnings),
        )

    def _finish_update(
        self,
        target: Target,
        key: str,
        current: JSON,
        new: JSON,
        query: dict[str, str],
        warnings: builtins.list[str],
    ) -> RestResponse:
        rtype = target.rtype
        if dry_run(query):
            new["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
            return RestResponse(200, self._serve_admitted(target, new), warnings)
        if self._deletion_completes(rtype, new):
            try:
                deleted = self.store.delete(key, int(current["metadata"]["resourceVersion"]))
            except RevisionConflict:
                raise ApiError.stale(rtype.resource, rtype.group, target.name or "") from None
            return RestResponse(200, self.serve(target, deleted), warnings)
        if self._unchanged(new, current):
            return RestResponse(200, self.serve(target, current), warnings)
        try:
            stored = self.store.update(key, new, int(current["metadata"]["resourceVersion"]))
        except RevisionConflict:
            raise ApiError.stale(rtype.resource, rtype.group, target.name or "") from None
        except KeyNotFound:
            raise self._not_found(target) from None
        self._note_defaulted(target, key, stored)
        return RestResponse(200, self.serve(target, stored), warnings)

    @staticmethod
    def _unchanged(new: JSON, current: JSON) -> bool:
        """A no-op write keeps the resourceVersion (the apiserver skips the storage write
        when the encoded object is the same); values compare as ``json_equal`` does."""
        cur_meta = current.get("metadata") or {}
        own_meta = new.get("metadata")
        if (
            type(own_meta) is dict
            and "resourceVersion" in cur_meta
            and "resourceVersion" not in own_meta
        ):
            # the same question as one C-level comparison: lend new the current resourceVersion
            own_meta["resourceVersion"] = cur_meta["resourceVersion"]
            try:
                return json_equal(new, current)
            finally:
                del own_meta["resourceVersion"]
        new_meta = own_meta or {}
        meta_keys = (cur_meta.keys() | new_meta.keys()) - {"resourceVersion"}
        if any(not json_equal(cur_meta.get(k), new_meta.get(k)) for k in meta_keys):
            return False
        keys = (new.keys() | current.keys()) - {"metadata"}
        return all(json_equal(new.get(k), current.get(k)) for k in keys)

    @staticmethod
    def _deletion_completes(rtype: ServedResource | None, obj: JSON) -> bool:
        """Whether writing ``obj`` completes its deletion: it is being deleted and nothing
        holds it any more (no finalizers, nor the kind's own: ``Strategy.holds_deletion``).
        Every write of a stored object (a client's update, a built-in controller's write
        back) asks this one rule."""
        meta = obj["metadata"]
        if not meta.get("deletionTimestamp") or meta.get("finalizers"):
            return False
        return rtype is None or not rtype.strategy.holds_deletion(obj)

    def write_back(self, key: str, obj: JSON) -> JSON:
        """A built-in controller's write: ``obj`` is a changed copy of the object stored at
        ``key``, with the resourceVersion it was read at (removed here).

        Stored as given, without admission: the controllers change only what the server
        itself manages (status, finalizers, owner references). When the write leaves a
        deleting object unheld (``_deletion_completes``), the object is deleted instead.
        Returns what was stored or deleted; raises ``RevisionConflict`` if the object
        changed since it was read and ``KeyNotFound`` if it is gone.
        """
        revision = int(obj["metadata"].pop("resourceVersion"))
        target = self.target_for_key(key)
        if self._deletion_completes(target.rtype if target is not None else None, obj):
            return self.store.delete(key, revision)
        return self.store.update(key, obj, revision)

    def _finalize(self, target: Target, body: JSON) -> RestResponse:
        """``PUT /api/v1/namespaces/{name}/finalize``: the stored namespace with the body's
        ``spec.finalizers`` and nothing else of it; the namespace goes if that leaves it
        deleting and unheld."""
        key, ns = self._get_stored(target)
        new = copy_json(ns)
        finalizers = (body.get("spec") or {}).get("finalizers") or []
        new.setdefault("spec", {})["finalizers"] = finalizers
        if not finalizers:
            new["spec"].pop("finalizers")
        self.write_back(key, new)  # read and written with no await between: no race
        current = self.store.get(key)
        return RestResponse(200, self.serve(target, current if current is not None else new))

    # -- patch -------------------------------------------------------------------

    def patch(
        self, target: Target, patch_body: bytes, content_type: str, query: dict[str, str]
    ) -> RestResponse:
        from kubewerk.core import patch as patchlib

        media = self._patch_media(target, content_type, query)
        if media == APPLY_YAML:
            return self._server_side_apply(target, patch_body, query)
        patch_doc = self._patch_doc(patch_body)
        key, current = self._get_stored(target)
        served = self.serve(target, current)
        if target.subresource == "scale":
            scale = self._scale_of(target, served)
            patched_scale = self._run_patch(target, media, scale, patch_doc, patchlib)
            return self._update_scale(target, patched_scale, query)
        patched, rv_text = self._patched(target, media, patch_doc, current, served)
        # the patched object is decoded into its type before anything else of the update
        errors = self._patch_body_errors(media, patch_body, patch_doc, query)
        decoded = self._typed_decode(
            target, patched, query, errors, self._trusted(target, key, current, served)
        )
        return self._apply_update(
            target, key, current, patched, query, rv_text, served, verb="patch", decoded=decoded
        )

    @staticmethod
    def _patch_body_errors(
        media: str, patch_body: bytes, patch_doc: Any, query: dict[str, str]
    ) -> decode.Duplicates | None:
        """The strict decoding errors of a patch body, which kube-apiserver's patcher
        reports before those of the patched object (unless ``fieldValidation=Ignore``):
        the body's duplicate fields for a merge or strategic merge patch (decoded into a
        map), those of its operations for a JSON patch (``decode.json_patch_errors``).
        The patched object itself has no duplicates, and kube decodes it from a map's
        key-sorted encoding: a typed kind's unknown fields come in key order."""
        if field_validation(query) == "Ignore":
            return None
        if media == "application/json-patch+json":
            errors = decode.json_patch_errors(patch_body, patch_doc)
        else:
            errors = decode.json_duplicates(patch_body, patch_doc).messages()
        # the patched object is decoded from a key-sorted text (a map's encoding)
        return decode.Duplicates([], leading=errors, sorted_unknown=True)

    # -- server-side apply ---------------------------------------------------------

    def _apply_config(self, target: Target, patch_body: bytes) -> JSON:
        """The applied configuration, checked as kube-apiserver's applyPatcher and
        field manager check it."""
        try:
            config = decode.yaml_value(patch_body, "the patch")
        except decode.TooDeep as exc:
            raise ApiError.bad_request(str(exc)) from None
        except decode.DecodeError as exc:
            raise ApiError.bad_request(f"error decoding YAML: {exc}") from None
        if not isinstance(config, dict):
            raise ApiError.bad_request(
                "error decoding YAML: json: cannot unmarshal "
                f"{unmarshal_kind(config)} into Go value of type map[string]interface {{}}"
            )
        api_version = config.get("apiVersion")
        # an apply to /scale is an apply of the autoscaling/v1 Scale (its own field manager)
        scale = target.subresource == "scale"
        expected_version = scale_fields.SCALE_API_VERSION if scale else target.api_version
        expected_kind = scale_fields.SCALE_KIND if scale else target.rtype.kind
        if api_version != expected_version:
            raise ApiError.bad_request(
                "Incorrect version specified in apply patch. Specified patch version: "
                f"{api_version or ''}, expected: {expected_version}"
            )
        if config.get("kind") != expected_kind:
            raise ApiError.bad_request(
                f"the kind in the data ({config.get('kind') or ''}) does not match the "
                f"expected kind ({expected_kind})"
            )
        meta = config.get("metadata")
        if meta is not None and not isinstance(meta, dict):
            raise ApiError.bad_request("metadata must be an object")
        if meta is None:
            config.pop("metadata", None)  # JSON null: an empty ObjectMeta, as absent
            meta = {}
        if meta.get("managedFields") is not None:
            raise ApiError.bad_request("metadata.managedFields must be nil")
        if meta.get("name") == "":
            raise _undeterminable_name(target)
        if meta.get("name") not in (None, target.name):
            raise ApiError.bad_request(
                f"the name of the object ({meta.get('name')}) does "
                f"not match the name on the URL ({target.name})"
            )
        if not scale:
            self._check_declared(target, config)
        return config

    def _check_declared(self, target: Target, config: JSON) -> None:
        """Refuse an applied object of a built-in kind with fields its vendored Kubernetes
        definition does not declare (or non-numbers where numbers belong), whatever
        ``fieldValidation`` says, as kube-apiserver's field manager refuses to make a
        typed patch object of it (``.spec.foo: field not declared in schema``), one
        field per object, keyed list items named by their keys. A custom resource's
        configuration is typed by ``fieldmanager.apply_config`` (its version's schema,
        without copying or pruning the configuration)."""
        rtype = target.rtype
        if not rtype.builtin:
            return
        gvk = f"{rtype.group}/{target.version}, Kind={rtype.kind}"  # Go's: "/v1" for core
        definition = k8s_openapi.definition_name(rtype.group, target.version, rtype.kind)
        problems = typed.typed_errors(config, definition) if definition else []
        if problems:
            raise typed.typed_patch_error(config, typed.joined_errors(problems), gvk)

    def _server_side_apply(
        self, target: Target, patch_body: bytes, query: dict[str, str]
    ) -> RestResponse:
        """``PATCH`` with ``application/apply-patch+yaml``: merge the configuration into
        the object by the kind's schema, with field ownership (``fieldmanager``); creates
        the object when it does not exist, as kube-apiserver does."""
        rtype = target.rtype
        config = self._apply_config(target, patch_body)
        if target.subresource == "scale":
            applied = self.prepare_scale_apply(target, config, query)
            notes = self.apply_yaml_duplicates(config, query)
            result = self.finish_scale_apply(target, applied, applied.scale, query)
        else:
            key = rtype.key(target.namespace or "", target.name or "")
            current = self.store.get(key)
            if current is None:
                if target.subresource:
                    raise self._not_found(target)
                new = fieldmanager.apply_config(
                    rtype, target.version, None, None, copy_json(config), query
                )
                notes = self.apply_yaml_duplicates(config, query)
                self.check_apply_create(target, config)
                new.setdefault("metadata", {})["name"] = target.name
                result = self.create(
                    Target(rtype, target.version, target.namespace, None), new, query, applied=True
                )
            else:
                served = self.serve(target, current)
                new = fieldmanager.apply_config(
                    rtype, target.version, target.subresource, served, config, query
                )
                notes = self.apply_yaml_duplicates(config, query)
                new = copy_json(new)
                rv_text = (config.get("metadata") or {}).get("resourceVersion")
                result = self._apply_update(
                    target, key, current, new, query, rv_text, served, applied=True, verb="patch"
                )
        if notes:
            result.warnings[:0] = notes
        return result

    @staticmethod
    def apply_yaml_duplicates(config: JSON, query: dict[str, str]) -> builtins.list[str]:
        """The repeated keys of an apply configuration, checked as kube-apiserver's apply
        patcher checks them once the apply itself has succeeded (a conflict is answered
        first): unless ``fieldValidation=Ignore``, the body is read again by go-yaml's
        strict decoder; Strict refuses it (400 ``error strict decoding YAML: error
        converting YAML to JSON: yaml: unmarshal errors:`` and a line per key), Warn
        returns a warning per line (``line 10: key "paused" already set in map``)."""
        mode = field_validation(query)
        found = decode.body_duplicates(config) if mode != "Ignore" else None
        if found is None or not found.yaml_lines:
            return []
        if mode == "Strict":
            raise ApiError.bad_request(
                "error strict decoding YAML: error converting YAML to JSON: " + found.yaml_error()
            )
        return list(found.yaml_lines)

    def read_patch(
        self, target: Target, patch_body: bytes, content_type: str, query: dict[str, str]
    ) -> ReadPatch:
        """A (non-apply) PATCH's body, read once for the admission chain's asynchronous
        path, however often the chain applies it: its media type (the PatchOptions in
        ``query`` checked as ``patch`` checks them), the decoded patch and its strict
        decoding errors (``_patch_body_errors``). Patching never changes the decoded
        patch (``core.patch`` and ``core.strategic`` copy what they take from it)."""
        media = self._patch_media(target, content_type, query)
        if media == APPLY_YAML:
            raise ApiError.unsupported_media_type(
                "server-side apply is not available while admission webhooks or policies "
                "are configured in kubewerk yet; use a merge or JSON patch"
            )
        doc = self._patch_doc(patch_body)
        return ReadPatch(media, doc, self._patch_body_errors(media, patch_body, doc, query))

    @staticmethod
    def check_apply_create(target: Target, config: JSON) -> None:
        """What kube's patcher checks of the object a server-side apply makes when there is
        none yet (k8s.io/apiserver pkg/endpoints/handlers/patch.go ``applyPatch``), after
        the merge and the strict YAML check, before admission: a configuration naming a
        uid is 409 ``uid mismatch: the provided object specified uid U, and no existing
        object was found``; one naming another namespace 400; one naming no object (no
        ``metadata.name``: the object made of it has none) 400 ``the name of the object (N
        based on URL) was undeterminable: name must be provided``."""
        rtype = target.rtype
        meta = config.get("metadata") or {}
        if meta.get("uid"):
            raise ApiError.conflict(
                rtype.resource,
                rtype.group,
                target.name or "",
                f"uid mismatch: the provided object specified uid {meta['uid']}, "
                "and no existing object was found",
            )
        namespace = meta.get("namespace")
        if rtype.namespaced and namespace and namespace != target.namespace:
            raise ApiError.bad_request(
                "the namespace of the provided object does "
                "not match the namespace sent on the request"
            )
        if not meta.get("name"):
            raise _undeterminable_name(target)

    def prepare_patch(self, target: Target, read: ReadPatch) -> tuple[str, JSON, JSON, JSON, Any]:
        """A PATCH (not of ``/scale``) up to admission: ``(key, stored object, stored
        object as served, patched object, resourceVersion precondition)``, the patch
        ``read_patch`` read applied to the object stored now; finish it with
        ``finish_patch``. For the admission chain's asynchronous path."""
        key, current = self._get_stored(target)
        served = self.serve(target, current)
        patched, rv_text = self._patched(target, read.media, read.doc, current, served)
        return key, current, served, patched, rv_text

    def finish_patch(
        self,
        target: Target,
        prepared: tuple[str, JSON, JSON, JSON, Any],
        patched: JSON,
        query: dict[str, str],
        duplicates: decode.Duplicates | None = None,
        decoded: builtins.list[str] | None = None,
    ) -> RestResponse:
        """Admit ``patched`` (what ``prepare_patch`` gave, as mutating admission left it)
        and answer with ``commit`` set (``defer``). ``duplicates``: the patch body's
        strict decoding errors (``ReadPatch.errors``), reported when the patched object
        is decoded; ``decoded``: it was decoded already (``decode_for_admission``), with
        these warnings."""
        key, current, served, _, rv_text = prepared
        return self._apply_update(
            target,
            key,
            current,
            patched,
            query,
            rv_text,
            served,
            defer=True,
            verb="patch",
            duplicates=duplicates,
            decoded=decoded,
        )

    def _patch_media(
        self, target: Target, content_type: str, query: dict[str, str] | None = None
    ) -> str:
        """The patch's media type, and the PatchOptions checks that depend on it
        (ValidatePatchOptions: ``fieldManager`` required for apply, ``force`` only there)."""
        rtype = target.rtype
        query = query if query is not None else {}
        media = content_type.split(";")[0].strip().lower()
        allowed = ["application/json-patch+json", "application/merge-patch+json"]
        if rtype.strategic_kind:
            allowed.append("application/strategic-merge-patch+json")
        if media == APPLY_CBOR:
            raise ApiError.unsupported_media_type(
                "the body of the request was in an unknown format - accepted media types "
                "include: " + ", ".join([*allowed, APPLY_YAML]) + " (kubewerk does not read "
                "CBOR: send the apply configuration as application/apply-patch+yaml)"
            )
        if media not in allowed and media != APPLY_YAML:
            raise ApiError.unsupported_media_type(
                "the body of the request was in an unknown format - accepted media types include: "
                + ", ".join([*allowed, APPLY_YAML])
            )
        errors: builtins.list[FieldError] = []
        if media == APPLY_YAML:
            if not query.get("fieldManager"):
                errors.append(FieldError.required("fieldManager", "is required for apply patch"))
        elif "force" in query:
            errors.append(FieldError.forbidden("force", "may not be specified for non-apply patch"))
        if errors:
            raise ApiError.invalid("PatchOptions", "meta.k8s.io", "", errors)
        if query.get("fieldManager"):
            fieldmanager.manager_name(query, "patch")
        return media

    @staticmethod
    def _patch_doc(patch_body: bytes) -> Any:
        try:
            return decode.json_value(patch_body, "the patch")
        except decode.TooDeep as exc:
            raise ApiError.bad_request(str(exc)) from None
        except decode.DecodeError as exc:
            raise ApiError.bad_request(f"error decoding patch: {exc}") from None

    def _patched(
        self, target: Target, media: str, patch_doc: Any, current: JSON, served: JSON
    ) -> tuple[JSON, Any]:
        from kubewerk.core import patch as patchlib

        rtype = target.rtype
        patched = self._run_patch(target, media, served, patch_doc, patchlib)
        if not isinstance(patched, dict):
            raise ApiError.bad_request("the patched object is not a JSON object")
        if patched.get("apiVersion") != target.api_version or patched.get("kind") != rtype.kind:
            raise ApiError.bad_request("the patch may not change apiVersion or kind")
        meta = patched.get("metadata")
        if not isinstance(meta, dict):
            raise ApiError.bad_request("the patched object has no metadata")
        if meta.get("name") != target.name:
            raise ApiError.bad_request(
                f"the name of the object ({meta.get('name')}) does "
                f"not match the name on the URL ({target.name})"
            )
        rv_text = meta.get("resourceVersion")
        if rv_text == current["metadata"]["resourceVersion"]:
            # unchanged by the patch: no precondition (only a patch that sets it is guarded)
            patch_rv = _patch_sets_resource_version(media, patch_doc)
            rv_text = rv_text if patch_rv else None
        return patched, rv_text

    def _run_patch(
        self, target: Target, media: str, doc: JSON, patch_doc: Any, patchlib: Any
    ) -> Any:
        try:
            if media == "application/json-patch+json":
                if not isinstance(patch_doc, list):
                    raise ApiError.bad_request(
                        "json: cannot unmarshal object into Go value of type jsonpatch.Patch"
                    )
                # copy and move can nest a value deeper than either document did
                patched = patchlib.json_patch(doc, patch_doc)
                decode.check_depth(patched, "the patched object")
                return patched
            if not isinstance(patch_doc, dict):
                raise ApiError.bad_request(
                    "json: cannot unmarshal non-object into "
                    "Go value of type map[string]interface {}"
                )
            if media == "application/merge-patch+json":
                return patchlib.merge_patch(doc, patch_doc, copy=copy_json)
            from kubewerk.core import strategic

            schema = target.rtype.strategy.patch_schema(target.version)
            if schema is not None:
                return strategic.apply_strategic_patch(doc, patch_doc, schema)
            return strategic.strategic_merge_patch(
                doc, patch_doc, target.rtype.strategic_kind or ""
            )
        except ApiError:
            raise
        except decode.DecodeError as exc:
            raise ApiError.bad_request(str(exc)) from None
        except (ValueError, TypeError) as exc:
            raise ApiError.bad_request(str(exc)) from None

    # -- scale -------------------------------------------------------------------

    def _scale_of(self, target: Target, obj: JSON) -> JSON:
        from kubewerk.core.jsonpath import evaluate

        scale = target.rtype.scale_of(target.version)
        assert scale is not None
        spec_vals = evaluate(scale.spec_replicas_path, obj)
        status_vals = evaluate(scale.status_replicas_path, obj)
        status: JSON = {"replicas": status_vals[0] if status_vals else 0}
        selector = target.rtype.strategy.scale_selector(obj)
        if selector is not None:
            if selector:
                status["selector"] = selector
        elif scale.label_selector_path:
            sel = evaluate(scale.label_selector_path, obj)
            if sel and isinstance(sel[0], str):
                status["selector"] = sel[0]
        meta = obj["metadata"]
        return {
            "kind": "Scale",
            "apiVersion": "autoscaling/v1",
            "metadata": {
                k: meta[k]
                for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
                if k in meta
            },
            "spec": {"replicas": spec_vals[0]} if spec_vals else {},
            "status": status,
        }

    def get_scale(self, target: Target) -> RestResponse:
        _, obj = self._get_stored(target)
        return RestResponse(200, self._scale_of(target, self.serve(target, obj)))

    @staticmethod
    def _checked_replicas(target: Target, replicas: Any) -> int:
        """``replicas`` if a Scale may ask for it (an integer, not negative), else 422."""
        if not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 0:
            raise ApiError.invalid(
                "Scale",
                "autoscaling",
                target.name or "",
                [
                    FieldError.invalid(
                        "spec.replicas", replicas, "must be greater than or equal to 0"
                    )
                ],
            )
        return replicas

    @staticmethod
    def _with_replicas(target: Target, obj: JSON, replicas: int) -> None:
        """Set ``obj``'s replicas field (its scale's ``specReplicasPath``), in place."""
        scale = target.rtype.scale_of(target.version)
        assert scale is not None
        path = [p for p in scale.spec_replicas_path.split(".") if p]
        node = obj
        for part in path[:-1]:
            node = node.setdefault(part, {})
        node[path[-1]] = replicas

    def _update_scale(self, target: Target, body: JSON, query: dict[str, str]) -> RestResponse:
        rtype = target.rtype
        assert rtype.scale_of(target.version) is not None
        replicas = self._checked_replicas(target, (body.get("spec") or {}).get("replicas"))
        key, current = self._get_stored(target)
        rv = (body.get("metadata") or {}).get("resourceVersion")
        new = copy_json(self.serve(target, current))
        self._with_replicas(target, new, replicas)
        main = Target(rtype, target.version, target.namespace, target.name)
        result = self._apply_update(main, key, current, new, query, rv)
        result.body = self._scale_of(target, result.body)
        return result

    def prepare_scale_apply(
        self, target: Target, config: JSON, query: dict[str, str]
    ) -> ScaleApply:
        """A server-side apply of ``config`` (an ``autoscaling/v1`` Scale, checked by
        ``_apply_config``) to ``target``'s ``/scale``, up to the write: the stored object,
        its Scale before, the Scale after the apply and the object's new managedFields
        (``fieldmanager.scale``). 404 when the object does not exist (an apply to a
        subresource creates nothing); 409 ``ApplyConflict``."""
        key, current = self._get_stored(target)
        served = self.serve(target, current)
        old = self._scale_of(target, served)
        scale, meta = scale_fields.apply_scale(
            target.rtype, target.version, served, old, config, query
        )
        return ScaleApply(
            key,
            current,
            served,
            old,
            copy_json(scale),
            meta,
            (config.get("metadata") or {}).get("resourceVersion"),
        )

    def finish_scale_apply(
        self, target: Target, applied: ScaleApply, scale: JSON, query: dict[str, str]
    ) -> RestResponse:
        """Write the object of ``applied`` with ``scale``'s ``spec.replicas`` (absent: 0, as
        kube's typed Scale reads it; refused with 422 unless a count) and the apply's
        managedFields, against the revision it was read at (the configuration's
        resourceVersion, if any, is a precondition); answers the Scale written."""
        replicas = self._checked_replicas(target, (scale.get("spec") or {}).get("replicas", 0))
        new = copy_json(applied.served)
        new["metadata"] = dict(applied.meta)
        self._with_replicas(target, new, replicas)
        rtype = target.rtype
        main = Target(rtype, target.version, target.namespace, target.name)
        result = self._apply_update(
            main,
            applied.key,
            applied.current,
            new,
            query,
            applied.rv_text,
            applied.served,
            applied=True,
            verb="patch",
        )
        result.body = self._scale_of(target, result.body)
        return result

    # -- delete ------------------------------------------------------------------

    def delete(self, target: Target, options: JSON, query: dict[str, str]) -> RestResponse:
        rtype = target.rtype
        key, current = self._get_stored(target)
        meta = current.get("metadata") or {}
        pre = options.get("preconditions") or {}
        if pre.get("uid") and pre["uid"] != meta.get("uid"):
            raise ApiError.conflict(
                rtype.resource,
                rtype.group,
                target.name or "",
                "Precondition failed: UID in precondition: "
                f"{pre['uid']}, UID in object meta: {meta.get('uid')}",
            )
        if pre.get("resourceVersion") and pre["resourceVersion"] != meta.get("resourceVersion"):
            raise ApiError.conflict(
                rtype.resource,
                rtype.group,
                target.name or "",
                f"Precondition failed: ResourceVersion in precondition: {pre['resourceVersion']}, "
                f"ResourceVersion in object meta: {meta.get('resourceVersion')}",
            )
        policy = options.get("propagationPolicy") or ""
        orphan = options.get("orphanDependents")
        if policy and policy not in ("Orphan", "Background", "Foreground"):
            raise ApiError.invalid(
                "DeleteOptions",
                "meta.k8s.io",
                "",
                [
                    FieldError.not_supported(
                        "propagationPolicy", policy, ["Background", "Foreground", "Orphan"]
                    )
                ],
            )
        if not policy and orphan is not None:
            policy = "Orphan" if orphan else "Background"
        is_dry = dry_run(query, options)
        # kube-apiserver answers 202 for a pending deletion only when orphanDependents=false
        pending_status = 202 if orphan is False else 200
        finalizers = list(meta.get("finalizers") or [])
        if policy == "Orphan" and ORPHAN not in finalizers:
            finalizers.append(ORPHAN)
        elif policy == "Foreground" and FOREGROUND not in finalizers:
            finalizers.append(FOREGROUND)
        if policy == "Foreground":
            finalizers = [f for f in finalizers if f != ORPHAN]
        finalizers = rtype.strategy.finalizers_on_delete(finalizers)
        requested = options.get("gracePeriodSeconds")
        if not isinstance(requested, int) or isinstance(requested, bool):
            requested = None
        elif requested < 0:
            requested = 1  # negative values are treated as 1 s on the delete path
        grace = meta.get("deletionGracePeriodSeconds")
        if meta.get("deletionTimestamp") and isinstance(grace, int) and grace > 0:
            # in its grace period (a graceful kind): only a shorter period changes anything
            if requested is None or requested >= grace:
                return RestResponse(pending_status, self.serve(target, current))
            new = copy_json(current)
            started = metautil.parse_time(meta["deletionTimestamp"]) or time.time()
            new["metadata"]["deletionTimestamp"] = _rfc3339(started - grace + requested)
            new["metadata"]["deletionGracePeriodSeconds"] = requested
            return self._graceful_delete(
                target, key, current, new, requested, is_dry, pending_status
            )
        period = (
            None
            if meta.get("deletionTimestamp")
            else rtype.strategy.delete_grace_period(current, requested)
        )
        if period is not None:
            # RESTGracefulDeleteStrategy: marked with the period (even 0) before removal
            new = copy_json(current)
            new_meta = new["metadata"]
            new_meta["deletionTimestamp"] = _rfc3339(time.time() + period)
            new_meta["deletionGracePeriodSeconds"] = period
            if finalizers:
                new_meta["finalizers"] = finalizers
            if int(new_meta.get("generation") or 0) > 0:
                new_meta["generation"] = int(new_meta["generation"]) + 1
            rtype.strategy.prepare_for_delete(new)
            return self._graceful_delete(target, key, current, new, period, is_dry, pending_status)
        if meta.get("deletionTimestamp"):
            # already deleting: only a change of propagation finalizers is recorded
            if finalizers != list(meta.get("finalizers") or []) and not is_dry:
                new = copy_json(current)
                new["metadata"]["finalizers"] = finalizers
                new["metadata"].pop("resourceVersion", None)
                current = self.store.update(key, new, int(meta["resourceVersion"]))
            return RestResponse(pending_status, self.serve(target, current))
        if finalizers or rtype.strategy.holds_deletion(current):
            new = copy_json(current)
            new_meta = new["metadata"]
            new_meta["deletionTimestamp"] = metautil.now_rfc3339()
            new_meta["deletionGracePeriodSeconds"] = 0
            if finalizers:
                new_meta["finalizers"] = finalizers
            if "generation" in new_meta:
                new_meta["generation"] = int(new_meta["generation"]) + 1
            rtype.strategy.prepare_for_delete(new)
            new_meta.pop("resourceVersion", None)
            if is_dry:
                return RestResponse(200, self.serve(target, new))
            stored = self.store.update(key, new, int(meta["resourceVersion"]))
            return RestResponse(pending_status, self.serve(target, stored))
        if is_dry:
            return RestResponse(200, self._deleted_answer(target, current))
        deleted = self.store.delete(key, int(meta["resourceVersion"]))
        return RestResponse(200, self._deleted_answer(target, deleted))

    def _graceful_delete(
        self,
        target: Target,
        key: str,
        current: JSON,
        new: JSON,
        period: int,
        is_dry: bool,
        pending_status: int,
    ) -> RestResponse:
        """Store ``new`` (the object marked for deletion with ``period``), then remove it at
        once when the period is 0 and no finalizer keeps it, as kube-apiserver's
        ``updateForGracefulDeletionAndFinalizers`` followed by its delete."""
        keep = bool(new["metadata"].get("finalizers")) or period > 0
        new["metadata"].pop("resourceVersion", None)
        if is_dry:
            return RestResponse(200, self.serve(target, new))
        stored = self.store.update(key, new, int(current["metadata"]["resourceVersion"]))
        if keep:
            return RestResponse(pending_status, self.serve(target, stored))
        deleted = self.store.delete(key, int(stored["metadata"]["resourceVersion"]))
        return RestResponse(200, self._deleted_answer(target, deleted))

    def _deleted_answer(self, target: Target, deleted: JSON) -> JSON:
        rtype = target.rtype
        if rtype.return_deleted_object:
            return self.serve(target, deleted)
        details: JSON = {"name": target.name or ""}
        if rtype.group:
            details["group"] = rtype.group
        details["kind"] = rtype.resource
        details["uid"] = deleted["metadata"].get("uid", "")
        return {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Success",
            "details": details,
        }

    def delete_collection(
        self, target: Target, options: JSON, query: dict[str, str]
    ) -> RestResponse:
        rtype = target.rtype
        items, _ = self.list(
            target, {k: v for k, v in query.items() if k not in ("limit", "continue")}
        )
        deleted: builtins.list[JSON] = []
        for item in items:
            name = item["metadata"]["name"]
            ns = item["metadata"].get("namespace")
            one = Target(rtype, target.version, ns, name)
            try:
                res = self.delete(one, options, query)
            except ApiError as exc:
                if exc.code == 404:
                    continue
                raise
            deleted.append(res.body if res.body.get("kind") != "Status" else item)
        return RestResponse(
            200,
            {
                "kind": rtype.list_kind,
                "apiVersion": target.api_version,
                "metadata": {"resourceVersion": str(self.store.revision)},
                "items": deleted,
            },
        )


def _has_cel(schema: Any) -> bool:
    """Whether a schema (or anything nested in it) carries ``x-kubernetes-validations``."""
    stack = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if node.get("x-kubernetes-validations"):
                return True
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return False


def _undeterminable_name(target: Target) -> ApiError:
    """The handlers' ``checkName`` of an object without a name (namer.go's errEmptyName)."""
    return ApiError.bad_request(
        f"the name of the object ({target.name} based on URL) was undeterminable: "
        "name must be provided"
    )


def _with_status_of(new: JSON, old: JSON) -> JSON:
    """``old`` (deep-copied where ``new`` differs from it) with ``new``'s status, metadata
    without resourceVersion; key order as in ``old`` (a new status goes last)."""
    status = new.get("status")
    out: JSON = {}
    for k, v in old.items():
        if k == "status":
            if status is not None:
                out[k] = status
        elif k == "metadata":
            meta = copy_json(v)
            meta.pop("resourceVersion", None)
            out[k] = meta
        else:
            # the same text, not ==: 1 == 1.0 == True in Python, not in JSON
            mine = new.get(k, _ABSENT)
            out[k] = mine if mine is not _ABSENT and json_same_text(mine, v) else copy_json(v)
    if status is not None and "status" not in old:
        out["status"] = status
    return out


_ABSENT: Any = object()

APPLY_YAML = "application/apply-patch+yaml"
APPLY_CBOR = "application/apply-patch+cbor"


# ObjectMeta fields tagged omitempty that a write can leave empty (the last label removed,
# ``finalizers: []``): Kubernetes round-trips metadata through the typed ObjectMeta, so
# they are never stored or served empty.
_OMIT_EMPTY_META = ("labels", "annotations", "finalizers", "ownerReferences", "generateName")


def _sets_resource_version(value: Any) -> bool:
    """Whether a create's ``metadata.resourceVersion`` is one storage refuses: a number
    other than 0 as Go's ``strconv.ParseUint(v, 10, 64)`` reads it (text it cannot read,
    such as ``-1``, counts as none, as in kube)."""
    if type(value) is not str or not value.isascii() or not value.isdigit():
        return False
    number = int(value)
    return 0 < number < 1 << 64


_OMIT_EMPTY_META_SET = frozenset(_OMIT_EMPTY_META)
_CLEARED_ON_APPLY = frozenset(
    ("deletionTimestamp", "deletionGracePeriodSeconds", "resourceVersion", "selfLink")
)
_CLEARED_ON_CREATE = _CLEARED_ON_APPLY | {"managedFields"}


def _omit_empty_meta(meta: JSON) -> None:
    for key in _OMIT_EMPTY_META_SET.intersection(meta):
        if meta[key] in (None, {}, [], ""):
            del meta[key]


_META_STRINGS = (
    "name",
    "generateName",
    "namespace",
    "uid",
    "resourceVersion",
    "creationTimestamp",
    "deletionTimestamp",
)


_META_STRING_KEYS = frozenset(_META_STRINGS)


def _meta_types_ok(meta: JSON) -> bool:
    """True only when ``_meta_type_error(meta)`` is None: one pass over the keys ``meta``
    has, each value of exactly the decoded JSON type its field wants (a type test that
    ``isinstance`` then passes too); anything else is left to ``_meta_type_error``."""
    for key, value in meta.items():
        if value is None:
            continue
        if key in _META_STRING_KEYS:
            if type(value) is not str:
                return False
        elif key == "labels" or key == "annotations":
            if type(value) is not dict:
                return False
            for item in value.values():
                if type(item) is not str and item is not None:
                    return False
        elif key == "finalizers":
            if type(value) is not list:
                return False
            for item in value:
                if type(item) is not str and item is not None:
                    return False
        elif key == "ownerReferences":
            if type(value) is not list:
                return False
            for item in value:
                if type(item) is not dict and item is not None:
                    return False
    return True


def _meta_type_error(meta: JSON) -> str | None:
    """The error decoding ``meta`` into a typed ObjectMeta gives, or None if it decodes.

    Worded as encoding/json's UnmarshalTypeError (``json: cannot unmarshal string into
    Go struct field ObjectMeta.metadata.labels of type map[string]string``).
    """
    if _meta_types_ok(meta):
        return None

    def wrong(value: Any, path: str, go_type: str) -> str:
        return (
            f"json: cannot unmarshal {unmarshal_kind(value)} into Go "
            f"struct field ObjectMeta.metadata.{path} of type {go_type}"
        )

    for key in _META_STRINGS:
        value = meta.get(key)
        if value is not None and not isinstance(value, str):
            return wrong(value, key, "string")
    for key in ("labels", "annotations"):
        value = meta.get(key)
        if value is None:
            continue
        if not isinstance(value, dict):
            return wrong(value, key, "map[string]string")
        for item in value.values():
            if item is not None and not isinstance(item, str):
                return wrong(item, key, "string")
    finalizers = meta.get("finalizers")
    if finalizers is not None:
        if not isinstance(finalizers, list):
            return wrong(finalizers, "finalizers", "[]string")
        for item in finalizers:
            if item is not None and not isinstance(item, str):
                return wrong(item, "finalizers", "string")
    owners = meta.get("ownerReferences")
    if owners is not None:
        if not isinstance(owners, list):
            return wrong(owners, "ownerReferences", "[]v1.OwnerReference")
        for item in owners:
            if item is not None and not isinstance(item, dict):
                return wrong(item, "ownerReferences", "v1.OwnerReference")
    return None


def _patch_sets_resource_version(media: str, patch_doc: Any) -> bool:
    if media == "application/json-patch+json":
        return isinstance(patch_doc, list) and any(
            isinstance(op, dict) and str(op.get("path", "")).startswith("/metadata/resourceVersion")
            for op in patch_doc
        )
    return (
        isinstance(patch_doc, dict)
        and isinstance(patch_doc.get("metadata"), dict)
        and ("resourceVersion" in patch_doc["metadata"])
    )
