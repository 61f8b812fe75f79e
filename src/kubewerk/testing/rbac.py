"""Run an operator as its ServiceAccount, with its generated RBAC, against an
authorizing embedded server -- so a missing permission fails the operator's own tests
with the exact 403 a cluster would answer.

The pieces work without pytest:

- :func:`authorizing_server`: an :class:`~kubewerk.apiserver.server.EmbeddedServer`
  with bearer-token authentication (an admin token in ``system:masters``) and RBAC, whose
  authorizer records every request it refuses (:class:`RecordingAuthorizer`);
- :func:`operator_rbac` (re-exported from :mod:`kubewerk.lifecycle.rbac`): the objects
  ``kubewerk gen rbac`` writes; :func:`without_permission` takes one verb away;
- :func:`apply_objects`: create (or replace) them as the admin;
- :func:`service_account_kubeconfig`: a kubeconfig holding a token the server issues
  for the ServiceAccount through the ``TokenRequest`` API (``serviceaccounts/token``,
  what ``kubectl create token`` calls), written private to the user;
- :class:`ServiceAccountRun`: all of the above for one manager -- apply, token, client,
  start -- and the 403s its ServiceAccount received, worded as kube-apiserver words them.

With the pytest plugin, mark a test ``@pytest.mark.kubewerk_rbac`` (or run pytest with
``--kubewerk-rbac``): ``kube_server`` is then such a server, ``kube_client`` and
``kube_kubeconfig`` act as the admin, and ``run_manager(mgr)`` runs the manager (or
``Platform``) as its ServiceAccount with its generated RBAC (``rbac=`` to give other
objects, ``namespace=`` for the ServiceAccount's namespace). A refused request fails the
test: at once if the manager cannot start (its caches cannot list), else when the test
ends, with every 403 message.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import yaml

from kubewerk.apiserver.auth.types import Attributes, Authorizer, Decision, UserInfo
from kubewerk.apiserver.server import EmbeddedServer
from kubewerk.apiserver.storage import open_store
from kubewerk.client.client import Client
from kubewerk.client.errors import AlreadyExists
from kubewerk.lifecycle.rbac import operator_rbac

__all__ = [
    "ADMIN_USER",
    "PermissionDenied",
    "RecordingAuthorizer",
    "ServiceAccountRun",
    "apply_objects",
    "authorizing_server",
    "operator_rbac",
    "service_account_kubeconfig",
    "service_account_user",
    "without_permission",
    "write_kubeconfig",
]

ADMIN_USER: Final = "kubewerk-admin"
"""The admin of an :func:`authorizing_server` (group ``system:masters``)."""
TOKEN_API_VERSION: Final = "authentication.k8s.io/v1"


class PermissionDenied(AssertionError):
    """The operator's ServiceAccount was refused a request; the message lists every 403."""


def service_account_user(namespace: str, name: str) -> str:
    """The user name of a ServiceAccount's tokens."""
    return f"system:serviceaccount:{namespace}:{name}"


@dataclass
class RecordingAuthorizer:
    """An authorizer that answers as ``inner`` and records what it refuses to the users
    in ``watched`` (every user when empty), with kube-apiserver's 403 message."""

    inner: Authorizer
    watched: set[str] = field(default_factory=set)
    denied: list[tuple[Attributes, str]] = field(default_factory=list)

    def authorize(self, attrs: Attributes) -> Decision:
        """``inner``'s decision; a refusal to a watched user is recorded."""
        decision = self.inner.authorize(attrs)
        if not decision.allowed and (not self.watched or attrs.user.name in self.watched):
            self.denied.append((attrs, _message(attrs, decision.reason)))
        return decision

    def rules_for(self, user: UserInfo, namespace: str) -> tuple[list[Any], list[Any], bool]:
        """``inner``'s rules."""
        return self.inner.rules_for(user, namespace)

    def messages(self, user: str | None = None) -> list[str]:
        """The 403 messages recorded (for ``user`` only when given), first seen first,
        each once."""
        seen: dict[str, None] = {}
        for attrs, text in self.denied:
            if user is None or attrs.user.name == user:
                seen.setdefault(text, None)
        return list(seen)


def _message(attrs: Attributes, reason: str) -> str:
    from kubewerk.apiserver.auth.guard import forbidden

    return forbidden(attrs, reason).message


def authorizing_server(
    admin_token: str, **options: Any
) -> tuple[EmbeddedServer, RecordingAuthorizer]:
    """An in-memory embedded server with bearer-token authentication (``admin_token``
    is ``kubewerk-admin`` in ``system:masters``; ServiceAccount tokens are accepted too)
    and RBAC through a :class:`RecordingAuthorizer` (the RBAC kinds served, kube's
    default roles bootstrapped; escalation checks are not attached, as the recorder is
    not the server's own RBAC chain). Not started. The token file lives
    in a private temporary directory removed when the process exits (it is read once,
    at construction)."""
    from kubewerk.apiserver.auth.authorizer import rbac_authorizer

    directory = Path(tempfile.mkdtemp(prefix="kubewerk-rbac-"))
    token_file = directory / "tokens.csv"
    token_file.write_text(f'{admin_token},{ADMIN_USER},{ADMIN_USER},"system:masters"\n')
    token_file.chmod(0o600)
    store = open_store("memory")
    recorder = RecordingAuthorizer(rbac_authorizer(store))
    options.setdefault("bookmark_interval", 0.5)
    try:
        server = EmbeddedServer(store, token_auth_file=token_file, authorizer=recorder, **options)
    finally:
        token_file.unlink()
        directory.rmdir()
    return server, recorder  # EmbeddedServer serves the RBAC kinds and access reviews


def write_kubeconfig(
    path: Path, server: str, token: str, namespace: str = "default", *, ca_pem: bytes | None = None
) -> Path:
    """A kubeconfig (context ``kubewerk``) authenticating with ``token``; mode 0600."""
    cluster: dict[str, Any] = {"server": server}
    if ca_pem is not None:
        import base64

        cluster["certificate-authority-data"] = base64.b64encode(ca_pem).decode()
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "kubewerk", "cluster": cluster}],
        "users": [{"name": "kubewerk", "user": {"token": token}}],
        "contexts": [
            {
                "name": "kubewerk",
                "context": {"cluster": "kubewerk", "user": "kubewerk", "namespace": namespace},
            }
        ],
        "current-context": "kubewerk",
    }
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        yaml.safe_dump(config, out, sort_keys=False)
    return path


async def service_account_kubeconfig(
    admin: Client,
    server: str,
    namespace: str,
    name: str,
    path: Path,
    *,
    audiences: Sequence[str] = (),
    expiration_seconds: int = 3600,
    ca_pem: bytes | None = None,
) -> Path:
    """Ask the server for a token of ServiceAccount ``namespace/name`` (a TokenRequest,
    as ``kubectl create token``) and write a kubeconfig using it to ``path``."""
    spec: dict[str, Any] = {"expirationSeconds": expiration_seconds}
    if audiences:
        spec["audiences"] = list(audiences)
    answer = await admin.request(
        "POST",
        f"/api/v1/namespaces/{namespace}/serviceaccounts/{name}/token",
        body={"apiVersion": TOKEN_API_VERSION, "kind": "TokenRequest", "spec": spec},
    )
    token = str(answer["status"]["token"])
    return write_kubeconfig(path, server, token, namespace, ca_pem=ca_pem)


async def apply_objects(admin: Client, objects: Iterable[dict[str, Any]]) -> None:
    """Create each object (its namespace first when missing), replacing one that exists."""
    for obj in objects:
        ns = obj.get("metadata", {}).get("namespace")
        if ns:
            with contextlib.suppress(AlreadyExists):
                await admin.create(
                    {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}
                )
        try:
            await admin.create(obj)
        except AlreadyExists:
            rt = await admin.resolve(obj["apiVersion"], obj["kind"])
            current = await admin.get(rt, obj["metadata"]["name"], ns)
            meta = {**obj["metadata"], "resourceVersion": current["metadata"]["resourceVersion"]}
            await admin.replace({**obj, "metadata": meta})


def without_permission(
    objects: Sequence[dict[str, Any]], api_group: str, resource: str, verb: str
) -> list[dict[str, Any]]:
    """``objects`` with ``verb`` on ``api_group``/``resource`` taken out of every role
    (a rule left without verbs or resources is dropped). Raises ``ValueError`` when no
    role granted it, so a test cannot take away what was never there."""
    out: list[dict[str, Any]] = []
    removed = False
    for obj in objects:
        if obj["kind"] not in ("Role", "ClusterRole"):
            out.append(obj)
            continue
        rules: list[dict[str, Any]] = []
        for rule in obj.get("rules", []):
            hit = (
                api_group in rule.get("apiGroups", ())
                and resource in rule.get("resources", ())
                and verb in rule.get("verbs", ())
            )
            if not hit:
                rules.append(rule)
                continue
            removed = True
            others = [r for r in rule["resources"] if r != resource]
            if others:
                rules.append({**rule, "resources": others})
            fewer = [v for v in rule["verbs"] if v != verb]
            if fewer:
                rules.append({**rule, "resources": [resource], "verbs": fewer})
        out.append({**obj, "rules": rules})
    if not removed:
        raise ValueError(f"no role grants {verb} on {resource!r} in API group {api_group!r}")
    return out


class ServiceAccountRun:
    """Runs managers as their ServiceAccounts on an :func:`authorizing_server`."""

    def __init__(
        self,
        server: EmbeddedServer,
        recorder: RecordingAuthorizer,
        admin: Client,
        directory: Path,
    ) -> None:
        self.server = server
        self.recorder = recorder
        self.admin = admin
        self.directory = directory
        self.users: list[str] = []
        self.clients: list[Client] = []

    async def start(
        self,
        target: Any,
        *,
        namespace: str = "default",
        rbac: Sequence[dict[str, Any]] | None = None,
        grace: float = 1.0,
    ) -> Any:
        """Apply ``rbac`` (default: the generated RBAC of ``target``, a Manager or a
        Platform), get a token for its ServiceAccount, bind the manager to a client using
        it and start it. Raises :class:`PermissionDenied` with the 403 messages when the
        manager has not started ``grace`` seconds after the server first refused its
        ServiceAccount (its caches cannot list what they need)."""
        from kubewerk.lifecycle.platform import Platform

        manager = target.manager if isinstance(target, Platform) else target
        objects = list(rbac) if rbac is not None else operator_rbac(target, namespace)
        accounts = [o for o in objects if o["kind"] == "ServiceAccount"]
        if len(accounts) != 1:
            raise ValueError("the RBAC objects must hold exactly one ServiceAccount")
        sa_ns = accounts[0]["metadata"].get("namespace", namespace)
        sa_name = accounts[0]["metadata"]["name"]
        user = service_account_user(sa_ns, sa_name)
        self.recorder.watched.add(user)
        self.users.append(user)
        await apply_objects(self.admin, objects)
        path = self.directory / f"{sa_ns}-{sa_name}-{secrets.token_hex(4)}.kubeconfig"
        await service_account_kubeconfig(self.admin, self.server.url, sa_ns, sa_name, path)
        client = Client.from_environment(str(path))
        self.clients.append(client)
        manager.use_client(client)
        starting = asyncio.ensure_future(manager.start())
        loop = asyncio.get_running_loop()
        refused_at: float | None = None
        while not starting.done():
            if refused_at is None and self.recorder.messages(user):
                refused_at = loop.time()
            if refused_at is not None and loop.time() - refused_at > grace:
                # refused, and still not started: its caches cannot list what they need
                starting.cancel()
                with contextlib.suppress(BaseException):
                    await starting
                with contextlib.suppress(Exception):
                    await manager.stop()
                report = self.report(user)
                self.users.remove(user)  # reported here: not again when the test ends
                raise PermissionDenied(report)
            await asyncio.sleep(0.05)
        await starting
        return manager

    def report(self, user: str | None = None) -> str:
        """Every 403 a run ServiceAccount (or ``user``) got, one per line."""
        lines = []
        for each in [user] if user else self.users:
            lines.extend(self.recorder.messages(each))
        return "the operator's ServiceAccount was refused:\n" + "\n".join(lines)

    def denials(self) -> list[str]:
        """The 403 messages every ServiceAccount run so far got."""
        return [m for user in self.users for m in self.recorder.messages(user)]

    async def close(self) -> None:
        """Close the ServiceAccounts' clients."""
        for client in self.clients:
            await client.close()
