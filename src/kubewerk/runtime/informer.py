"""Informers and the shared cache.

An :class:`Informer` mirrors one resource (optionally scoped to namespaces, a label
selector and a field selector) into a local store by listing and then watching (see
:func:`kubewerk.client.watch.list_watch`: resume from the last resourceVersion and
bookmarks, relist after 410). It guarantees:

- the store converges to the server's state; after a relist, objects missing from the
  new list are reported as deletions and changed ones as updates, so handlers miss
  nothing across watch gaps and server restarts;
- handlers see events in order: ``on_add(obj)``, ``on_update(old, new)``,
  ``on_delete(obj)`` (plain dicts, fresh copies the handler may keep);
- every ``resync_period`` each object is re-announced as ``on_update(obj, obj)``;
- memory per object stays small: objects are stored as compact JSON bytes with
  ``metadata.managedFields`` stripped, and every read returns a fresh copy, so callers
  can never corrupt the cache;
- indexers (``name -> fn(obj) -> values``) answer :meth:`Informer.by_index` in O(1);
- a watch never hangs on a dead connection: ``watch_timeout`` (the server ends each
  watch after it, jittered 1x-2x) and ``watch_idle_timeout`` (a watch silent that long
  is resumed on a new connection) bound it, see :func:`kubewerk.client.watch.list_watch`.

A :class:`Cache` hands out one shared informer per kind (so controllers that watch the
same kind share one watch), scoped as configured, and answers typed reads.
"""

from __future__ import annotations

import asyncio
import builtins
import contextlib
import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import orjson

from kubewerk.client.client import Client, WatchEvent
from kubewerk.client.resources import ResourceType, is_model_class, resource_type_of
from kubewerk.client.watch import WATCH_IDLE_TIMEOUT, WATCH_TIMEOUT, Listed, list_watch
from kubewerk.core.gvk import join_key, object_key
from kubewerk.core.jsoncopy import copy_json
from kubewerk.core.selectors import parse_label_selector

log = logging.getLogger("kubewerk.runtime.informer")

Obj = dict[str, Any]
IndexFunc = Callable[[Obj], Iterable[str]]


class Handler(Protocol):
    """Receives an informer's events (synchronously, in order; must not block)."""

    def on_add(self, obj: Obj) -> None: ...
    def on_update(self, old: Obj, new: Obj) -> None: ...
    def on_delete(self, obj: Obj) -> None: ...


def strip_managed_fields(obj: Obj) -> Obj:
    """The default transform: drop ``metadata.managedFields`` (often half an object's size)."""
    meta = obj.get("metadata")
    if isinstance(meta, dict):
        meta.pop("managedFields", None)
    return obj


def namespace_index(obj: Obj) -> list[str]:
    """Index function: the object's namespace."""
    ns = (obj.get("metadata") or {}).get("namespace")
    return [ns] if ns else []


class Informer:
    """A list-watch mirror of one resource with handlers and indexes."""

    def __init__(
        self,
        client: Client,
        rt: ResourceType,
        namespaces: Iterable[str] | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        resync_period: float | None = None,
        transform: Callable[[Obj], Obj] | None = strip_managed_fields,
        page_size: int = 500,
        watch_timeout: int = WATCH_TIMEOUT,
        watch_idle_timeout: float | None = WATCH_IDLE_TIMEOUT,
    ) -> None:
        self.client = client
        self.rt = rt
        self.namespaces: tuple[str | None, ...] = (
            tuple(namespaces) if namespaces and rt.namespaced else (None,)
        )
        self.label_selector = label_selector
        self.field_selector = field_selector
        self.resync_period = resync_period
        self.transform = transform
        self.page_size = page_size
        self.watch_timeout = watch_timeout
        self.watch_idle_timeout = watch_idle_timeout
        self._store: dict[str, bytes] = {}
        self._handlers: list[Handler] = []
        self._indexers: dict[str, IndexFunc] = {"namespace": namespace_index}
        self._indices: dict[str, dict[str, set[str]]] = {"namespace": {}}
        self._indexed: dict[str, dict[str, tuple[str, ...]]] = {"namespace": {}}
        self._value_indexers: list[str] = []  # indexers but "namespace": re-run on updates
        self._synced_namespaces: set[str | None] = set()
        self.synced = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self.resource_version = ""

    # -- configuration ------------------------------------------------------------------

    def add_handler(self, handler: Handler) -> None:
        """Register a handler; objects already in the store are replayed to it as adds."""
        self._handlers.append(handler)
        for raw in list(self._store.values()):
            handler.on_add(orjson.loads(raw))

    def add_indexer(self, name: str, fn: IndexFunc) -> None:
        """Add an index; existing objects are indexed at once."""
        if name in self._indexers:
            raise ValueError(f"indexer {name!r} already exists")
        self._indexers[name] = fn
        self._value_indexers.append(name)
        self._indices[name] = {}
        self._indexed[name] = {}
        for key, raw in self._store.items():
            self._index(name, key, orjson.loads(raw))

    # -- reads --------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._store)

    def __contains__(self, key: object) -> bool:
        return key in self._store

    def keys(self) -> list[str]:
        """Every stored key."""
        return list(self._store)

    def get_raw(self, key: str) -> bytes | None:
        """The stored JSON bytes of the object under ``key`` (None when absent)."""
        return self._store.get(key)

    def get_by_key(self, key: str) -> Obj | None:
        """A fresh copy of the object stored under ``key`` (None when absent)."""
        raw = self._store.get(key)
        return None if raw is None else orjson.loads(raw)

    def get(self, name: str, namespace: str | None = None) -> Obj | None:
        """A fresh copy of the named object (None when absent)."""
        return self.get_by_key(join_key(namespace if self.rt.namespaced else None, name))

    def list(self, namespace: str | None = None, label_selector: str | None = None) -> list[Obj]:
        """Fresh copies of the stored objects, optionally filtered."""
        if namespace is not None and self.rt.namespaced:
            keys: Iterable[str] = sorted(self._indices["namespace"].get(namespace, ()))
        else:
            keys = sorted(self._store)
        out = [orjson.loads(self._store[k]) for k in keys]
        if label_selector:
            parsed = parse_label_selector(label_selector)
            out = [o for o in out if parsed.matches((o.get("metadata") or {}).get("labels") or {})]
        return out

    def by_index(self, name: str, value: str) -> builtins.list[Obj]:
        """Objects whose index ``name`` yields ``value``."""
        keys = self._indices[name].get(value, set())
        return [orjson.loads(self._store[k]) for k in sorted(keys)]

    def keys_by_index(self, name: str, value: str) -> builtins.list[str]:
        """Keys whose index ``name`` yields ``value``."""
        return sorted(self._indices[name].get(value, set()))

    @property
    def has_synced(self) -> bool:
        """True once the first list of every scoped namespace has been stored."""
        return self.synced.is_set()

    async def wait_synced(self, timeout: float | None = None) -> bool:
        """Wait for the first full list; False on timeout."""
        try:
            await asyncio.wait_for(self.synced.wait(), timeout)
        except TimeoutError:
            return False
        return True

    # -- store maintenance --------------------------------------------------------------

    def _index(self, name: str, key: str, obj: Obj) -> None:
        values = tuple(self._indexers[name](obj))
        old = self._indexed[name].get(key, ())
        if values == old:
            return
        index = self._indices[name]
        for value in old:
            bucket = index.get(value)
            if bucket is not None:
                bucket.discard(key)
                if not bucket:
                    del index[value]
        for value in values:
            index.setdefault(value, set()).add(key)
        if values:
            self._indexed[name][key] = values
        else:
            self._indexed[name].pop(key, None)

    def _unindex(self, key: str) -> None:
        for name in self._indexers:
            for value in self._indexed[name].pop(key, ()):
                bucket = self._indices[name].get(value)
                if bucket is not None:
                    bucket.discard(key)
                    if not bucket:
                        del self._indices[name][value]

    def _upsert(self, obj: Obj) -> None:
        if self.transform is not None:
            obj = self.transform(obj)
        key = object_key(obj)
        raw = orjson.dumps(obj)
        old_raw = self._store.get(key)
        self._store[key] = raw
        # The namespace index is a function of the key, which an update cannot change.
        for name in self._indexers if old_raw is None else self._value_indexers:
            self._index(name, key, obj)
        handlers = self._handlers
        if not handlers:
            return
        # The last handler gets ``obj`` itself: the store keeps only ``raw``, so nobody
        # else holds it, and one decode is saved; the others get fresh copies (of the old
        # object too: each handler may keep and edit what it is given).
        if old_raw is None:
            for h in handlers[:-1]:
                h.on_add(orjson.loads(raw))
            handlers[-1].on_add(obj)
        elif old_raw != raw:
            for h in handlers[:-1]:
                h.on_update(orjson.loads(old_raw), orjson.loads(raw))
            handlers[-1].on_update(orjson.loads(old_raw), obj)

    def _remove(self, key: str, final: Obj | None) -> None:
        raw = self._store.pop(key, None)
        if raw is None:
            return
        self._unindex(key)
        last = final if final is not None else orjson.loads(raw)
        if self.transform is not None:
            last = self.transform(last)
        for h in self._handlers:
            h.on_delete(copy_json(last) if len(self._handlers) > 1 else last)

    def _replace(self, namespace: str | None, items: builtins.list[Obj]) -> None:
        seen: set[str] = set()
        for obj in items:
            obj.setdefault("apiVersion", self.rt.api_version)
            obj.setdefault("kind", self.rt.kind)
            seen.add(object_key(obj))
            self._upsert(obj)
        if namespace is None:
            stale = [k for k in self._store if k not in seen]
        else:
            stale = [k for k in self._indices["namespace"].get(namespace, set()) if k not in seen]
        for key in stale:
            self._remove(key, None)

    def _apply(self, event: WatchEvent) -> None:
        if event.type in ("ADDED", "MODIFIED"):
            self._upsert(event.object)
        elif event.type == "DELETED":
            self._remove(object_key(event.object), event.object)

    # -- running ------------------------------------------------------------------------

    async def run(self) -> None:
        """List-watch every scoped namespace until cancelled (plus the resync timer)."""
        tasks = [
            asyncio.create_task(
                self._run_one(ns), name=f"informer {self.rt.group_resource} {ns or '*'}"
            )
            for ns in self.namespaces
        ]
        if self.resync_period:
            tasks.append(asyncio.create_task(self._resync_loop(self.resync_period)))
        self._tasks = tasks
        try:
            await asyncio.gather(*tasks)
        finally:
            for t in tasks:
                t.cancel()
            for t in tasks:
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await t

    async def _run_one(self, namespace: str | None) -> None:
        async for item in list_watch(
            self.client,
            self.rt,
            namespace,
            label_selector=self.label_selector,
            field_selector=self.field_selector,
            page_size=self.page_size,
            watch_timeout=self.watch_timeout,
            idle_timeout=self.watch_idle_timeout,
        ):
            try:
                if isinstance(item, Listed):
                    self._replace(namespace, item.items)
                    self.resource_version = item.resource_version
                    self._synced_namespaces.add(namespace)
                    if len(self._synced_namespaces) == len(self.namespaces):
                        self.synced.set()
                else:
                    rv = item.resource_version  # read first: a handler may keep and edit the object
                    self._apply(item)
                    if rv:
                        self.resource_version = rv
            except Exception:  # a handler bug must not kill the informer
                log.exception("informer %s: handling an event failed", self.rt.group_resource)

    async def _resync_loop(self, period: float) -> None:
        await self.synced.wait()
        while True:
            await asyncio.sleep(period)
            for raw in list(self._store.values()):
                for h in self._handlers:
                    h.on_update(orjson.loads(raw), orjson.loads(raw))


@dataclass(frozen=True)
class Scope:
    """What part of a kind a cache mirrors: namespaces (None = all), selectors."""

    namespaces: tuple[str, ...] | None = None
    label_selector: str | None = None
    field_selector: str | None = None


class Cache:
    """Shared informers, one per kind, started on demand; typed and dynamic reads.

    ``namespaces`` scopes every namespaced kind; ``by_kind`` overrides the scope per
    kind. Informers created after :meth:`start` start at once. ``watch_timeout`` and
    ``watch_idle_timeout`` go to every informer (see :class:`Informer`).
    """

    def __init__(
        self,
        client: Client,
        *,
        namespaces: Iterable[str] | None = None,
        by_kind: Mapping[Any, Scope] | None = None,
        resync_period: float | None = None,
        transform: Callable[[Obj], Obj] | None = strip_managed_fields,
        watch_timeout: int = WATCH_TIMEOUT,
        watch_idle_timeout: float | None = WATCH_IDLE_TIMEOUT,
    ) -> None:
        self.client = client
        self.watch_timeout = watch_timeout
        self.watch_idle_timeout = watch_idle_timeout
        self.default_scope = Scope(tuple(namespaces) if namespaces else None)
        self.by_kind: dict[ResourceType, Scope] = {
            resource_type_of(k): v for k, v in (by_kind or {}).items()
        }
        self.resync_period = resync_period
        self.transform = transform
        self._informers: dict[ResourceType, Informer] = {}
        self._tasks: dict[ResourceType, asyncio.Task[None]] = {}
        self._started = False

    def informer(self, kind: Any) -> Informer:
        """The shared informer for a kind (a ResourceType or a typed model class)."""
        rt = resource_type_of(kind)
        inf = self._informers.get(rt)
        if inf is None:
            scope = self.by_kind.get(rt, self.default_scope)
            namespaces = (
                scope.namespaces if scope.namespaces is not None else self.default_scope.namespaces
            )
            inf = Informer(
                self.client,
                rt,
                namespaces,
                label_selector=scope.label_selector,
                field_selector=scope.field_selector,
                resync_period=self.resync_period,
                transform=self.transform,
                watch_timeout=self.watch_timeout,
                watch_idle_timeout=self.watch_idle_timeout,
            )
            self._informers[rt] = inf
            if self._started:
                self._start(rt, inf)
        return inf

    def informers(self) -> list[Informer]:
        """Every informer created so far."""
        return list(self._informers.values())

    def _start(self, rt: ResourceType, inf: Informer) -> None:
        self._tasks[rt] = asyncio.create_task(inf.run(), name=f"informer {rt.group_resource}")

    def start(self) -> None:
        """Start every informer (and any created later)."""
        self._started = True
        for rt, inf in self._informers.items():
            if rt not in self._tasks:
                self._start(rt, inf)

    async def stop(self) -> None:
        """Cancel every informer and wait for them."""
        self._started = False
        tasks = list(self._tasks.values())
        self._tasks.clear()
        for t in tasks:
            t.cancel()
        for t in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await t

    @property
    def synced(self) -> bool:
        """True when every informer has completed its first list."""
        return all(i.has_synced for i in self._informers.values())

    async def wait_synced(self, timeout: float | None = None) -> bool:
        """Wait for every informer's first list; False on timeout."""
        try:
            await asyncio.wait_for(
                asyncio.gather(*(i.synced.wait() for i in self._informers.values())), timeout
            )
        except TimeoutError:
            return False
        return True

    async def get(self, kind: Any, name: str, namespace: str | None = None) -> Any:
        """The cached object (typed when ``kind`` is a model class), or None.

        Reading a kind nobody watches yet starts its informer and waits for its first list.
        """
        inf = self.informer(kind)
        if not inf.has_synced:
            if not self._started:
                raise RuntimeError("the cache is not started")
            await inf.synced.wait()
        obj = inf.get(name, namespace)
        if obj is None:
            return None
        return kind.model_validate(obj) if is_model_class(kind) else obj

    async def list(
        self, kind: Any, namespace: str | None = None, label_selector: str | None = None
    ) -> list[Any]:
        """Cached objects of a kind (typed when ``kind`` is a model class)."""
        inf = self.informer(kind)
        if not inf.has_synced:
            if not self._started:
                raise RuntimeError("the cache is not started")
            await inf.synced.wait()
        items = inf.list(namespace, label_selector)
        if is_model_class(kind):
            return [kind.model_validate(o) for o in items]
        return items

    def by_index(self, kind: Any, name: str, value: str) -> builtins.list[Any]:
        """Cached objects whose index ``name`` yields ``value`` (typed for model classes)."""
        items = self.informer(kind).by_index(name, value)
        if is_model_class(kind):
            return [kind.model_validate(o) for o in items]
        return items

    def keys_by_index(self, kind: Any, name: str, value: str) -> builtins.list[str]:
        """Keys (``namespace/name``) whose index ``name`` yields ``value``."""
        return self.informer(kind).keys_by_index(name, value)
