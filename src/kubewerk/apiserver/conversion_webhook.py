"""CRD conversion through a webhook (``spec.conversion.strategy: Webhook``).

Objects of such a CRD are stored in its storage version. A request in another served
version is answered here, as apiextensions-apiserver answers it: the REST verbs run on
the storage version and every object crossing the boundary goes through the CRD's
conversion webhook (an ``apiextensions.k8s.io`` ConversionReview over HTTPS):

- GET (and ``/status``): the stored object is converted to the request's version, then
  defaulted there as any read is; LIST: one ConversionReview for the whole page; WATCH
  (``watch.WatchStream``): the events queued at a time in one review;
- POST/PUT and ``/status`` writes: the body is converted to the storage version before
  the verb admits and stores it, and the answer converted back; PATCH: the stored object
  is converted to the request's version, patched there, converted back and written with
  the resourceVersion it was read at (a concurrent write starts the patch again, unless
  the patch itself set a resourceVersion: then 409);
- DELETE: the answer (the object, when one is returned) converted back.

The answer is checked as ``webhookConverter.Convert`` checks it, with its messages: the
review's apiVersion/kind, ``response``, ``uid``, ``result.status``; as many
``convertedObjects`` as objects sent; each in the desired apiVersion and of the same
kind, with the same name, namespace and uid; of its metadata only labels and
annotations are taken (validated as kube validates them), everything else is the
original's. Any failure is ``500 InternalError`` ``conversion webhook for
<group/version, Kind=K> failed: …`` and nothing is half converted: a write stores
nothing, a read answers nothing. Objects already in the desired version are not sent;
nothing is sent when none needs converting. Calls reuse the keep-alive connections of
the admission chain's pool (``admission_chain.httpclient.ConnectionPool``: one TLS
handshake per connection, not per review). The call's deadline is ``timeout``
(``DEFAULT_TIMEOUT``, the 30 s of kube's webhook client); TLS is verified against the
caBundle and, for a ``service`` reference, the name ``NAME.NAMESPACE.svc`` (the service
resolved through its Endpoints, as for admission webhooks).

Only a CRD with strategy ``Webhook``, addressed in a version other than its storage
version, takes this path; everything else is served as before.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import urlsplit

import orjson

from kubewerk.apiserver import decode, table
from kubewerk.apiserver.admission_chain import httpclient
from kubewerk.apiserver.admission_chain.webhooks import (
    STATUS_TYPE,
    STRING_TYPE,
    Resolver,
    _http_error,
    check_go_type,
    json_syntax_error,
)
from kubewerk.apiserver.kinds.custom import WebhookClientConfig
from kubewerk.apiserver.registry import ServedResource
from kubewerk.apiserver.request import RestResponse, Target
from kubewerk.apiserver.responses import Send, wants_table
from kubewerk.core import validation
from kubewerk.core.errors import ApiError, FieldError
from kubewerk.core.gofmt import go_type, unmarshal_kind
from kubewerk.core.jsoncopy import copy_json

if TYPE_CHECKING:
    from kubewerk.apiserver.app import ApiServer, Request

JSON = dict[str, Any]

DEFAULT_TIMEOUT: Final = 30.0
"""Seconds a conversion call may take (kube-apiserver's webhook client timeout)."""
REVIEW_GROUP: Final = "apiextensions.k8s.io"
MAX_PATCH_ATTEMPTS: Final = 5
"""Times a PATCH is tried again after a concurrent write to the same object."""

Convert = Callable[[list[JSON]], Awaitable[list[JSON]]]
"""Objects as stored → the same objects in a request's version (a watch's converter)."""


class Converter:
    """One CRD's conversion webhook, bound to the server's service resolver."""

    def __init__(
        self,
        rtype: ServedResource,
        config: WebhookClientConfig,
        resolve: Resolver,
        timeout: float = DEFAULT_TIMEOUT,
        pool: httpclient.ConnectionPool | None = None,
    ) -> None:
        self.rtype = rtype
        self.config = config
        self.resolve = resolve
        self.timeout = timeout
        self.pool = pool
        """Keep-alive connections to reuse (the admission chain's); None: one per call."""

    async def convert(self, objects: list[JSON], desired: str, *, as_list: bool) -> list[JSON]:
        """``objects`` (each of the CRD's kind) in apiVersion ``desired``, in order.

        Those already in ``desired`` are kept as they are and not sent; the others go to
        the webhook in one ConversionReview. ``as_list``: the objects are a list's items
        (kube's messages then name the list kind and an index). Raises ``ApiError`` 500
        with kube-apiserver's message; never returns part of a conversion."""
        todo = [i for i, obj in enumerate(objects) if obj.get("apiVersion") != desired]
        if not todo:
            return list(objects)
        sent = [objects[i] for i in todo]
        source = str(sent[0].get("apiVersion") or "")
        kind = self.rtype.list_kind if as_list else self.rtype.kind
        gvk = f"{source}, Kind={kind}"
        converted = await self._call(sent, desired, gvk)
        if len(converted) != len(sent):
            raise _failed(
                f"conversion webhook for {gvk} returned {len(converted)} objects, "
                f"expected {len(sent)}"
            )
        out = list(objects)
        for n, (i, original, answer) in enumerate(zip(todo, sent, converted, strict=True)):
            out[i] = _checked(original, answer, desired, gvk, n if as_list else None)
        return out

    async def one(self, obj: JSON, desired: str) -> JSON:
        """``obj`` in apiVersion ``desired`` (kube's single-object messages)."""
        return (await self.convert([obj], desired, as_list=False))[0]

    # -- the call ------------------------------------------------------------------------

    def _endpoint(self) -> tuple[str, str, int, str, str]:
        """(URL as messages name it, host, port, TLS server name, request path)."""
        config = self.config
        if config.url is not None:
            parts = urlsplit(config.url)
            host = parts.hostname or ""
            path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
            return config.url, host, parts.port or 443, host, path
        server_name = f"{config.service_name}.{config.service_namespace}.svc"
        path = config.service_path or "/"
        url = f"https://{server_name}:{config.service_port}{path}"
        try:
            host, port = self.resolve(
                config.service_namespace, config.service_name, config.service_port
            )
        except LookupError as exc:
            raise httpclient.CallError(f'Post "{url}": {exc.args[0]}') from None
        return url, host, port, server_name, path

    async def _call(self, objects: list[JSON], desired: str, gvk: str) -> list[Any]:
        version = next((v for v in self.config.review_versions if v in ("v1", "v1beta1")), None)
        if version is None:
            raise ApiError.internal("no supported conversion review versions")
        uid = str(uuid.uuid4())
        review = {
            "kind": "ConversionReview",
            "apiVersion": f"{REVIEW_GROUP}/{version}",
            "request": {"uid": uid, "desiredAPIVersion": desired, "objects": objects},
        }
        prefix = f"conversion webhook for {gvk} failed: "
        if self.config.ca_error is not None:
            raise _failed(prefix + f"unable to load root certificates: {self.config.ca_error}")
        try:
            context = self.config.context()
        except (ValueError, OSError) as exc:
            raise _failed(prefix + f"unable to load root certificates: {exc}") from None
        try:
            url, host, port, server_name, path = self._endpoint()
            send = self.pool.post if self.pool is not None else httpclient.post
            response = await send(
                url,
                host,
                port,
                path,
                orjson.dumps(review),
                server_name=server_name,
                context=context,
                timeout=self.timeout,
            )
        except httpclient.CallError as exc:
            text = str(exc)
            if text.endswith("context deadline exceeded"):
                # net/http's words when the client's Timeout ends the exchange
                text += (
                    " (Client.Timeout or context cancellation while reading body)"
                    if exc.in_body
                    else " (Client.Timeout exceeded while awaiting headers)"
                )
            raise _failed(prefix + text) from None
        if not 200 <= response.status < 300:
            raise _failed(prefix + _http_error(response))
        try:
            answer = orjson.loads(response.body)
        except orjson.JSONDecodeError as exc:
            raise _failed(
                prefix + f"couldn't get version/kind; json parse error: {json_syntax_error(exc)}"
            ) from None
        if not isinstance(answer, dict):
            raise _failed(
                prefix + "couldn't get version/kind; json parse error: json: cannot unmarshal "
                f"{unmarshal_kind(answer)} into Go value of type struct "
                '{ APIVersion string "json:\\"apiVersion,omitempty\\""; '
                'Kind string "json:\\"kind,omitempty\\"" }'
            )
        try:
            typed = check_go_type(answer, _review_type(version), "", "")
            return _converted_objects(typed, version, uid)
        except ValueError as exc:
            raise _failed(prefix + str(exc)) from None


def _failed(message: str) -> ApiError:
    return ApiError.internal(message)


def _review_type(version: str) -> Any:
    """The fields of ``apiextensions.k8s.io`` ConversionReview kube decodes an answer
    into, as :func:`check_go_type` takes them (the converted objects are raw JSON)."""
    return (
        "struct",
        "",
        (
            "ConversionReview",
            {
                "apiVersion": STRING_TYPE,
                "kind": STRING_TYPE,
                "request": ("any", f"{version}.ConversionRequest", None),
                "response": (
                    "struct",
                    f"{version}.ConversionResponse",
                    (
                        "ConversionResponse",
                        {
                            "uid": ("str", "types.UID", None),
                            "convertedObjects": ("any", "[]runtime.RawExtension", None),
                            "result": STATUS_TYPE,
                        },
                    ),
                ),
            },
        ),
    )


def _converted_objects(answer: JSON, version: str, uid: str) -> list[Any]:
    """``getConvertedObjectsFromResponse``: the converted objects, or ``ValueError`` with
    kube's message (v1beta1 answers are not checked for their kind or uid, as in kube)."""
    if version == "v1":
        got_av, got_kind = answer.get("apiVersion"), answer.get("kind")
        expected = f"{REVIEW_GROUP}/v1"
        if got_av != expected or got_kind != "ConversionReview":
            raise ValueError(
                f"expected webhook response of {expected}, Kind=ConversionReview, "
                f"got {got_av or ''}, Kind={got_kind or ''}"
            )
    response = answer.get("response")
    if not isinstance(response, dict):
        raise ValueError("no response provided")
    if version == "v1" and response.get("uid") != uid:
        raise ValueError(f'expected response.uid="{uid}", got "{response.get("uid") or ""}"')
    result = response.get("result")
    if not isinstance(result, dict):
        result = {}
    if result.get("status") != "Success":
        if result.get("message"):
            raise ValueError(str(result["message"]))
        raise ValueError(
            f"response.result.status was '{result.get('status') or ''}', not 'Success'"
        )
    objects = response.get("convertedObjects")
    if objects is None:
        return []
    if not isinstance(objects, list):
        raise ValueError(
            f"json: cannot unmarshal {unmarshal_kind(objects)} into Go struct field "
            "ConversionResponse.response.convertedObjects of type []runtime.RawExtension"
        )
    return objects


def _meta_text(obj: JSON, key: str) -> str:
    meta = obj.get("metadata")
    value = meta.get(key) if isinstance(meta, dict) else None
    return value if isinstance(value, str) else ""


def _checked(original: JSON, answer: Any, desired: str, gvk: str, index: int | None) -> JSON:
    """One converted object checked against the one sent, with kube's metadata restored
    (its labels and annotations taken from ``answer``). ``index`` None: a single object."""
    head = f"conversion webhook for {gvk} returned "
    if not isinstance(answer, dict):
        error = (
            f"json: cannot unmarshal {unmarshal_kind(answer)} into Go value of type "
            "map[string]interface {}"
        )
        if index is None:
            raise _failed(error)
        raise _failed(head + f"invalid converted object at index {index}: {error}")
    # kube counts the object before these checks: its messages give the index plus one
    where = (
        "invalid object at index 0"
        if index is None
        else f"invalid converted object at index {index + 1}"
    )
    got_av = answer.get("apiVersion")
    got_av = got_av if isinstance(got_av, str) else ""
    if got_av != desired:
        raise _failed(
            head + f"{where}: invalid groupVersion (expected {desired}, received {got_av})"
        )
    got_kind = answer.get("kind") if isinstance(answer.get("kind"), str) else ""
    if got_kind != original.get("kind"):
        raise _failed(
            head + f"{where}: invalid kind (expected {original.get('kind')}, received {got_kind})"
        )
    invalid = "invalid object" if index is None else where
    try:
        decode.check_depth(answer, "the converted object")
    except decode.DecodeError as exc:
        raise _failed(head + f"{invalid}: {exc}") from None
    for key, word in (("name", "name"), ("namespace", "namespace"), ("uid", "UID")):
        mine, theirs = _meta_text(original, key), _meta_text(answer, key)
        if mine != theirs:
            raise _failed(head + f"{invalid}: must have the same {word}: {mine} != {theirs}")
    try:
        return _restore_meta(original, answer)
    except ValueError as exc:
        what = (
            "invalid metadata"
            if index is None
            else f"invalid metadata in object at index {index + 1}"
        )
        raise _failed(head + f"{what}: {exc}") from None


def _restore_meta(original: JSON, converted: JSON) -> JSON:
    """``restoreObjectMeta``: ``converted`` with the original's metadata, except labels and
    annotations, which are the converted object's (validated when they changed)."""
    theirs = converted.get("metadata", _ABSENT)
    if theirs is _ABSENT:
        raise ValueError("missing metadata in converted object")
    if not isinstance(theirs, dict):
        raise ValueError(f"invalid metadata of type {go_type(theirs)} in converted object")
    meta = copy_json(original.get("metadata") or {})
    for fld in ("labels", "annotations"):
        value = theirs.get(fld)
        if value is None:
            meta.pop(fld, None)
            continue
        if not isinstance(value, dict):
            raise ValueError(f"invalid metadata.{fld} of type {go_type(value)} in converted object")
        before = meta.get(fld)
        if before is not None and not isinstance(before, dict):
            raise ValueError(f"invalid metadata.{fld} of type {go_type(before)} in original object")
        before = before or {}
        changed = len(before) != len(value)
        for k, v in value.items():
            if not isinstance(v, str):
                raise ValueError(
                    f"metadata.{fld}[{k}] must be a string, but is {go_type(v)} in converted object"
                )
            if before.get(k) != v:
                changed = True
        if changed:
            errors = (
                validation.validate_labels(value, "metadata.labels")
                if fld == "labels"
                else validation.validate_annotations(value, "metadata.annotation")
            )
            if errors:
                raise ValueError(_aggregate(errors))
        meta[fld] = value
    out = dict(converted)
    out["metadata"] = meta
    return out


_ABSENT: Any = object()


def _aggregate(errors: list[FieldError]) -> str:
    """``field.ErrorList.ToAggregate().Error()``: one error as itself, several in ``[…]``."""
    texts = [e.message() for e in errors]
    return texts[0] if len(texts) == 1 else "[" + ", ".join(texts) + "]"


# -- the verbs in a converted version ----------------------------------------------------


class ConversionWebhooks:
    """The server's requests in a version served through a conversion webhook."""

    def __init__(self, server: ApiServer) -> None:
        self.server = server
        self.timeout = DEFAULT_TIMEOUT
        """Seconds one conversion call may take."""

    def converter(self, target: Target) -> Converter | None:
        """The converter a request to ``target`` needs: None unless its CRD converts
        through a webhook and ``target`` is not in the storage version."""
        rtype = target.rtype
        if target.version == rtype.storage_version or rtype.builtin:
            return None
        config = getattr(rtype.strategy, "conversion_webhook", None)
        if not isinstance(config, WebhookClientConfig):
            return None
        chain = self.server.chain
        return Converter(rtype, config, chain._resolve, self.timeout, chain.pool)

    def watch_converter(self, target: Target) -> Convert | None:
        """What a watch of ``target`` converts its events' objects with (None: nothing)."""
        converter = self.converter(target)
        if converter is None:
            return None
        desired = target.api_version
        api = self.server.api

        async def convert(objects: list[JSON]) -> list[JSON]:
            out = await converter.convert(objects, desired, as_list=len(objects) > 1)
            return [api.serve(target, o) for o in out]

        return convert

    async def serve(
        self, converter: Converter, req: Request, target: Target, notes: list[str], send: Send
    ) -> int:
        """Answer ``req`` (not a watch) to ``target`` through ``converter``."""
        server = self.server
        method = req.method
        if method == "GET":
            body = await self._get(converter, req, target)
            await server._send_json(send, 200, body, notes)
            return 200
        if method in ("POST", "PUT"):
            result = await self._write(converter, req, target)
        elif method == "PATCH":
            if target.name is None:
                raise ApiError.method_not_supported(
                    target.rtype.resource, target.rtype.group, "patch"
                )
            if not req.body.strip():
                raise ApiError.bad_request("the body of the request was empty")
            result = await self._patch(converter, req, target)
        elif method == "DELETE":
            result = await self._delete(converter, req, target)
        else:
            raise ApiError.method_not_allowed(method)
        await server._send_json(send, result.status, result.body, notes + result.warnings)
        return result.status

    # -- helpers ---------------------------------------------------------------------------

    @staticmethod
    def _stored_target(target: Target) -> Target:
        rtype = target.rtype
        return Target(
            rtype, rtype.storage_version, target.namespace, target.name, target.subresource
        )

    @staticmethod
    def _same_scale(target: Target) -> bool:
        """Whether ``target``'s version scales through the storage version's paths (then a
        Scale write is the storage version's, as written before the CRD's versions could
        differ there)."""
        rtype = target.rtype
        return rtype.scale_of(target.version) == rtype.scale_of(rtype.storage_version)

    async def _write_scale(
        self, converter: Converter, target: Target, scale: JSON, query: dict[str, str]
    ) -> RestResponse:
        """A Scale write to a version whose scale paths are its own: the stored object
        in that version, its replicas set there, back to the storage version and written
        at the Scale's resourceVersion (else the one read); answers the Scale."""
        api = self.server.api
        replicas = api._checked_replicas(target, (scale.get("spec") or {}).get("replicas"))
        main = Target(target.rtype, target.version, target.namespace, target.name)
        stored_main = self._stored_target(main)
        _, current = api._get_stored(stored_main)
        new = copy_json(await self._out(converter, main, api.serve(stored_main, current)))
        api._with_replicas(target, new, replicas)
        stored = await converter.one(new, stored_main.api_version)
        rv = (scale.get("metadata") or {}).get("resourceVersion")
        stored.setdefault("metadata", {})["resourceVersion"] = (
            rv or current["metadata"]["resourceVersion"]
        )
        result = api.update(stored_main, stored, query)
        result.body = api._scale_of(target, await self._out(converter, main, result.body))
        return result

    async def _patch_scale(
        self, converter: Converter, req: Request, target: Target
    ) -> RestResponse:
        """A JSON or merge patch of the Scale of a version whose scale paths are its own:
        the Scale read in that version, patched, written as ``_write_scale``. A
        server-side apply there is refused (405): its ownership would have to move
        between the versions' paths."""
        from kubewerk.apiserver.rest import APPLY_YAML
        from kubewerk.core import patch as patchlib

        api = self.server.api
        media = api._patch_media(target, req.content_type, req.query)
        if media == APPLY_YAML:
            raise ApiError(
                405,
                "MethodNotAllowed",
                f"server-side apply to {target.rtype.resource}/scale in a version whose "
                "scale paths differ from the storage version's is not supported by "
                "kubewerk for a CRD converted by a webhook",
                {"name": target.name or "", "kind": target.rtype.resource},
            )
        main = Target(target.rtype, target.version, target.namespace, target.name)
        stored_main = self._stored_target(main)
        _, current = api._get_stored(stored_main)
        served = await self._out(converter, main, api.serve(stored_main, current))
        scale = api._scale_of(target, served)
        patched = api._run_patch(target, media, scale, api._patch_doc(req.body), patchlib)
        if not isinstance(patched, dict):
            raise ApiError.bad_request("the patched Scale is not an object")
        return await self._write_scale(converter, target, patched, req.query)

    async def _out(self, converter: Converter, target: Target, obj: JSON) -> JSON:
        """An object as the verb on the storage version answered it, in ``target``'s
        version (defaulted there); a ``Status`` is passed through."""
        if obj.get("kind") != target.rtype.kind:
            return obj
        converted = await converter.one(obj, target.api_version)
        return self.server.api.serve(target, converted)

    async def _get(self, converter: Converter, req: Request, target: Target) -> JSON:
        api = self.server.api
        rtype = target.rtype
        stored_target = self._stored_target(target)
        if target.subresource == "scale":
            # the object in the request's version, scaled through that version's paths
            main = Target(rtype, target.version, target.namespace, target.name)
            stored = api.get(self._stored_target(main), req.query).body
            return api._scale_of(target, await self._out(converter, main, stored))
        as_table = wants_table(req.accept) and target.subresource is None
        if target.name is None:
            items, list_meta = api.list(stored_target, req.query)
            converted = await converter.convert(items, target.api_version, as_list=True)
            served = [api.serve(target, o) for o in converted]
            if as_table:
                return table.to_table(
                    rtype, target.version, served, list_meta, req.query.get("includeObject", "")
                )
            return {
                "kind": rtype.list_kind,
                "apiVersion": target.api_version,
                "metadata": list_meta,
                "items": served,
            }
        obj = await self._out(converter, target, api.get(stored_target, req.query).body)
        if as_table:
            return table.to_table(
                rtype,
                target.version,
                [obj],
                {"resourceVersion": obj["metadata"].get("resourceVersion", "")},
                req.query.get("includeObject", ""),
            )
        return obj

    async def _write(self, converter: Converter, req: Request, target: Target) -> RestResponse:
        """POST (create) or PUT (update, ``/status``): the body to the storage version,
        the verb there, the answer back."""
        server = self.server
        api, chain = server.api, server.chain
        rtype = target.rtype
        creating = req.method == "POST"
        if creating and target.name is not None:
            raise ApiError.method_not_supported(rtype.resource, rtype.group, "create")
        if not creating and target.name is None:
            raise ApiError.method_not_supported(rtype.resource, rtype.group, "update")
        body = server._decode(req, target)
        stored_target = self._stored_target(target)
        if target.subresource == "scale":
            if self._same_scale(target):
                return api.update(stored_target, body, req.query)  # a Scale: no version of ours
            return await self._write_scale(converter, target, body, req.query)
        meta = body.get("metadata")
        if (
            body.get("apiVersion") != target.api_version
            or body.get("kind") != rtype.kind
            or (meta is not None and not isinstance(meta, dict))
            or (creating and target.subresource)
        ):
            # the verb in the request's version refuses it with kube's message
            return (
                api.create(target, body, req.query)
                if creating
                else api.update(target, body, req.query)
            )
        if rtype.namespaced and target.namespace and isinstance(meta, dict):
            if meta.get("namespace") and meta["namespace"] != target.namespace:
                raise ApiError.bad_request(
                    "the namespace of the provided object does "
                    "not match the namespace sent on the request"
                )
            meta["namespace"] = target.namespace
        stored = await converter.one(body, stored_target.api_version)
        if creating:
            result = (
                await chain.create(stored_target, stored, req.query)
                if chain.active(stored_target)
                else api.create(stored_target, stored, req.query)
            )
        else:
            result = (
                await chain.update(stored_target, stored, req.query)
                if chain.active(stored_target)
                else api.update(stored_target, stored, req.query)
            )
        result.body = await self._out(converter, target, result.body)
        return result

    async def _patch(self, converter: Converter, req: Request, target: Target) -> RestResponse:
        """The stored object in the request's version, patched there, written back in the
        storage version at the revision it was read at."""
        server = self.server
        api, chain = server.api, server.chain
        stored_target = self._stored_target(target)
        if target.subresource == "scale":
            if self._same_scale(target):
                return api.patch(stored_target, req.body, req.content_type, req.query)
            return await self._patch_scale(converter, req, target)
        media = api._patch_media(target, req.content_type)
        patch_doc = api._patch_doc(req.body)
        for _attempt in range(MAX_PATCH_ATTEMPTS):
            key, current = api._get_stored(stored_target)
            served = await self._out(converter, target, api.serve(stored_target, current))
            patched, rv_text = api._patched(target, media, patch_doc, current, served)
            stored = await converter.one(patched, stored_target.api_version)
            now = api.store.get(key)
            if (
                now is None
                or now["metadata"]["resourceVersion"] != current["metadata"]["resourceVersion"]
            ):
                if rv_text:
                    raise ApiError.conflict(
                        target.rtype.resource,
                        target.rtype.group,
                        target.name or "",
                        "the object has been modified; please apply your changes "
                        "to the latest version and try again",
                    )
                continue
            stored.setdefault("metadata", {})["resourceVersion"] = (
                rv_text or current["metadata"]["resourceVersion"]
            )
            result = (
                await chain.update(stored_target, stored, req.query)
                if chain.active(stored_target)
                else api.update(stored_target, stored, req.query)
            )
            result.body = await self._out(converter, target, result.body)
            return result
        raise ApiError.stale(target.rtype.resource, target.rtype.group, target.name or "")

    async def _delete(self, converter: Converter, req: Request, target: Target) -> RestResponse:
        server = self.server
        api, chain = server.api, server.chain
        rtype = target.rtype
        if target.subresource is not None:
            raise ApiError.method_not_supported(
                f"{rtype.resource}/{target.subresource}", rtype.group, "delete"
            )
        opts = server._delete_options(req)
        stored_target = self._stored_target(target)
        active = chain.active(stored_target)
        if target.name is None:
            result = (
                await chain.delete_collection(stored_target, opts, req.query)
                if active
                else api.delete_collection(stored_target, opts, req.query)
            )
            items = await converter.convert(
                result.body.get("items") or [], target.api_version, as_list=True
            )
            result.body = {
                **result.body,
                "apiVersion": target.api_version,
                "items": [api.serve(target, o) for o in items],
            }
            return result
        result = (
            await chain.delete(stored_target, opts, req.query)
            if active
            else api.delete(stored_target, opts, req.query)
        )
        result.body = await self._out(converter, target, result.body)
        return result
