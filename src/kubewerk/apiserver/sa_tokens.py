"""ServiceAccount token Secrets, as kube-controller-manager's tokens controller keeps them
(pkg/controller/serviceaccount/tokens_controller.go), and the last-used label
kube-apiserver's legacy-token authenticator writes (pkg/serviceaccount/legacy.go).

``TokensController`` runs on the queue of the built-in ``Controllers`` and watches
Secrets of type ``kubernetes.io/service-account-token`` (annotated
``kubernetes.io/service-account.name``, optionally ``.uid``) and ServiceAccounts:

- a token Secret whose ServiceAccount exists (with the annotated uid, when there is one)
  gets what it lacks: ``data.token`` (a legacy token, ``ServiceAccountTokens.
  issue_legacy``), ``data.namespace`` and ``data["ca.crt"]`` (the server's CA, put back
  whenever it differs; none without TLS), and the name and uid annotations; the update
  is kube-controller-manager's (field manager ``kube-controller-manager``);
- a token Secret whose ServiceAccount does not exist (or has another uid) is deleted,
  with the Secret's uid as precondition;
- when a ServiceAccount goes (or is replaced by one of another uid), its token Secrets
  are deleted;
- when a token Secret goes, its name is taken out of its ServiceAccount's ``secrets``.

A write that races with another change is dropped: that change's own event brings the
Secret back to the controller. ``install`` wires it and the last-used marker into an
``ApiServer``.
"""

from __future__ import annotations

import base64
import logging
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

import orjson

from kubewerk.apiserver.auth.tokens import (
    LAST_USED_LABEL,
    SECRET_TOKEN_KEY,
    ServiceAccountTokens,
    secret_value,
)
from kubewerk.apiserver.controllers import CONTROLLER_MANAGER
from kubewerk.apiserver.kindrules.secret_types import SERVICE_ACCOUNT_NAME_KEY
from kubewerk.apiserver.kinds.serviceaccounts import annotations_of
from kubewerk.apiserver.registry import Registry
from kubewerk.apiserver.request import Target
from kubewerk.apiserver.rest import ResourceApi
from kubewerk.apiserver.storage.base import Event, KeyNotFound, RevisionConflict, Store
from kubewerk.core.errors import ApiError
from kubewerk.core.jsoncopy import copy_json

if TYPE_CHECKING:
    from kubewerk.apiserver.app import ApiServer

JSON = dict[str, Any]
log = logging.getLogger("kubewerk.apiserver.sa_tokens")

SERVICE_ACCOUNT_TOKEN_TYPE = "kubernetes.io/service-account-token"
SA_NAME_ANNOTATION = SERVICE_ACCOUNT_NAME_KEY
SA_UID_ANNOTATION = "kubernetes.io/service-account.uid"
CA_KEY = "ca.crt"
NAMESPACE_KEY = "namespace"
SECRET_WORK = "sa-token-secret"
ACCOUNT_WORK = "sa-token-account"
APISERVER_MANAGER = "kube-apiserver"
"""The field manager of kube-apiserver's own writes (its loopback client's user agent)."""

_SECRETS = "/core/secrets/"
_ACCOUNTS = "/core/serviceaccounts/"


def _meta(obj: JSON | None) -> JSON:
    meta = (obj or {}).get("metadata")
    return meta if isinstance(meta, dict) else {}


def _data_bytes(secret: JSON, key: str) -> bytes:
    """The bytes of ``data[key]`` (stored as canonical base64); empty when absent."""
    data = secret.get("data")
    return secret_value(data.get(key) if isinstance(data, dict) else None)


def _b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode("ascii")


def is_token_of(secret: JSON, name: str, uid: str) -> bool:
    """kube's ``IsServiceAccountToken``: a token Secret annotated with ServiceAccount
    ``name`` and, when it names one, ``uid``."""
    if secret.get("type") != SERVICE_ACCOUNT_TOKEN_TYPE:
        return False
    annotations = annotations_of(secret)
    if annotations.get(SA_NAME_ANNOTATION) != name:
        return False
    annotated_uid = annotations.get(SA_UID_ANNOTATION) or ""
    return not annotated_uid or annotated_uid == uid


class TokensController:
    """kube-controller-manager's tokens controller over one store (see the module doc).

    ``tokens`` signs the legacy tokens; ``root_ca`` gives the CA bundle (PEM) to put in
    ``ca.crt``, or None when the server has none.
    """

    def __init__(
        self,
        store: Store,
        registry: Registry,
        api: ResourceApi,
        tokens: ServiceAccountTokens,
        root_ca: Callable[[], str | None],
    ) -> None:
        self.store = store
        self.registry = registry
        self.api = api
        self.tokens = tokens
        self.root_ca = root_ca

    # -- the SubController protocol ------------------------------------------------

    def work_for(self, ev: Event) -> Iterable[tuple[str, str]]:
        """A token Secret's change or removal; any ServiceAccount change or removal."""
        key = ev.key
        if key.startswith(_SECRETS):
            work = self._secret_work(ev.obj)
            return () if work is None else ((SECRET_WORK, work),)
        if key.startswith(_ACCOUNTS):
            meta = _meta(ev.obj)
            fields = (meta.get("namespace"), meta.get("name"), meta.get("uid"))
            if all(isinstance(f, str) and f for f in fields):
                return ((ACCOUNT_WORK, orjson.dumps(fields).decode()),)
        return ()

    def initial_work(self) -> Iterable[tuple[str, str]]:
        """Every token Secret stored (a ServiceAccount deleted while the server was down
        leaves Secrets that name a missing ServiceAccount: their sync deletes them)."""
        items, _, _ = self.store.list(_SECRETS)
        for _, secret in items:
            work = self._secret_work(secret)
            if work is not None:
                yield SECRET_WORK, work

    def process(self, kind: str, key: str) -> None:
        fields = orjson.loads(key)
        if kind == SECRET_WORK:
            namespace, name, uid, sa_name, sa_uid = fields
            self._sync_secret(namespace, name, uid, sa_name, sa_uid)
        elif kind == ACCOUNT_WORK:
            namespace, name, uid = fields
            self._sync_account(namespace, name, uid)

    @staticmethod
    def _secret_work(secret: JSON) -> str | None:
        """kube's secret queue key: the Secret's namespace, name and uid and the
        ServiceAccount name and uid it is annotated with (None: not a token Secret, or
        one without the fields the key needs)."""
        if secret.get("type") != SERVICE_ACCOUNT_TOKEN_TYPE:
            return None
        meta = _meta(secret)
        annotations = annotations_of(secret)
        fields = (
            meta.get("namespace"),
            meta.get("name"),
            meta.get("uid"),
            annotations.get(SA_NAME_ANNOTATION),
        )
        if not all(isinstance(f, str) and f for f in fields):
            return None
        sa_uid = annotations.get(SA_UID_ANNOTATION)
        return orjson.dumps([*fields, sa_uid if isinstance(sa_uid, str) else ""]).decode()

    # -- syncs -----------------------------------------------------------------------

    def _get(self, resource: str, namespace: str, name: str, uid: str) -> JSON | None:
        """The stored object, when it has ``uid`` (any uid when ``uid`` is empty)."""
        rtype = self.registry.get("", resource)
        if rtype is None:
            return None
        obj = self.store.get(rtype.key(namespace, name))
        if obj is None or (uid and _meta(obj).get("uid") != uid):
            return None
        return obj

    def _sync_secret(self, namespace: str, name: str, uid: str, sa_name: str, sa_uid: str) -> None:
        secret = self._get("secrets", namespace, name, uid)
        account = self._get("serviceaccounts", namespace, sa_name, sa_uid)
        if secret is None:
            if account is not None:
                self._remove_reference(account, name)
            return
        if account is None:
            self._delete_token(namespace, name, uid)
            return
        self._fill(account, secret)

    def _sync_account(self, namespace: str, name: str, uid: str) -> None:
        if self._get("serviceaccounts", namespace, name, uid) is not None:
            return
        rtype = self.registry.get("", "secrets")
        if rtype is None:
            return
        items, _, _ = self.store.list(rtype.ns_prefix(namespace))
        for _, secret in items:
            if is_token_of(secret, name, uid):
                self._delete_token(namespace, _meta(secret).get("name", ""), _meta(secret)["uid"])

    def _fill(self, account: JSON, secret: JSON) -> None:
        """kube's ``generateTokenIfNeeded``: the missing token and namespace, the CA when
        it differs, and both annotations, in one update."""
        root_ca = self.root_ca()
        ca = root_ca.encode("utf-8") if root_ca else b""
        needs_ca = bool(ca) and _data_bytes(secret, CA_KEY) != ca
        needs_namespace = not _data_bytes(secret, NAMESPACE_KEY)
        needs_token = not _data_bytes(secret, SECRET_TOKEN_KEY)
        if not (needs_ca or needs_namespace or needs_token):
            return
        new = copy_json(secret)
        meta = new["metadata"]
        data = new.get("data")
        if not isinstance(data, dict):
            data = new["data"] = {}
        if needs_ca:
            data[CA_KEY] = _b64(ca)
        if needs_namespace:
            data[NAMESPACE_KEY] = _b64(str(meta.get("namespace", "")).encode("utf-8"))
        if needs_token:
            token = self.tokens.issue_legacy(account, str(meta.get("name", "")))
            data[SECRET_TOKEN_KEY] = _b64(token.encode("ascii"))
        annotations = meta.get("annotations")
        if not isinstance(annotations, dict):
            annotations = meta["annotations"] = {}
        account_meta = _meta(account)
        annotations[SA_NAME_ANNOTATION] = account_meta.get("name", "")
        annotations[SA_UID_ANNOTATION] = account_meta.get("uid", "")
        self._update("secrets", new, CONTROLLER_MANAGER)

    def _remove_reference(self, account: JSON, secret_name: str) -> None:
        """kube's ``removeSecretReference``: ``secret_name`` out of ``secrets``."""
        refs = account.get("secrets")
        if not isinstance(refs, list) or not any(
            isinstance(r, dict) and r.get("name") == secret_name for r in refs
        ):
            return
        new = copy_json(account)
        new["secrets"] = [
            r for r in refs if not (isinstance(r, dict) and r.get("name") == secret_name)
        ]
        self._update("serviceaccounts", new, CONTROLLER_MANAGER)

    def _delete_token(self, namespace: str, name: str, uid: str) -> None:
        """Delete a token Secret, if it still has ``uid`` (kube's UID precondition)."""
        rtype = self.registry.get("", "secrets")
        if rtype is None:
            return
        target = Target(rtype, rtype.storage_version, namespace, name)
        try:
            self.api.delete(target, {"preconditions": {"uid": uid}}, {})
        except ApiError as exc:
            # gone already, or replaced (the precondition failed): nothing to delete
            if exc.code not in (404, 409):
                log.warning("delete of token Secret %s/%s failed: %s", namespace, name, exc.message)

    def _update(self, resource: str, obj: JSON, manager: str) -> None:
        update(self.registry, self.api, resource, obj, manager)


def update(registry: Registry, api: ResourceApi, resource: str, obj: JSON, manager: str) -> bool:
    """Write ``obj`` (a changed copy of a stored core/v1 object, its resourceVersion
    kept) as ``manager``; a write that raced with another change, or whose object is
    gone or refused, is dropped (False) and logged when it was refused."""
    rtype = registry.get("", resource)
    if rtype is None:
        return False
    meta = _meta(obj)
    target = Target(rtype, rtype.storage_version, meta.get("namespace"), meta.get("name"))
    try:
        api.update(target, obj, {"fieldManager": manager})
    except (KeyNotFound, RevisionConflict):
        return False
    except ApiError as exc:
        if exc.code not in (404, 409):
            log.warning(
                "update of %s %s/%s failed: %s",
                resource,
                meta.get("namespace"),
                meta.get("name"),
                exc.message,
            )
        return False
    return True


def last_used_marker(registry: Registry, api: ResourceApi) -> Callable[[JSON, str], None]:
    """What kube-apiserver does when a legacy token is used: the day goes into its
    Secret's ``kubernetes.io/legacy-token-last-used`` label (field manager
    ``kube-apiserver``; a failed write is logged and the request still authenticated)."""

    def mark(secret: JSON, day: str) -> None:
        new = copy_json(secret)
        labels = new["metadata"].get("labels")
        if not isinstance(labels, dict):
            labels = new["metadata"]["labels"] = {}
        labels[LAST_USED_LABEL] = day
        try:
            update(registry, api, "secrets", new, APISERVER_MANAGER)
        except Exception:  # kube logs a failed label write; the request goes on
            log.exception(
                "labelling the legacy token Secret %s with its last use failed",
                _meta(new).get("name"),
            )

    return mark


def install(server: ApiServer) -> TokensController:
    """Run the tokens controller on ``server``'s built-in controllers (its CA read at each
    sync, so one set after construction counts) and record legacy-token use."""
    controller = TokensController(
        server.store,
        server.registry,
        server.api,
        server.service_accounts,
        lambda: server.controllers.root_ca,
    )
    server.controllers.add((SECRET_WORK, ACCOUNT_WORK), controller)
    server.service_accounts.mark_used = last_used_marker(server.registry, server.api)
    return controller
