"""Connections to member clusters, with per-member backoff: :class:`MemberPool`.

A member is reached through the kubeconfig held in a Secret of the ClusterSet's
namespace (``kubeconfigSecretRef``: name and key, optional ``context``). The pool keeps
one :class:`~kubewerk.client.Client` per (namespace, Secret, key, context) and shares it
between every controller and every federated object, so a member is one connection pool
and one backoff state:

- a call through :meth:`MemberPool.call` that cannot reach the member (no HTTP answer,
  or a 5xx/429 after the client's own retries) puts the member in backoff: further calls
  fail at once with :class:`MemberUnavailable` (carrying ``retry_in``) until the backoff
  ends, doubling from ``backoff_base`` to ``backoff_cap`` seconds per consecutive
  failure; the first call that gets an answer ends it. So one member that is down costs
  the others nothing, and is not hammered by every object placed on it;
- a Secret that is missing, lacks the key, or holds an unusable kubeconfig is a failure
  of that member too (reported with the reason, retried with the same backoff);
- :meth:`MemberPool.probe` re-reads the Secret (a rotated kubeconfig replaces the client)
  and asks the member for ``/version``: how the ClusterSet controller tells reachable
  from unreachable.

The kubeconfig text is parsed by :func:`kubewerk.client.config.load_kubeconfig` from a
private temporary file (0600 in a 0700 directory, removed at once); credentials must be
inline (``*-data`` fields, token) since relative file paths mean nothing in a Secret.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import os
import tempfile
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from kubewerk.client import Client, RetryPolicy
from kubewerk.client.config import load_kubeconfig
from kubewerk.client.errors import (
    AlreadyExists,
    ApiError,
    ConfigError,
    NotFound,
    ServerUnreachable,
)
from kubewerk.client.resources import NAMESPACE, SECRET

__all__ = ["MemberKey", "MemberPool", "MemberUnavailable", "client_from_kubeconfig_text"]

T = TypeVar("T")

MemberKey = tuple[str, str, str, str]
"""(namespace, Secret name, key, context or "")."""


class MemberUnavailable(Exception):
    """A member cannot be used now: ``why`` in one sentence, ``retry_in`` seconds until
    the pool tries it again."""

    def __init__(self, why: str, retry_in: float) -> None:
        super().__init__(why)
        self.why = why
        self.retry_in = retry_in


@dataclass(slots=True)
class _Member:
    fingerprint: bytes = b""
    client: Client | None = None
    failures: int = 0
    retry_at: float = 0.0
    last_error: str = ""
    namespaces: set[str] = field(default_factory=set)
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)


def client_from_kubeconfig_text(
    text: str, context: str | None, *, timeout: float, retry: RetryPolicy
) -> Client:
    """A client for ``context`` (default: the current context) of a kubeconfig given as
    text; raises :class:`~kubewerk.client.errors.ConfigError` when it is unusable."""
    with tempfile.TemporaryDirectory(prefix="kubewerk-member-") as tmp:
        path = os.path.join(tmp, "kubeconfig")
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
        config = load_kubeconfig(path, context)
    return Client(config, timeout=timeout, retry=retry)


def _is_outage(exc: BaseException) -> bool:
    if isinstance(exc, ServerUnreachable):
        return True
    return isinstance(exc, ApiError) and (exc.code >= 500 or exc.code == 429)


class MemberPool:
    """Member clients and their backoff (see the module docstring)."""

    def __init__(
        self,
        host: Client,
        *,
        timeout: float = 10.0,
        backoff_base: float = 0.5,
        backoff_cap: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.host = host
        self.timeout = timeout
        self.backoff_base = backoff_base
        self.backoff_cap = backoff_cap
        self.clock = clock
        # one quick retry inside the client; the pool's backoff does the rest
        self.retry = RetryPolicy(max_retries=1, base=0.05, cap=0.2, max_retry_after=2.0)
        self._members: dict[MemberKey, _Member] = {}

    @staticmethod
    def key(namespace: str, member: Mapping[str, Any]) -> MemberKey:
        """The pool key of a ClusterSet member (``spec.clusters[]`` entry, JSON names)."""
        ref = member.get("kubeconfigSecretRef") or {}
        return (
            namespace,
            str(ref.get("name", "")),
            str(ref.get("key") or "kubeconfig"),
            str(member.get("context") or ""),
        )

    def retry_in(self, key: MemberKey) -> float | None:
        """Seconds until a member in backoff is tried again (None: not in backoff)."""
        m = self._members.get(key)
        if m is None or m.failures == 0:
            return None
        return max(0.0, m.retry_at - self.clock())

    def _fail(self, m: _Member, why: str) -> MemberUnavailable:
        m.failures += 1
        delay = min(self.backoff_cap, self.backoff_base * (2 ** (m.failures - 1)))
        m.retry_at = self.clock() + delay
        m.last_error = why
        return MemberUnavailable(why, delay)

    def _gate(self, m: _Member) -> None:
        if m.failures and self.clock() < m.retry_at:
            raise MemberUnavailable(m.last_error, m.retry_at - self.clock())

    async def _load(self, key: MemberKey, m: _Member) -> Client:
        namespace, secret, data_key, context = key
        try:
            obj = await self.host.get(SECRET, secret, namespace)
        except NotFound:
            raise self._fail(m, f'Secret "{secret}" not found in namespace "{namespace}"') from None
        raw = (obj.get("data") or {}).get(data_key)
        if not isinstance(raw, str):
            raise self._fail(m, f'Secret "{secret}" has no key "{data_key}"')
        try:
            text = base64.b64decode(raw, validate=True)
        except (binascii.Error, ValueError):
            raise self._fail(m, f'Secret "{secret}" key "{data_key}" is not base64') from None
        fingerprint = text + b"\x00" + context.encode()
        if m.client is not None and fingerprint == m.fingerprint:
            return m.client
        try:
            client = client_from_kubeconfig_text(
                text.decode("utf-8", "replace"),
                context or None,
                timeout=self.timeout,
                retry=self.retry,
            )
        except ConfigError as exc:
            raise self._fail(m, f'Secret "{secret}" key "{data_key}": {exc}') from None
        old, m.client, m.fingerprint = m.client, client, fingerprint
        m.namespaces.clear()
        if old is not None:
            await old.close()
        return client

    async def _client(self, key: MemberKey, *, reload: bool) -> tuple[_Member, Client]:
        m = self._members.setdefault(key, _Member())
        async with m.lock:
            if m.client is not None and not reload:
                return m, m.client
            self._gate(m)
            return m, await self._load(key, m)

    async def call(self, key: MemberKey, fn: Callable[[Client], Awaitable[T]]) -> T:
        """Run ``fn(client)`` against the member unless it is in backoff; an outage
        (see the module docstring) starts or extends the backoff and raises
        :class:`MemberUnavailable`; any other error (a 4xx answer) is raised as it is
        and ends the backoff, since the member answered."""
        m, client = await self._client(key, reload=False)
        self._gate(m)
        try:
            result = await fn(client)
        except (ServerUnreachable, ApiError) as exc:
            if _is_outage(exc):
                raise self._fail(m, str(exc)) from None
            m.failures = 0
            raise
        m.failures = 0
        return result

    async def probe(self, key: MemberKey) -> str | None:
        """Re-read the member's Secret and ask it for ``/version``, ignoring the
        backoff; None when it answers, else why not (and the backoff is extended)."""
        m = self._members.setdefault(key, _Member())
        try:
            async with m.lock:
                client = await self._load(key, m)
        except MemberUnavailable as exc:
            return exc.why
        try:
            await client.request("GET", "/version")
        except (ServerUnreachable, ApiError) as exc:
            if _is_outage(exc):
                return self._fail(m, str(exc)).why
            # an answer, even a refusal (e.g. 403 for /version), means it is reachable
        m.failures = 0
        return None

    async def ensure_namespace(self, key: MemberKey, client: Client, namespace: str) -> None:
        """Create ``namespace`` in the member unless this pool already saw it there."""
        m = self._members.get(key)
        if m is not None and namespace in m.namespaces:
            return
        try:
            await client.get(NAMESPACE, namespace)
        except NotFound:
            with contextlib.suppress(AlreadyExists):
                await client.create(
                    {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}
                )
        if m is not None:
            m.namespaces.add(namespace)

    async def close(self) -> None:
        """Close every member client."""
        members, self._members = self._members, {}
        for m in members.values():
            if m.client is not None:
                await m.client.close()
