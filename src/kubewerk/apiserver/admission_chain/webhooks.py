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
- the answer (``VerifyAdmissionResponse``): apiVersion/kind, ``response`` present,
  ``uid`` echoed, a patch only from a mutating webhook and only as ``JSONPatch``;
- errors: a call that fails (connection, timeout, TLS, a bad answer) is
  ``Internal error occurred: failed calling webhook "x": failed to call webhook: …``
  under ``failurePolicy: Fail`` and ignored under ``Ignore``; a denial is the Status the
  webhook returned, its message prefixed ``admission webhook "x" denied the request: ``
  (code 403 when it gave none); a dry-run request to a webhook with side effects is
  ``400 admission webhook "x" does not support dry run``.

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
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final
from urllib.parse import urlsplit

import orjson

from kubewerk.apiserver.admission_chain import httpclient
from kubewerk.apiserver.admission_chain.registration import (
    GROUP,
    MUTATING_KIND,
    default_webhook,
)
from kubewerk.apiserver.metrics import AdmissionMetrics
from kubewerk.apiserver.storage.base import Event, Store
from kubewerk.core.errors import ApiError
from kubewerk.core.patch import json_patch
from kubewerk.schema.admission_policy import Request
from kubewerk.schema.admission_policy.cel_env import Compiled, compile_expression
from kubewerk.schema.admission_policy.engine import CompiledPolicy, _Activation
from kubewerk.schema.admission_policy.matching import rule_matches, selector_matches

JSON = dict[str, Any]

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
    """One webhook of a configuration, defaulted, its matchConditions compiled."""

    configuration: str
    spec: JSON
    mutating: bool
    conditions: list[tuple[str, Compiled]] = field(default_factory=list)

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
    ns_selector = spec.get("namespaceSelector")
    is_namespace = req.resource[0] == "" and req.resource[2] == "namespaces"
    if (not cluster_scoped or is_namespace) and not selector_matches(
        ns_selector, req.namespace_labels()
    ):
        return None
    obj_selector = spec.get("objectSelector")
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


def _labels_match(selector: Any, obj: JSON | None) -> bool:
    if obj is None:
        return False
    labels = (obj.get("metadata") or {}).get("labels")
    return selector_matches(selector, labels if isinstance(labels, dict) else {})


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
    """A verified webhook answer."""

    allowed: bool
    patch: list[Any] | None
    warnings: list[str]
    status: JSON
    audit_annotations: dict[str, str]


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


def verify(answer: Any, uid: str, version: str, mutating: bool) -> Answer:
    """``VerifyAdmissionResponse``; raises ``ValueError`` with kube's text."""
    if not isinstance(answer, dict):
        raise ValueError("webhook response was absent")
    response = answer.get("response")
    if not isinstance(response, dict):
        raise ValueError("webhook response was absent")
    if response.get("uid") != uid:
        raise ValueError(f'expected response.uid="{uid}", got "{response.get("uid") or ""}"')
    expected = f"admission.k8s.io/{version}"
    if answer.get("apiVersion") != expected or answer.get("kind") != "AdmissionReview":
        got_av = answer.get("apiVersion") or ""
        raise ValueError(
            f"expected webhook response of {expected}, Kind=AdmissionReview, "
            f"got {got_av}, Kind={answer.get('kind') or ''}"
        )
    raw_patch = response.get("patch")
    patch_type = response.get("patchType") or ""
    patch: list[Any] | None = None
    if raw_patch:
        if not patch_type:
            raise ValueError("webhook returned response.patch but not response.patchType")
        if not mutating:
            raise ValueError("validating webhooks may not return patches")
        if patch_type != "JSONPatch":
            raise ValueError(f'webhook returned invalid response.patchType of "{patch_type}"')
        try:
            decoded = orjson.loads(base64.b64decode(str(raw_patch), validate=True))
        except (binascii.Error, orjson.JSONDecodeError, ValueError) as exc:
            raise ValueError(f"error decoding patch: {exc}") from None
        if not isinstance(decoded, list):
            raise ValueError(
                "error decoding patch: json: cannot unmarshal object into Go value of type "
                "jsonpatch.Patch"
            )
        patch = decoded
    warnings = [w for w in response.get("warnings") or [] if isinstance(w, str)]
    status = response.get("status") if isinstance(response.get("status"), dict) else {}
    annotations = response.get("auditAnnotations")
    return Answer(
        bool(response.get("allowed")),
        patch,
        warnings,
        dict(status or {}),
        {str(k): str(v) for k, v in annotations.items()} if isinstance(annotations, dict) else {},
    )


def denial(webhook: str, status: JSON) -> ApiError:
    """``webhookerrors.ToStatusErr``: the webhook's Status with kube's message prefix."""
    denied_by = f'admission webhook "{webhook}" denied the request'
    message = status.get("message") if isinstance(status.get("message"), str) else ""
    raw_reason = status.get("reason")
    reason = raw_reason if isinstance(raw_reason, str) else ""
    if message:
        text = f"{denied_by}: {message}"
    elif reason:
        text = f"{denied_by}: {reason}"
    else:
        text = f"{denied_by} without explanation"
    code = status.get("code")
    if not isinstance(code, int) or isinstance(code, bool) or code == 0:
        code = 403
    details = status.get("details") if isinstance(status.get("details"), dict) else None
    return ApiError(code, reason, text, details)


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
        parsed = orjson.loads(response.body)
    except orjson.JSONDecodeError as exc:
        raise CallingError(
            hook.name, f"failed to call webhook: couldn't get version/kind; json parse error: {exc}"
        ) from None
    try:
        return verify(parsed, uid, version, hook.mutating)
    except ValueError as exc:
        raise CallingError(hook.name, f"received invalid webhook response: {exc}") from None


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
    """The object with a webhook's JSON Patch applied; 500 as kube answers a patch that
    does not apply."""
    try:
        patched = json_patch(obj, patch)
    except (ValueError, TypeError, KeyError, IndexError) as exc:
        raise ApiError.internal(str(exc)) from None
    if not isinstance(patched, dict):
        raise ApiError.internal("the patched object is not a JSON object")
    return patched


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
                annotations[f"{inv.hook.name}/{k}"] = v
            warnings.extend(result.warnings)
            if not result.allowed:
                first = first or denial(inv.hook.name, result.status)
    if first is not None:
        raise first


def is_mutating_kind(kind: str) -> bool:
    return kind == MUTATING_KIND
