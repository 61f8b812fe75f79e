"""Admission webhooks: which ones a request calls, the call, the checks on the answer.

Worded and decided as kube-apiserver's webhook admission plugins
(``k8s.io/apiserver/pkg/admission/plugin/webhook``):

- matching (``ShouldCallHook``): namespaceSelector against the namespace's labels
  (cluster-scoped objects other than Namespaces always match), objectSelector against
  the new or the old object's labels, rules (operations, groups, versions, resources
  with ``*/status``-style subresources, scope), ``matchPolicy: Equivalent`` through the
  other served versions of the same resource, then matchConditions (CEL; an
  evaluation error fails closed with 403 under ``failurePolicy: Fail``, skips the
  webhook under ``Ignore``);
- the call: an ``admission.k8s.io/v1`` (or ``v1beta1``) AdmissionReview POSTed over
  HTTPS with the caBundle, ``?timeout=Ns`` appended as kube's REST client does;
- the answer, hostile input: read within the client's bounds (``httpclient``), typed as
  kube's decoder types it (:func:`decode_answer`: a field of the wrong Go type fails the
  call with Go's ``json: cannot unmarshal …``), then ``VerifyAdmissionResponse``
  (:func:`verify`: ``response`` present, for v1 ``uid`` echoed and apiVersion/kind, the
  patch rules of v1 and v1beta1), then the mutating dispatcher's patch steps
  (:func:`decode_patch`, :func:`apply_patch`); audit annotations with keys kube refuses
  are dropped (:func:`audit_annotations`);
- errors: a call that fails (connection, timeout, TLS, a bad answer) is
  ``Internal error occurred: failed calling webhook "x": failed to call webhook: …``
  under ``failurePolicy: Fail`` and ignored under ``Ignore``; a denial is the Status the
  webhook returned, its message prefixed ``admission webhook "x" denied the request: ``
  (a code under 400, or none, is 400: ``ToStatusErr``); a patch that does not apply is
  500 whatever ``failurePolicy`` says; a dry-run request to a webhook with side effects
  is ``400 admission webhook "x" does not support dry run``.

A ``service`` client config is resolved through the embedded server's own objects, as
kube-apiserver resolves it with ``--enable-aggregator-routing``: the Service's port
that equals the reference's port, then the address and port of its Endpoints (or an
EndpointSlice labelled ``kubernetes.io/service-name``) — so a webhook on the machine
is registered with a selector-less Service whose Endpoints name ``127.0.0.1:PORT``.
TLS is checked against ``NAME.NAMESPACE.svc`` as kube checks it.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import logging
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final
from urllib.parse import urlsplit

import orjson

from kubewerk.apiserver import decode
from kubewerk.apiserver.admission_chain import httpclient
from kubewerk.apiserver.admission_chain.registration import (
    GROUP,
    MUTATING_KIND,
    default_webhook,
)
from kubewerk.apiserver.kindrules.gojson import Base64Error, decode_bytes
from kubewerk.apiserver.metrics import AdmissionMetrics
from kubewerk.apiserver.storage.base import Event, Store
from kubewerk.core import validation
from kubewerk.core.errors import ApiError
from kubewerk.core.gofmt import go_quote, unmarshal_kind
from kubewerk.core.gonumbers import as_stored
from kubewerk.core.patch import MAX_JSON_PATCH_OPERATIONS, PatchError, json_patch
from kubewerk.schema.admission_policy import Request
from kubewerk.schema.admission_policy.cel_env import Compiled, compile_expression
from kubewerk.schema.admission_policy.engine import CompiledPolicy, _Activation
from kubewerk.schema.admission_policy.matching import (
    Selector,
    compile_selector,
    rule_matches,
    selects,
)

JSON = dict[str, Any]

log = logging.getLogger(__name__)

_MUTATING_PREFIX: Final = f"/{GROUP}/mutatingwebhookconfigurations/"
_VALIDATING_PREFIX: Final = f"/{GROUP}/validatingwebhookconfigurations/"


class CallingError(Exception):
    """``webhookutil.ErrCallingWebhook``: subject to the webhook's failurePolicy. ``code``
    is the status kube attaches (the webhook's HTTP status when it answered with an
    error, 503 when the call or the answer failed, 500 when no client could be made),
    which the admission metrics report."""

    def __init__(self, webhook: str, reason: str, code: int = 503) -> None:
        super().__init__(f'failed calling webhook "{webhook}": {reason}')
        self.webhook = webhook
        self.code = code


@dataclass
class Hook:
    """One webhook of a configuration, defaulted, its matchConditions compiled and its
    selectors parsed (once per configuration change, not per request)."""

    configuration: str
    spec: JSON
    mutating: bool
    conditions: list[tuple[str, Compiled]] = field(default_factory=list)
    namespace_selector: Selector = field(init=False)
    object_selector: Selector = field(init=False)

    def __post_init__(self) -> None:
        self.namespace_selector = compile_selector(self.spec.get("namespaceSelector"))
        self.object_selector = compile_selector(self.spec.get("objectSelector"))

    @property
    def name(self) -> str:
        return str(self.spec.get("name", ""))

    @property
    def failure_policy(self) -> str:
        return str(self.spec.get("failurePolicy") or "Fail")

    @property
    def timeout(self) -> int:
        value = self.spec.get("timeoutSeconds")
        return value if isinstance(value, int) and value > 0 else 10


class HookIndex:
    """The webhooks of the stored configurations, rebuilt after any of them changes
    (configurations in name order, webhooks in their order, as kube sorts them)."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._dirty = True
        self._mutating: list[Hook] = []
        self._validating: list[Hook] = []
        self.version = 0
        """Rises each time the index is rebuilt."""
        store.subscribe(self._on_event)

    def _on_event(self, ev: Event) -> None:
        if ev.key.startswith((_MUTATING_PREFIX, _VALIDATING_PREFIX)):
            self._dirty = True

    def _load(self) -> None:
        if not self._dirty:
            return
        self._dirty = False
        self._mutating = self._read(_MUTATING_PREFIX, True)
        self._validating = self._read(_VALIDATING_PREFIX, False)
        self.version += 1

    def _read(self, prefix: str, mutating: bool) -> list[Hook]:
        items, _, _ = self.store.list(prefix)
        hooks: list[Hook] = []
        for _, obj in items:
            config = str((obj.get("metadata") or {}).get("name", ""))
            for raw in obj.get("webhooks") or []:
                if not isinstance(raw, dict):
                    continue
                spec = orjson.loads(orjson.dumps(raw))
                default_webhook(spec, mutating)
                conditions = []
                for mc in spec.get("matchConditions") or []:
                    compiled = compile_expression(
                        str(mc.get("expression", "")),
                        returns=("bool",),
                        params=False,
                        authorizer=True,
                        declared_variables=None,
                    )
                    conditions.append((str(mc.get("name", "")), compiled))
                hooks.append(Hook(config, spec, mutating, conditions))
        return hooks

    def mutating(self) -> list[Hook]:
        self._load()
        return self._mutating

    def validating(self) -> list[Hook]:
        self._load()
        return self._validating

    def any(self) -> bool:
        self._load()
        return bool(self._mutating or self._validating)


@dataclass
class Invocation:
    """A webhook to call, with the resource and kind it sees the request as."""

    hook: Hook
    resource: tuple[str, str, str]
    kind: tuple[str, str, str]


_NO_POLICY: Final = CompiledPolicy(
    policy={},
    name="",
    failure_policy="Fail",
    param_kind=None,
    match_constraints=None,
    match_conditions=[],
    variables=[],
    validations=[],
    audit_annotations=[],
    errors=[],
)


def should_call(
    hook: Hook,
    req: Request,
    equivalents: list[tuple[tuple[str, str, str], tuple[str, str, str]]],
    cluster_scoped: bool,
) -> Invocation | None:
    """``ShouldCallHook``: the invocation, None to skip; raises ``ApiError`` for a
    matchConditions error under ``failurePolicy: Fail``."""
    spec = hook.spec
    is_namespace = req.resource[0] == "" and req.resource[2] == "namespaces"
    if (not cluster_scoped or is_namespace) and not selects(
        hook.namespace_selector, req.namespace_labels()
    ):
        return None
    obj_selector = hook.object_selector
    if not _labels_match(obj_selector, req.object) and not _labels_match(
        obj_selector, req.old_object
    ):
        return None
    invocation = None
    rules = [r for r in spec.get("rules") or [] if isinstance(r, dict)]
    if any(rule_matches(r, req, req.resource) for r in rules):
        invocation = Invocation(hook, req.resource, req.kind)
    elif spec.get("matchPolicy") == "Equivalent":
        for rule in rules:
            for resource, kind in equivalents:
                if rule_matches(rule, req, resource):
                    invocation = Invocation(hook, resource, kind)
                    break
            if invocation is not None:
                break
    if invocation is None or not hook.conditions:
        return invocation
    act = _Activation(_cel_data(req, invocation), _NO_POLICY)
    errors: list[str] = []
    for _, compiled in hook.conditions:
        ok, value = act.run(compiled)
        if not ok:
            errors.append(value)
        elif value is False:
            return None
    if errors:
        if hook.failure_policy == "Ignore":
            return None
        message = errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]"
        raise ApiError.forbidden(req.resource[2], req.resource[0], req.name, message)
    return invocation


def _labels_match(selector: Selector, obj: JSON | None) -> bool:
    if obj is None:
        return False
    labels = (obj.get("metadata") or {}).get("labels")
    return selects(selector, labels if isinstance(labels, dict) else {})


def _cel_data(req: Request, inv: Invocation) -> JSON:
    from kubewerk.schema.admission_policy import authz

    return {
        "object": req.object,
        "oldObject": req.old_object,
        "request": req.to_cel(inv.resource, inv.kind),
        "authorizer": authz.authorizer_value(
            req.user.username,
            req.user.groups,
            req.user.extra,
            {
                "group": inv.resource[0],
                "version": inv.resource[1],
                "resource": inv.resource[2],
                "subresource": req.sub_resource,
                "namespace": req.namespace,
                "name": req.name,
            },
        ),
    }


# -- the call --------------------------------------------------------------------------

Resolver = Callable[[str, str, int], tuple[str, int]]
"""(namespace, service name, service port) → (host, port), raising ``LookupError``
with the message kube's endpoint resolver gives."""


@dataclass
class Answer:
    """A verified webhook answer: ``patch`` is the decoded JSON Patch of an allowed
    answer from a mutating webhook (None: nothing to apply), ``raw_patch`` and
    ``patch_type`` what the answer carried, ``status`` its typed Status, ``warnings`` its
    non-empty warnings, ``audit_annotations`` those kube accepts."""

    allowed: bool
    patch: list[Any] | None
    warnings: list[str]
    status: JSON
    audit_annotations: dict[str, str]
    raw_patch: bytes = b""
    patch_type: str = ""


_OPTIONS_KIND: Final = {
    "CREATE": "CreateOptions",
    "UPDATE": "UpdateOptions",
    "DELETE": "DeleteOptions",
}


def review(req: Request, inv: Invocation, version: str, uid: str) -> JSON:
    """The AdmissionReview kube-apiserver sends (``CreateAdmissionObjects``)."""
    body: JSON = {
        "uid": uid,
        "kind": _gvk(inv.kind),
        "resource": _gvr(inv.resource),
        "requestKind": _gvk(req.kind),
        "requestResource": _gvr(req.resource),
        "name": req.name,
        "operation": req.operation,
        "userInfo": req.user.to_dict(),
        "object": req.object,
        "oldObject": req.old_object,
        "dryRun": req.dry_run,
        "options": req.options
        if req.options is not None
        else {"kind": _OPTIONS_KIND.get(req.operation, ""), "apiVersion": "meta.k8s.io/v1"},
    }
    if req.sub_resource:
        body["subResource"] = req.sub_resource
        body["requestSubResource"] = req.sub_resource
    if req.namespace:
        body["namespace"] = req.namespace
    return {"apiVersion": f"admission.k8s.io/{version}", "kind": "AdmissionReview", "request": body}


def _gvk(t: tuple[str, str, str]) -> JSON:
    return {"group": t[0], "version": t[1], "kind": t[2]}


def _gvr(t: tuple[str, str, str]) -> JSON:
    return {"group": t[0], "version": t[1], "resource": t[2]}


# -- the answer, typed as kube's decoder types it ------------------------------------------

# A Go type the answer is decoded into: (kind, Go type name, detail). Kinds: "str",
# "bool", "int32", "int64", "bytes" (base64 text), "list" (detail: item type), "map"
# (detail: value type), "struct" (detail: (struct name, {json field: type})), "any"
# (not checked: kube decodes it as raw JSON).
GoType = tuple[str, str, Any]

STRING_TYPE: Final[GoType] = ("str", "string", None)
_STATUS_CAUSE: Final[GoType] = (
    "struct",
    "v1.StatusCause",
    (
        "StatusCause",
        {
            "reason": ("str", "v1.CauseType", None),
            "message": STRING_TYPE,
            "field": STRING_TYPE,
        },
    ),
)
STATUS_TYPE: Final[GoType] = (
    "struct",
    "v1.Status",
    (
        "Status",
        {
            "kind": STRING_TYPE,
            "apiVersion": STRING_TYPE,
            "metadata": (
                "struct",
                "v1.ListMeta",
                (
                    "ListMeta",
                    {
                        "selfLink": STRING_TYPE,
                        "resourceVersion": STRING_TYPE,
                        "continue": STRING_TYPE,
                        "remainingItemCount": ("int64", "int64", None),
                    },
                ),
            ),
            "status": STRING_TYPE,
            "message": STRING_TYPE,
            "reason": ("str", "v1.StatusReason", None),
            "details": (
                "struct",
                "v1.StatusDetails",
                (
                    "StatusDetails",
                    {
                        "name": STRING_TYPE,
                        "group": STRING_TYPE,
                        "kind": STRING_TYPE,
                        "uid": ("str", "types.UID", None),
                        "causes": ("list", "[]v1.StatusCause", _STATUS_CAUSE),
                        "retryAfterSeconds": ("int32", "int32", None),
                    },
                ),
            ),
            "code": ("int32", "int32", None),
        },
    ),
)


def _response_type(version: str) -> GoType:
    return (
        "struct",
        f"{version}.AdmissionResponse",
        (
            "AdmissionResponse",
            {
                "uid": ("str", "types.UID", None),
                "allowed": ("bool", "bool", None),
                "status": STATUS_TYPE,
                "patch": ("bytes", "[]uint8", None),
                "patchType": ("str", f"{version}.PatchType", None),
                "auditAnnotations": ("map", "map[string]string", STRING_TYPE),
                "warnings": ("list", "[]string", STRING_TYPE),
            },
        ),
    )


def _review_fields(version: str) -> dict[str, GoType]:
    return {
        "apiVersion": STRING_TYPE,
        "kind": STRING_TYPE,
        "request": ("any", f"{version}.AdmissionRequest", None),
        "response": _response_type(version),
    }


_INT_RANGE: Final = {"int32": (-(2**31), 2**31 - 1), "int64": (-(2**63), 2**63 - 1)}


class Undecodable(ValueError):
    """The answer does not decode into kube's AdmissionReview; ``str()`` is Go's text."""


def _type_error(value: Any, struct: str, path: str, go_type: str, number_text: bool) -> Undecodable:
    kind = unmarshal_kind(value)
    if number_text and kind == "number":
        kind = f"number {value}"
    return Undecodable(
        f"json: cannot unmarshal {kind} into Go struct field {struct}.{path} of type {go_type}"
    )


def check_go_type(value: Any, go: GoType, struct: str, path: str) -> Any:
    """``value`` decoded into ``go`` as ``encoding/json`` decodes it: the decoded value
    (bytes for base64 text), or ``Undecodable`` with the first error Go reports
    (``json: cannot unmarshal string into Go struct field AdmissionResponse.response.
    allowed of type bool``). ``null`` leaves the zero value (None here)."""
    kind, go_name, detail = go
    if value is None or kind == "any":
        return value
    if kind == "str":
        if not isinstance(value, str):
            raise _type_error(value, struct, path, go_name, False)
        return value
    if kind == "bool":
        if not isinstance(value, bool):
            raise _type_error(value, struct, path, go_name, False)
        return value
    if kind in _INT_RANGE:
        low, high = _INT_RANGE[kind]
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise _type_error(value, struct, path, go_name, False)
        if not isinstance(value, int) or not low <= value <= high:
            raise _type_error(value, struct, path, go_name, True)
        return value
    if kind == "bytes":
        if not isinstance(value, str):
            raise _type_error(value, struct, path, go_name, False)
        return _base64(value)
    if kind == "list":
        if not isinstance(value, list):
            raise _type_error(value, struct, path, go_name, False)
        return [check_go_type(item, detail, struct, path) for item in value]
    if kind == "map":
        if not isinstance(value, dict):
            raise _type_error(value, struct, path, go_name, False)
        return {k: check_go_type(v, detail, struct, path) for k, v in value.items()}
    inner, fields = detail
    if not isinstance(value, dict):
        raise _type_error(value, struct, path, go_name, False)
    out: dict[str, Any] = {}
    for key, item in value.items():  # document order: Go reports the first error
        field_type = fields.get(key)
        if field_type is not None:
            out[key] = check_go_type(item, field_type, inner, f"{path}.{key}" if path else key)
    return out


def _base64(text: str) -> bytes:
    """``encoding/base64.StdEncoding`` as ``encoding/json`` decodes ``[]byte``
    (``kindrules.gojson.decode_bytes``), a bad value raised as ``Undecodable`` with Go's
    ``illegal base64 data at input byte N``."""
    try:
        return decode_bytes(text)
    except Base64Error as exc:
        raise Undecodable(str(exc)) from None


def decode_answer(body: bytes, version: str) -> JSON | None:
    """The webhook's answer as kube's client decodes it into an ``admission.k8s.io``
    AdmissionReview: every field it knows checked for its Go type (case-sensitive
    names, unknown fields ignored, ``null`` as absent), ``response.patch`` base64-
    decoded to bytes. None for a JSON ``null``. Raises ``ValueError`` with client-go's
    text (``couldn't get version/kind; json parse error: …``, ``json: cannot unmarshal
    …``, ``illegal base64 data at input byte N``)."""
    try:
        answer = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise ValueError(
            f"couldn't get version/kind; json parse error: {json_syntax_error(exc)}"
        ) from None
    if answer is None:
        return None
    if not isinstance(answer, dict):
        raise ValueError(
            "couldn't get version/kind; json parse error: json: cannot unmarshal "
            f"{unmarshal_kind(answer)} into Go value of type struct "
            '{ APIVersion string "json:\\"apiVersion,omitempty\\""; '
            'Kind string "json:\\"kind,omitempty\\"" }'
        )
    for key in ("apiVersion", "kind"):
        value = answer.get(key)
        if value is not None and not isinstance(value, str):
            raise ValueError(
                "couldn't get version/kind; json parse error: json: cannot unmarshal "
                f"{unmarshal_kind(value)} into Go struct field .{key} of type string"
            )
    try:
        decoded = check_go_type(
            answer, ("struct", "", ("AdmissionReview", _review_fields(version))), "", ""
        )
    except Undecodable as exc:
        raise ValueError(str(exc)) from None
    # the field names of kube's struct only: what is stored by key below is typed
    return dict(decoded)


def json_syntax_error(exc: orjson.JSONDecodeError) -> str:
    """Go's ``encoding/json`` words for the commonest syntax errors, else orjson's."""
    if "recursion" in exc.msg.lower() or "depth" in exc.msg.lower():
        return "exceeded max depth"
    if exc.pos >= len(exc.doc.rstrip()):
        return "unexpected end of JSON input"
    if exc.pos == 0:
        return f"invalid character {go_char(exc.doc[0])} looking for beginning of value"
    return exc.msg


def go_char(ch: str) -> str:
    """``encoding/json``'s ``quoteChar``: ``'x'``, ``'\\''``, ``'"'`` or a Go-quoted rune."""
    if ch == "'":
        return "'\\''"
    if ch == '"':
        return "'\"'"
    quoted = go_quote(ch)
    return "'" + quoted[1:-1] + "'"


def verify(answer: JSON | None, uid: str, version: str, mutating: bool) -> Answer:
    """``VerifyAdmissionResponse``; raises ``ValueError`` with kube's text. ``answer``
    is what :func:`decode_answer` returned. A v1beta1 answer's uid and kind are
    not checked and its patch is a JSON Patch whatever ``patchType`` says, as in kube; a
    validating webhook's v1beta1 patch is ignored. ``Answer.patch`` is the patch of an
    allowed answer from a mutating webhook when it decodes to a non-empty list (the
    call's :func:`decode_patch` raises kube's errors for one that does not)."""
    response = answer.get("response") if answer is not None else None
    if not isinstance(response, dict):
        raise ValueError("webhook response was absent")
    raw_patch: bytes = response.get("patch") or b""
    patch_type: str | None = response.get("patchType")
    if version == "v1":
        got_uid = response.get("uid") or ""
        if got_uid != uid:
            raise ValueError(f'expected response.uid="{uid}", got "{got_uid}"')
        expected = "admission.k8s.io/v1"
        assert answer is not None
        if answer.get("apiVersion") != expected or answer.get("kind") != "AdmissionReview":
            raise ValueError(
                f"expected webhook response of {expected}, Kind=AdmissionReview, "
                f"got {answer.get('apiVersion') or ''}, Kind={answer.get('kind') or ''}"
            )
        if mutating:
            if raw_patch and patch_type is None:
                raise ValueError("webhook returned response.patch but not response.patchType")
            if not raw_patch and patch_type is not None:
                raise ValueError("webhook returned response.patchType but not response.patch")
            if patch_type is not None and not patch_type:
                raise ValueError('webhook returned invalid response.patchType of ""')
        else:
            if raw_patch:
                raise ValueError("validating webhook may not return response.patch")
            if patch_type is not None:
                raise ValueError("validating webhook may not return response.patchType")
    else:
        patch_type = "JSONPatch" if raw_patch and mutating else None
        if not mutating:
            raw_patch = b""
    status = response.get("status")
    allowed = bool(response.get("allowed"))
    patch: list[Any] | None = None
    if allowed and raw_patch and patch_type == "JSONPatch":
        with contextlib.suppress(orjson.JSONDecodeError):
            decoded = orjson.loads(raw_patch)
            if isinstance(decoded, list) and decoded:
                patch = decoded
    return Answer(
        allowed,
        patch,
        [w for w in response.get("warnings") or [] if w],
        status if isinstance(status, dict) else {},
        {k: v or "" for k, v in (response.get("auditAnnotations") or {}).items()},
        raw_patch,
        patch_type or "",
    )


def decode_patch(hook: Hook, answer: Answer, obj: JSON | None) -> list[Any] | None:
    """The mutating dispatcher's steps after an allowed answer: the patch decoded (None
    when there is none or it is empty), or ``CallingError`` for one that does not
    decode or is not a ``JSONPatch``; ``ApiError`` 500 for a patch to an operation
    without an object (DELETE), as kube answers it whatever ``failurePolicy`` says."""
    if not answer.raw_patch:
        return None
    try:
        patch = orjson.loads(answer.raw_patch)
    except orjson.JSONDecodeError as exc:
        raise CallingError(
            hook.name,
            f"received undecodable patch in webhook response: {json_syntax_error(exc)}",
        ) from None
    if patch is not None and not isinstance(patch, list):
        raise CallingError(
            hook.name,
            "received undecodable patch in webhook response: json: cannot unmarshal "
            f"{unmarshal_kind(patch)} into Go value of type jsonpatch.Patch",
        )
    for op in patch or []:
        if op is not None and not isinstance(op, dict):
            raise CallingError(
                hook.name,
                "received undecodable patch in webhook response: json: cannot unmarshal "
                f"{unmarshal_kind(op)} into Go value of type jsonpatch.Operation",
            )
    if not patch:
        return None
    if obj is None:
        raise ApiError.internal(
            f'admission webhook "{hook.name}" attempted to modify the object, '
            "which is not supported for this operation"
        )
    if answer.patch_type != "JSONPatch":
        raise CallingError(hook.name, f'unsupported patch type "{answer.patch_type}"', 400)
    return [op if op is not None else {} for op in patch]


def audit_annotations(hook: Hook, annotations: dict[str, str]) -> dict[str, str]:
    """The answer's audit annotations kube's ``AddAnnotation`` accepts: each key, once
    prefixed with ``<webhook name>/``, must be one ``/`` away from a qualified name;
    the others are dropped (the request goes on) and logged, the first with kube's
    reason and a count of the rest (kube logs each: a webhook could flood the log)."""
    kept: dict[str, str] = {}
    first: tuple[str, str, str] | None = None
    dropped = 0
    for key, value in annotations.items():
        full = f"{hook.name}/{key}"
        errors = validation.is_qualified_name(full) if full.count("/") == 1 else None
        if errors == []:
            kept[key] = value
            continue
        dropped += 1
        if first is not None:
            continue
        if errors is None:
            problem = (
                "annotation key has invalid format, the right format is a DNS subdomain "
                "prefix and '/' and key name. (e.g. "
                "'podsecuritypolicy.admission.k8s.io/admit-policy')"
            )
        else:
            problem = (
                f"annotation key has invalid format {','.join(errors)}. A qualified name "
                "like 'podsecuritypolicy.admission.k8s.io/admit-policy' is required."
            )
        first = (full, value, problem)
    if first is not None:
        log.warning(
            "Failed to set admission audit annotation %s to %s for %s webhook %s: %s%s",
            go_quote(first[0][:300]),
            go_quote(first[1][:300]),
            "mutating" if hook.mutating else "validating",
            hook.name,
            first[2],
            f" ({dropped - 1} more annotations dropped)" if dropped > 1 else "",
        )
    return kept


def denial(webhook: str, status: JSON) -> ApiError:
    """``webhookerrors.ToStatusErr``: the webhook's Status with kube's message prefix and
    a code of at least 400 (a code Go's HTTP server could not write, over 999, is 500)."""
    denied_by = f'admission webhook "{webhook}" denied the request'
    message = status.get("message") or ""
    reason = status.get("reason") or ""
    if message:
        text = f"{denied_by}: {message}"
    elif reason:
        text = f"{denied_by}: {reason}"
    else:
        text = f"{denied_by} without explanation"
    code = status.get("code") or 0
    if code < 400:
        code = 400
    elif code > 999:
        code = 500
    details = status.get("details")
    return ApiError(code, reason, text, dict(details) if details else None)


def dry_run_unsupported(webhook: str) -> ApiError:
    """``webhookerrors.NewDryRunUnsupportedErr``."""
    return ApiError.bad_request(f'admission webhook "{webhook}" does not support dry run')


def _url_and_endpoint(hook: Hook, resolve: Resolver) -> tuple[str, str, int, str, str]:
    """(URL for messages, host, port, server name, path) of a webhook; raises
    ``CallingError`` when a service reference cannot be resolved."""
    cc = hook.spec.get("clientConfig") or {}
    query = f"?timeout={hook.timeout}s"
    if cc.get("url"):
        parts = urlsplit(str(cc["url"]))
        host = parts.hostname or ""
        port = parts.port or 443
        path = (parts.path or "/") + query
        return str(cc["url"]) + query, host, port, host, path
    service = cc.get("service") or {}
    name, namespace = str(service.get("name", "")), str(service.get("namespace", ""))
    svc_port = int(service.get("port") or 443)
    server_name = f"{name}.{namespace}.svc"
    path = str(service.get("path") or "/") + query
    url = f"https://{server_name}:{svc_port}{path}"
    try:
        host, port = resolve(namespace, name, svc_port)
    except LookupError as exc:
        raise CallingError(
            hook.name, f'failed to call webhook: Post "{url}": {exc.args[0]}'
        ) from None
    return url, host, port, server_name, path


async def call(
    hook: Hook,
    req: Request,
    inv: Invocation,
    resolve: Resolver,
    pool: httpclient.ConnectionPool | None = None,
) -> Answer:
    """Call one webhook (on a keep-alive connection of ``pool`` when given, else on a
    connection of its own); raises ``CallingError`` (failurePolicy applies) or
    ``ApiError``."""
    if req.dry_run and hook.spec.get("sideEffects") not in ("None", "NoneOnDryRun"):
        raise dry_run_unsupported(hook.name)
    versions = [v for v in hook.spec.get("admissionReviewVersions") or [] if v in ("v1", "v1beta1")]
    version = versions[0] if versions else "v1"
    uid = str(uuid.uuid4())
    body = orjson.dumps(review(req, inv, version, uid))
    if decode.may_hold_floats():
        # kube-apiserver writes the review with Go's encoding/json: a float64 1.0 (a
        # custom resource's, decoded as sigs.k8s.io/json leaves it) is sent as 1, which a
        # webhook's int32 field reads; the request's own objects keep their floats
        body = orjson.dumps(as_stored(orjson.loads(body)))
    url, host, port, server_name, path = _url_and_endpoint(hook, resolve)
    ca = (hook.spec.get("clientConfig") or {}).get("caBundle")
    try:
        ca_pem = base64.b64decode(str(ca)) if ca else None
        context = httpclient.client_context(ca_pem)
    except (binascii.Error, ValueError, OSError) as exc:
        raise CallingError(
            hook.name,
            f"could not get REST client: unable to load root certificates: {exc}",
            500,
        ) from None
    send = pool.post if pool is not None else httpclient.post
    try:
        response = await send(
            url,
            host,
            port,
            path,
            body,
            server_name=server_name,
            context=context,
            timeout=float(hook.timeout),
        )
    except httpclient.CallError as exc:
        raise CallingError(hook.name, f"failed to call webhook: {exc}") from None
    if not 200 <= response.status < 300:
        raise CallingError(
            hook.name, "failed to call webhook: " + _http_error(response), _http_code(response)
        )
    try:
        decoded = decode_answer(response.body, version)
    except ValueError as exc:
        raise CallingError(hook.name, f"failed to call webhook: {exc}") from None
    try:
        answer = verify(decoded, uid, version, hook.mutating)
    except ValueError as exc:
        raise CallingError(hook.name, f"received invalid webhook response: {exc}") from None
    answer.audit_annotations = audit_annotations(hook, answer.audit_annotations)
    if answer.allowed and hook.mutating:
        answer.patch = decode_patch(hook, answer, req.object)
    return answer


def _http_code(response: httpclient.HttpResponse) -> int:
    """The code of the StatusError client-go makes of a non-2xx answer: the Status's own
    code when the body is one, else the HTTP status."""
    try:
        status = orjson.loads(response.body)
    except orjson.JSONDecodeError:
        return response.status
    if not isinstance(status, dict) or status.get("kind") != "Status":
        return response.status
    code = status.get("code")
    return code if isinstance(code, int) and not isinstance(code, bool) and code > 0 else 500


def _http_error(response: httpclient.HttpResponse) -> str:
    """What kube's REST client makes of a non-2xx answer."""
    try:
        status = orjson.loads(response.body)
    except orjson.JSONDecodeError:
        status = None
    if isinstance(status, dict) and status.get("kind") == "Status" and status.get("message"):
        return str(status["message"])
    text = response.body.decode("utf-8", "replace").strip()
    if response.status == 404:
        return "the server could not find the requested resource"
    return f'an error on the server ("{text[:512]}") has prevented the request from succeeding'


def apply_patch(obj: JSON, patch: list[Any]) -> JSON:
    """The object with a webhook's JSON Patch applied, as kube's mutating dispatcher
    applies it: any number of operations (the 10,000 limit is the PATCH handler's; they
    are applied in slices of that many, each with the library's copy budget), and a
    patch that does not apply is ``500 Internal error occurred: <the library's text>``
    whatever ``failurePolicy`` says. The result must nest no deeper than the server
    stores (``decode.MAX_DEPTH``) and encode in at most ``decode.MAX_BODY_BYTES``, else
    500 as well: nothing is stored half-patched or larger than a client could send."""
    patched: Any = obj
    try:
        for start in range(0, max(len(patch), 1), MAX_JSON_PATCH_OPERATIONS):
            patched = json_patch(patched, patch[start : start + MAX_JSON_PATCH_OPERATIONS])
    except PatchError as exc:
        raise ApiError.internal(exc.detail or exc.message) from None
    except (ValueError, TypeError, KeyError, IndexError, RecursionError) as exc:
        raise ApiError.internal(str(exc) or type(exc).__name__) from None
    if not isinstance(patched, dict):
        raise ApiError.internal("the patched object is not a JSON object")
    what = "the object patched by the admission webhook"
    try:
        decode.check_depth(patched, what)
    except decode.DecodeError as exc:
        raise ApiError.internal(str(exc)) from None
    size = len(orjson.dumps(patched))
    if size > decode.MAX_BODY_BYTES:
        raise ApiError.internal(
            f"{what} is {size} bytes long, more than the {decode.MAX_BODY_BYTES} a request "
            "body may hold"
        )
    return patched


LARGE_PATCH: Final = 1000
"""Operations from which :func:`apply_patch_async` applies a patch in a worker thread."""


async def apply_patch_async(obj: JSON, patch: list[Any]) -> JSON:
    """:func:`apply_patch` without holding the event loop for long: a patch of
    :data:`LARGE_PATCH` operations or more (tens of thousands fit in an answer, and some,
    such as inserts at the front of a long list, cost seconds) is applied in a worker
    thread, so the loop keeps its turns (the interpreter switches threads every few
    milliseconds) while the request waits."""
    if len(patch) < LARGE_PATCH:
        return apply_patch(obj, patch)
    return await asyncio.to_thread(apply_patch, obj, patch)


def observe(
    metrics: AdmissionMetrics | None,
    hook: Hook,
    operation: str,
    seconds: float,
    outcome: Answer | BaseException,
) -> None:
    """Record one webhook call as kube's dispatchers do (``type`` ``admit`` for mutating
    webhooks, ``validating`` for validating ones): allowed → code 200; denied → a
    ``no_error`` rejection with the denial's code; a failed call → a
    ``calling_webhook_error`` rejection under ``failurePolicy: Fail``, a fail-open count
    under ``Ignore``; any other error → ``apiserver_internal_error`` with code 0."""
    if metrics is None:
        return
    step = "admit" if hook.mutating else "validating"
    name = hook.name
    if isinstance(outcome, Answer):
        if outcome.allowed:
            metrics.webhook(name, step, operation, seconds, 200, False)
            return
        code = denial(name, outcome.status).code
        metrics.webhook_rejection(name, step, operation, "no_error", code)
        metrics.webhook(name, step, operation, seconds, code, True)
    elif isinstance(outcome, CallingError):
        if hook.failure_policy == "Ignore":
            metrics.webhook(name, step, operation, seconds, outcome.code, False)
            metrics.fail_open(name, step)
        else:
            metrics.webhook_rejection(name, step, operation, "calling_webhook_error", outcome.code)
            metrics.webhook(name, step, operation, seconds, outcome.code, True)
    else:
        metrics.webhook_rejection(name, step, operation, "apiserver_internal_error", 0)
        metrics.webhook(name, step, operation, seconds, 0, True)


async def timed_call(
    hook: Hook,
    req: Request,
    inv: Invocation,
    resolve: Resolver,
    metrics: AdmissionMetrics | None = None,
    pool: httpclient.ConnectionPool | None = None,
) -> Answer:
    """:func:`call`, recorded in ``metrics``."""
    start = time.perf_counter()
    try:
        answer = await call(hook, req, inv, resolve, pool)
    except (CallingError, ApiError) as exc:
        observe(metrics, hook, req.operation, time.perf_counter() - start, exc)
        raise
    observe(metrics, hook, req.operation, time.perf_counter() - start, answer)
    return answer


async def run_validating(
    invocations: list[Invocation],
    req: Request,
    resolve: Resolver,
    warnings: list[str],
    annotations: dict[str, str],
    versioned: Callable[[Invocation], Request] | None = None,
    metrics: AdmissionMetrics | None = None,
    pool: httpclient.ConnectionPool | None = None,
) -> None:
    """Call the validating webhooks in parallel; raise the first rejection (in order)."""
    results = await asyncio.gather(
        *(
            timed_call(
                inv.hook,
                versioned(inv) if versioned is not None else req,
                inv,
                resolve,
                metrics,
                pool,
            )
            for inv in invocations
        ),
        return_exceptions=True,
    )
    first: BaseException | None = None
    for inv, result in zip(invocations, results, strict=True):
        if isinstance(result, CallingError):
            if inv.hook.failure_policy == "Ignore":
                continue
            first = first or ApiError.internal(str(result))
        elif isinstance(result, BaseException):
            first = first or result
        else:
            for k, v in result.audit_annotations.items():
                # kube: admission annotations are not allowed to be overridden
                annotations.setdefault(f"{inv.hook.name}/{k}", v)
            warnings.extend(result.warnings)
            if not result.allowed:
                first = first or denial(inv.hook.name, result.status)
    if first is not None:
        raise first


def is_mutating_kind(kind: str) -> bool:
    return kind == MUTATING_KIND
