"""Controllers: level-triggered reconcilers over shared informers and a work queue.

A :class:`Controller` reconciles one kind (``For``), is also triggered by the children
it controls (``Owns``: events on a child enqueue the owner named by its controller
ownerReference) and by any other kind through a mapping function (``Watches``).
Guarantees:

- level-triggered: the reconcile function gets the newest cached copy of the object,
  never the event that caused the call, and an object is never reconciled by two
  workers at once (the work queue's rule); events arriving meanwhile coalesce into one
  more reconcile;
- at most ``max_concurrent_reconciles`` reconciles run at once; each is bounded by
  ``reconcile_timeout`` when set;
- an exception never kills a worker: it is logged with the object's context, counted
  (``controller_runtime_reconcile_errors_total``) and the object is retried with the
  queue's per-item backoff; a :class:`TerminalError` (or an object that does not fit
  the typed model) is not retried until the object changes; a 409 Conflict (a write
  that lost a race) is retried without counting as an error;
- an exception of a class Python raises for a programming error where Go panics at run
  time (:data:`PANIC_EXCEPTIONS`: ``AttributeError``, ``TypeError``, ``LookupError``,
  ``NameError``, ``ZeroDivisionError``, ``AssertionError``, ``RecursionError``) is also
  counted in ``controller_runtime_reconcile_panics_total``, as controller-runtime counts
  the panics it recovers from a reconcile (which it then treats as errors, as here);
- the result decides what happens next: done (backoff forgotten), requeue after a
  delay, or requeue with backoff (``Result(requeue=True)``);
- objects that are gone from the cache are not reconciled (cleanup belongs in
  finalizers, see :meth:`Context.finalize`);
- a reconcile hook (:func:`set_reconcile_hook`, what :mod:`kubewerk.observe.tracing`
  installs) sees every reconcile: the object, the outcome, and a context of its own
  around the call; without one a reconcile pays one comparison.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections.abc import Awaitable, Callable, Iterable, Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Generic, Protocol, TypeVar

import orjson

from kubewerk.client.client import Client
from kubewerk.client.errors import Conflict, NotFound
from kubewerk.client.resources import ResourceType, is_model_class, resource_type_of, to_dict
from kubewerk.core.gvk import join_key, object_key, parse_api_version, split_key
from kubewerk.core.jsoncopy import copy_json
from kubewerk.runtime import conditions as _conditions
from kubewerk.runtime.context_apply import ApplyMethods
from kubewerk.runtime.events import EventRecorder, EventType
from kubewerk.runtime.helpers import (
    OperationResult,
    create_or_patch,
    create_or_update,
    has_finalizer,
    is_deleting,
    merge_patch_diff,
    set_controller_reference,
)
from kubewerk.runtime.informer import Cache, Informer
from kubewerk.runtime.metrics import (
    RESULT_ERROR,
    RESULT_REQUEUE,
    RESULT_REQUEUE_AFTER,
    RESULT_SUCCESS,
    Metrics,
)
from kubewerk.runtime.predicates import Predicate
from kubewerk.runtime.queue import RateLimiter, ShutDown, WorkQueue

log = logging.getLogger("kubewerk.runtime.controller")

T = TypeVar("T")
Obj = dict[str, Any]

PANIC_EXCEPTIONS: Final[tuple[type[Exception], ...]] = (
    AttributeError,
    TypeError,
    LookupError,
    NameError,
    ZeroDivisionError,
    AssertionError,
    RecursionError,
)
"""The exceptions counted as panics: Python's counterparts of Go's run-time panics (a
nil dereference, an index or key out of range, a failed type assertion, division by
zero, an assertion, a runaway recursion), i.e. bugs in the reconcile rather than
failures it reports on purpose. They are errors too (logged, counted, retried)."""


class ReconcileTrace(Protocol):
    """What a reconcile hook returns for one reconcile (see :func:`set_reconcile_hook`).

    It is entered before the reconcile function is called and exited after it returned
    or raised, in the worker's task (so a context it sets there, such as the current
    span, is what the reconcile's own calls see); in between :meth:`given` gets the
    object the reconcile is given and :meth:`result` the outcome (one of the
    ``controller_runtime_reconcile_total`` result labels, and the exception on an
    error or conflict)."""

    def __enter__(self) -> object: ...

    def __exit__(self, exc_type: Any, exc: Any, tb: Any, /) -> None: ...

    def given(self, obj: Any) -> None: ...

    def result(self, result: str, error: BaseException | None) -> None: ...


ReconcileHook = Callable[["Controller[Any]", str], ReconcileTrace | None]
"""Called with the controller and the key of each reconcile about to run (the object
is in the cache); returns a :class:`ReconcileTrace` to follow it, or None."""

_reconcile_hook: ReconcileHook | None = None


def set_reconcile_hook(hook: ReconcileHook | None) -> ReconcileHook | None:
    """Install ``hook`` for every controller of this process (None removes it); returns
    the hook it replaces. With no hook a reconcile pays one comparison, nothing else
    (:mod:`kubewerk.observe.tracing` installs one for OpenTelemetry)."""
    global _reconcile_hook
    previous, _reconcile_hook = _reconcile_hook, hook
    return previous


@dataclass(frozen=True, slots=True)
class Result:
    """What a reconcile asks for next: nothing (done), a retry with backoff, or a retry
    after a delay."""

    requeue: bool = False
    requeue_after: float | None = None

    @staticmethod
    def done() -> Result:
        """Converged: forget the object's backoff."""
        return Result()

    @staticmethod
    def after(seconds: float) -> Result:
        """Reconcile again after ``seconds`` (e.g. to poll an external system)."""
        return Result(requeue_after=seconds)

    @staticmethod
    def again() -> Result:
        """Reconcile again with the per-item backoff."""
        return Result(requeue=True)


class TerminalError(Exception):
    """A reconcile failure that retrying cannot fix; the object waits for its next change."""


class ObjectLogger(logging.LoggerAdapter[logging.Logger]):
    """Prefixes every message with ``[controller namespace/name]`` and passes the
    context as ``extra``."""

    def process(
        self, msg: Any, kwargs: MutableMapping[str, Any]
    ) -> tuple[Any, MutableMapping[str, Any]]:
        extra = dict(self.extra or {})
        kwargs["extra"] = {**extra, **kwargs.get("extra", {})}
        return f"[{extra.get('controller')} {extra.get('object')}] {msg}", kwargs


def status_of(obj: Any) -> Any:
    """``to_dict(obj).get("status")``, without dumping the rest of a typed object.

    A kubewerk model (whose ``to_dict`` is :meth:`KubeModel.to_dict`) dumps only its
    ``status`` field with the same options, which gives the same value; anything else
    goes through :func:`kubewerk.client.resources.to_dict`.
    """
    if isinstance(obj, dict):
        return obj.get("status")
    from kubewerk.model.base import KubeModel  # here: dict-only operators never load pydantic

    if isinstance(obj, KubeModel) and type(obj).to_dict is KubeModel.to_dict:
        return obj.model_dump(mode="json", exclude_unset=True, include={"status"}).get("status")
    return to_dict(obj).get("status")


class Context(ApplyMethods):
    """What a reconcile gets besides the object: the client, the cache, a logger with
    object context, an event recorder, and helpers that write safely (server-side apply:
    ``apply`` and ``apply_status``, see :mod:`kubewerk.runtime.context_apply`)."""

    def __init__(
        self,
        controller: Controller[Any],
        key: str,
        snapshot: Obj | bytes,
    ) -> None:
        """``snapshot`` is the object as read (a dict, or the cache's JSON bytes, decoded
        only when a method first needs it: a reconcile that writes nothing never pays
        for it). The logger and the reconcile id are made on first use too."""
        self.controller = controller
        self.key = key
        self.namespace, self.name = split_key(key)
        self.client: Client = controller.client
        self.cache: Cache = controller.cache
        self.recorder: EventRecorder = controller.recorder
        if isinstance(snapshot, bytes):
            self._snapshot_raw: bytes | None = snapshot
            self._snapshot_obj: Obj | None = None
        else:
            self._snapshot_raw = None
            self._snapshot_obj = snapshot
        self._log: ObjectLogger | None = None
        self._reconcile_id: str | None = None

    @property
    def _snapshot(self) -> Obj:
        snap = self._snapshot_obj
        if snap is None:
            snap = self._snapshot_obj = orjson.loads(self._snapshot_raw or b"{}")
            self._snapshot_raw = None
        return snap

    @_snapshot.setter
    def _snapshot(self, value: Obj) -> None:
        self._snapshot_obj = value
        self._snapshot_raw = None

    @property
    def reconcile_id(self) -> str:
        """A unique id for this reconcile (in every log line's ``extra``)."""
        if self._reconcile_id is None:
            self._reconcile_id = str(uuid.uuid4())
        return self._reconcile_id

    @property
    def log(self) -> ObjectLogger:
        """A logger prefixing messages with ``[controller namespace/name]``."""
        if self._log is None:
            self._log = ObjectLogger(
                logging.getLogger(f"kubewerk.controller.{self.controller.name}"),
                {
                    "controller": self.controller.name,
                    "object": self.key,
                    "reconcileID": self.reconcile_id,
                },
            )
        return self._log

    @property
    def snapshot(self) -> Obj:
        """A copy of the object as last read from or written to the server."""
        raw = self._snapshot_raw
        data: Obj = orjson.loads(raw if raw is not None else orjson.dumps(self._snapshot_obj))
        return data

    # -- events -------------------------------------------------------------------------

    def event(
        self,
        type: EventType,
        reason: str,
        note: str = "",
        *,
        action: str = "Reconcile",
        regarding: Any = None,
        related: Any = None,
    ) -> None:
        """Record an Event about the reconciled object (or ``regarding``); never blocks."""
        self.recorder.event(
            regarding if regarding is not None else self._snapshot,
            type,
            reason,
            note,
            action=action,
            related=related,
        )

    # -- conditions ---------------------------------------------------------------------

    @staticmethod
    def set_condition(
        obj: Any, type: str, status: bool | _conditions.Status, reason: str, message: str = ""
    ) -> bool:
        """:func:`kubewerk.runtime.conditions.set_condition` (observedGeneration from
        the object)."""
        return _conditions.set_condition(obj, type, status, reason, message)

    # -- guarded writes -----------------------------------------------------------------

    def _refresh(self, obj: Any, written: Obj) -> None:
        self._snapshot = written
        if isinstance(obj, dict):
            # the reconcile's own copy: editing it must not edit the snapshot that
            # ensure_finalizer/remove_finalizer/patch_status diff against
            obj["metadata"] = copy_json(written.get("metadata", {}))
            return
        meta = getattr(obj, "metadata", None)
        if meta is not None:
            obj.metadata = type(meta).model_validate(written.get("metadata", {}))

    async def patch_status(self, obj: Any) -> bool:
        """Write the object's status if it changed since it was read, guarded by its
        resourceVersion: a concurrent change makes this raise Conflict (the controller
        requeues and the next reconcile recomputes status from fresh data, so no update
        is lost). Returns False when there was nothing to write."""
        new_status = status_of(obj)
        snapshot = self._snapshot
        old_status = snapshot.get("status")
        # merge_patch_diff({"status": old}, {"status": new}), without the wrapping dicts
        if isinstance(old_status, dict) and isinstance(new_status, dict):
            status_patch = merge_patch_diff(old_status, new_status)
            if not status_patch:
                return False
        elif old_status == new_status and type(old_status) is type(new_status):
            return False
        else:
            status_patch = new_status
        rv = (snapshot.get("metadata") or {}).get("resourceVersion")
        body = {"metadata": {"resourceVersion": rv}, "status": status_patch}
        written = await self.client.patch(
            self.controller.rt, self.name, body, self.namespace, subresource="status"
        )
        self._refresh(obj, written)
        return True

    async def _patch_finalizers(self, obj: Any, finalizers: list[str]) -> None:
        rv = (self._snapshot.get("metadata") or {}).get("resourceVersion")
        body = {"metadata": {"finalizers": finalizers or None, "resourceVersion": rv}}
        written = await self.client.patch(self.controller.rt, self.name, body, self.namespace)
        self._refresh(obj, written)

    async def ensure_finalizer(self, obj: Any, name: str) -> bool:
        """Add finalizer ``name`` (guarded write); False when it was already there."""
        current = list((self._snapshot.get("metadata") or {}).get("finalizers") or [])
        if name in current:
            return False
        await self._patch_finalizers(obj, [*current, name])
        return True

    async def remove_finalizer(self, obj: Any, name: str) -> bool:
        """Remove finalizer ``name`` (guarded write); False when it was not there.

        An object already gone (NotFound: the cache was a step behind a deletion that
        completed) counts as removed, as controller-runtime's callers ignore NotFound there.
        """
        current = list((self._snapshot.get("metadata") or {}).get("finalizers") or [])
        if name not in current:
            return False
        try:
            await self._patch_finalizers(obj, [f for f in current if f != name])
        except NotFound:
            return True
        return True

    async def finalize(
        self,
        obj: Any,
        name: str,
        cleanup: Callable[[Any, Context], Awaitable[None]],
        *,
        condition: str = "Ready",
    ) -> bool:
        """The finalizer pattern in one call.

        Not being deleted: make sure the finalizer is present; returns False (carry on).
        Being deleted with the finalizer: run ``cleanup``; on success remove the
        finalizer; on failure record a Warning Event ``CleanupFailed``, set condition
        ``condition`` to False with reason ``CleanupFailed`` and the error, and re-raise
        (the controller retries with backoff), so a stuck deletion is always visible.
        Returns True whenever the object is being deleted (the reconcile should stop).
        """
        if not is_deleting(self._snapshot):
            await self.ensure_finalizer(obj, name)
            return False
        if not has_finalizer(self._snapshot, name):
            return True
        try:
            await cleanup(obj, self)
        except Exception as exc:
            note = f"cleanup for finalizer {name} failed: {exc}"
            self.event("Warning", "CleanupFailed", note, action="Finalize")
            with contextlib.suppress(Exception):
                if self.set_condition(obj, condition, False, "CleanupFailed", note):
                    await self.patch_status(obj)
            raise
        await self.remove_finalizer(obj, name)
        self.event("Normal", "Finalized", f"finalizer {name} done", action="Finalize")
        return True

    # -- children -----------------------------------------------------------------------

    async def create_or_update(
        self,
        owner: Any,
        child: Any,
        mutate: Callable[[Obj], Awaitable[None] | None] | None = None,
        *,
        patch: bool = False,
    ) -> tuple[Obj, OperationResult]:
        """Create or update a child controlled by ``owner``.

        ``child`` is the desired object (dict or model); ``mutate``, when given, edits
        the current copy in place (otherwise the desired labels, annotations and every
        top-level field but metadata/status are copied over). The controller reference
        is (re)asserted on every write; a cached copy is used as the current state
        when the kind is watched. ``patch=True`` writes a merge patch instead of a PUT.
        """
        desired = to_dict(child)
        if "apiVersion" not in desired or "kind" not in desired:
            rt = resource_type_of(type(child))
            desired = {"apiVersion": rt.api_version, "kind": rt.kind, **desired}
        meta = desired.setdefault("metadata", {})
        owner_data = to_dict(owner)
        if not meta.get("namespace") and (owner_data.get("metadata") or {}).get("namespace"):
            meta["namespace"] = owner_data["metadata"]["namespace"]

        def apply(current: Obj) -> None:
            if mutate is not None:
                result = mutate(current)
                if result is not None:
                    raise TypeError("pass a plain function as mutate to Context.create_or_update")
            else:
                cmeta = current.setdefault("metadata", {})
                for field_name in ("labels", "annotations"):
                    if meta.get(field_name):
                        cmeta[field_name] = {**(cmeta.get(field_name) or {}), **meta[field_name]}
                for key, value in desired.items():
                    if key not in ("metadata", "status", "apiVersion", "kind"):
                        current[key] = value
            set_controller_reference(owner_data, current)

        current = None
        rt = await self.client.resolve(str(desired["apiVersion"]), str(desired["kind"]))
        informer = self.controller.cache_informer(rt)
        if informer is not None and informer.has_synced:
            current = informer.get(str(meta.get("name")), meta.get("namespace"))
        writer = create_or_patch if patch else create_or_update
        return await writer(self.client, desired, apply, current=current)


Reconciler = Callable[[T, Context], Awaitable[Result | None]]
Mapper = Callable[[Obj], Iterable[Any]]
ContextFactory = Callable[["Controller[Any]", str, "Obj | bytes"], Context]
"""Makes the :class:`Context` of one reconcile from the controller, the key and the
object as read (``Context`` itself is one); a layer above the runtime passes a factory
of a ``Context`` subclass to give its reconcilers more helpers."""


@dataclass
class Watch:
    """A secondary source: a kind, how its events map to keys, and its predicates."""

    kind: Any
    mapper: Mapper | None = None  # None: Owns (controller ownerReference to the For kind)
    predicates: Sequence[Predicate] = field(default_factory=tuple)


class _Enqueue:
    """Base of a controller's informer handlers: its predicates' methods bound once, and
    checked in order, stopping at the first that refuses (as ``all``)."""

    def __init__(self, ctrl: Controller[Any], predicates: Sequence[Predicate]) -> None:
        self.ctrl = ctrl
        self.predicates = tuple(predicates)
        self._create = tuple(p.create for p in self.predicates)
        self._update = tuple(p.update for p in self.predicates)
        self._delete = tuple(p.delete for p in self.predicates)

    def _enqueue(self, obj: Obj) -> None:
        raise NotImplementedError

    def on_add(self, obj: Obj) -> None:
        for passes in self._create:
            if not passes(obj):
                return
        self._enqueue(obj)

    def on_update(self, old: Obj, new: Obj) -> None:
        for passes in self._update:
            if not passes(old, new):
                return
        self._enqueue(new)

    def on_delete(self, obj: Obj) -> None:
        for passes in self._delete:
            if not passes(obj):
                return
        self._enqueue(obj)


class _EnqueueFor(_Enqueue):
    """Enqueues the object's own key."""

    def _enqueue(self, obj: Obj) -> None:
        self.ctrl.queue.add(object_key(obj))


class _EnqueueOwner(_Enqueue):
    """Enqueues the owner named by the object's controller ownerReference (old and new
    owner on updates)."""

    def __init__(self, ctrl: Controller[Any], predicates: Sequence[Predicate]) -> None:
        super().__init__(ctrl, predicates)
        self.group = ctrl.rt.group
        self.kind = ctrl.rt.kind

    def _owner_key(self, obj: Obj) -> str | None:
        meta = obj.get("metadata") or {}
        for ref in meta.get("ownerReferences") or []:
            if not ref.get("controller"):
                continue
            if ref.get("kind") != self.kind or _group_of(ref) != self.group:
                continue
            return join_key(
                meta.get("namespace") if self.ctrl.rt.namespaced else None, str(ref["name"])
            )
        return None

    def _enqueue(self, obj: Obj) -> None:
        key = self._owner_key(obj)
        if key is not None:
            self.ctrl.queue.add(key)

    def on_update(self, old: Obj, new: Obj) -> None:
        for passes in self._update:
            if not passes(old, new):
                return
        self._enqueue(old)
        self._enqueue(new)


def _group_of(ref: Mapping[str, Any]) -> str | None:
    """The API group of an ownerReference's apiVersion; None when it does not parse
    (controller-runtime's owner handler skips such a reference)."""
    try:
        return parse_api_version(str(ref.get("apiVersion", ""))).group
    except ValueError:
        return None


def _to_key(item: Any) -> str:
    """A mapper's item as a queue key: a key (``"ns/name"`` or ``"name"``) as it is, an
    ``(ns, name)`` pair, or an object (dict or typed model) by its metadata."""
    if isinstance(item, str):
        return item
    if isinstance(item, tuple) and len(item) == 2:
        ns, name = item
        return join_key(ns, str(name))
    if isinstance(item, dict):
        return object_key(item)
    data = to_dict(item)
    return object_key(data)


class _EnqueueMapped(_Enqueue):
    """Enqueues the keys a mapping function returns for the object."""

    def __init__(
        self, ctrl: Controller[Any], mapper: Mapper, predicates: Sequence[Predicate]
    ) -> None:
        super().__init__(ctrl, predicates)
        self.mapper = mapper

    def _enqueue(self, obj: Obj) -> None:
        try:
            items = list(self.mapper(obj))
        except Exception:
            log.exception("controller %s: watch mapping function failed", self.ctrl.name)
            return
        for item in items:
            self.ctrl.queue.add(_to_key(item))


class Controller(Generic[T]):
    """Reconciles one kind; see the module guarantees. ``context_factory`` makes each
    reconcile's :class:`Context` (default: ``Context`` itself)."""

    def __init__(
        self,
        name: str,
        kind: Any,
        reconcile: Reconciler[T],
        *,
        owns: Iterable[Any] = (),
        watches: Iterable[Watch] = (),
        predicates: Sequence[Predicate] = (),
        max_concurrent_reconciles: int = 1,
        reconcile_timeout: float | None = None,
        rate_limiter: RateLimiter | None = None,
        context_factory: ContextFactory | None = None,
    ) -> None:
        if max_concurrent_reconciles < 1:
            raise ValueError("max_concurrent_reconciles must be at least 1")
        self.name = name
        self.kind = kind
        self.rt: ResourceType = resource_type_of(kind)
        self.typed = is_model_class(kind)
        self.reconcile_fn = reconcile
        self.watches: list[Watch] = [Watch(k) if not isinstance(k, Watch) else k for k in owns]
        self.watches.extend(watches)
        self.predicates = tuple(predicates)
        self.max_concurrent_reconciles = max_concurrent_reconciles
        self.reconcile_timeout = reconcile_timeout
        self._rate_limiter = rate_limiter
        self.context_factory: ContextFactory = context_factory or Context
        self.queue: WorkQueue[str] = WorkQueue(name, rate_limiter)
        self._workers: list[asyncio.Task[None]] = []
        self._bound = False
        self.reconciles = 0

    # -- wiring (done by the manager) ---------------------------------------------------

    def bind(self, client: Client, cache: Cache, metrics: Metrics, recorder: EventRecorder) -> None:
        """Attach to a manager's client, cache, metrics and recorder; register handlers."""
        self.client = client
        self.cache = cache
        self.metrics = metrics
        self.recorder = recorder
        self.queue = WorkQueue(self.name, self._rate_limiter, metrics.queue_metrics(self.name))
        metrics.watch_queue(self.queue)  # type: ignore[arg-type]
        metrics.max_concurrent.labels(self.name).set(self.max_concurrent_reconciles)
        self._total = {
            r: metrics.reconcile_total.labels(self.name, r)
            for r in (RESULT_SUCCESS, RESULT_ERROR, RESULT_REQUEUE, RESULT_REQUEUE_AFTER)
        }
        self._success = self._total[RESULT_SUCCESS]
        self._errors = metrics.reconcile_errors.labels(self.name)
        self._terminal = metrics.terminal_errors.labels(self.name)
        self._panics = metrics.reconcile_panics.labels(self.name)
        self._time = metrics.reconcile_time.labels(self.name)
        self.informer: Informer = cache.informer(self.rt)
        self.informer.add_handler(_EnqueueFor(self, self.predicates))
        for w in self.watches:
            inf = cache.informer(w.kind)
            if w.mapper is None:
                inf.add_handler(_EnqueueOwner(self, w.predicates))
            else:
                inf.add_handler(_EnqueueMapped(self, w.mapper, w.predicates))
        self._bound = True

    def cache_informer(self, rt: ResourceType) -> Informer | None:
        """The cache's informer for ``rt`` if this controller's cache already has one."""
        for inf in self.cache.informers():
            if inf.rt == rt:
                return inf
        return None

    # -- running ------------------------------------------------------------------------

    @property
    def running(self) -> bool:
        """True from :meth:`start` until :meth:`stop` (while its workers exist)."""
        return bool(self._workers)

    def start(self) -> None:
        """Start the workers (after the caches synced)."""
        if not self._bound:
            raise RuntimeError(f"controller {self.name} is not bound to a manager")
        for i in range(self.max_concurrent_reconciles):
            self._workers.append(
                asyncio.create_task(self._worker(), name=f"{self.name} worker {i}")
            )

    async def stop(self, grace: float = 30.0) -> None:
        """Stop taking work, let in-flight reconciles finish (up to ``grace`` seconds),
        then cancel."""
        drained = await self.queue.shutdown_with_drain(grace)
        if not drained:
            log.warning(
                "controller %s: reconciles still running after %.0fs; cancelling", self.name, grace
            )
        for t in self._workers:
            t.cancel()
        for t in self._workers:
            with contextlib.suppress(asyncio.CancelledError):
                await t
        self._workers.clear()

    def halt(self) -> None:
        """Stop at once, without waiting: no further item is handed out and reconciles
        under way are cancelled (as controller-runtime cancels their context when the
        Lease is lost). :meth:`stop` still waits for the workers afterwards."""
        self.queue.shutdown()
        for t in self._workers:
            t.cancel()

    async def _worker(self) -> None:
        while True:
            try:
                key = await self.queue.get()
            except ShutDown:
                return
            try:
                await self._process(key)
            except asyncio.CancelledError:
                raise
            except Exception:  # never let anything kill the worker
                log.exception("controller %s: unexpected failure handling %s", self.name, key)
                self.queue.add_rate_limited(key)
            finally:
                self.queue.done(key)

    async def _process(self, key: str) -> None:
        stored = self.informer.get_raw(key)
        if stored is None:
            self.queue.forget(key)
            return
        hook = _reconcile_hook
        trace = hook(self, key) if hook is not None else None
        if trace is None:
            await self._reconcile(key, stored, None)
            return
        with trace:
            await self._reconcile(key, stored, trace)

    async def _reconcile(self, key: str, stored: bytes, trace: ReconcileTrace | None) -> None:
        ctx = self.context_factory(self, key, stored)
        started = time.perf_counter()
        self.reconciles += 1
        try:
            if self.typed:
                try:
                    obj: Any = self.kind.model_validate_json(stored)
                except Exception as exc:
                    raise TerminalError(f"object does not fit {self.kind.__name__}: {exc}") from exc
            else:
                obj = orjson.loads(stored)  # the reconcile's own copy, independent of the snapshot
            if trace is not None:
                trace.given(obj)
            call = self.reconcile_fn(obj, ctx)
            if self.reconcile_timeout is not None:
                result = await asyncio.wait_for(call, self.reconcile_timeout)
            else:
                result = await call
        except asyncio.CancelledError:
            raise
        except TerminalError as exc:
            self._errors.inc()
            self._terminal.inc()
            self._total[RESULT_ERROR].inc()
            self.queue.forget(key)
            ctx.log.error("terminal error (not retried until the object changes): %s", exc)
            if trace is not None:
                trace.result(RESULT_ERROR, exc)
            return
        except Conflict as exc:
            self._total[RESULT_REQUEUE].inc()
            ctx.log.debug("conflict, requeueing: %s", exc.message)
            self.queue.add_rate_limited(key)
            if trace is not None:
                trace.result(RESULT_REQUEUE, exc)
            return
        except TimeoutError as exc:
            self._errors.inc()
            self._total[RESULT_ERROR].inc()
            ctx.log.error("reconcile timed out after %.1fs", self.reconcile_timeout or 0.0)
            self.queue.add_rate_limited(key)
            if trace is not None:
                trace.result(RESULT_ERROR, exc)
            return
        except Exception as exc:
            self._errors.inc()
            self._total[RESULT_ERROR].inc()
            if isinstance(exc, PANIC_EXCEPTIONS):
                self._panics.inc()
            ctx.log.exception("reconcile failed; retrying with backoff")
            self.queue.add_rate_limited(key)
            if trace is not None:
                trace.result(RESULT_ERROR, exc)
            return
        finally:
            self._time.observe(time.perf_counter() - started)
        if result is None:
            self.queue.forget(key)
            self._success.inc()
            outcome = RESULT_SUCCESS
        elif result.requeue_after is not None and result.requeue_after > 0:
            self.queue.forget(key)
            self.queue.add_after(key, result.requeue_after)
            self._total[RESULT_REQUEUE_AFTER].inc()
            outcome = RESULT_REQUEUE_AFTER
        elif result.requeue:
            self.queue.add_rate_limited(key)
            self._total[RESULT_REQUEUE].inc()
            outcome = RESULT_REQUEUE
        else:
            self.queue.forget(key)
            self._success.inc()
            outcome = RESULT_SUCCESS
        if trace is not None:
            trace.result(outcome, None)
