"""The asynchronous write path: mutating webhooks → schema admission → policies and
validating webhooks → commit.

``AdmissionChain.active(target)`` is a flag check: with no webhook configuration and no
ValidatingAdmissionPolicy binding stored (the common case), the ASGI app keeps its
synchronous path exactly as it was. Otherwise a write runs here:

1. the object as the REST layer prepares it for admission (a create's decoded body;
   an update's body; a patch applied to the stored object) goes through the matching
   mutating webhooks, in order, each one's JSON Patch applied before the next call;
   ``reinvocationPolicy: IfNeeded`` webhooks run once more when a later webhook changed
   the object;
2. the REST verb admits it (defaults, pruning, validation) and stops before storage
   (``defer``);
3. ValidatingAdmissionPolicies (the schema layer's engine, params read from storage on
   each request) and the validating webhooks (in parallel) see the admitted object;
4. the write is committed against the revision it was read at. An update or patch
   without a resourceVersion precondition that meets a concurrent write starts again
   from 1 (kube's GuaranteedUpdate retries such writes); one with a precondition gets
   the usual 409.

DELETE runs policies and validating webhooks with ``oldObject`` (and no object), then
deletes if the object is still the one they saw. Audit annotations (from policies with
``Audit`` and from webhooks) are logged on ``kubewerk.apiserver.audit`` at INFO.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterable
from typing import Any, Final

import orjson

from kubewerk.apiserver import decode, fieldmanager
from kubewerk.apiserver.admission import decode_patched
from kubewerk.apiserver.admission_chain import httpclient, webhooks
from kubewerk.apiserver.admission_chain.registration import GROUP
from kubewerk.apiserver.admission_chain.typechecking import TypeChecker
from kubewerk.apiserver.auth.types import UNSECURED, request_user
from kubewerk.apiserver.metrics import AdmissionMetrics
from kubewerk.apiserver.registry import Registry, ServedResource
from kubewerk.apiserver.request import RestResponse, Target, dry_run
from kubewerk.apiserver.rest import APPLY_YAML, ResourceApi
from kubewerk.apiserver.storage.base import Event, Store
from kubewerk.core.errors import ApiError
from kubewerk.core.jsoncopy import copy_json
from kubewerk.schema import admission_policy as vap

JSON = dict[str, Any]
audit_log = logging.getLogger("kubewerk.apiserver.audit")

_POLICY_PREFIX: Final = f"/{GROUP}/validatingadmissionpolicies/"
_BINDING_PREFIX: Final = f"/{GROUP}/validatingadmissionpolicybindings/"
MAX_ATTEMPTS: Final = 5
"""Times an unconditional write is tried again after a concurrent change."""
SCALE_KIND: Final = ("autoscaling", "v1", "Scale")
"""The kind admission sees a ``/scale`` write as (``autoscaling/v1`` Scale), while its
resource stays the scaled one (``apps/v1`` ``deployments``, subresource ``scale``)."""
UNSECURED_USER: Final = vap.UserInfo(
    username="system:unsecured", groups=("system:masters", "system:authenticated")
)
"""Who a request is for webhooks and policies when authentication is off (or the write is
the server's own): kube-apiserver's insecure port, which had no authentication either,
served every request as this superuser, so ``request.userInfo`` is what such a request
carried there rather than empty. With authentication on, the request's own user."""


def _carry(err: ApiError, warnings: list[str]) -> None:
    """Put ``warnings`` (the request's so far) before ``err``'s own, which the server
    sends as Warning headers with the error's Status."""
    carried = getattr(err, "warnings", None) or []
    err.warnings = [*warnings, *(w for w in carried if w not in warnings)]  # type: ignore[attr-defined]


def _ordered(hooks: list[str], mutating: int, own: list[str], decoded: int) -> list[str]:
    """A write's warnings in kube-apiserver's order: the decoder's (the first ``decoded``
    of the REST layer's ``own``), the mutating webhooks' (the first ``mutating`` of
    ``hooks``), the kind's (the rest of ``own``: ``WarningsOnCreate``/``OnUpdate`` in
    ``BeforeCreate``/``BeforeUpdate``), then validating admission's."""
    return own[:decoded] + hooks[:mutating] + own[decoded:] + hooks[mutating:]


def _requester() -> vap.UserInfo:
    """The request's user as admission sees it (``request.userInfo``): the authenticated
    or impersonated one, else :data:`UNSECURED_USER` (security off, or the server's own
    write)."""
    user = request_user()
    if user is None or user == UNSECURED:
        return UNSECURED_USER
    return vap.UserInfo(
        username=user.name,
        uid=user.uid,
        groups=tuple(user.groups),
        extra={k: list(v) for k, v in user.extra.items()},
    )


_Names = tuple[
    tuple[str, str, str],
    tuple[str, str, str],
    tuple[tuple[tuple[str, str, str], tuple[str, str, str]], ...],
]


def _names(rtype: ServedResource, version: str, subresource: str) -> _Names:
    """A request's ``kind``, ``resource`` and ``equivalents`` (the same resource in each
    other served version) for a write to ``rtype`` in ``version``: a ``/scale`` write is
    seen as ``autoscaling/v1`` Scale of the resource, as kube sends it. They depend on
    the served type alone, so they are kept with it (``ServedResource.derived``, which a
    CRD's new generation replaces) rather than built on every request."""
    key = ("admission_chain.names", version, subresource)
    found: _Names | None = rtype.derived.get(key)
    if found is None:
        scale = subresource == "scale"
        equivalents = tuple(
            (
                (rtype.group, v, rtype.resource),
                SCALE_KIND if scale else (rtype.group, v, rtype.kind),
            )
            for v in rtype.versions
            if v != version
        )
        kind = SCALE_KIND if scale else (rtype.group, version, rtype.kind)
        found = rtype.derived[key] = (kind, (rtype.group, version, rtype.resource), equivalents)
    return found


def _default_options(operation: str, query: dict[str, str]) -> JSON | None:
    """The options a request without explicit ones carries (``request.options``): the
    ``CreateOptions``/``UpdateOptions`` of the request's query for those operations
    (``dryRun``, ``fieldManager``, ``fieldValidation``, as kube-apiserver decodes them;
    a PATCH's as UpdateOptions, kube's ``patchToUpdateOptions``, ``force`` not carried),
    else none."""
    if operation == "CREATE":
        return _write_options("CreateOptions", query)
    if operation == "UPDATE":
        return _write_options("UpdateOptions", query)
    return None


def _write_options(kind: str, query: dict[str, str]) -> JSON:
    options: JSON = {"kind": kind, "apiVersion": "meta.k8s.io/v1"}
    dry = [v for v in query.get("dryRun", "").split(",") if v]
    if dry:
        options["dryRun"] = dry
    for name in ("fieldManager", "fieldValidation"):
        if query.get(name):
            options[name] = query[name]
    return options


def _all_admitted(outcomes: Iterable[vap.Outcome]) -> bool:
    """Whether every decision of every outcome is an admitted evaluation."""
    for outcome in outcomes:
        for decision in outcome.decisions:
            if decision.evaluation != "admit":
                return False
    return True


class PolicyIndex:
    """The stored policies, compiled once per (uid, generation), and the bindings."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._dirty = True
        self._compiled: dict[tuple[str, int], vap.CompiledPolicy] = {}
        self.policies: list[vap.CompiledPolicy] = []
        self.param_kinds = False
        """Whether some policy has a ``paramKind`` (without one, no params are read)."""
        self.bindings: list[JSON] = []
        self.compiled_bindings: list[vap.CompiledBinding] = []
        """``bindings`` read once each (per uid and resourceVersion), in the same order."""
        self._compiled_bindings: dict[tuple[str, str, str], vap.CompiledBinding] = {}
        self.version = 0
        """Rises each time the index is rebuilt."""
        store.subscribe(self._on_event)

    def _on_event(self, ev: Event) -> None:
        if ev.key.startswith((_POLICY_PREFIX, _BINDING_PREFIX)):
            self._dirty = True

    def load(self) -> None:
        if not self._dirty:
            return
        self._dirty = False
        items, _, _ = self.store.list(_POLICY_PREFIX)
        compiled: dict[tuple[str, int], vap.CompiledPolicy] = {}
        policies = []
        for _, obj in items:
            meta = obj.get("metadata") or {}
            cache_key = (str(meta.get("uid", "")), int(meta.get("generation") or 0))
            hit = self._compiled.get(cache_key)
            if hit is None:
                hit = vap.compile_policy(obj)
            compiled[cache_key] = hit
            policies.append(hit)
        self._compiled = compiled
        self.policies = policies
        self.param_kinds = any(p.param_kind is not None for p in policies)
        self.bindings = [obj for _, obj in self.store.list(_BINDING_PREFIX)[0]]
        compiled_bindings: dict[tuple[str, str, str], vap.CompiledBinding] = {}
        in_order: list[vap.CompiledBinding] = []
        for obj in self.bindings:
            meta = obj.get("metadata") or {}
            bkey = (
                str(meta.get("uid", "")),
                str(meta.get("name", "")),
                str(meta.get("resourceVersion", "")),
            )
            found = self._compiled_bindings.get(bkey)
            if found is None:  # read again only when the binding was written
                found = vap.compile_binding(obj)
            compiled_bindings[bkey] = found
            in_order.append(found)
        self._compiled_bindings = compiled_bindings
        self.compiled_bindings = in_order
        self.version += 1

    def any(self) -> bool:
        self.load()
        return bool(self.policies and self.bindings)

    def bound(self) -> list[vap.CompiledPolicy]:
        """The policies at least one binding names (the engine skips the others)."""
        self.load()
        named = {
            (b.get("spec") or {}).get("policyName") for b in self.bindings if isinstance(b, dict)
        }
        return [p for p in self.policies if p.name in named]


def could_match(rules: Any, group: str, resource: str, subresource: str) -> bool:
    """Whether a list of ``resourceRules``/webhook ``rules`` can select some request for
    ``group``/``resource``/``subresource`` — true whenever the precise match
    (``matching.rule_matches``, with every equivalent version) can be, since versions,
    operations, scope and names are left out. Not a list: true."""
    if not isinstance(rules, list):
        return True
    for rule in rules:
        if not isinstance(rule, dict):
            continue
        groups = rule.get("apiGroups") or []
        if "*" not in groups and group not in groups:
            continue
        for pattern in rule.get("resources") or []:
            if not isinstance(pattern, str):
                continue
            pr, _, ps = pattern.partition("/")
            if (pr == "*" or pr == resource) and (ps == "*" or ps == subresource):
                return True
    return False


def _policy_could_match(policy: vap.CompiledPolicy, group: str, resource: str, sub: str) -> bool:
    constraints = policy.match_constraints
    if not isinstance(constraints, dict):
        return True  # the engine decides (and reports) what a policy without them does
    rules = constraints.get("resourceRules")
    if not rules:
        return True  # an empty list matches everything
    return could_match(rules, group, resource, sub)


class AdmissionChain:
    """Runs writes through webhooks and policies (see the module docstring)."""

    def __init__(self, store: Store, registry: Registry, api: ResourceApi) -> None:
        self.store = store
        self.registry = registry
        self.api = api
        self.hooks = webhooks.HookIndex(store)
        self.policies = PolicyIndex(store)
        self.type_checker = TypeChecker(store, registry, api)
        """Writes the policies' ``status.typeChecking`` (kube's status controller)."""
        self._routes: dict[tuple[str, str, str], bool] = {}
        self._routes_stamp = (-1, -1)
        self._params_key: tuple[int, int] = (-1, -1)
        self._param_types: list[tuple[str, ServedResource]] = []
        self._scopes: dict[tuple[str, str], bool] = {}
        self.pool = httpclient.ConnectionPool()
        """Keep-alive connections to the webhooks, per endpoint and caBundle."""
        self.metrics = AdmissionMetrics()
        """Where webhook calls and policy decisions are counted; the server's ``/metrics``
        exposes ``ApiMetrics.admission``, so the app points this at that one."""

    def active(self, target: Target) -> bool:
        """Whether a write to ``target`` takes the asynchronous path: some stored webhook
        or bound policy has a rule that can select the target's group, resource and
        subresource (decided once per resource until a configuration changes, so a
        write no configuration can select keeps the synchronous path)."""
        rtype = target.rtype
        if rtype.group == GROUP or target.subresource == "finalize":
            return False  # kube exempts admission configuration objects
        hooks, policies = self.hooks.any(), self.policies.any()
        if not hooks and not policies:
            return False
        stamp = (self.hooks.version, self.policies.version)
        if stamp != self._routes_stamp:
            self._routes.clear()
            self._routes_stamp = stamp
        key = (rtype.group, rtype.resource, target.subresource or "")
        hit = self._routes.get(key)
        if hit is None:
            hit = self._routes[key] = self._selectable(*key)
        return hit

    def _selectable(self, group: str, resource: str, sub: str) -> bool:
        for hook in (*self.hooks.mutating(), *self.hooks.validating()):
            if could_match(hook.spec.get("rules"), group, resource, sub):
                return True
        return any(_policy_could_match(p, group, resource, sub) for p in self.policies.bound())

    # -- the request as admission sees it ----------------------------------------------

    def _request(
        self,
        operation: str,
        target: Target,
        obj: JSON | None,
        old: JSON | None,
        query: dict[str, str],
        options: JSON | None = None,
    ) -> vap.Request:
        rtype = target.rtype
        source = obj if obj is not None else old
        meta = (source or {}).get("metadata") or {}
        namespace = target.namespace or "" if rtype.namespaced else ""
        name = target.name or str(meta.get("name") or "")
        if rtype.group == "" and rtype.resource == "namespaces":
            namespace = name
        ns_obj = None
        if rtype.namespaced and namespace:
            ns_obj = self.store.get(f"/core/namespaces//{namespace}")
        kind, resource, equivalents = _names(rtype, target.version, target.subresource or "")
        if options is None:
            options = _default_options(operation, query)
        return vap.Request(
            operation=operation,
            kind=kind,
            resource=resource,
            object=obj,
            old_object=old,
            sub_resource=target.subresource or "",
            namespace=namespace,
            name=name,
            user=_requester(),
            dry_run=dry_run(query, options),
            options=options,
            namespace_object=ns_obj,
            equivalents=equivalents,
        )

    def _in_version(self, target: Target, obj: JSON | None, version: str) -> JSON | None:
        """``obj`` (served in ``target``'s version) as served in ``version`` (a Scale is
        autoscaling/v1 in every version of its resource)."""
        if obj is None or version == target.version or target.subresource == "scale":
            return obj
        strategy = target.rtype.strategy
        return strategy.from_storage(
            strategy.to_storage(copy_json(obj)), target.rtype.api_version(version)
        )

    def _resolve(self, namespace: str, name: str, port: int) -> tuple[str, int]:
        """A service reference → an address, through the Service and its endpoints."""
        service = self.store.get(f"/core/services/{namespace}/{name}")
        if service is None:
            raise LookupError(f'service "{name}" not found')
        ports = (service.get("spec") or {}).get("ports") or []
        match = next((p for p in ports if isinstance(p, dict) and p.get("port") == port), None)
        if match is None:
            raise LookupError(f'no service port {port} found for service "{name}"')
        port_name = match.get("name") or ""
        endpoints = self.store.get(f"/core/endpoints/{namespace}/{name}")
        for subset in (endpoints or {}).get("subsets") or []:
            eps = [p for p in subset.get("ports") or [] if (p.get("name") or "") == port_name]
            addresses = subset.get("addresses") or []
            if eps and addresses:
                return str(addresses[0].get("ip")), int(eps[0].get("port"))
        slices, _, _ = self.store.list(f"/discovery.k8s.io/endpointslices/{namespace}/")
        for _, es in slices:
            labels = (es.get("metadata") or {}).get("labels") or {}
            if labels.get("kubernetes.io/service-name") != name:
                continue
            eps = [p for p in es.get("ports") or [] if (p.get("name") or "") == port_name]
            for ep in es.get("endpoints") or []:
                if eps and ep.get("addresses") and (ep.get("conditions") or {}).get("ready", True):
                    return str(ep["addresses"][0]), int(eps[0].get("port"))
        raise LookupError(f'no endpoints available for service "{name}"')

    # -- the stages ------------------------------------------------------------------

    async def _mutate(
        self,
        operation: str,
        target: Target,
        obj: JSON | None,
        old: JSON | None,
        query: dict[str, str],
        warnings: list[str],
        annotations: dict[str, str],
        options: JSON | None = None,
    ) -> JSON | None:
        """:meth:`_mutate_stage`; an error leaves carrying the warnings gathered so far."""
        if not self.hooks.mutating():
            return obj
        try:
            return await self._mutate_stage(
                operation, target, obj, old, query, warnings, annotations, options
            )
        except ApiError as err:
            _carry(err, warnings)
            raise

    async def _mutate_stage(
        self,
        operation: str,
        target: Target,
        obj: JSON | None,
        old: JSON | None,
        query: dict[str, str],
        warnings: list[str],
        annotations: dict[str, str],
        options: JSON | None = None,
    ) -> JSON | None:
        """The object after the matching mutating webhooks. On DELETE (``obj`` None) they
        are called too, as kube-apiserver calls them, and a webhook that answers with a
        patch fails the request (there is no object to patch)."""
        hooks = self.hooks.mutating()
        if not hooks:
            return obj
        called: list[tuple[int, webhooks.Hook]] = []
        changed_at = -1
        reinvoke: set[str] = set()
        for round_ in (0, 1):
            step = 0
            for hook in hooks:
                if round_ == 1 and hook.name not in reinvoke:
                    continue
                req = self._request(operation, target, obj, old, query, options)
                inv = webhooks.should_call(
                    hook, req, list(req.equivalents), not target.rtype.namespaced
                )
                if inv is None:
                    continue
                req = self._versioned(req, target, inv)
                try:
                    answer = await webhooks.timed_call(
                        hook, req, inv, self._resolve, self.metrics, self.pool
                    )
                except webhooks.CallingError as exc:
                    if hook.failure_policy == "Ignore":
                        continue
                    raise ApiError.internal(str(exc)) from None
                for k, v in answer.audit_annotations.items():
                    annotations[f"{hook.name}/{k}"] = v
                warnings.extend(answer.warnings)
                if not answer.allowed:
                    raise webhooks.denial(hook.name, answer.status)
                if round_ == 0:
                    called.append((step, hook))
                if answer.patch and obj is None:
                    raise ApiError.internal(
                        f'admission webhook "{hook.name}" attempted to modify the object, '
                        "which is not supported for this operation"
                    )
                if answer.patch:
                    seen = self._in_version(target, obj, inv.kind[1])
                    assert seen is not None
                    patched = await webhooks.apply_patch_async(seen, answer.patch)
                    if isinstance(patched, dict):
                        # decoded back into the type: a value of the wrong type is the
                        # dispatcher's 500, a field the type lacks is dropped silently
                        try:
                            decode_patched(target.rtype, inv.kind[1], patched)
                        except ValueError as exc:
                            raise ApiError.internal(str(exc)) from None
                        if target.subresource != "scale":
                            # and defaulted (the dispatcher's GetObjectDefaulter().Default):
                            # a custom resource by the schema of the webhook's version
                            target.rtype.strategy.default(patched)
                            self.api.admission.default_custom(target.rtype, inv.kind[1], patched)
                    back = self._in_version(
                        Target(
                            target.rtype,
                            inv.kind[1],
                            target.namespace,
                            target.name,
                            target.subresource,
                        ),
                        patched,
                        target.version,
                    )
                    assert back is not None
                    if orjson.dumps(back) != orjson.dumps(obj):
                        obj = back
                        changed_at = step
                step += 1
            if round_ == 0:
                reinvoke = {
                    h.name
                    for i, h in called
                    if h.spec.get("reinvocationPolicy") == "IfNeeded" and i < changed_at
                }
                if not reinvoke:
                    break
        if obj is not None and changed_at >= 0 and target.subresource != "scale":
            # what a webhook added that the schema does not know: kube's storage drops it
            # without a word (the warnings and Strict's 400 are the request decoder's);
            # and what kube's read from storage defaults, in the request's version
            self.api.admission.prune_custom(target.rtype, target.version, obj)
            self.api.admission.default_custom(target.rtype, target.version, obj)
        return obj

    def _versioned(self, req: vap.Request, target: Target, inv: webhooks.Invocation) -> vap.Request:
        """The request with its objects in the invocation's version (matchPolicy
        Equivalent may pick another version than the request's)."""
        version = inv.kind[1]
        if version == target.version:
            return req
        from dataclasses import replace

        return replace(
            req,
            object=self._in_version(target, req.object, version),
            old_object=self._in_version(target, req.old_object, version),
        )

    async def _validate(
        self,
        operation: str,
        target: Target,
        obj: JSON | None,
        old: JSON | None,
        query: dict[str, str],
        warnings: list[str],
        annotations: dict[str, str],
        options: JSON | None = None,
    ) -> None:
        """:meth:`_validate_stage`; an error leaves carrying the warnings gathered so far
        (kube-apiserver sends them with the error)."""
        try:
            await self._validate_stage(
                operation, target, obj, old, query, warnings, annotations, options
            )
        except ApiError as err:
            _carry(err, warnings)
            raise

    async def _validate_stage(
        self,
        operation: str,
        target: Target,
        obj: JSON | None,
        old: JSON | None,
        query: dict[str, str],
        warnings: list[str],
        annotations: dict[str, str],
        options: JSON | None = None,
    ) -> None:
        req = self._request(operation, target, obj, old, query, options)
        self.policies.load()
        if self.policies.policies and self.policies.bindings:
            start = time.perf_counter()
            verdict = vap.admit(
                self.policies.policies,
                self.policies.compiled_bindings,
                req,
                params=self._params() if self.policies.param_kinds else None,
                # objects here are decoded request bodies and stored objects: plain JSON
                # (kubewerk.apiserver.decode), so CEL is handed only what it reads
                json_values=True,
            )
            self._count_policies(verdict, time.perf_counter() - start)
            warnings.extend(verdict.warnings)
            annotations.update(verdict.audit_annotations)
            if verdict.error is not None:
                self._audit(target, req, annotations)
                raise verdict.error
        invocations = []
        for hook in self.hooks.validating():
            inv = webhooks.should_call(
                hook, req, list(req.equivalents), not target.rtype.namespaced
            )
            if inv is not None:
                invocations.append(inv)
        if invocations:
            try:
                await webhooks.run_validating(
                    [inv for inv in invocations],
                    req,
                    self._resolve,
                    warnings,
                    annotations,
                    versioned=lambda inv: self._versioned(req, target, inv),
                    metrics=self.metrics,
                    pool=self.pool,
                )
            finally:
                self._audit(target, req, annotations)
        else:
            self._audit(target, req, annotations)

    def _count_policies(self, verdict: vap.Admission, seconds: float) -> None:
        """``apiserver_validating_admission_policy_check_*`` as kube's dispatcher counts:
        only failed validations and expression errors, one count per enforcement action
        of the binding (``deny``/``warn``/``audit``; an error admitted under
        ``failurePolicy: Ignore`` as ``allow``), ``error_type`` ``no_error`` only for
        admitted evaluations (kube counts a false validation as ``invalid_error``).
        ``seconds`` is the whole policy evaluation of the request: the engine does not
        time single expressions."""
        if _all_admitted(verdict.outcomes):
            return  # nothing is counted
        actions_of: dict[str, list[str]] = {}
        for b in self.policies.bindings:
            spec = b.get("spec") or {}
            name = str((b.get("metadata") or {}).get("name", ""))
            actions_of[name] = [str(a) for a in spec.get("validationActions") or []]
        for outcome in verdict.outcomes:
            for decision in outcome.decisions:
                if decision.evaluation == "admit":
                    continue
                if decision.message.startswith("compilation"):
                    error_type = "compile_error"
                elif decision.message.startswith(
                    "validation failed due to running out of cost budget"
                ):
                    error_type = "out_of_budget"
                else:
                    error_type = "invalid_error"
                if decision.action != "Deny":
                    self.metrics.policy_check(
                        outcome.policy, outcome.binding, error_type, "allow", seconds
                    )
                    continue
                for action in actions_of.get(outcome.binding, []):
                    self.metrics.policy_check(
                        outcome.policy, outcome.binding, error_type, action.lower(), seconds
                    )

    def _params(self) -> vap.ParamStore:
        """Every object of the policies' param kinds, read from storage now (so a changed
        ConfigMap counts on the next request), with the scope of every served kind. Which
        served types hold param kinds, and the scopes, are worked out once per change of
        the policies or the registry."""
        key = (self.policies.version, self.registry.generation)
        if key != self._params_key:
            wanted: set[tuple[str, str]] = set()
            for policy in self.policies.policies:
                if policy.param_kind:
                    wanted.add(
                        (
                            str(policy.param_kind.get("apiVersion")),
                            str(policy.param_kind.get("kind")),
                        )
                    )
            scopes: dict[tuple[str, str], bool] = {}
            types: list[tuple[str, ServedResource]] = []
            for rtype in self.registry.all():
                for version in rtype.versions:
                    kind_key = (rtype.api_version(version), rtype.kind)
                    scopes[kind_key] = rtype.namespaced
                    if kind_key in wanted:
                        types.append((kind_key[0], rtype))
            self._scopes, self._param_types, self._params_key = scopes, types, key
        objects: list[JSON] = []
        for api_version, rtype in self._param_types:
            items, _, _ = self.store.list(rtype.key_prefix)
            for _, obj in items:
                objects.append(rtype.strategy.from_storage(obj, api_version))
        return vap.ParamStore(objects, self._scopes)

    def _audit(self, target: Target, req: vap.Request, annotations: dict[str, str]) -> None:
        if annotations:
            audit_log.info(
                "admission audit annotations for %s %s %s/%s: %s",
                req.operation,
                target.rtype.qualified,
                req.namespace,
                req.name,
                orjson.dumps(annotations).decode(),
            )

    # -- the verbs -----------------------------------------------------------------------

    async def create(
        self, target: Target, body: JSON, query: dict[str, str], body_bytes: int = 0
    ) -> RestResponse:
        """A POST: the body decoded into its type and defaulted (400 before any webhook),
        mutating webhooks, the REST layer's admission, policies and validating webhooks,
        the write. For a request body of ``body_bytes`` longer than
        ``decode.OFFLOAD_BYTES`` of a kind whose create may be admitted off the loop
        (``ResourceApi.offloadable``), the decoding and the REST layer's admission run in
        a worker thread (``ResourceApi.create_async``)."""
        warnings: list[str] = []
        annotations: dict[str, str] = {}
        offload = body_bytes > decode.OFFLOAD_BYTES and self.api.offloadable(target)
        if offload:
            decoded = await asyncio.to_thread(self._decode_create, target, body, query)
        else:
            decoded = self._decode_create(target, body, query)
        meta = body.get("metadata")
        if target.rtype.namespaced and target.namespace and isinstance(meta, dict):
            meta.setdefault("namespace", target.namespace)
        mutated = await self._mutate("CREATE", target, body, None, query, warnings, annotations)
        assert mutated is not None  # webhooks patch an object, never remove it
        mutating = len(warnings)
        body = mutated
        result = await self.api.create_async(
            target, body, query, body_bytes if offload else 0, defer=True, decoded=decoded
        )
        assert result.commit is not None
        await self._validate("CREATE", target, result.body, None, query, warnings, annotations)
        final = result.commit()
        final.warnings = _ordered(warnings, mutating, final.warnings, len(decoded))
        return final

    def _decode_create(self, target: Target, body: JSON, query: dict[str, str]) -> list[str]:
        """A POST body decoded into its type and defaulted (``ResourceApi.decode_create``);
        the decoding's warnings."""
        return self.api.decode_create(target, body, query)

    async def update(self, target: Target, body: JSON, query: dict[str, str]) -> RestResponse:
        if target.subresource == "scale":
            self.api.check_update_target(target, body)  # the Scale meets the URL too
            return await self._scale(target, query, lambda _old: copy_json(body))
        conditional = bool((body.get("metadata") or {}).get("resourceVersion"))
        duplicates = decode.body_duplicates(body)
        # the request body meets the URL before storage is read (kube's update handler:
        # decoding, namespace, checkName); a webhook's rename meets ValidateObjectMetaUpdate (422)
        self.api.check_update_request(target, body)
        # then decoded into its type and defaulted, once, before storage and admission
        decoded = self.api.decode_for_admission(
            target, body, query, duplicates, self.api.trusted_stored(target)
        )
        rtype = target.rtype
        key = rtype.key(target.namespace or "", target.name or "")
        for _attempt in range(MAX_ATTEMPTS):
            warnings: list[str] = []
            annotations: dict[str, str] = {}
            current = self.store.get(key)
            if current is None:
                created = await self._create_on_update(target, body, query, decoded)
                if created is not None:
                    return created
                continue  # created meanwhile: updated on the next attempt
            old = self.api.serve(target, current)
            mine = await self._mutate(
                "UPDATE", target, copy_json(body), old, query, warnings, annotations
            )
            assert mine is not None
            mutating = len(warnings)
            if self._moved(key, current):
                continue
            result = self.api.update(
                target, mine, query, defer=True, name_checked=True, decoded=decoded
            )
            final = await self._finish(
                target, result, old, query, warnings, annotations, (mutating, len(decoded))
            )
            if final is not None or conditional:
                return final if final is not None else self._stale(target)
        return self._stale(target)

    async def _create_on_update(
        self,
        target: Target,
        body: JSON,
        query: dict[str, str],
        decoded: list[str],
    ) -> RestResponse | None:
        """A PUT of a missing object, as kube's update handler runs it through admission:
        404 unless the kind allows create on update, the body's UID precondition
        (``ResourceApi.check_create_on_update``), then mutating admission as a CREATE
        (``CreateOptions`` from the request's UpdateOptions: kube's
        ``updateToCreateOptions``) of the decoded body (``decoded``: its decoding's
        warnings), the create path and validating admission as a CREATE; answered 201.
        None when another write created the object first (the PUT then updates it, as
        GuaranteedUpdate retries)."""
        self.api.check_create_on_update(target, body)
        warnings: list[str] = []
        annotations: dict[str, str] = {}
        mine = copy_json(body)
        meta = mine.get("metadata")
        if isinstance(meta, dict):
            meta.pop("resourceVersion", None)
            if target.rtype.namespaced and target.namespace:
                meta.setdefault("namespace", target.namespace)
        mutated = await self._mutate("CREATE", target, mine, None, query, warnings, annotations)
        assert mutated is not None
        mutating = len(warnings)
        mutated_meta = mutated.get("metadata")
        if isinstance(mutated_meta, dict):  # storage clears it on this path
            mutated_meta.pop("resourceVersion", None)
        collection = Target(target.rtype, target.version, target.namespace, None)
        created = self.api.create(collection, mutated, query, defer=True, decoded=decoded)
        assert created.commit is not None
        self.api.check_create_authorized(target)
        await self._validate("CREATE", target, created.body, None, query, warnings, annotations)
        try:
            final = created.commit()
        except ApiError as exc:
            if exc.code == 409 and exc.reason == "AlreadyExists":
                return None
            raise
        final.warnings = _ordered(warnings, mutating, final.warnings, len(decoded))
        return final

    async def patch(
        self, target: Target, patch_body: bytes, content_type: str, query: dict[str, str]
    ) -> RestResponse:
        if target.subresource == "scale":
            media = content_type.split(";")[0].strip().lower()
            if media == APPLY_YAML:
                return await self._scale_apply(target, patch_body, content_type, query)
            # the REST layer's own patch media checks and application to the Scale
            media = self.api._patch_media(target, content_type, query)
            doc = self.api._patch_doc(patch_body)

            def apply_to(old: JSON) -> JSON:
                from kubewerk.core import patch as patchlib

                result = self.api._run_patch(target, media, copy_json(old), doc, patchlib)
                if not isinstance(result, dict):
                    raise ApiError.bad_request("the patched object is not a JSON object")
                return result

            return await self._scale(target, query, apply_to)
        if (
            content_type.split(";")[0].strip().lower().startswith("application/apply-patch")
            and self.api._patch_media(target, content_type, query) == APPLY_YAML
        ):
            return await self._server_side_apply(target, patch_body, query)
        read = self.api.read_patch(target, patch_body, content_type, query)
        for _attempt in range(MAX_ATTEMPTS):
            warnings: list[str] = []
            annotations: dict[str, str] = {}
            prepared = self.api.prepare_patch(target, read)
            key, current, served, patched, rv_text = prepared
            # the patched object decoded and defaulted before admission (patch.go)
            decoded = self.api.decode_for_admission(
                target, patched, query, read.errors, self.api.trusted_stored(target)
            )
            mine = await self._mutate(
                "UPDATE", target, patched, served, query, warnings, annotations
            )
            assert mine is not None
            mutating = len(warnings)
            if self._moved(key, current):
                continue
            result = self.api.finish_patch(target, prepared, mine, query, decoded=decoded)
            final = await self._finish(
                target, result, served, query, warnings, annotations, (mutating, len(decoded))
            )
            if final is not None or rv_text:
                return final if final is not None else self._stale(target)
        return self._stale(target)

    async def _server_side_apply(
        self, target: Target, patch_body: bytes, query: dict[str, str]
    ) -> RestResponse:
        """Server-side apply through admission, as kube-apiserver runs it: the applied
        object (merged by the field manager, its managedFields final) goes through
        mutating and validating admission as a CREATE when the object does not exist,
        else as an UPDATE of the stored object; a concurrent write retries the merge."""
        rtype = target.rtype
        config = self.api._apply_config(target, patch_body)
        rv_text = (config.get("metadata") or {}).get("resourceVersion")
        for _attempt in range(MAX_ATTEMPTS):
            warnings: list[str] = []
            annotations: dict[str, str] = {}
            key = rtype.key(target.namespace or "", target.name or "")
            current = self.store.get(key)
            if current is None:
                if target.subresource:
                    raise ApiError.not_found(rtype.resource, rtype.group, target.name or "")
                new = fieldmanager.apply_config(
                    rtype, target.version, None, None, copy_json(config), query
                )
                warnings += self.api.apply_yaml_duplicates(config, query)
                self.api.check_apply_create(target, config)
                new.setdefault("metadata", {})["name"] = target.name
                if rtype.namespaced and target.namespace:
                    new["metadata"].setdefault("namespace", target.namespace)
                collection = Target(rtype, target.version, target.namespace, None)
                # the applied object is typed and defaulted before admission
                decoded = self.api.decode_create(collection, new, query)
                mutated = await self._mutate(
                    "CREATE", target, new, None, query, warnings, annotations
                )
                assert mutated is not None
                mutating = len(warnings)
                created = self.api.create(
                    collection, mutated, query, defer=True, applied=True, decoded=decoded
                )
                assert created.commit is not None
                await self._validate(
                    "CREATE", target, created.body, None, query, warnings, annotations
                )
                final = created.commit()
                final.warnings = _ordered(warnings, mutating, final.warnings, len(decoded))
                return final
            served = self.api.serve(target, current)
            new = copy_json(
                fieldmanager.apply_config(
                    rtype, target.version, target.subresource, served, config, query
                )
            )
            warnings += self.api.apply_yaml_duplicates(config, query)
            decoded = self.api.decode_for_admission(target, new, query)
            mine = await self._mutate("UPDATE", target, new, served, query, warnings, annotations)
            assert mine is not None
            mutating = len(warnings)
            if self._moved(key, current):
                continue
            result = self.api._apply_update(
                target,
                key,
                current,
                mine,
                query,
                rv_text,
                served,
                defer=True,
                applied=True,
                verb="patch",
                decoded=decoded,
            )
            done = await self._finish(
                target, result, served, query, warnings, annotations, (mutating, len(decoded))
            )
            if done is not None or rv_text:
                return done if done is not None else self._stale(target)
        return self._stale(target)

    async def delete(self, target: Target, options: JSON, query: dict[str, str]) -> RestResponse:
        for _attempt in range(MAX_ATTEMPTS):
            warnings: list[str] = []
            annotations: dict[str, str] = {}
            key, current = self._stored(target)
            old = self.api.serve(target, current)
            opts = {"kind": "DeleteOptions", "apiVersion": "meta.k8s.io/v1", **options}
            await self._mutate("DELETE", target, None, old, query, warnings, annotations, opts)
            await self._validate("DELETE", target, None, old, query, warnings, annotations, opts)
            if self._moved(key, current):
                continue
            result = self.api.delete(target, options, query)
            result.warnings = warnings + result.warnings
            return result
        return self._stale(target)

    async def delete_collection(
        self, target: Target, options: JSON, query: dict[str, str]
    ) -> RestResponse:
        rtype = target.rtype
        items, _ = self.api.list(
            target, {k: v for k, v in query.items() if k not in ("limit", "continue")}
        )
        deleted: list[JSON] = []
        for item in items:
            one = Target(
                rtype, target.version, item["metadata"].get("namespace"), item["metadata"]["name"]
            )
            try:
                res = await self.delete(one, options, query)
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

    async def _scale(
        self, target: Target, query: dict[str, str], new_scale: Callable[[JSON], JSON]
    ) -> RestResponse:
        """A write of ``/scale`` (``new_scale`` makes the requested Scale from the stored
        one): mutating webhooks see the requested Scale with the stored one as
        ``oldObject``; policies and validating webhooks see the Scale the write
        produces (the stored one with the requested ``spec.replicas``); then the REST
        layer writes it. A replica count it refuses is refused before validation, as
        kube validates the Scale before validating admission."""
        for _attempt in range(MAX_ATTEMPTS):
            warnings: list[str] = []
            annotations: dict[str, str] = {}
            key, current = self._stored(target)
            old = self.api.get_scale(target).body
            if old["metadata"].get("resourceVersion") != current["metadata"]["resourceVersion"]:
                continue
            body = new_scale(old)
            mine = await self._mutate("UPDATE", target, body, old, query, warnings, annotations)
            assert mine is not None
            replicas = (mine.get("spec") or {}).get("replicas")
            if isinstance(replicas, int) and not isinstance(replicas, bool) and replicas >= 0:
                result_scale = copy_json(old)
                result_scale.setdefault("spec", {})["replicas"] = replicas
                await self._validate(
                    "UPDATE", target, result_scale, old, query, warnings, annotations
                )
            conditional = bool((mine.get("metadata") or {}).get("resourceVersion"))
            if self._moved(key, current) and not conditional:
                continue
            result = self.api.update(target, mine, query)
            result.warnings = warnings + result.warnings
            return result
        return self._stale(target)

    async def _scale_apply(
        self, target: Target, patch_body: bytes, content_type: str, query: dict[str, str]
    ) -> RestResponse:
        """A server-side apply of ``/scale`` as kube-apiserver admits it: the configuration
        (an ``autoscaling/v1`` Scale) is applied to the stored object's Scale by the field
        manager; mutating webhooks see the applied Scale with the stored one as
        ``oldObject``; policies and validating webhooks see the Scale the write produces
        (the stored one with the requested ``spec.replicas``); all of them an UPDATE
        whose ``options`` are the request's PatchOptions as UpdateOptions (kube's
        ``patchToUpdateOptions``: ``dryRun``, ``fieldManager``, ``fieldValidation``).
        The object gets the replicas and the apply's managedFields. A concurrent write
        starts the apply again, unless the configuration names a resourceVersion."""
        self.api._patch_media(target, content_type, query)
        config = self.api._apply_config(target, patch_body)
        options = _default_options("UPDATE", query)
        for _attempt in range(MAX_ATTEMPTS):
            warnings: list[str] = []
            annotations: dict[str, str] = {}
            applied = self.api.prepare_scale_apply(target, config, query)
            warnings += self.api.apply_yaml_duplicates(config, query)
            old = applied.old
            mine = await self._mutate(
                "UPDATE", target, applied.scale, old, query, warnings, annotations, options
            )
            assert mine is not None
            replicas = (mine.get("spec") or {}).get("replicas", 0)
            self.api._checked_replicas(target, replicas)
            result_scale = copy_json(old)
            result_scale.setdefault("spec", {})["replicas"] = replicas
            await self._validate(
                "UPDATE", target, result_scale, old, query, warnings, annotations, options
            )
            if self._moved(applied.key, applied.current) and not applied.rv_text:
                continue
            result = self.api.finish_scale_apply(target, applied, mine, query)
            result.warnings = warnings + result.warnings
            return result
        return self._stale(target)

    # -- helpers -------------------------------------------------------------------------

    def _stored(self, target: Target) -> tuple[str, JSON]:
        assert target.name is not None
        key = target.rtype.key(target.namespace or "", target.name)
        obj = self.store.get(key)
        if obj is None:
            raise ApiError.not_found(target.rtype.resource, target.rtype.group, target.name)
        return key, obj

    def _moved(self, key: str, current: JSON) -> bool:
        """Whether the object at ``key`` changed (or went) since ``current`` was read."""
        now = self.store.get(key)
        return (
            now is None
            or now["metadata"]["resourceVersion"] != current["metadata"]["resourceVersion"]
        )

    async def _finish(
        self,
        target: Target,
        result: RestResponse,
        old: JSON,
        query: dict[str, str],
        warnings: list[str],
        annotations: dict[str, str],
        counts: tuple[int, int] = (0, 0),
    ) -> RestResponse | None:
        """Validate and commit an update; None when a concurrent write got in first.
        ``counts``: how many of ``warnings`` the mutating webhooks gave and how many of
        the REST layer's are the decoder's (``_ordered``)."""
        assert result.commit is not None
        await self._validate("UPDATE", target, result.body, old, query, warnings, annotations)
        try:
            final = result.commit()
        except ApiError as exc:
            if exc.code == 409 and exc.reason == "Conflict":
                return None
            raise
        final.warnings = _ordered(warnings, counts[0], final.warnings, counts[1])
        return final

    def _stale(self, target: Target) -> RestResponse:
        raise ApiError.stale(target.rtype.resource, target.rtype.group, target.name or "")
