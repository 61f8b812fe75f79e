"""The kernel's dependency handling: objects wait for what their refs name, cycles are
reported, and deletion waits for (or cascades to) the objects that still depend on it.

Every :class:`~kubewerk.lifecycle.Platform` has one :class:`Dependencies` engine
(``platform.dependencies``); registering a kind whose model has
:class:`~kubewerk.model.refs.Ref` fields is all it takes. What it guarantees:

- **Declaration.** Registering a kind whose refs close a cycle of *required* refs
  between registered kinds raises :class:`~kubewerk.lifecycle.LifecycleDefinitionError`
  naming the cycle (``dependency cycle between kinds: Application -> Database ->
  Application``): no object of those kinds could ever become ready. A cycle through an
  optional ref (``Ref[X] | None``, a list or a map of refs) is allowed — objects can
  break it — and is watched for at run time instead.
- **The instance graph.** From the informer caches it keeps an edge from every object to
  each object its refs name (:class:`~kubewerk.lifecycle.depgraph.InstanceGraph`),
  updated as the objects change, with the reverse index. When an object's readiness
  changes (it appears, goes, starts being deleted, changes phase or its own
  ``DependenciesReady``), exactly the objects that reference it are reconciled again;
  nobody writes a watch mapper.
- **Readiness gate** (condition ``DependenciesReady``, on the kinds with refs). Before
  the handler runs, every object named by the object's refs must be ready; otherwise
  the handler is not called, the condition is False, reason ``DependenciesNotReady``,
  with a message naming each one it waits for and why (``waiting for Database/default/
  orders (missing), Tenant/acme (in phase Pending)``), and a new object stays Pending.
  Ready means: it exists and is not being deleted; for a kind registered on the
  platform (or whose class declares a ``Lifecycle``), it is in one of its lifecycle's
  ``ready`` phases (Active for the default lifecycle) and its own ``DependenciesReady``
  is not False; for any other kind (a Secret), existing is enough.
- **Cycles between objects** are kept as objects change: every member gets
  ``DependenciesReady=False`` with reason ``DependencyCycle`` and the cycle in order as
  message, and one Warning Event ``DependencyCycle`` listing it (a Normal Event
  ``DependencyCycleResolved`` when it goes); an edit that breaks the cycle clears it.
- **Ordered teardown** (condition ``DependentsRemoved``, a teardown gate on every
  registered kind that a ``block`` or ``cascade`` ref names): while objects that still
  exist reference a deleted object, its finalizer stays. ``block`` waits for them to go;
  ``cascade`` deletes them first (a Normal Event ``CascadeDelete``; the delete is
  guarded by the dependent's uid) and waits for them; ``orphan`` lets the object go (the
  dependents then wait for a missing object). A dependent with several refs to the
  object follows the strongest: cascade, then block, then orphan. Dependents being
  deleted on the same cycle as the object do not hold it (the cycle goes together).
  Deleting the root of a stack whose refs cascade tears it down leaves first.
- **Bus.** ``DependenciesChanged`` when an object's refs name other objects than before
  (message: what it depends on now), ``DependencyCycle`` and ``DependencyCycleCleared``
  for each member of a cycle that forms or goes, published on the platform's bus.

The engine attaches its informer handlers when the manager has started (a runnable that
does not need leadership, so standbys keep a warm graph); a gate asked before that waits
for it.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

import orjson

from kubewerk.client.errors import ApiError, NotFound
from kubewerk.client.resources import ResourceType, is_model_class, resource_type_of
from kubewerk.lifecycle.depgraph import Edge, InstanceGraph, KindEdge, NodeId, format_cycle
from kubewerk.lifecycle.errors import LifecycleDefinitionError
from kubewerk.lifecycle.gates import Blocked, Gate
from kubewerk.lifecycle.phases import Lifecycle
from kubewerk.lifecycle.status import phase_of
from kubewerk.model.errors import ModelDefinitionError
from kubewerk.model.ref_fields import RefField, references_of
from kubewerk.model.refs import ExternalKind, OnDelete
from kubewerk.runtime import conditions

if TYPE_CHECKING:
    from kubewerk.lifecycle.context import LifecycleContext
    from kubewerk.lifecycle.platform import KindRegistration, Platform
    from kubewerk.runtime.informer import Cache, Informer

__all__ = [
    "DEPENDENCIES_CHANGED",
    "DEPENDENCIES_READY",
    "DEPENDENCY_CYCLE",
    "DEPENDENCY_CYCLE_CLEARED",
    "DEPENDENTS_REMOVED",
    "Dependencies",
]

log = logging.getLogger("kubewerk.lifecycle.dependencies")

DEPENDENCIES_READY: Final = "DependenciesReady"
"""The readiness gate's condition type."""
DEPENDENTS_REMOVED: Final = "DependentsRemoved"
"""The teardown gate's condition type."""
DEPENDENCIES_CHANGED: Final = "DependenciesChanged"
"""Bus event: an object's refs name other objects than before."""
DEPENDENCY_CYCLE: Final = "DependencyCycle"
"""Bus event, condition reason and Warning Event: the object is on a cycle."""
DEPENDENCY_CYCLE_CLEARED: Final = "DependencyCycleCleared"
"""Bus event: the object is no longer on a cycle."""

NOT_READY: Final = "DependenciesNotReady"
INVALID_REFERENCE: Final = "InvalidReference"
_LISTED: Final = 20
"""How many objects a condition message names before ``and N more``."""
_SYNC_WAIT: Final = 5.0
"""How long a gate waits for the cache of a kind it needs to sync before it blocks."""
_OUTBOX: Final = 65536
"""Bus events waiting to be published at most; older ones are dropped (and logged)."""

_RANK: Final = {OnDelete.ORPHAN: 0, OnDelete.BLOCK: 1, OnDelete.CASCADE: 2}


def _label(rt: ResourceType) -> str:
    return f"{rt.kind}.{rt.group}" if rt.group else rt.kind


def _listed(items: Sequence[str]) -> str:
    shown = ", ".join(items[:_LISTED])
    return shown if len(items) <= _LISTED else f"{shown} and {len(items) - _LISTED} more"


def _meta(obj: dict[str, Any]) -> dict[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, dict) else {}


@dataclass(eq=False)
class _Watched:
    """A kind the engine follows: a referrer (it has refs), a target, or both."""

    label: str
    rt: ResourceType | None
    """None until resolved (at attach, for targets that are not registered)."""
    target_class: type | None = None
    refs: tuple[RefField, ...] = ()
    registration: KindRegistration | None = None
    informer: Informer | None = None


class _Feed:
    """An informer handler passing one kind's events to the engine."""

    def __init__(self, engine: Dependencies, watched: _Watched) -> None:
        self.engine = engine
        self.watched = watched

    def on_add(self, obj: dict[str, Any]) -> None:
        self.engine._observe(self.watched, None, obj)

    def on_update(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        self.engine._observe(self.watched, old, new)

    def on_delete(self, obj: dict[str, Any]) -> None:
        self.engine._observe(self.watched, obj, None)


class Dependencies:
    """The dependency engine of one platform (see the module doc)."""

    def __init__(self, platform: Platform) -> None:
        self.platform = platform
        self.graph = InstanceGraph()
        """The instance graph (objects of registered kinds with refs → what they name)."""
        self._watched: dict[str, _Watched] = {}
        self._registered: dict[str, KindRegistration] = {}
        """Registered kinds by label (every one, with refs or not)."""
        self._pending: dict[str, KindRegistration] = {}
        """Registered kinds whose refs could not be resolved yet (forward references)."""
        self._unresolved: dict[str, str] = {}
        """Kinds whose refs could not be resolved at start → the error."""
        self._required: dict[str, list[KindEdge]] = {}
        """Registered kinds → their required refs (for the kind-cycle check)."""
        self._required_into: dict[str, set[str]] = {}
        """Kinds → the registered kinds with a required ref to them."""
        self._named: set[str] = set()
        """Kinds a block or cascade ref of a registered kind names."""
        self._teardown_gated: set[str] = set()
        self._attached = asyncio.Event()
        self._outbox: deque[tuple[str, str, str, str, str]] = deque()
        self._wake = asyncio.Event()
        self._cache: Cache | None = None
        platform.manager.add_runnable(self._run, needs_leader=False)

    # -- registration -----------------------------------------------------------------

    def add_kind(self, registration: KindRegistration) -> None:
        """Take a kind being registered on the platform: refuse it when its refs close a
        cycle of required refs between registered kinds (nothing is kept then), else
        follow it and gate it (readiness when it has refs; teardown once a block or
        cascade ref names it). Kinds whose forward references did not resolve before
        are tried again. Costs what the new kind's refs reach, not every kind."""
        label = registration.label
        candidates = {**self._pending, label: registration}
        resolved: dict[str, tuple[RefField, ...]] = {}
        for each, candidate in candidates.items():
            if not is_model_class(candidate.kind):
                resolved[each] = ()
                continue
            try:
                resolved[each] = references_of(candidate.kind)
            except ModelDefinitionError:
                continue  # a forward reference to a class not defined yet: later
        self._refuse_required_cycles(resolved)
        self._registered[label] = registration
        if label not in resolved:
            self._pending[label] = registration
        for each, refs in resolved.items():
            self._pending.pop(each, None)
            self._take(candidates[each], refs)
        self._gate_teardown(label)

    def _refuse_required_cycles(self, resolved: dict[str, tuple[RefField, ...]]) -> None:
        """LifecycleDefinitionError naming a cycle of required refs through one of the
        ``resolved`` kinds. The kinds taken before have no such cycle among themselves,
        so a new one passes through a resolved kind, which then has a required ref into
        it: kinds nothing requires (a kind registered after what it needs) cost nothing."""
        edges = dict(self._required)
        for source, refs in resolved.items():
            edges[source] = [
                KindEdge(source, r.target_label, r.field_path, True) for r in refs if r.required
            ]
        required = {e.target for source in resolved for e in edges[source]}
        for start in sorted(resolved):
            if start not in required and not self._required_into.get(start):
                continue
            cycle = _cycle_through(start, edges)
            if cycle is not None:
                names = [e.source.split(".")[0] for e in cycle]
                kinds = " -> ".join([*names, names[0]])
                fields = ", ".join(f"{n}.{e.path}" for n, e in zip(names, cycle, strict=True))
                raise LifecycleDefinitionError(
                    f"dependency cycle between kinds: {kinds} (every ref on it is required: "
                    f"{fields}); no object on it could ever become ready: make one of these "
                    "refs optional"
                )

    def _take(self, registration: KindRegistration, refs: tuple[RefField, ...]) -> None:
        """Follow a registered kind (and the kinds its refs name); gate it once it has refs."""
        label = registration.label
        watched = self._watch(label, registration.rt)
        watched.registration = registration
        if refs and not watched.refs:
            self.platform.add_gate(
                Gate(DEPENDENCIES_READY, self._check_ready, passed_reason="AllReady"),
                kinds=[registration.kind],
            )
        watched.refs = refs
        for edge in self._required.get(label, ()):
            self._required_into[edge.target].discard(label)
        self._required[label] = [
            KindEdge(label, r.target_label, r.field_path, True) for r in refs if r.required
        ]
        for edge in self._required[label]:
            self._required_into.setdefault(edge.target, set()).add(label)
        for ref in refs:
            target = self._watch(ref.target_label, None)
            target.target_class = target.target_class or ref.target
            if ref.on_delete is not OnDelete.ORPHAN:
                self._named.add(ref.target_label)
                self._gate_teardown(ref.target_label)

    def _watch(self, label: str, rt: ResourceType | None) -> _Watched:
        watched = self._watched.get(label)
        if watched is None:
            watched = self._watched[label] = _Watched(label, rt)
        elif rt is not None:
            watched.rt = rt
        if self._cache is not None and watched.informer is None:
            self._attach_one(self._cache, watched)
        return watched

    def _gate_teardown(self, label: str) -> None:
        """A teardown gate on ``label`` once it is registered and a block or cascade ref
        names it (once)."""
        registration = self._registered.get(label)
        if registration is None or label not in self._named or label in self._teardown_gated:
            return
        self.platform.add_gate(
            Gate(
                DEPENDENTS_REMOVED,
                self._check_teardown,
                passed_reason="NoDependents",
                teardown=True,
            ),
            kinds=[registration.kind],
        )
        self._teardown_gated.add(label)

    # -- attaching to the caches ----------------------------------------------------------

    async def _run(self) -> None:
        cache = self.platform.manager.cache
        if cache is None:  # pragma: no cover - runnables run after the cache exists
            raise RuntimeError("the dependency engine needs a started manager")
        self._attach(cache)
        try:
            await self._drain()
        finally:
            self._cache = None

    def _attach(self, cache: Cache) -> None:
        for label, registration in sorted(self._pending.items()):
            try:
                refs = references_of(registration.kind)
                self._refuse_required_cycles({label: refs})
            except (ModelDefinitionError, LifecycleDefinitionError) as exc:
                self._unresolved[label] = str(exc)
                log.error("dependencies of %s cannot be followed: %s", label, exc)
                self.platform.add_gate(
                    Gate(DEPENDENCIES_READY, self._check_ready, passed_reason="AllReady"),
                    kinds=[registration.kind],
                )
                continue
            self._take(registration, refs)
        self._pending.clear()
        self._cache = cache
        for watched in list(self._watched.values()):
            self._attach_one(cache, watched)
        self._attached.set()

    def _attach_one(self, cache: Cache, watched: _Watched) -> None:
        if watched.rt is None:
            registration = self._registered.get(watched.label)
            if registration is not None:
                watched.rt = registration.rt
            elif watched.target_class is not None:
                watched.rt = _rt_of(watched.target_class)
            else:  # pragma: no cover - every target comes from a resolved ref
                return
        watched.informer = cache.informer(watched.rt)
        watched.informer.add_handler(_Feed(self, watched))  # replays what is cached

    # -- the graph, fed by the informers ------------------------------------------------

    def _node(self, watched: _Watched, obj: dict[str, Any]) -> NodeId:
        rt = watched.rt
        assert rt is not None
        meta = _meta(obj)
        namespace = meta.get("namespace") if rt.namespaced else None
        return NodeId(rt.group, rt.kind, namespace or None, str(meta.get("name", "")))

    @staticmethod
    def _edges(refs: Iterable[RefField], obj: dict[str, Any]) -> list[Edge]:
        namespace = _meta(obj).get("namespace") or None
        edges: list[Edge] = []
        for ref in refs:
            for name, ref_namespace in ref.names(obj):
                target_ns = (ref_namespace or namespace) if ref.namespaced else None
                target = NodeId(ref.group, ref.kind, target_ns, name)
                edges.append(Edge(target, ref.field_path, ref.on_delete))
        return edges

    def _observe(
        self, watched: _Watched, old: dict[str, Any] | None, new: dict[str, Any] | None
    ) -> None:
        obj = new if new is not None else old
        if obj is None:  # pragma: no cover
            return
        node = self._node(watched, obj)
        if watched.refs:
            before = self.graph.edges(node)
            if new is None:
                change = self.graph.remove(node)
            else:
                change = self.graph.set_edges(node, self._edges(watched.refs, new))
            after = self.graph.edges(node)
            if before != after:
                for target in {e.target for e in (*before, *after)}:
                    self._requeue_if_deleting(target)
            if change.targets_changed:
                names = _listed(sorted({str(e.target) for e in after}))
                self._publish(
                    DEPENDENCIES_CHANGED,
                    node,
                    "RefsChanged",
                    f"depends on {names}" if after else "depends on nothing",
                )
            for member, cycle in change.cycles.items():
                self._requeue(member)
                if cycle is None:
                    self._publish(DEPENDENCY_CYCLE_CLEARED, member, "CycleBroken", "")
                else:
                    message = f"dependency cycle: {format_cycle(cycle)}"
                    self._publish(DEPENDENCY_CYCLE, member, DEPENDENCY_CYCLE, message)
        dependents = self.graph.dependents(node)
        if dependents and self._why(watched, old) != self._why(watched, new):
            for dependent in dependents:
                # a dependent being deleted reconciles its teardown, which does not
                # look at what it depends on
                if self._deleting(dependent) is False:
                    self._requeue(dependent)

    def _requeue(self, node: NodeId) -> None:
        """Reconcile ``node`` again (a requeue is never taken for the echo of the
        kernel's own write: only the kind's own update events are filtered)."""
        registration = self._registered.get(node.label)
        if registration is not None:
            registration.controller.queue.add(node.key)

    def _requeue_if_deleting(self, node: NodeId) -> None:
        if self._deleting(node):
            self._requeue(node)

    def _deleting(self, node: NodeId) -> bool | None:
        """Whether a cached object of a registered kind is being deleted (None: not
        cached, or not of a registered kind)."""
        watched = self._watched.get(node.label)
        if watched is None or watched.informer is None or node.label not in self._registered:
            return None
        raw = watched.informer.get_raw(node.key)
        if raw is None:
            return None
        return bool(_meta(orjson.loads(raw)).get("deletionTimestamp"))

    def _why(self, watched: _Watched, obj: dict[str, Any] | None) -> str | None:
        """Why an object of ``watched`` does not count as ready (None: it does)."""
        if obj is None:
            return "missing"
        if _meta(obj).get("deletionTimestamp"):
            return "being deleted"
        lifecycle = self._lifecycle_of(watched)
        if lifecycle is None:
            return None
        phase = phase_of(obj)
        if phase is None:
            return "has no phase yet"
        parsed = lifecycle.parse(phase)
        if parsed is None or not lifecycle.is_ready(parsed):
            return f"in phase {phase}"
        own = conditions.get_condition(obj, DEPENDENCIES_READY)
        if own is not None and own.get("status") == "False":
            return "waiting for its own dependencies"
        return None

    def _lifecycle_of(self, watched: _Watched) -> Lifecycle[Any] | None:
        registration = self._registered.get(watched.label)
        if registration is not None:
            return registration.lifecycle
        cls = watched.target_class
        declared = None
        if cls is not None and hasattr(cls, "kind_info"):
            declared = getattr(cls.kind_info(), "lifecycle", None)
        return declared if isinstance(declared, Lifecycle) else None

    # -- the gates ----------------------------------------------------------------------

    async def _ready_cache(self, watched: _Watched) -> Informer | None:
        """The kind's informer once synced (None when it does not sync in time)."""
        await self._attached.wait()
        informer = watched.informer
        if informer is None:
            return None
        if not informer.has_synced and not await informer.wait_synced(_SYNC_WAIT):
            return None
        return informer

    def _node_of(self, ctx: LifecycleContext) -> NodeId:
        watched = self._watched[ctx.kind_label]
        assert watched.rt is not None
        namespace = ctx.namespace if watched.rt.namespaced else None
        return NodeId(watched.rt.group, watched.rt.kind, namespace or None, ctx.name)

    async def _check_ready(self, obj: Any, ctx: LifecycleContext) -> Blocked | None:
        """The readiness gate (see the module doc)."""
        await self._attached.wait()
        unresolved = self._unresolved.get(ctx.kind_label)
        if unresolved is not None:
            return Blocked(INVALID_REFERENCE, unresolved[:32768])
        node = self._node_of(ctx)
        before = conditions.get_condition(ctx.stored, DEPENDENCIES_READY) or {}
        cycle = self.graph.cycle(node)
        if cycle is not None:
            message = f"dependency cycle: {format_cycle(cycle)}"
            if before.get("reason") != DEPENDENCY_CYCLE or before.get("message") != message:
                ctx.event("Warning", DEPENDENCY_CYCLE, message, action="CheckDependencies")
            return Blocked(DEPENDENCY_CYCLE, message[:32768])
        if before.get("reason") == DEPENDENCY_CYCLE:
            note = f"no longer on a dependency cycle ({before.get('message', '')})"
            ctx.event("Normal", "DependencyCycleResolved", note, action="CheckDependencies")
        waits: list[str] = []
        seen: set[NodeId] = set()
        for edge in self._edges(self._watched[ctx.kind_label].refs, ctx.stored):
            if edge.target in seen:
                continue
            seen.add(edge.target)
            target = self._watched[edge.target.label]
            informer = await self._ready_cache(target)
            if informer is None:
                return Blocked(
                    NOT_READY,
                    f"waiting for the cache of {edge.target.label} to sync",
                    requeue_after=_SYNC_WAIT,
                )
            raw = informer.get_raw(edge.target.key)
            why = self._why(target, None if raw is None else orjson.loads(raw))
            if why is not None:
                waits.append(f"{edge.target} ({why})")
        if waits:
            return Blocked(NOT_READY, f"waiting for {_listed(waits)}")
        return None

    async def _check_teardown(self, obj: Any, ctx: LifecycleContext) -> Blocked | None:
        """The teardown gate (see the module doc)."""
        await self._attached.wait()
        node = self._node_of(ctx)
        policies: dict[NodeId, tuple[OnDelete, str]] = {}
        for referrer, edge in self.graph.dependent_edges(node):
            if referrer == node:
                continue
            known = policies.get(referrer)
            if known is None or _RANK[edge.on_delete] > _RANK[known[0]]:
                policies[referrer] = (edge.on_delete, edge.path)
        cycle_mates = self.graph.component(node)
        blocking: list[str] = []
        cascading: list[str] = []
        for referrer, (policy, path) in sorted(policies.items()):
            if policy is OnDelete.ORPHAN:
                continue
            current = self._cached(referrer)
            if current is None:
                continue  # gone: the graph follows when its event arrives
            deleting = bool(_meta(current).get("deletionTimestamp"))
            if deleting and referrer in cycle_mates:
                continue  # a cycle goes together: someone has to be first
            cascade = policy is OnDelete.CASCADE and not deleting
            if cascade and await self._delete(ctx, referrer, current):
                cascading.append(f"{referrer} ({path})")
            blocking.append(f"{referrer} ({path}, onDelete {policy.value})")
        if cascading:
            note = f"deleting dependents first: {_listed(cascading)}"
            ctx.event("Normal", "CascadeDelete", note, action="Finalize")
        if blocking:
            return Blocked("DependentsExist", f"still referenced by {_listed(blocking)}"[:32768])
        return None

    def _cached(self, node: NodeId) -> dict[str, Any] | None:
        watched = self._watched.get(node.label)
        if watched is None or watched.informer is None:
            return None
        raw = watched.informer.get_raw(node.key)
        return None if raw is None else orjson.loads(raw)

    async def _delete(self, ctx: LifecycleContext, node: NodeId, current: dict[str, Any]) -> bool:
        """Delete a cascading dependent (guarded by its uid); True when the request went out."""
        watched = self._watched[node.label]
        assert watched.rt is not None
        uid = _meta(current).get("uid")
        try:
            await ctx.client.delete(
                watched.rt,
                node.name,
                node.namespace,
                preconditions={"uid": str(uid)} if uid else None,
            )
        except NotFound:
            return False
        except ApiError as exc:
            if exc.code == 409:  # another object under that name now: not ours to delete
                return False
            raise
        return True

    # -- the bus ------------------------------------------------------------------------

    def _publish(self, event_type: str, node: NodeId, reason: str, message: str) -> None:
        if len(self._outbox) >= _OUTBOX:
            dropped = self._outbox.popleft()
            log.warning("bus events pile up; dropped %s of %s", dropped[0], dropped[2])
        self._outbox.append((event_type, node.label, node.key, reason, message))
        self._wake.set()

    async def _drain(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            while self._outbox:
                event_type, label, key, reason, message = self._outbox.popleft()
                try:
                    await self.platform.publish(
                        event_type, label, key, reason=reason, message=message
                    )
                except Exception:  # the bus counts and logs its own failures too
                    log.exception("publishing %s of %s on the bus failed", event_type, key)


def _rt_of(cls: type) -> ResourceType:
    """The ResourceType of a ref's target class (a Resource or an ExternalKind)."""
    if issubclass(cls, ExternalKind):
        return ResourceType(cls.group, cls.version, cls.kind, cls.plural, cls.namespaced)
    return resource_type_of(cls)


def _cycle_through(start: str, edges: dict[str, list[KindEdge]]) -> list[KindEdge] | None:
    """A shortest cycle of ``edges`` from ``start`` back to it (breadth first, in sorted
    order), as its edges; None when ``start`` is on none."""
    parent: dict[str, KindEdge] = {}
    todo = [start]
    while todo:
        following: list[str] = []
        for kind in todo:
            for edge in sorted(edges.get(kind, ()), key=lambda e: (e.target, e.path)):
                if edge.target == start:
                    path = [edge]
                    while path[0].source != start:
                        path.insert(0, parent[path[0].source])
                    return path
                if edge.target not in parent and edge.target != start:
                    parent[edge.target] = edge
                    following.append(edge.target)
        todo = following
    return None
