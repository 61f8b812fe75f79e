"""Typed admission handlers: a model class and a function, answering AdmissionReviews.

A **validating** handler is ``async def check(obj: Database, old: Database | None, req:
AdmissionRequest) -> Allowed | Denied`` (a plain ``def`` works too). A **mutating**
handler has the same arguments, changes ``obj`` in place (or returns a new instance of
the model) and returns ``None``, :class:`Allowed` (to add warnings) or :class:`Denied`;
the server answers with the RFC 6902 JSON Patch from the object it received to the
changed one.

A **patching** handler (the opt-in fast mutating contract) takes a fourth argument,
a :class:`~kubewerk.webhook.patch.Patch` over the received object, records its changes
there and returns ``None``, :class:`Allowed` or :class:`Denied`; the server answers with
the recorded operations, with no model dumps and no diff. Its ``obj`` is for reading:
**changes to ``obj`` are not sent**.

What the arguments are:

- CREATE: ``obj`` is ``request.object``, ``old`` is None;
- UPDATE: ``obj`` is ``request.object``, ``old`` is ``request.oldObject``;
- DELETE: ``obj`` is the object being deleted (``request.oldObject``), ``old`` is None;
  a mutating handler's changes are not sent back (kube-apiserver has no object to patch).

Guarantees of :meth:`AdmissionEndpoint.review` (nothing it is given makes it raise):

- the answer is an AdmissionReview of the request's apiVersion with its uid;
- a request for another group, kind or version than the model's is denied with code 400
  naming both, as is a CONNECT request or an object missing where the operation needs one;
- an object that does not parse as the model is denied with 422 ``Invalid`` and the
  Kubernetes field errors (``spec.replicas: Invalid value: ...``) as causes;
- a handler declared with ``side_effects=True`` is not called for a dry-run request,
  which is denied (400): such a webhook must be registered with ``sideEffects: Some``,
  and kube-apiserver then refuses dry-run requests before calling it;
- an exception in the handler, or a return value of the wrong type, is denied with 500
  ``InternalError`` whose message names the handler and the error (the traceback goes to
  the ``kubewerk.webhook`` log, never to the client);
- a mutating handler's patch applies to the received object: it is computed between the
  model's dumps before and after the handler, so fields the model does not know are
  left alone, and checked against the received JSON before it is sent;
- a patching handler's recorded operations are sent as recorded, once checked to apply
  to the received JSON; a patch that does not apply is denied with 500 ``InternalError``
  naming the handler (as is a :class:`~kubewerk.webhook.patch.PatchOperationError` the
  handler lets out); a DELETE, a denial or an empty patch sends no patch.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from kubewerk.core.errors import ApiError
from kubewerk.model.errors import InvalidObjectError
from kubewerk.model.resource import AnyResource
from kubewerk.webhook.jsonpatch import applies, applies_exactly, diff, encode_patch
from kubewerk.webhook.patch import Patch
from kubewerk.webhook.results import Allowed, Denied
from kubewerk.webhook.review import (
    AdmissionRequest,
    admission_response,
    parse_admission_review,
)

__all__ = ["AdmissionEndpoint", "MutatingHandler", "PatchingHandler", "ValidatingHandler"]

log = logging.getLogger("kubewerk.webhook")

M = TypeVar("M", bound=AnyResource)

ValidatingHandler = Callable[
    [M, M | None, AdmissionRequest], Awaitable[Allowed | Denied] | Allowed | Denied
]
"""``(obj, old, req) -> Allowed | Denied``, async or not."""

MutatingHandler = Callable[
    [M, M | None, AdmissionRequest],
    Awaitable[M | Allowed | Denied | None] | M | Allowed | Denied | None,
]
"""``(obj, old, req) -> None | Allowed | Denied | obj``, async or not; changes ``obj``."""

PatchingHandler = Callable[
    [M, M | None, AdmissionRequest, Patch],
    Awaitable[Allowed | Denied | None] | Allowed | Denied | None,
]
"""``(obj, old, req, patch) -> None | Allowed | Denied``, async or not; records its
changes in ``patch`` (changes to ``obj`` are not sent)."""

_ALLOWED = Allowed()
_VERDICTS = (Allowed, Denied)
"""``isinstance``'s class tuple for a verdict (``Allowed | Denied`` in the call would
build a union object on every request)."""


def _func_name(func: Callable[..., Any]) -> str:
    return str(getattr(func, "__qualname__", None) or getattr(func, "__name__", repr(func)))


@dataclass(eq=False)
class AdmissionEndpoint(Generic[M]):
    """One admission webhook: ``path``, the ``model`` it admits, its ``handler``.

    ``mutating`` selects the mutating contract (see the module doc), and ``patching``
    with it the patching one (the handler records its changes in a :class:`Patch`);
    ``side_effects`` declares that the handler changes something outside the object, so
    it refuses dry-run requests.
    """

    path: str
    model: type[M]
    handler: Callable[..., Any]
    mutating: bool = False
    side_effects: bool = False
    patching: bool = False

    def __post_init__(self) -> None:
        if self.patching and not self.mutating:
            raise ValueError("a patching endpoint is a mutating one: pass mutating=True")
        info = self.model.kind_info()  # TypeError for an abstract class
        self._group, self._version, self._kind = info.group, info.version, info.kind
        self._gvk = (info.group, info.version, info.kind)
        self._is_async = inspect.iscoroutinefunction(self.handler)
        self._name = _func_name(self.handler)

    def review(self, review: dict[str, Any]) -> Awaitable[dict[str, Any]]:
        """The AdmissionReview answering ``review``; raises :class:`ReviewError` only for a
        body that is not an AdmissionReview with a request and uid (an HTTP 400)."""
        api_version, req = parse_admission_review(review)
        return self._answer(api_version, req)

    async def _answer(self, api_version: str, req: AdmissionRequest) -> dict[str, Any]:
        verdict, patch = await self.decide(req)
        return admission_response(api_version, req.uid, verdict, patch)

    def _internal(self, what: str) -> Denied:
        err = ApiError.internal(f"admission handler {self._name}: {what}")
        return Denied(err.message, err.code, err.reason)

    def _mismatch(self, req: AdmissionRequest) -> Denied | None:
        k = req.kind
        if (k.group, k.version, k.kind) == (self._group, self._version, self._kind):
            return None
        have = f"{k.api_version}, Kind={k.kind}"
        want = f"{self.model.kind_info().api_version}, Kind={self._kind}"
        return Denied(
            f"webhook {self.path} admits {want} objects, but the request is for {have} "
            "(check the webhook configuration's rules and matchPolicy)",
            400,
            "BadRequest",
        )

    def _parse(self, raw: dict[str, Any], field: str) -> M | Denied:
        try:
            return self.model.from_dict(raw)
        except InvalidObjectError as exc:
            return self._invalid(exc, field)

    @staticmethod
    def _invalid(exc: InvalidObjectError, field: str) -> Denied:
        """The 422 denial of request ``field`` (object or oldObject) the model refused."""
        text = str(exc) if field == "object" else f"request.{field}: {exc}"
        return Denied(text, 422, "Invalid", exc.errors)

    async def _call(self, *args: Any) -> Any:
        if self._is_async:
            return await self.handler(*args)
        result = self.handler(*args)
        if inspect.isawaitable(result):
            return await result
        return result

    async def decide(self, req: AdmissionRequest) -> tuple[Allowed | Denied, str | None]:
        """The verdict on ``req`` and the base64 JSON Patch to send with it (None: no
        patch); raises nothing. :meth:`review` is this, parsed before and written after
        by :func:`~kubewerk.webhook.review.admission_response`; the app awaits it
        directly (one coroutine fewer per request) and writes the answer with
        :func:`~kubewerk.webhook.review.admission_json`."""
        try:
            if req.kind != self._gvk:  # a GroupVersionKind is a (group, version, kind) tuple
                denied = self._mismatch(req)
                if denied is not None:
                    return denied, None
            if req.operation == "CONNECT":
                return Denied(
                    f"webhook {self.path} does not admit CONNECT requests", 400, "BadRequest"
                ), None
            raw = req.old_object if req.operation == "DELETE" else req.object
            if raw is None:
                field = "oldObject" if req.operation == "DELETE" else "object"
                return Denied(
                    f"request.{field} is missing for a {req.operation} request", 400, "BadRequest"
                ), None
            if self.side_effects and req.dry_run:
                return (
                    Denied(
                        f"webhook {self.path} has side effects and does not admit dry-run requests",
                        400,
                        "BadRequest",
                    ),
                    None,
                )
            try:  # _parse spelled out: a call fewer per request
                obj = self.model.from_dict(raw)
            except InvalidObjectError as exc:
                field = "oldObject" if req.operation == "DELETE" else "object"
                return self._invalid(exc, field), None
            old: M | None = None
            if req.operation == "UPDATE" and req.old_object is not None:
                parsed_old = self._parse(req.old_object, "oldObject")
                if isinstance(parsed_old, Denied):
                    return parsed_old, None
                old = parsed_old
            if not self.mutating:
                if self._is_async:  # _call spelled out: one coroutine fewer per request
                    result = await self.handler(obj, old, req)
                else:
                    result = await self._call(obj, old, req)
                if isinstance(result, _VERDICTS):
                    return result, None
                return self._internal(
                    f"returned {type(result).__name__}, not Allowed or Denied"
                ), None
            if self.patching:  # the handler records its changes: no dumps, no diff
                patch = Patch(raw)
                if self._is_async:
                    result = await self.handler(obj, old, req, patch)
                else:
                    result = await self._call(obj, old, req, patch)
                if result is None:
                    verdict: Allowed | Denied = _ALLOWED
                elif isinstance(result, _VERDICTS):
                    verdict = result
                else:
                    return (
                        self._internal(
                            f"returned {type(result).__name__}, not None, Allowed or Denied"
                        ),
                        None,
                    )
                ops = patch._ops  # the recorded list itself (no copy)
                if isinstance(verdict, Denied) or not ops or req.operation == "DELETE":
                    return verdict, None
                if not applies_exactly(raw, ops):
                    return self._internal(
                        "its JSON Patch does not apply to the received object"
                    ), None
                return verdict, encode_patch(ops)
            before = obj.to_dict()
            if self._is_async:
                result = await self.handler(obj, old, req)
            else:
                result = await self._call(obj, old, req)
            if isinstance(result, Denied):
                return result, None
            if result is None or isinstance(result, Allowed):
                after_obj: AnyResource = obj
                verdict = result or _ALLOWED
            elif isinstance(result, self.model):
                after_obj, verdict = result, _ALLOWED
            else:
                return (
                    self._internal(
                        f"returned {type(result).__name__}, not None, Allowed, Denied "
                        f"or a {self.model.__name__}"
                    ),
                    None,
                )
            if req.operation == "DELETE":
                return verdict, None
            after = after_obj.to_dict()
            ops = diff(before, after)
            if not ops:
                return verdict, None
            if not applies(raw, ops):
                # the model's dump names a path the received JSON lacks (a field given by
                # its Python name, say): patch from the received JSON itself
                ops = diff(raw, after)
            return verdict, encode_patch(ops)
        except Exception as exc:  # the handler's bug: a 500 denial, never a traceback
            log.exception("admission handler %s failed on request %s", self._name, req.uid)
            return self._internal(f"{type(exc).__name__}: {exc}"), None
