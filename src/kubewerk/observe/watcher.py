"""Feeding a :class:`~kubewerk.observe.state.ClusterState` from a cluster: once
(:func:`snapshot`, for the kubectl plugin) or continuously (:class:`ClusterWatcher`,
for the dashboard).

Which kinds are watched: every kind a CustomResourceDefinition defines (in its storage
version, else its first served one), with the refs of its ``kubewerk.dev/references``
annotation. A user who may not list CRDs (the built-in ``view`` role may not) gets the
kinds from discovery instead: every resource of a group whose name has a dot and is
not one of Kubernetes' own (``*.k8s.io``, ``*.kubernetes.io``) — the groups a CRD may
use without an approval annotation — without refs (the graph is then empty). A kind
whose objects cannot be listed (403) is shown with the error instead of failing the
whole page. Events are read as ``v1`` Events (which ``view`` may read).

:class:`ClusterWatcher` keeps the state current with one list-then-watch per kind, one
for the CRDs (kinds come and go as CRDs do) and one for the Events, each resuming from
its last resourceVersion after a dropped connection and relisting after 410 Gone.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

from kubewerk.client.client import Client
from kubewerk.client.errors import ApiError, Forbidden, Gone, NotFound, ServerUnreachable
from kubewerk.client.resources import CORE_EVENT, CRD, ResourceType
from kubewerk.client.watch import Backoff, Listed, list_watch
from kubewerk.model.ref_fields import REFERENCES_ANNOTATION, RefField, parse_references
from kubewerk.observe.resourcenames import read_served
from kubewerk.observe.state import ClusterState, KindInfo, KindKey

__all__ = ["ClusterWatcher", "discover_kinds", "kind_of_crd", "snapshot"]

log = logging.getLogger("kubewerk.observe")


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def kind_of_crd(crd: dict[str, Any]) -> KindInfo | None:
    """The kind a CRD serves (storage version, else the first served one) and its refs;
    None for a CRD that serves nothing usable. An unreadable references annotation
    counts as no refs (``kubewerk lint`` reports it)."""
    spec = _mapping(crd.get("spec"))
    names = _mapping(spec.get("names"))
    group, kind, plural = spec.get("group"), names.get("kind"), names.get("plural")
    if not isinstance(group, str) or not isinstance(kind, str) or not isinstance(plural, str):
        return None
    served = [_mapping(v) for v in spec.get("versions") or [] if _mapping(v).get("served")]
    chosen = next((v for v in served if v.get("storage")), served[0] if served else None)
    if chosen is None or not isinstance(chosen.get("name"), str):
        return None
    rt = ResourceType(group, chosen["name"], kind, plural, spec.get("scope") != "Cluster")
    text = _mapping(_mapping(crd.get("metadata")).get("annotations")).get(REFERENCES_ANNOTATION)
    refs: tuple[RefField, ...] = ()
    if isinstance(text, str):
        try:
            refs = parse_references(text)
        except ValueError:
            refs = ()
    return KindInfo(rt, refs)


def _custom_group(group: str) -> bool:
    return "." in group and not group.endswith((".k8s.io", ".kubernetes.io"))


async def _discovered(client: Client) -> list[KindInfo]:
    groups = await client.request("GET", "/apis")
    found: list[KindInfo] = []
    for entry in _mapping(groups).get("groups") or []:
        name = _mapping(entry).get("name")
        preferred = _mapping(_mapping(entry).get("preferredVersion")).get("version")
        if not isinstance(name, str) or not _custom_group(name) or not isinstance(preferred, str):
            continue
        try:
            doc = await client.request("GET", f"/apis/{name}/{preferred}")
        except NotFound:
            continue
        for res in _mapping(doc).get("resources") or []:
            res = _mapping(res)
            plural, kind = res.get("name"), res.get("kind")
            if not isinstance(plural, str) or "/" in plural or not isinstance(kind, str):
                continue
            verbs = res.get("verbs") or []
            if "list" not in verbs:
                continue
            rt = ResourceType(name, preferred, kind, plural, bool(res.get("namespaced")))
            found.append(KindInfo(rt))
    return found


async def discover_kinds(client: Client) -> tuple[list[KindInfo], str | None]:
    """The kinds to watch and the CRD list's resourceVersion (None when they came from
    discovery because CRDs may not be listed)."""
    try:
        listed = await client.list_all(CRD, page_size=250)
    except Forbidden:
        return await _discovered(client), None
    kinds = [k for k in (kind_of_crd(c) for c in listed.items) if k is not None]
    return kinds, listed.resource_version


async def _list_kind(
    client: Client, state: ClusterState, info: KindInfo, namespace: str | None
) -> str | None:
    """List one kind into the state; its resourceVersion, or None when forbidden."""
    ns = namespace if info.rt.namespaced else None
    try:
        listed = await client.list_all(info.rt, ns)
    except Forbidden as exc:
        state.kind_error(info.key, f"cannot list {info.rt.group_resource}: {exc.message or exc}")
        state.replace(info.key, [])
        return None
    state.kind_error(info.key, None)
    state.replace(info.key, listed.items)
    return listed.resource_version


async def snapshot(
    client: Client,
    *,
    namespace: str | None = None,
    name: str = "cluster",
    discovery: bool = True,
) -> ClusterState:
    """The state of the cluster now: every kind (see the module doc), its objects (of
    ``namespace`` only, when given) and the Events; with ``discovery``, also every
    resource the server serves (:attr:`ClusterState.served`, what a typed kind name is
    resolved against; left empty when ``/api`` or ``/apis`` cannot be read). Raises the
    client's errors for an unreachable or refusing server (a 403 on one kind is kept as
    that kind's error)."""
    state = ClusterState(name=name)
    kinds, _rv = await discover_kinds(client)

    async def served() -> None:
        try:
            state.served = await read_served(client)
        except ApiError:
            state.served = ()

    for info in kinds:
        state.set_kind(info)
    await asyncio.gather(
        *(_list_kind(client, state, info, namespace) for info in kinds),
        *([served()] if discovery else []),
    )
    try:
        events = await client.list_all(CORE_EVENT, namespace)
    except Forbidden:
        events = None
    if events is not None:
        state.replace_events(events.items)
    return state


class ClusterWatcher:
    """Keeps ``state`` current (see the module doc) until :meth:`stop`. ``namespace``
    limits the objects and Events read (None: all namespaces)."""

    def __init__(
        self, client: Client, state: ClusterState, *, namespace: str | None = None
    ) -> None:
        self.client = client
        self.state = state
        self.namespace = namespace
        self._kind_tasks: dict[KindKey, asyncio.Task[None]] = {}
        self._tasks: list[asyncio.Task[None]] = []
        self.synced = asyncio.Event()
        """Set once the kinds, their objects and the Events were listed once."""
        self._pending: set[KindKey] = set()
        self._events_listed = False

    async def start(self) -> None:
        """Start watching (returns at once; :attr:`synced` tells when the first lists are in)."""
        self._tasks.append(asyncio.create_task(self._kinds_loop(), name="observe:kinds"))
        self._tasks.append(asyncio.create_task(self._events_loop(), name="observe:events"))

    async def stop(self) -> None:
        """Stop every watch and wait for them to end."""
        tasks = [*self._tasks, *self._kind_tasks.values()]
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._tasks.clear()
        self._kind_tasks.clear()

    def _check_synced(self) -> None:
        if not self._pending and self._events_listed and self._kinds_listed:
            self.synced.set()

    _kinds_listed = False

    def _set_kinds(self, kinds: list[KindInfo]) -> None:
        wanted = {k.key: k for k in kinds}
        for key in list(self._kind_tasks):
            if key not in wanted:
                self._kind_tasks.pop(key).cancel()
                self._pending.discard(key)
                self.state.remove_kind(key)
        for key, info in wanted.items():
            old = self.state.kinds.get(key)
            if old is not None and old.rt == info.rt:
                if old.refs != info.refs:
                    self.state.set_kind(KindInfo(info.rt, info.refs, old.error))
                continue
            if key in self._kind_tasks:
                self._kind_tasks.pop(key).cancel()
            self.state.set_kind(info)
            self._pending.add(key)
            self._kind_tasks[key] = asyncio.create_task(
                self._kind_loop(info), name=f"observe:{key.label}"
            )
        self._kinds_listed = True
        self._check_synced()

    async def _kinds_loop(self) -> None:
        backoff = Backoff()
        while True:
            try:
                kinds, rv = await discover_kinds(self.client)
            except (ApiError, ServerUnreachable) as exc:
                wait = backoff.next()
                log.warning("dashboard: cannot read the kinds (%s); retrying in %.1fs", exc, wait)
                await asyncio.sleep(wait)
                continue
            backoff.reset()
            self._set_kinds(kinds)
            if rv is None:  # discovery only: look again now and then
                await asyncio.sleep(30)
                continue
            crds: dict[str, dict[str, Any]] = {}
            async for item in list_watch(self.client, CRD, backoff=backoff):
                if isinstance(item, Listed):
                    crds = {str(_mapping(c.get("metadata")).get("name")): c for c in item.items}
                elif item.type in ("ADDED", "MODIFIED"):
                    crds[str(_mapping(item.object.get("metadata")).get("name"))] = item.object
                elif item.type == "DELETED":
                    crds.pop(str(_mapping(item.object.get("metadata")).get("name")), None)
                else:
                    continue
                self._set_kinds(
                    [k for k in (kind_of_crd(c) for c in crds.values()) if k is not None]
                )

    async def _kind_loop(self, info: KindInfo) -> None:
        key = info.key
        backoff = Backoff()
        ns = self.namespace if info.rt.namespaced else None
        rv: str | None = None
        while True:
            if rv is None:
                try:
                    rv = await _list_kind(self.client, self.state, info, self.namespace)
                except (ApiError, ServerUnreachable) as exc:
                    self.state.kind_error(key, str(exc))
                    await asyncio.sleep(backoff.next())
                    continue
                self._pending.discard(key)
                self._check_synced()
                if rv is None:  # forbidden: look again later
                    await asyncio.sleep(30)
                    continue
                backoff.reset()
            try:
                async for event in self.client.watch(
                    info.rt, ns, resource_version=rv, timeout_seconds=300
                ):
                    if event.resource_version:
                        rv = event.resource_version
                    if event.type != "BOOKMARK":
                        self.state.apply(key, event.type, event.object)
            except Gone:
                rv = None
            except (ApiError, ServerUnreachable) as exc:
                wait = backoff.next()
                log.info(
                    "dashboard: watch %s interrupted (%s); again in %.1fs", key.label, exc, wait
                )
                await asyncio.sleep(wait)

    async def _events_loop(self) -> None:
        while True:
            try:
                await self.client.list(CORE_EVENT, self.namespace, limit=1)
                break
            except Forbidden:  # no Events for this user: the pages show none
                self._events_listed = True
                self._check_synced()
                return
            except (ApiError, ServerUnreachable):
                await asyncio.sleep(1)
        async for item in list_watch(self.client, CORE_EVENT, self.namespace):
            if isinstance(item, Listed):
                self.state.replace_events(list(item.items))  # dicts from the API
                self._events_listed = True
                self._check_synced()
            elif item.type != "BOOKMARK":
                self.state.apply_event(item.type, item.object)
