"""``status.typeChecking`` of ValidatingAdmissionPolicies, written as kube-controller-
manager's ``validatingadmissionpolicy-status-controller`` writes it.

For every stored policy whose ``metadata.generation`` is above its
``status.observedGeneration``, the controller runs the schema layer's type check
(:func:`kubewerk.schema.admission_policy.type_check`) against the schemas of the kinds
the policy's ``matchConstraints`` name — a CRD's ``openAPIV3Schema``, a built-in kind's
vendored OpenAPI definition — and its ``paramKind``, then applies
``status: {observedGeneration: <generation>, typeChecking: {expressionWarnings: […]}}``
(server-side apply of the ``/status`` subresource, field manager
``validatingadmissionpolicy-status-controller``, forced, as kube's controller does). A
policy is checked once per generation: a status write, or a later change of a CRD's
schema, does not check it again (kube's controller reacts only to the policy's own
generation). ``expressionWarnings`` is left out when there is none (an empty
``typeChecking: {}``), as kube's apply configuration omits an empty list.

Work is scheduled from the store's event callback onto the running event loop (never
inside the write that announced it); stored policies are swept once when the first
policy event arrives or :meth:`TypeChecker.sweep` is called.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator, Mapping
from typing import Any, Final

import orjson

from kubewerk.apiserver.admission_chain.registration import GROUP
from kubewerk.apiserver.kinds import k8s_openapi
from kubewerk.apiserver.registry import Registry, ServedResource
from kubewerk.apiserver.request import Target
from kubewerk.apiserver.rest import ResourceApi
from kubewerk.apiserver.storage.base import Event, Store
from kubewerk.core.errors import ApiError
from kubewerk.schema import admission_policy as vap

log = logging.getLogger(__name__)

CONTROLLER_NAME: Final = "validatingadmissionpolicy-status-controller"
"""The field manager of the status writes (kube's controller name)."""
_PREFIX: Final = f"/{GROUP}/validatingadmissionpolicies/"
_APPLY: Final = "application/apply-patch+yaml"


class _Resolved(Mapping[str, Any]):
    """A read-only view of a vendored (OpenAPI v2) schema with each ``$ref`` followed
    when reached, so recursive definitions cost nothing until walked."""

    __slots__ = ("_schema",)

    def __init__(self, schema: Mapping[str, Any]) -> None:
        self._schema = (
            k8s_openapi.resolve(dict(schema)) if "$ref" in schema or "allOf" in schema else schema
        )

    def __getitem__(self, key: str) -> Any:
        return _view(self._schema[key])

    def __iter__(self) -> Iterator[str]:
        return iter(self._schema)

    def __len__(self) -> int:
        return len(self._schema)


def _view(value: Any) -> Any:
    if isinstance(value, Mapping):
        return _Resolved(value)
    if isinstance(value, list):
        return [_view(v) for v in value]
    return value


class TypeChecker:
    """Keeps ``status.typeChecking`` of the stored policies current (see the module
    docstring)."""

    def __init__(self, store: Store, registry: Registry, api: ResourceApi) -> None:
        self.store = store
        self.registry = registry
        self.api = api
        self._pending: set[str] = set()
        self._swept = False
        store.subscribe(self._on_event)

    # -- schemas -------------------------------------------------------------------

    def _schema_of(
        self, group: str, version: str, kind: str, served: ServedResource
    ) -> Mapping[str, Any] | None:
        if served.vendored_openapi or served.builtin:
            name = k8s_openapi.definition_name(group, version, kind)
            definition = k8s_openapi.definition(name) if name is not None else None
            if definition is not None:
                return _Resolved(definition)
        schema = served.schemas.get(version)
        return schema if isinstance(schema, Mapping) else None

    def resolve(
        self, group: str, version: str, resource: str
    ) -> tuple[str, Mapping[str, Any]] | None:
        """(group, version, resource) → (kind, schema), None when not served or no
        schema is known (the type check then skips that kind, as kube's does)."""
        served = self.registry.lookup(group, version, resource)
        if served is None:
            return None
        schema = self._schema_of(group, version, served.kind, served)
        return (served.kind, schema) if schema is not None else None

    def _params_schema(self, policy: Mapping[str, Any]) -> Mapping[str, Any] | None:
        param_kind = (policy.get("spec") or {}).get("paramKind")
        if not isinstance(param_kind, Mapping):
            return None
        api_version, kind = str(param_kind.get("apiVersion", "")), str(param_kind.get("kind", ""))
        group, _, version = api_version.rpartition("/")
        for served in self.registry.all():
            if served.group == group and served.kind == kind and version in served.versions:
                return self._schema_of(group, version, kind, served)
        return None

    # -- the controller ------------------------------------------------------------

    def _on_event(self, ev: Event) -> None:
        if ev.type == "DELETED" or not ev.key.startswith(_PREFIX):
            return
        if not self._swept or _needs_check(ev.obj):
            self._schedule(ev.key)

    def _schedule(self, key: str) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return  # no loop: the next event or sweep() does it
        if not self._pending:
            loop.call_soon(self._run)
        self._pending.add(key)

    def _run(self) -> None:
        if not self._swept:
            self._swept = True
            items, _, _ = self.store.list(_PREFIX)
            self._pending.update(k for k, _ in items)
        pending, self._pending = self._pending, set()
        for key in sorted(pending):
            self.check(key)

    def sweep(self) -> None:
        """Check every stored policy that needs it, now."""
        self._swept = False
        self._run()

    def check(self, key: str) -> bool:
        """Write the status of the policy at ``key`` if its generation is unchecked;
        whether a status was written."""
        policy = self.store.get(key)
        if policy is None or not _needs_check(policy):
            return False
        meta = policy.get("metadata") or {}
        try:
            warnings = vap.type_check(policy, self.resolve, self._params_schema(policy))
        except Exception:  # pragma: no cover - a checker bug must not stop the server
            log.exception("type checking ValidatingAdmissionPolicy %s failed", meta.get("name"))
            warnings = []
        type_checking: dict[str, Any] = {}
        if warnings:
            type_checking["expressionWarnings"] = warnings
        config = {
            "apiVersion": f"{GROUP}/v1",
            "kind": "ValidatingAdmissionPolicy",
            "metadata": {"name": meta.get("name")},
            "status": {
                "observedGeneration": int(meta.get("generation") or 0),
                "typeChecking": type_checking,
            },
        }
        rtype = self.registry.get(GROUP, "validatingadmissionpolicies")
        if rtype is None:  # pragma: no cover - always served
            return False
        target = Target(rtype, "v1", None, str(meta.get("name", "")), "status")
        try:
            self.api.patch(
                target,
                orjson.dumps(config),
                _APPLY,
                {"fieldManager": CONTROLLER_NAME, "force": "true"},
            )
        except ApiError as exc:  # the policy went or changed meanwhile: its event retries
            log.debug(
                "status of ValidatingAdmissionPolicy %s not written: %s", meta.get("name"), exc
            )
            return False
        return True


def _needs_check(policy: Mapping[str, Any]) -> bool:
    meta = policy.get("metadata") or {}
    status = policy.get("status") or {}
    generation = meta.get("generation") or 0
    observed = status.get("observedGeneration") or 0 if isinstance(status, Mapping) else 0
    return isinstance(generation, int) and isinstance(observed, int) and generation > observed
